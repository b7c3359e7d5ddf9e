"""Issue 13, a long-lived data directory damaged one file at a time, then restarted: every case
ends in a clear, logged decision and no acknowledged record is silently lost or hidden."""

from __future__ import annotations

import pytest

from tests.acceptance.test_compaction import consume_all
from tests.support.broker import BrokerStartError
from tests.support.helpers import create_topic, unique_name

pytestmark = pytest.mark.timeout(90)


def produce(bootstrap, topic, values, **extra):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **extra})
    errors = []
    for v in values:
        p.produce(topic, value=v, partition=0, on_delivery=lambda e, m: e and errors.append(e))
        p.flush(10)
    assert not errors and p.flush(10) == 0, errors


def test_deleted_producer_id_counter_never_reuses_ids(broker_factory):
    broker = broker_factory()
    topic = unique_name("pids")
    create_topic(broker, topic, 1)
    produce(broker.bootstrap, topic, [b"old-%d" % i for i in range(5)], **{"enable.idempotence": True})
    broker.stop()
    (broker.data_dir / "producer_ids").unlink()
    broker.start()
    produce(broker.bootstrap, topic, [b"new-%d" % i for i in range(5)], **{"enable.idempotence": True})
    values = [v for _, _, v in consume_all(broker.bootstrap, topic)]
    assert values == [b"old-%d" % i for i in range(5)] + [b"new-%d" % i for i in range(5)]
    assert "producer id counter was behind" in broker.log_text()


def test_deleted_topic_registry_file_is_rebuilt_not_data_deleted(broker_factory):
    broker = broker_factory()
    topic = unique_name("registry")
    create_topic(broker, topic, 2)
    produce(broker.bootstrap, topic, [b"v%d" % i for i in range(10)])
    broker.stop()
    (broker.data_dir / "topics" / f"{topic}.json").unlink()
    broker.start()
    assert [v for _, _, v in consume_all(broker.bootstrap, topic)] == [b"v%d" % i for i in range(10)]
    assert "rebuilt the topic from them" in broker.log_text()
    assert (broker.data_dir / "topics" / f"{topic}.json").exists()


def test_deleted_transaction_index_rebuilt_on_a_clean_start(broker_factory):
    from confluent_kafka import Producer

    broker = broker_factory()
    topic = unique_name("txnindex")
    create_topic(broker, topic, 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "t-" + topic})
    p.init_transactions(10)
    for commit in (False, True, False):
        p.begin_transaction()
        for i in range(5):
            p.produce(topic, value=b"%s-%d" % (b"c" if commit else b"a", i), partition=0)
        p.flush(10)
        (p.commit_transaction if commit else p.abort_transaction)(10)
    broker.stop()
    doomed = list((broker.data_dir / f"{topic}-0").glob("*.txnindex"))
    assert doomed
    for f in doomed:
        f.unlink()
    broker.start()
    assert [v for _, _, v in consume_all(broker.bootstrap, topic, "read_committed")] == [
        b"c-%d" % i for i in range(5)
    ]


def test_flipped_byte_in_consumer_offsets_on_a_clean_start(broker_factory):
    from confluent_kafka import Consumer, TopicPartition

    broker = broker_factory()
    topic = unique_name("flip")
    create_topic(broker, topic, 1)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g1-" + topic})
    c.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    c.close()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g2-" + topic})
    c.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
    c.close()
    broker.stop()
    (seg,) = [f for f in (broker.data_dir / "__consumer_offsets-0").glob("*.log") if f.stat().st_size]
    data = bytearray(seg.read_bytes())
    data[70] ^= 0xFF  # inside the first batch's records
    seg.write_bytes(bytes(data))
    broker.start()
    assert "skipped a damaged batch of an internal topic" in broker.log_text()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g2-" + topic})
    (tp,) = c.committed([TopicPartition(topic, 0)], timeout=10)
    c.close()
    assert tp.offset == 7  # the intact commit survives


def test_garbage_checkpoint_and_meta_properties(broker_factory):
    broker = broker_factory()
    topic = unique_name("garbage")
    create_topic(broker, topic, 1)
    produce(broker.bootstrap, topic, [b"x"] * 3)
    broker.stop()
    (broker.data_dir / "recovery-point-offset-checkpoint").write_bytes(b"\xff\xfe\x00\x01junk")
    broker.start()
    assert "offset checkpoint file is damaged" in broker.log_text()
    assert len(consume_all(broker.bootstrap, topic)) == 3
    broker.stop()
    (broker.data_dir / "meta.properties").write_bytes(b"\xff\xfe\x00\x01junk")
    with pytest.raises(BrokerStartError):
        broker.start()
    text = broker.log_text()
    assert "meta.properties is damaged" in text and "Traceback" not in text


def test_segment_missing_in_the_middle_is_reported(broker_factory):
    broker = broker_factory({"log.segment.bytes": 500})
    topic = unique_name("gap")
    create_topic(broker, topic, 1)
    produce(broker.bootstrap, topic, [b"%03d" % i + b"z" * 150 for i in range(12)])
    broker.stop()
    logs = sorted((broker.data_dir / f"{topic}-0").glob("*.log"))
    assert len(logs) >= 4
    lost = logs[1]
    first_lost = int(lost.name[:20])
    lost.unlink()
    broker.start()
    assert "records are missing between two segments" in broker.log_text()
    assert f'"missing_from_offset": {first_lost}' in broker.log_text()
    got = [o for o, _, _ in consume_all(broker.bootstrap, topic)]
    assert got[0] == 0 and got[-1] == 11 and first_lost not in got


AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}


@pytest.mark.parametrize(
    "damaged,overrides,advice",
    [
        ("{topic}-0/cleaner/swap", {}, "Restore the partition directory from a backup, or move"),
        ("security/acls.json", AUTHORIZER, "restore it from a backup, or move it away"),
        ("security/scram-credentials.json", {}, "restore it from a backup, or move it away"),
    ],
    ids=["cleaner-swap", "acls", "scram-credentials"],
)
@pytest.mark.parametrize(
    "garbage", [b"\xff\xfe\x00\x01junk", b'{"not": "what it should be"}'], ids=["bytes", "json"]
)
def test_damaged_metadata_file_stops_the_start_with_one_clear_line(
    broker_factory, damaged, overrides, advice, garbage
):
    """Issue 21: garbage in cleaner/swap, acls.json or scram-credentials.json stopped the start
    with a bare UnicodeDecodeError traceback; now: exit 1 and one `cannot start` line naming the
    file, what is wrong with it and what to do."""
    broker = broker_factory(overrides)
    topic = unique_name("damaged")
    create_topic(broker, topic, 1)
    produce(broker.bootstrap, topic, [b"x"])
    broker.stop()
    path = broker.data_dir / damaged.format(topic=topic)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(garbage)
    since = broker.log_size()
    with pytest.raises(BrokerStartError) as failed:
        broker.start()
    assert broker.proc.returncode == 1
    text = broker.log_since(since)
    assert "Traceback" not in text
    (line,) = [entry for entry in text.splitlines() if "cannot start" in entry]
    assert f"{path} is damaged" in line and advice in line, line
    assert f"minibroker did not start: cannot start: KAFKA_STORAGE_ERROR: {path} is damaged" in str(
        failed.value
    )
