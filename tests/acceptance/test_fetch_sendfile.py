"""Fetch responses whose record bytes leave by os.sendfile (plain TCP) or by reads (TLS) carry
exactly the bytes of the segment files, in order, with the framing around them intact, also when
the client reads slowly (a small receive buffer: the socket fills, the broker falls back to the
transport and goes on with sendfile once it drains)."""

from __future__ import annotations

import os
import socket
import ssl
import struct
import time

import pytest
from kafka.protocol.consumer import FetchResponse

from tests.support.security import KEY_PASSWORD, listener_ports, make_certs
from tests.support.wire import WireClient, build_batch, build_fetch_request, decode_response

pytestmark = pytest.mark.timeout(120)

BATCHES, VALUE_SIZE = 6, 300_000  # per partition: ~1.8 MB, well above the sendfile threshold


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def _segment_bytes(data_dir, topic: str, partition: int) -> bytes:
    logs = sorted((data_dir / f"{topic}-{partition}").glob("*.log"))
    return b"".join(p.read_bytes() for p in logs)


def _slow_frame(sock: socket.socket, deadline: float) -> bytes:
    """One response frame read in small pieces with pauses, as a slow consumer does."""

    def exact(n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            assert time.monotonic() < deadline, f"response not complete: {len(buf)} of {n} bytes"
            chunk = sock.recv(min(n - len(buf), 16384))
            assert chunk, f"connection closed after {len(buf)} of {n} bytes"
            buf += chunk
            if len(buf) % (256 << 10) < 16384:
                time.sleep(0.01)
        return bytes(buf)

    (size,) = struct.unpack(">i", exact(4))
    return exact(size)


def _connect(port: int, tls_context: ssl.SSLContext | None) -> socket.socket:
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the broker's sends fill it quickly
    raw.settimeout(30)
    raw.connect(("127.0.0.1", port))
    return tls_context.wrap_socket(raw, server_hostname="localhost") if tls_context else raw


@pytest.mark.parametrize("listener", ["PLAINTEXT", "SSL"])
def test_large_fetch_of_two_partitions_is_byte_exact_for_a_slow_reader(broker_factory, certs, listener):
    b = broker_factory(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.keystore.location": certs.server,
            "ssl.key.password": KEY_PASSWORD,
            "ssl.truststore.location": certs.ca,
        }
    )
    ports = listener_ports(b)
    with WireClient("127.0.0.1", ports["PLAINTEXT"]) as c:
        assert [t.error_code for t in c.create_topics([("big", 2)]).topics] == [0]
        for partition in (0, 1):
            for _ in range(BATCHES):
                batch = build_batch([(None, os.urandom(VALUE_SIZE), [])])
                assert c.produce("big", partition, batch).error_code == 0
    expected = {p: _segment_bytes(b.data_dir, "big", p) for p in (0, 1)}
    assert all(len(v) > BATCHES * VALUE_SIZE for v in expected.values())

    tls = None
    if listener == "SSL":
        tls = ssl.create_default_context(cafile=str(certs.ca))
    sock = _connect(ports[listener], tls)
    try:
        req = build_fetch_request("big", [(0, 0), (1, 0)], max_bytes=50 << 20, partition_max_bytes=50 << 20)
        req.API_VERSION = 12
        req.with_header(correlation_id=7, client_id="slow-reader")
        sock.sendall(bytes(req.encode(header=True, framed=True)))
        time.sleep(0.3)  # the broker meets a full socket buffer before the client reads at all
        resp = decode_response(FetchResponse, 12, _slow_frame(sock, time.monotonic() + 90), 7)
    finally:
        sock.close()
    (topic,) = resp.responses
    got = {p.partition_index: p for p in topic.partitions}
    for partition in (0, 1):
        assert got[partition].error_code == 0
        assert got[partition].records == expected[partition]
    # the broker is still fine: another request on a fresh connection is answered
    with WireClient("127.0.0.1", ports["PLAINTEXT"]) as c:
        _, part = c.fetch("big", 1, 0, partition_max_bytes=1 << 20)
        assert part.error_code == 0 and part.records
