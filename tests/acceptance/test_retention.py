"""Issue 13, retention and DeleteRecords with real clients against a broker process: segments
deleted by retention.bytes / retention.ms, the log start offset seen by ListOffsets earliest,
Fetch (OFFSET_OUT_OF_RANGE) and consumers with auto.offset.reset, DeleteRecords through
confluent-kafka's and kafka-python's admin clients, persistence across restarts, and an
idempotent producer whose old batches were deleted."""

from __future__ import annotations

import time

import pytest

from tests.support.helpers import (
    admin_client,
    create_topic,
    unique_name,
    wait_for_topic,
    wait_until,
)
from tests.support.wire import WireClient

pytestmark = pytest.mark.timeout(90)

FAST_RETENTION = {"log.retention.check.interval.ms": 200}


def ck_produce_values(bootstrap, topic, values, *, timestamp=None, **extra):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **extra})
    errors = []
    for v in values:
        kw = {"timestamp": timestamp} if timestamp is not None else {}
        p.produce(topic, value=v, partition=0, on_delivery=lambda e, m: e and errors.append(e), **kw)
        p.flush(10)  # one batch per record: many small segments
    assert p.flush(10) == 0 and not errors, errors
    return p


def watermarks(bootstrap, topic, partition=0):
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm-" + topic})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        c.close()


def consume_from_zero(bootstrap, topic, expected):
    """kafka-python consumer positioned at offset 0 with auto.offset.reset=earliest: it gets
    OFFSET_OUT_OF_RANGE and must follow the log start offset."""
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    tp = TopicPartition(topic, 0)
    try:
        c.assign([tp])
        c.seek(tp, 0)
        got = []
        deadline = time.monotonic() + 20
        while len(got) < expected and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=300).values():
                got.extend((r.offset, r.value) for r in recs)
        return got
    finally:
        c.close()


def test_retention_bytes_deletes_old_segments_and_consumers_follow(broker_factory):
    broker = broker_factory({**FAST_RETENTION, "log.segment.bytes": 1000})
    topic = unique_name("ret-bytes")
    create_topic(broker, topic, 1, {"retention.bytes": 3000})
    ck_produce_values(broker.bootstrap, topic, [b"%04d" % i + b"x" * 200 for i in range(40)])
    seg_dir = broker.data_dir / f"{topic}-0"

    def log_bytes():
        return sum(p.stat().st_size for p in seg_dir.glob("*.log"))

    # checks may already have run during the produce; wait for the one after it
    wait_until(
        lambda: log_bytes() < 3000 + 1000,
        15,
        message="retention to bring the log under retention.bytes + one segment",
    )
    low, high = watermarks(broker.bootstrap, topic)
    assert high == 40 and 0 < low < 40
    with WireClient.to(broker) as c:
        _, part = c.fetch(topic, 0, 0)
        assert part.error_code == 1  # OFFSET_OUT_OF_RANGE (Kafka gives no offsets with an error)
    got = consume_from_zero(broker.bootstrap, topic, 40 - low)
    assert [o for o, _ in got] == list(range(low, 40))
    assert got[0][1].startswith(b"%04d" % low)
    assert 3000 <= log_bytes() < 3000 + 1000


def test_retention_ms_deletes_by_record_timestamp(broker_factory):
    broker = broker_factory({**FAST_RETENTION, "log.segment.bytes": 500})
    topic = unique_name("ret-ms")
    create_topic(broker, topic, 1, {"retention.ms": 3_600_000})
    old = int(time.time() * 1000) - 2 * 3_600_000
    ck_produce_values(broker.bootstrap, topic, [b"old" + b"x" * 200] * 10, timestamp=old)
    ck_produce_values(broker.bootstrap, topic, [b"new" + b"x" * 200] * 5)
    low, high = wait_until(
        lambda: (wm := watermarks(broker.bootstrap, topic))[0] >= 9 and wm, 15, message="old segments deleted"
    )
    assert high == 15 and low <= 10  # a segment holding a fresh record is kept whole
    got = consume_from_zero(broker.bootstrap, topic, 15 - low)
    assert sum(v.startswith(b"new") for _, v in got) == 5


def test_delete_records_with_both_admin_clients_persists_across_restart(broker_factory):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    broker = broker_factory({**FAST_RETENTION, "log.segment.bytes": 1000})
    topic = unique_name("delrec")
    create_topic(broker, topic, 2, {})
    ck_produce_values(broker.bootstrap, topic, [b"v%d" % i + b"x" * 100 for i in range(20)])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.delete_records([TopicPartition(topic, 0, 7)])
    (result,) = [f.result(10) for f in futures.values()]
    assert result.low_watermark == 7
    # above the high watermark: OFFSET_OUT_OF_RANGE
    futures = admin.delete_records([TopicPartition(topic, 0, 100)])
    with pytest.raises(Exception, match="OFFSET_OUT_OF_RANGE|out of range"):
        [f.result(10) for f in futures.values()]
    assert watermarks(broker.bootstrap, topic) == (7, 20)
    got = consume_from_zero(broker.bootstrap, topic, 13)
    assert [o for o, _ in got] == list(range(7, 20))

    from kafka import TopicPartition as KTP

    kp = admin_client(broker.bootstrap)
    try:
        out = kp.delete_records({KTP(topic, 0): 12})
        assert out[KTP(topic, 0)]["low_watermark"] == 12
    finally:
        kp.close()
    # the retention check removes the whole segments below the new start
    seg_dir = broker.data_dir / f"{topic}-0"
    wait_until(
        lambda: min(int(p.name[:20]) for p in seg_dir.glob("*.log")) > 0,
        10,
        message="segments below the log start deleted",
    )
    broker.restart()
    assert watermarks(broker.bootstrap, topic) == (12, 20)
    broker.restart(kill=True)
    assert watermarks(broker.bootstrap, topic) == (12, 20)
    assert watermarks(broker.bootstrap, topic, 1) == (0, 0)


def test_delete_records_refused_on_internal_and_compacted_topics(broker_factory):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    broker = broker_factory()
    topic = unique_name("compacted")
    create_topic(broker, topic, 1, {"cleanup.policy": "compact"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.delete_records([TopicPartition(topic, 0, 0)])
    with pytest.raises(Exception, match="POLICY_VIOLATION"):
        [f.result(10) for f in futures.values()]
    from kafka import TopicPartition as KTP
    from kafka.errors import InvalidTopicError
    from kafka.structs import OffsetAndMetadata

    kp = admin_client(broker.bootstrap)
    try:
        kp.alter_group_offsets(
            "g-" + topic, {KTP(topic, 0): OffsetAndMetadata(0, "", -1)}
        )  # creates __consumer_offsets
        wait_for_topic(broker, "__consumer_offsets", 1)
        with pytest.raises(InvalidTopicError):
            kp.delete_records({KTP("__consumer_offsets", 0): 0})
    finally:
        kp.close()


def test_idempotent_producer_keeps_working_after_its_batches_are_deleted(broker_factory):
    broker = broker_factory({**FAST_RETENTION, "log.segment.bytes": 500})
    topic = unique_name("ret-idem")
    create_topic(broker, topic, 1, {"retention.ms": 3_600_000})
    old = int(time.time() * 1000) - 2 * 3_600_000
    p = ck_produce_values(
        broker.bootstrap, topic, [b"old" + b"y" * 200] * 6, timestamp=old, **{"enable.idempotence": True}
    )
    wait_until(
        lambda: watermarks(broker.bootstrap, topic)[0] == 6,
        15,
        message="every old segment deleted (the log rolls)",
    )
    errors = []
    for _ in range(5):
        p.produce(topic, value=b"new", partition=0, on_delivery=lambda e, m: e and errors.append(e))
        p.flush(10)
    assert not errors, errors
    assert watermarks(broker.bootstrap, topic) == (6, 11)
