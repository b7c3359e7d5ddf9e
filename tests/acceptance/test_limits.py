"""Limits that keep one misbehaving client from taking the broker down, each against a real
broker process: connection caps, idle and half-sent-frame timeouts, the broker-side
fetch.max.bytes, bounded request memory, back-pressure on clients that never read, and
partition limits on CreateTopics/CreatePartitions/auto-creation, open-file limits (descriptor
headroom for topic creation, a bounded pool of segment files)."""

from __future__ import annotations

import os
import resource
import socket
import struct
import sys
import time

import pytest
from kafka import TopicPartition
from kafka.protocol.admin import CreatePartitionsRequest, CreatePartitionsResponse
from kafka.protocol.metadata import MetadataRequest

from tests.support.broker import BrokerProcess
from tests.support.clients import kp_consumer
from tests.support.helpers import wait_until
from tests.support.wire import ConnectionClosed, WireClient, build_batch, build_fetch_request

pytestmark = pytest.mark.timeout(90)

POLICY_VIOLATION = 44


def test_max_connections_and_per_ip(broker_factory):
    b = broker_factory({"max.connections": 3, "max.connections.per.ip": 2})
    first, second = WireClient.to(b), WireClient.to(b)
    for c in (first, second):
        c.api_versions()
    third = WireClient.to(b)  # a third from the same IP: over max.connections.per.ip
    third.wait_closed(5)
    first.close()

    def admitted() -> bool:
        try:
            with WireClient.to(b) as c:
                c.api_versions()
            return True
        except (ConnectionClosed, OSError):
            return False

    wait_until(admitted, 5, message="a slot frees up once a connection closes")
    second.close()
    b.wait_for_log("max.connections.per.ip=2 reached")


def test_idle_connection_is_closed_and_busy_one_is_not(broker_factory):
    b = broker_factory({"connections.max.idle.ms": 600})
    with WireClient.to(b) as idle, WireClient.to(b) as busy:
        idle.api_versions()
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:  # requests every 200 ms keep it alive
            busy.api_versions()
            time.sleep(0.2)
        idle.wait_closed(5)
        busy.api_versions()
    b.wait_for_log("connections.max.idle.ms=600")


def test_half_sent_frame_is_closed_after_the_receive_timeout(broker_factory):
    b = broker_factory({"minibroker.request.receive.timeout.ms": 500})
    with WireClient.to(b) as slow:
        slow.send_raw(struct.pack(">i", 100) + b"\x00\x12\x00")  # 3 of 100 bytes, then nothing
        slow.wait_closed(5)
    b.wait_for_log("request not received in full")
    with WireClient.to(b) as ok:  # others are unaffected
        ok.api_versions()


def _fill(client: WireClient, topic: str, batches: int, value_size: int) -> None:
    for _i in range(batches):
        resp = client.produce(topic, 0, build_batch([(None, os.urandom(value_size), [])]))
        assert resp.error_code == 0, resp


def test_broker_side_fetch_max_bytes_caps_the_response(broker_factory):
    b = broker_factory({"fetch.max.bytes": 1048576})
    with WireClient.to(b) as c:
        c.create_topics([("big", 1)])
        _fill(c, "big", 4, 400_000)
        _, part = c.fetch("big", 0, 0, max_bytes=50 << 20, partition_max_bytes=50 << 20)
        assert part.error_code == 0
        # at most 1 MiB of whole ~400 kB batches: two of the four
        assert 400_000 < len(part.records) <= 1048576


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_clients_that_never_read_do_not_grow_memory(broker_factory):
    """Four connections pipeline Fetch requests for ~16 MB each and never read: the broker holds
    about one chunk per connection, not whole responses, keeps serving others (the stalled ones
    hold no queued.max.requests slot), and closes them after connections.max.idle.ms."""
    b = broker_factory({"queued.max.requests": 2, "connections.max.idle.ms": 3000})
    with WireClient.to(b) as c:
        c.create_topics([("wide", 1)])
        _fill(c, "wide", 16, 1_000_000)
    before = _rss_kb(b.proc.pid)
    stalled = []
    for _ in range(4):
        s = socket.create_connection(b.address)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        req = build_fetch_request("wide", 0, 0, max_bytes=50 << 20, partition_max_bytes=50 << 20)
        for corr in range(5):
            req.API_VERSION = 12
            req.with_header(correlation_id=corr, client_id="stalled")
            s.sendall(bytes(req.encode(header=True, framed=True)))
        stalled.append(s)
    time.sleep(1.0)  # let the broker write what it can; nothing below waits on these sockets
    with WireClient.to(b) as other:
        other.api_versions()
        _, part = other.fetch("wide", 0, 15)
        assert part.error_code == 0
    growth_mb = (_rss_kb(b.proc.pid) - before) / 1024
    print(f"stalled-reader RSS growth {growth_mb:.1f} MB")
    # without back-pressure each connection buffers a whole ~16 MB response (64 MB in all)
    assert growth_mb < 24, f"broker RSS grew {growth_mb:.1f} MB for 4 stalled readers"
    b.wait_for_log("has not read its response", timeout=10)
    for s in stalled:
        s.close()


def _read_by_broker(client: WireClient) -> bool:
    """Every byte `client` sent has been read by the broker process: none waits in the client's
    send queue nor in the broker's receive queue of that connection (Linux: /proc/net/tcp*)."""
    mine, theirs = client.sock.getsockname()[1], client.sock.getpeername()[1]
    queues: dict[tuple[int, int], tuple[int, int]] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                local, remote = (int(a.rsplit(":", 1)[1], 16) for a in fields[1:3])
                tx, rx = (int(q, 16) for q in fields[4].split(":"))
                queues[(local, remote)] = (tx, rx)
    return queues[(mine, theirs)][0] == 0 and queues[(theirs, mine)][1] == 0


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads socket queues from /proc/net/tcp")
def test_queued_request_bytes_bound_holds_a_frame_still_arriving_until_memory_frees(broker_factory):
    """Bytes are charged as they arrive: two clients that sent 90 kB and 30 kB of larger frames
    fill a 100 kB bound, and a third client's frame that arrives in two parts is not read past
    its first part until one of them goes (a frame that arrives whole is never held back)."""
    b = broker_factory({"queued.max.request.bytes": 100_000})
    with WireClient.to(b) as holder, WireClient.to(b) as other, WireClient.to(b) as waiter:
        holder.send_raw(struct.pack(">i", 200_000) + b"\x00" * 90_000)  # 90 of 200 kB, then nothing
        wait_until(lambda: _read_by_broker(holder), 5, message="the broker holds the 90 kB")
        other.send_raw(struct.pack(">i", 200_000) + b"\x00" * 30_000)  # 120 kB: over the bound
        wait_until(lambda: _read_by_broker(other), 5, message="the broker holds 120 kB")
        topics = [f"t{i:05d}-" + "x" * 20 for i in range(1000)]  # a ~30 kB Metadata request
        req = MetadataRequest[4](topics=topics, allow_auto_topic_creation=False)
        req.API_VERSION = 4
        req.with_header(correlation_id=77, client_id=waiter.client_id)
        data = bytes(req.encode(header=True, framed=True))
        waiter.send_raw(data[:10_000])
        # the broker has read the first part (so the frame does not arrive whole)
        wait_until(lambda: _read_by_broker(waiter), 5, message="the broker read the first part")
        waiter.send_raw(data[10_000:])
        with pytest.raises(TimeoutError):
            waiter.recv_frame(timeout=1.0)
        with WireClient.to(b) as small:  # a request that arrives whole is served all the same
            small.api_versions()
        holder.close()  # the broker drops the half-received frame and frees its bytes
        answer = waiter.recv_frame(timeout=10)
        assert struct.unpack(">i", answer[:4]) == (77,)


def test_partition_limits_on_create_topics_partitions_and_auto_creation(broker_factory):
    b = broker_factory(
        {"minibroker.max.partitions.per.request": 100, "minibroker.max.partitions": 150, "num.partitions": 40}
    )
    with WireClient.to(b) as c:
        resp = c.create_topics([("too-many", 101)])
        assert [(t.name, t.error_code) for t in resp.topics] == [("too-many", POLICY_VIOLATION)]
        resp = c.create_topics([("a", 60), ("b", 50)])  # 110 together: all or nothing
        assert sorted((t.name, t.error_code) for t in resp.topics) == [
            ("a", POLICY_VIOLATION),
            ("b", POLICY_VIOLATION),
        ]
        assert {t.name: t.error_code for t in c.create_topics([("a", 60)]).topics} == {"a": 0}
        req = CreatePartitionsRequest[1](topics=[("a", 161, None)], timeout_ms=5000, validate_only=False)
        resp = c.request(req, CreatePartitionsResponse, 1)
        assert resp.results[0].error_code == POLICY_VIOLATION
        # auto-creation: 40 partitions each; 2 fit this request (80 <= 100 and 60+80 <= 150)
        md = c.metadata(["auto1", "auto2", "auto3"], version=9, allow_auto_topic_creation=True)
        errors = {t.name: t.error_code for t in md.topics}
        assert errors == {"auto1": 0, "auto2": 0, "auto3": 3}
        # the broker now has 140 partitions: the total limit refuses the next one
        md = c.metadata(["auto3"], version=9, allow_auto_topic_creation=True)
        assert md.topics[0].error_code == 3
    b.wait_for_log("topics not auto-created")


class LimitedBroker(BrokerProcess):
    """A broker started with soft and hard open-file limits of `nofile` (via a tiny exec wrapper,
    so the test process keeps its own limits)."""

    nofile = 600

    def command(self) -> list[str]:
        cmd = super().command()
        wrapper = (
            "import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, "
            f"({self.nofile}, {self.nofile})); os.execv(sys.executable, sys.argv[1:])"
        )
        return [sys.executable, "-c", wrapper, *cmd]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts /proc/self/fd")
def test_topic_creation_cannot_exhaust_file_descriptors(tmp_path):
    b = LimitedBroker(tmp_path / "data").start()
    try:
        with WireClient.to(b) as c:
            resp = c.create_topics([("fd-hog", 500)])  # one descriptor per partition: 500 of ~570 free
            assert [(t.name, t.error_code) for t in resp.topics] == [("fd-hog", POLICY_VIOLATION)]
            assert "file descriptors" in resp.topics[0].error_message
            assert [t.error_code for t in c.create_topics([("fits", 100)]).topics] == [0]
        with WireClient.to(b) as other:  # the broker still has descriptors for new clients
            other.api_versions()
    finally:
        b.stop()


def test_soft_open_file_limit_is_raised_to_the_hard_limit(tmp_path):
    class SoftLimited(BrokerProcess):
        def command(self) -> list[str]:
            wrapper = (
                "import os, resource, sys; hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]; "
                "resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard)); "
                "os.execv(sys.executable, sys.argv[1:])"
            )
            return [sys.executable, "-c", wrapper, *super().command()]

    b = SoftLimited(tmp_path / "data").start()
    try:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        if hard > 256:
            line = b.wait_for_log("open file limit raised")
            assert '"soft_limit_was": 256' in line
    finally:
        b.stop()


def test_other_clients_are_served_while_many_topics_are_created(broker):
    """A CreateTopics for many topics yields between topics: a client that asks something after
    creation has started is answered before that CreateTopics finishes."""
    from kafka.protocol.admin import CreateTopicsRequest

    T = CreateTopicsRequest.CreatableTopic
    since = broker.log_size()
    with WireClient.to(broker) as creator, WireClient.to(broker) as other:
        req = CreateTopicsRequest(
            topics=[
                T(name=f"many-{i:04d}", num_partitions=1, replication_factor=1, assignments=[], configs=[])
                for i in range(600)
            ],
            timeout_ms=60000,
            validate_only=False,
        )
        creator.send_request(req, 5)
        broker.wait_for_log("many-0000", since)  # creation has started
        other.api_versions()
        creator.sock.setblocking(False)
        try:
            pending = creator.sock.recv(1)
        except BlockingIOError:
            pending = b""
        creator.sock.setblocking(True)
        assert pending == b"", "ApiVersions was answered only after the whole CreateTopics"
        assert creator.recv_frame(timeout=60)


@pytest.mark.timeout(240)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts /proc/<pid>/fd")
def test_two_thousand_segments_start_and_serve_under_ulimit_1024(broker_factory, tmp_path):
    """Startup opens no old segment: a partition of 2,000 segments comes back under `ulimit -n
    1024` (soft and hard) and a consumer reads it all from offset 0 while the broker keeps at
    most minibroker.max.open.segment.files (here a quarter of the limit) of them open."""
    segments, value_size = 2000, 1100  # each ~1.2 kB batch is more than log.segment.bytes
    overrides = {"log.segment.bytes": 1024}
    first = broker_factory(overrides, data_dir=tmp_path / "data")
    with WireClient.to(first) as c:
        c.create_topics([("many-segments", 1)])
        _fill(c, "many-segments", segments, value_size)
    # The rolls' fsyncs and producer snapshots run on the durability io thread (broker/durability.py),
    # not on the loop, so 2,000 one-record segments leave about 10,000 fsyncs that the clean stop
    # waits for: 12 s measured on a quiet machine, more under load (the old code paid them during
    # the produces instead: 10.8 s to fill, 0.06 s to stop).
    assert first.stop(timeout=90) == 0
    on_disk = [p for p in (tmp_path / "data").rglob("*.log") if "many-segments" in str(p)]
    assert len(on_disk) >= segments

    class Ulimit1024(LimitedBroker):
        nofile = 1024

    b = Ulimit1024(tmp_path / "data", overrides).start()
    try:
        b.wait_for_log('"max_open_segment_files": 256')
        consumer = kp_consumer(b.bootstrap, max_partition_fetch_bytes=64 << 10)
        try:
            consumer.assign([TopicPartition("many-segments", 0)])
            consumer.seek_to_beginning()
            offsets: list[int] = []
            deadline = time.monotonic() + 120
            most_open = 0
            while len(offsets) < segments and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=300, max_records=500).values():
                    offsets += [r.offset for r in records]
                most_open = max(most_open, len(os.listdir(f"/proc/{b.proc.pid}/fd")))
        finally:
            consumer.close()
        assert offsets == list(range(segments))
        assert most_open < 256 + 150, f"{most_open} descriptors open while reading"
        with WireClient.to(b) as c:  # still serves producers and new clients
            _fill(c, "many-segments", 1, 10)
    finally:
        b.stop()
