"""No connection can hold the others, against a real broker process: stalled frame
announcements (huge or many) take nothing from other clients; before authentication a SASL
listener reads at most sasl.server.max.receive.size; TLS handshakes count against
max.connections from the start and have a deadline; failed logins are answered after
connection.failed.authentication.delay.ms; a client gone in the middle of a response costs one
log line, not a traceback."""

from __future__ import annotations

import json
import os
import select
import socket
import ssl
import struct
import time

import pytest

from tests.support.security import KEY_PASSWORD, listener_ports, make_certs, plain_jaas
from tests.support.wire import WireClient, build_batch, build_fetch_request, encode_uvarint, request_header

pytestmark = pytest.mark.timeout(120)

USERS = {"alice": "alice-secret"}
SASL_AUTHENTICATION_FAILED = 58


def _stall(broker, announced: int, sent: bytes) -> socket.socket:
    """A connection that announces a frame of `announced` bytes, sends `sent` of it and stops."""
    s = socket.create_connection(broker.address)
    s.sendall(struct.pack(">i", announced) + sent)
    return s


def _metadata_seconds(broker) -> float:
    with WireClient.to(broker, timeout=5) as c:
        started = time.monotonic()
        assert c.metadata([], version=9).brokers
        return time.monotonic() - started


def test_stalled_announcements_of_huge_frames_do_not_block_others(broker):
    """Three connections announce 100 MiB frames (together more than queued.max.request.bytes,
    200 MiB) and stall: they hold the bytes they sent, not the ones they announced."""
    stalled = [_stall(broker, 100 << 20, b"\x00\x03\x00") for _ in range(3)]
    try:
        for _ in range(3):  # the broker has long read every announcement by the last one
            assert _metadata_seconds(broker) < 1.0
            time.sleep(0.1)
    finally:
        for s in stalled:
            s.close()


def test_many_stalled_small_frames_do_not_block_others(broker):
    """500 connections (queued.max.requests) each start a small frame and stall: a frame still
    arriving holds no request slot."""
    stalled = [_stall(broker, 100, b"\x00\x03\x00") for _ in range(500)]
    try:
        for _ in range(3):
            assert _metadata_seconds(broker) < 1.0
            time.sleep(0.1)
    finally:
        for s in stalled:
            s.close()


# ----------------------------------------------------------------------------- SASL


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def sasl_broker(broker_factory):
    b = broker_factory(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
            "sasl.enabled.mechanisms": "PLAIN",
        }
    )
    b.ports = listener_ports(b)
    return b


def _sasl_client(broker) -> WireClient:
    return WireClient("127.0.0.1", broker.ports["SASL_PLAINTEXT"])


def _plain_login(client: WireClient, user: str, password: str) -> tuple[int, float]:
    """SaslHandshake v1 + SaslAuthenticate v2 with PLAIN: (error code, seconds to the answer)."""
    mech = b"PLAIN"
    client.send_frame(request_header(17, 1, 1) + struct.pack(">h", len(mech)) + mech)
    assert struct.unpack(">ih", client.recv_frame()[:6]) == (1, 0)
    token = b"\0" + user.encode() + b"\0" + password.encode()
    started = time.monotonic()
    client.send_frame(
        request_header(36, 2, 2, flexible=True) + encode_uvarint(len(token) + 1) + token + b"\0"
    )
    resp = client.recv_frame()
    took = time.monotonic() - started
    assert struct.unpack(">i", resp[:4]) == (2,)
    (error,) = struct.unpack(">h", resp[5:7])
    return error, took


def test_frames_before_authentication_are_capped_at_sasl_server_max_receive_size(sasl_broker):
    since = sasl_broker.log_size()
    with _sasl_client(sasl_broker) as c:
        c.send_raw(struct.pack(">i", 524288 + 1) + b"\x00\x11")  # one byte over 512 KiB
        assert c.wait_closed(5) == b""
    line = sasl_broker.wait_for_log("sasl.server.max.receive.size=524288", since)
    assert "invalid receive size" in line
    # after authentication the cap is socket.request.max.bytes: a 1 MB produce is served
    with _sasl_client(sasl_broker) as c:
        assert _plain_login(c, "alice", "alice-secret")[0] == 0
        c.create_topics([("after-login", 1)])
        resp = c.produce("after-login", 0, build_batch([(None, os.urandom(1_000_000), [])]))
        assert resp.error_code == 0


def test_failed_logins_are_answered_after_the_delay(sasl_broker):
    """connection.failed.authentication.delay.ms (100): one client's PLAIN password guesses are
    limited to about 10 a second; a good login is not delayed."""
    started = time.monotonic()
    guesses = []
    while time.monotonic() - started < 1.0:
        with _sasl_client(sasl_broker) as c:
            error, took = _plain_login(c, "alice", f"guess-{len(guesses)}")
            assert error == SASL_AUTHENTICATION_FAILED
            c.wait_closed(5)
            guesses.append(took)
    assert len(guesses) <= 11, f"{len(guesses)} password guesses in one second"
    assert min(guesses) >= 0.095, guesses
    good = []
    for _ in range(5):
        with _sasl_client(sasl_broker) as c:
            error, took = _plain_login(c, "alice", "alice-secret")
            assert error == 0
            good.append(took)
    assert min(good) < 0.05, good
    sasl_broker.wait_for_log("authentication failed on listener SASL_PLAINTEXT")


# ----------------------------------------------------------------------------- TLS


def _tls_overrides(certs, **extra) -> dict:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.keystore.location": certs.server,
        "ssl.key.password": KEY_PASSWORD,
        **extra,
    }


def _closed_within(sockets: list[socket.socket], count: int, deadline: float) -> set[socket.socket]:
    """The sockets the broker closed, waiting until `count` of them are or `deadline` passes."""
    closed: set[socket.socket] = set()
    while len(closed) < count and time.monotonic() < deadline:
        open_ones = [s for s in sockets if s not in closed]
        readable, _, _ = select.select(open_ones, [], [], max(0.0, deadline - time.monotonic()))
        for s in readable:
            try:
                data = s.recv(1)
            except (ConnectionResetError, BrokenPipeError):
                data = b""
            assert data == b"", "a TLS listener sent bytes before any ClientHello"
            closed.add(s)
    return closed


def test_half_open_tls_connections_count_against_max_connections_and_time_out(broker_factory, certs):
    """A flood of TCP connections to a TLS listener that never send a ClientHello: only
    max.connections of them are held, and only until minibroker.ssl.handshake.timeout.ms."""
    cap, timeout_ms = 20, 1500
    b = broker_factory(
        _tls_overrides(certs, **{"max.connections": cap, "minibroker.ssl.handshake.timeout.ms": timeout_ms})
    )
    ports = listener_ports(b)
    flood = [socket.create_connection(("127.0.0.1", ports["SSL"])) for _ in range(3 * cap)]
    started = time.monotonic()
    try:
        # the first `cap` are held for their handshake, the rest closed as soon as accepted
        refused = _closed_within(flood, 2 * cap, started + 1.0)
        assert len(refused) == 2 * cap, f"{3 * cap - len(refused)} half-open TLS connections held, cap {cap}"
        b.wait_for_log(f"max.connections={cap} reached")
        held = [s for s in flood if s not in refused]
        # ... and closed by the handshake deadline
        assert len(_closed_within(held, cap, started + timeout_ms / 1000 + 5)) == cap
        assert time.monotonic() - started < timeout_ms / 1000 + 3
        b.wait_for_log("minibroker.ssl.handshake.timeout.ms=1500")
    finally:
        for s in flood:
            s.close()
    # the slots are free again: a real TLS client gets in
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    with socket.create_connection(("127.0.0.1", ports["SSL"]), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            head = request_header(18, 0, 7, client_id="tls")
            tls.sendall(struct.pack(">i", len(head)) + head)
            (size,) = struct.unpack(">i", tls.recv(4))
            body = b""
            while len(body) < size:
                body += tls.recv(size - len(body))
            assert struct.unpack(">ih", body[:6]) == (7, 0)  # ApiVersions v0, no error


# ----------------------------------------------------------------------------- disconnects


def test_fetch_client_gone_mid_response_is_one_log_line(broker):
    with WireClient.to(broker) as c:
        c.create_topics([("big-fetch", 1)])
        for _ in range(8):
            assert c.produce("big-fetch", 0, build_batch([(None, os.urandom(1_000_000), [])])).error_code == 0
    since = broker.log_size()
    for _ in range(3):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        s.connect(broker.address)
        req = build_fetch_request("big-fetch", 0, 0, max_bytes=50 << 20, partition_max_bytes=50 << 20)
        req.API_VERSION = 12
        req.with_header(correlation_id=1, client_id="leaver")
        s.sendall(bytes(req.encode(header=True, framed=True)))
        assert len(s.recv(4096)) > 0  # the response has started
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset on close
        s.close()
    broker.wait_for_log("client closed the connection in the middle of its response", since)
    with WireClient.to(broker) as other:  # the broker is fine
        _, part = other.fetch("big-fetch", 0, 7)
        assert part.error_code == 0
    log = broker.log_since(since)
    entries = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert not [e for e in entries if e.get("level") in ("error", "critical")], log[-3000:]
    assert "Traceback" not in log
