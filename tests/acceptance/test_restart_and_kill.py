"""Issue 2: the CLI lifecycle, clean restarts (SIGTERM/SIGINT) keeping everything, and SIGKILL in
the middle of a stream of acks=all sends losing nothing that was acknowledged."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from tests.support import clients
from tests.support.helpers import (
    admin_client,
    create_topic,
    expected_by_partition,
    make_messages,
    unique_name,
    wait_until,
)
from tests.support.wire import ZERO_UUID, WireClient, build_batch, read_partition


def topic_state(broker, topics):
    """{name: (topic_id, [partition indexes], [LEO per partition])} plus the cluster id."""
    out = {}
    with WireClient.to(broker) as c:
        md = c.metadata(list(topics), version=12)
        for t in md.topics:
            assert t.error_code == 0, f"{t.name}: error {t.error_code}"
            parts = sorted(p.partition_index for p in t.partitions)
            leos = [c.list_offsets(t.name, p, -1).offset for p in parts]
            out[t.name] = (t.topic_id, parts, leos)
        return md.cluster_id, out


def test_ready_event_and_port_file(broker):
    # start() already checked the port file holds digits + newline; the broker serves on it
    assert broker.port_file.read_text() == f"{broker.port}\n"
    with WireClient.to(broker) as c:
        assert c.api_versions(3).error_code == 0
    ready = [line for line in broker.log_text().splitlines() if "broker ready" in line]
    assert len(ready) == 1, f"expected one 'broker ready' event, got {ready}"
    assert str(broker.port) in ready[0], f"'broker ready' event does not carry the port: {ready[0]}"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_cleanly(broker, sig):
    topic = unique_name("sig")
    create_topic(broker, topic, 1)
    with WireClient.to(broker) as c:
        assert c.produce(topic, 0, build_batch([(b"k", b"v", [])])).error_code == 0
    t0 = time.monotonic()
    broker.stop(sig=sig)  # asserts exit code 0
    assert time.monotonic() - t0 < 10
    assert list(broker.data_dir.rglob(".kafka_cleanshutdown")), "no clean-shutdown marker after a clean stop"


def test_clean_restart_keeps_everything(broker):
    a, b = unique_name("keep-a"), unique_name("keep-b")
    create_topic(broker, a, 3, configs={"retention.ms": 123456789})
    create_topic(broker, b, 1)
    msgs_a = make_messages(1500, 3, tag="a")
    acked_a = clients.ck_produce(broker.bootstrap, a, msgs_a, "lz4")
    msgs_b = make_messages(300, 1, tag="b")
    acked_b = clients.kp_produce(broker.bootstrap, b, msgs_b, "none")
    exp_a, exp_b = expected_by_partition(msgs_a, acked_a), expected_by_partition(msgs_b, acked_b)
    cluster_id, before = topic_state(broker, [a, b])
    assert cluster_id, "Metadata v12 has no cluster id"
    assert all(tid not in (None, ZERO_UUID) for tid, _, _ in before.values()), before

    broker.restart()  # SIGTERM (exit 0 asserted), same data dir

    cluster_id2, after = topic_state(broker, [a, b])
    assert cluster_id2 == cluster_id
    assert after == before, (
        f"topic ids / partitions / log end offsets changed across a restart:\n{before}\n{after}"
    )
    clients.compare_partitions(clients.kp_consume(broker.bootstrap, a, [0, 1, 2], 1500), exp_a)
    clients.compare_partitions(clients.ck_consume(broker.bootstrap, b, [0], 300), exp_b)
    with WireClient.to(broker) as c:
        for p in range(3):
            recs, hw = read_partition(c, a, p)
            assert hw == len(exp_a[p]) == len(recs)
        r = c.produce(b, 0, build_batch([(b"after", b"restart", [])]))
        assert (r.error_code, r.base_offset) == (0, 300), (
            "appends after a restart continue at the old log end"
        )
    # topic configs survive
    admin = admin_client(broker.bootstrap)
    try:
        from kafka.admin import ConfigResource, ConfigResourceType

        res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, a)], config_filter="all")
        cfg = res["topic"][a]
        assert cfg["retention.ms"]["value"] == "123456789", cfg.get("retention.ms")
    finally:
        admin.close()


# ------------------------------------------------------------------------------ SIGKILL
class StreamProducer:
    """Sends a numbered stream with acks=all from a background thread until stopped; records
    which (partition, offset) each acknowledged record got."""

    def __init__(self, client: str, bootstrap: str, topic: str, partitions: int):
        self.client, self.bootstrap, self.topic, self.partitions = client, bootstrap, topic, partitions
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.sent: list[tuple[int, bytes, bytes]] = []  # (partition, key, value) in send order
        self.acked: dict[int, tuple[int, int]] = {}  # seq -> (partition, offset)
        self.errors = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.exc: BaseException | None = None

    def record(self, i: int) -> tuple[int, bytes, bytes]:
        return i % self.partitions, f"key-{i}".encode(), f"value-{i}-".encode() + b"z" * (i % 64)

    def _ok(self, i, partition, offset):
        with self.lock:
            self.acked[i] = (partition, offset)

    def _err(self, *_):
        with self.lock:
            self.errors += 1

    def _run(self):
        try:
            (self._run_ck if self.client == "confluent-kafka" else self._run_kp)()
        except BaseException as exc:  # noqa: BLE001 - surfaced by the test
            self.exc = exc

    def _run_ck(self):
        from confluent_kafka import Producer

        p = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "linger.ms": 2,
                "retries": 0,
                "batch.num.messages": 50,
                "message.timeout.ms": 5000,
                "socket.timeout.ms": 3000,
                "reconnect.backoff.max.ms": 200,
                "client.id": "kill-stream-ck",
            }
        )
        i = 0
        while not self.stop_flag.is_set():
            part, key, value = self.record(i)

            def cb(err, msg, i=i):
                if err is None:
                    self._ok(i, msg.partition(), msg.offset())
                else:
                    self._err()

            try:
                p.produce(self.topic, key=key, value=value, partition=part, on_delivery=cb)
            except BufferError:
                p.poll(0.01)
                continue
            with self.lock:
                self.sent.append((part, key, value))
            i += 1
            p.poll(0)
            if i % 200 == 0:
                time.sleep(0.005)  # keep the stream going without flooding memory
        p.purge()
        p.flush(5)

    def _run_kp(self):
        from kafka import KafkaProducer

        p = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            acks="all",
            linger_ms=2,
            retries=0,
            enable_idempotence=False,
            batch_size=4096,
            request_timeout_ms=3000,
            # batches for the dead broker expire within close()'s timeout: kafka-python's close
            # raises from its flush otherwise and never stops its sender thread
            delivery_timeout_ms=5000,
            max_block_ms=3000,
            client_id="kill-stream-kp",
        )
        i = 0
        while not self.stop_flag.is_set():
            part, key, value = self.record(i)
            try:
                f = p.send(self.topic, key=key, value=value, partition=part)
            except Exception:  # noqa: BLE001 - the broker is gone; keep going until told to stop
                self._err()
                time.sleep(0.01)
                continue
            with self.lock:
                self.sent.append((part, key, value))
            f.add_callback(lambda md, i=i: self._ok(i, md.partition, md.offset))
            f.add_errback(self._err)
            i += 1
            if i % 200 == 0:
                time.sleep(0.005)
        p.close(timeout=10)

    def start(self):
        self.thread.start()

    def stop(self):
        self.stop_flag.set()
        self.thread.join(20)
        assert not self.thread.is_alive(), "producer thread did not stop"
        if self.exc:
            raise self.exc

    def acked_count(self) -> int:
        with self.lock:
            return len(self.acked)


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_sigkill_during_acks_all_stream_loses_nothing_acknowledged(broker, client):
    partitions = 3
    topic = unique_name("kill")
    create_topic(broker, topic, partitions)
    stream = StreamProducer(client, broker.bootstrap, topic, partitions)
    stream.start()
    try:
        wait_until(
            lambda: stream.acked_count() >= 1500 or stream.exc, 30, message="1500 acknowledged records"
        )
        assert stream.exc is None, stream.exc
        broker.kill()  # SIGKILL while sends are in flight
        time.sleep(0.3)  # the producer keeps sending into the dead broker for a moment
    finally:
        stream.stop()
    acked = dict(stream.acked)
    sent_per_part: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in range(partitions)}
    for part, key, value in stream.sent:
        sent_per_part[part].append((key, value))
    assert len(acked) >= 1500
    assert len(stream.sent) > len(acked), "the kill did not happen while sends were in flight"

    broker.start()  # same data dir, after an unclean stop

    def verify(appended_to_p0=()):
        with WireClient.to(broker) as c:
            logs = {p: read_partition(c, topic, p) for p in range(partitions)}  # CRCs, contiguity, epochs
        for p, (recs, hw) in logs.items():
            assert hw == len(recs)
            got = [(r.key, r.value) for r in recs]
            if p == 0 and appended_to_p0:
                assert got[-len(appended_to_p0) :] == list(appended_to_p0)
                got = got[: -len(appended_to_p0)]
            # the log is exactly a prefix of what was sent to the partition (no gaps, no strays) ...
            assert got == sent_per_part[p][: len(got)], (
                f"partition {p}: log is not a prefix of the sent stream"
            )
        # ... and holds every acknowledged record at its acknowledged offset
        for i, (p, off) in acked.items():
            part, key, value = stream.record(i)
            recs = logs[p][0]
            assert off < len(recs), f"acknowledged record {i} at {p}/{off} lost (log end {len(recs)})"
            assert (recs[off].key, recs[off].value) == (key, value), f"record at {p}/{off} differs from ack"
        return {p: hw for p, (_, hw) in logs.items()}

    ends = verify()
    # a real client reads the recovered log cleanly too
    consumed = clients.ck_consume(broker.bootstrap, topic, list(range(partitions)), sum(ends.values()))
    assert {p: len(v) for p, v in consumed.items()} == ends
    # appends continue right after the recovered end
    with WireClient.to(broker) as c:
        r = c.produce(topic, 0, build_batch([(b"after", b"kill", [])]))
        assert (r.error_code, r.base_offset) == (0, ends[0])
    # recovery is repeatable: kill again right away and come back to the same state
    broker.kill()
    broker.start()
    ends2 = verify(appended_to_p0=[(b"after", b"kill")])
    assert ends2 == {**ends, 0: ends[0] + 1}
