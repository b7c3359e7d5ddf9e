"""Issue 13, log compaction with real clients against a broker process: a keyed topic with
updates and tombstones (latest value per key unchanged, offsets unchanged), keyless records
refused, transactional producers with aborts read back read_committed and read_uncommitted
before and after, a SIGKILL in the middle of a cleaner swap, and internal topics compacted."""

from __future__ import annotations

import time

import pytest

from tests.support.helpers import create_topic, unique_name, wait_until
from tests.support.wire import WireClient, build_batch

pytestmark = pytest.mark.timeout(120)

# small segments from the broker default: a topic may not ask for less than 1 MiB (Kafka 4)
FAST_CLEANER = {"log.cleaner.backoff.ms": 200, "log.segment.bytes": 2000}
COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.01}


def consume_all(bootstrap, topic, isolation="read_uncommitted"):
    """(offset, key, value) of every record from the start to the end, kafka-python."""
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        isolation_level=isolation,
    )
    tp = TopicPartition(topic, 0)
    try:
        c.assign([tp])
        end = c.end_offsets([tp])[tp]
        out = []
        deadline = time.monotonic() + 20
        while c.position(tp) < end and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=300).values():
                out.extend((r.offset, r.key, r.value) for r in recs)
        assert c.position(tp) >= end, "consumer did not reach the end"
        return out
    finally:
        c.close()


def latest(records):
    view = {}
    for offset, key, value in records:
        view[key] = (offset, value)
    return view


def cleaned(broker, topic, since=0, timeout=20):
    return broker.wait_for_log(rf'"cleaned log".*"{topic}"|"{topic}".*"cleaned log"', since, timeout)


def test_keyed_topic_compacts_to_latest_value_per_key(broker_factory):
    from confluent_kafka import Producer

    broker = broker_factory(FAST_CLEANER)
    topic = unique_name("compact")
    create_topic(broker, topic, 1, COMPACT)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    produced = []  # (offset, key, value) as acknowledged

    def send(key, value):
        p.produce(
            topic,
            key=key,
            value=value,
            partition=0,
            on_delivery=lambda e, m: produced.append((m.offset(), m.key(), m.value())),
        )

    for rnd in range(30):
        for k in range(10):
            send(b"key-%d" % k, b"v%d-%d" % (k, rnd) + b"x" * 50)
        p.flush(10)
    for k in range(3):
        send(b"key-%d" % k, None)  # tombstones
    p.flush(10)
    mark = broker.log_size()
    for k in range(20):  # more data so the tombstones' segment becomes cleanable
        send(b"filler-%d" % k, b"f" * 100)
        p.flush(10)
    cleaned(broker, topic, mark)
    wait_until(
        lambda: (
            broker.log_text().count(f'"{topic}"')
            and len(consume_all(broker.bootstrap, topic)) < len(produced) / 5
        ),
        20,
        message="the tombstones' segment cleaned",
    )
    after = consume_all(broker.bootstrap, topic)
    assert len(produced) == 323
    assert latest(after) == latest(produced)  # same offsets, same values, tombstones kept
    assert set(after) <= set(produced)
    assert sum(p.stat().st_size for p in (broker.data_dir / f"{topic}-0").glob("*.log")) < 12_000


def test_compacted_topic_refuses_keyless_records(broker_factory):
    from confluent_kafka import KafkaError, Producer

    broker = broker_factory()
    topic = unique_name("compact-keyless")
    create_topic(broker, topic, 1, {"cleanup.policy": "compact"})
    with WireClient.to(broker) as c:
        r = c.produce(
            topic, 0, build_batch([(b"k", b"ok", []), (None, b"no key", []), (None, b"no key either", [])])
        )
    assert r.error_code == 87  # INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in r.record_errors] == [
        (i, f"Compacted topic cannot accept message without key in topic partition {topic}-0") for i in (1, 2)
    ]
    assert r.error_message.endswith(  # Kafka prints the Java list of RecordError
        f"[RecordError(batchIndex=1, message='Compacted topic cannot accept message without key in "
        f"topic partition {topic}-0'), RecordError(batchIndex=2, message='Compacted topic cannot "
        f"accept message without key in topic partition {topic}-0')]"
    )
    errors = []
    p = Producer({"bootstrap.servers": broker.bootstrap, "retries": 0})
    p.produce(topic, value=b"no key", partition=0, on_delivery=lambda e, m: errors.append(e))
    p.flush(10)  # its own batch: Kafka refuses a whole batch with one keyless record
    p.produce(topic, key=b"k", value=b"keyed", partition=0, on_delivery=lambda e, m: errors.append(e))
    p.flush(10)
    assert errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD
    assert errors[1] is None
    assert [(k, v) for _, k, v in consume_all(broker.bootstrap, topic)] == [(b"k", b"keyed")]


def test_transactional_topic_compaction_keeps_what_readers_saw(broker_factory):
    from confluent_kafka import Producer

    broker = broker_factory(FAST_CLEANER)
    topic = unique_name("compact-txn")
    create_topic(broker, topic, 1, COMPACT)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-" + topic, "linger.ms": 0})
    p.init_transactions(10)
    for rnd in range(25):
        p.begin_transaction()
        for k in range(4):
            p.produce(topic, key=b"k%d" % k, value=b"r%d-%d" % (rnd, k) + b"z" * 40, partition=0)
        p.flush(10)
        if rnd % 3 == 2:
            p.abort_transaction(10)
        else:
            p.commit_transaction(10)
    committed_before = consume_all(broker.bootstrap, topic, "read_committed")
    uncommitted_before = consume_all(broker.bootstrap, topic)
    for rnd in range(12):  # more than a segment: the last aborted data becomes cleanable
        p.begin_transaction()
        p.produce(topic, key=b"other%d" % rnd, value=b"o" * 300, partition=0)
        p.commit_transaction(10)
    aborted_values = {v for _, _, v in uncommitted_before} - {v for _, _, v in committed_before}
    assert aborted_values
    wait_until(
        lambda: not aborted_values & {v for _, _, v in consume_all(broker.bootstrap, topic)},
        30,
        message="every aborted record cleaned away",
    )
    committed_after = consume_all(broker.bootstrap, topic, "read_committed")
    uncommitted_after = consume_all(broker.bootstrap, topic)
    view = latest(committed_after)
    for key, value in latest(committed_before).items():
        assert view[key] == value
    assert len(uncommitted_after) < len(uncommitted_before)


def test_sigkill_in_the_middle_of_a_cleaner_swap_recovers(broker_factory):
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    broker = broker_factory({**FAST_CLEANER, "minibroker.test.fault": "cleaner.mid_swap"})
    topic = unique_name("compact-crash")
    # created with cleanup.policy=delete: the cleaner may not start (and crash) before every
    # record is acknowledged; compaction is switched on once all of them are
    create_topic(broker, topic, 1, {**COMPACT, "cleanup.policy": "delete"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for rnd in range(40):
        for k in range(5):
            p.produce(topic, key=b"k%d" % k, value=b"%d" % rnd + b"q" * 60, partition=0)
        assert p.flush(10) == 0
    res = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.incremental_alter_configs([res])[res].result(10)
    wait_until(lambda: broker.proc.poll() is not None, 30, message="the fault hook to exit")
    assert broker.proc.returncode == -9  # SIGKILL
    expected = {b"k%d" % k: b"39" + b"q" * 60 for k in range(5)}
    broker.overrides.pop("minibroker.test.fault")
    broker.proc = None
    broker.start()
    assert "completed a log-cleaner swap" in broker.log_text()
    got = consume_all(broker.bootstrap, topic)
    assert {k: v for k, (_, v) in latest(got).items()} == expected
    offsets = [o for o, _, _ in got]
    assert offsets == sorted(offsets) and offsets[-1] == 199


def test_internal_topics_are_compacted(broker_factory):
    from confluent_kafka import Consumer, Producer, TopicPartition

    broker = broker_factory(
        {**FAST_CLEANER, "offsets.topic.segment.bytes": 4096, "transaction.state.log.segment.bytes": 4096}
    )
    topic = unique_name("internal")
    create_topic(broker, topic, 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-" + topic})
    p.init_transactions(10)
    for _ in range(150):
        p.begin_transaction()
        p.produce(topic, value=b"x", partition=0)
        p.commit_transaction(10)
    c = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "g-" + topic, "enable.auto.commit": False}
    )
    for i in range(300):
        c.commit(offsets=[TopicPartition(topic, 0, i)], asynchronous=False)
    c.close()

    def sizes():
        return {
            name: sum(f.stat().st_size for f in (broker.data_dir / f"{name}-0").glob("*.log"))
            for name in ("__transaction_state", "__consumer_offsets")
        }

    wait_until(
        lambda: sizes()["__transaction_state"] < 40_000 and sizes()["__consumer_offsets"] < 20_000,
        30,
        message=f"internal topics compacted ({sizes()})",
    )
    broker.restart(kill=True)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-" + topic})
    (tp,) = c.committed([TopicPartition(topic, 0)], timeout=10)
    c.close()
    assert tp.offset == 299
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-" + topic})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce(topic, value=b"y", partition=0)
    p.commit_transaction(10)
