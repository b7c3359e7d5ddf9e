"""Issue 13: the periodic recovery-point checkpoint (log.flush.offset.checkpoint.interval.ms).

A broker writes each log's recovery point and a producer-state snapshot at it on that period,
so a SIGKILL start checks and replays only what was appended after the last checkpoint (the
broker's own "recovered partition log" event says from where and how many bytes)."""

from __future__ import annotations

import json

import pytest

from tests.support.helpers import create_topic, unique_name, wait_until
from tests.support.wire import WireClient, build_batch

pytestmark = pytest.mark.timeout(60)


def recovery_points(broker) -> dict[tuple[str, int], int]:
    lines = (broker.data_dir / "recovery-point-offset-checkpoint").read_text().splitlines()
    out = {}
    for line in lines[2:]:
        topic, partition, offset = line.split()
        out[(topic, int(partition))] = int(offset)
    return out


def recovery_events(broker, since: int, topic: str) -> list[dict]:
    """The broker's "recovered partition log" events for ``topic`` logged after ``since``."""
    events = [json.loads(line) for line in broker.log_since(since).splitlines() if line.startswith("{")]
    return [e for e in events if e.get("event") == "recovered partition log" and e.get("topic") == topic]


def test_sigkill_start_checks_only_what_follows_the_last_checkpoint(broker_factory):
    broker = broker_factory({"log.flush.offset.checkpoint.interval.ms": 200})
    topic = unique_name("rp-checkpoint")
    create_topic(broker, topic, 1)
    one = build_batch([(b"k", b"v" * 100, [])])
    with WireClient.to(broker) as c:
        for _ in range(20):
            assert c.produce(topic, 0, one).error_code == 0
    wait_until(lambda: recovery_points(broker).get((topic, 0)) == 20, 10, message="recovery point 20")
    snapshot = broker.data_dir / f"{topic}-0" / f"{20:020d}.snapshot"
    wait_until(snapshot.exists, 5, message="a producer snapshot at the checkpointed offset")
    with WireClient.to(broker) as c:
        for _ in range(5):
            assert c.produce(topic, 0, one).error_code == 0
    since = broker.log_size()
    broker.restart(kill=True)
    recovered = recovery_events(broker, since, topic)
    if recovered:
        assert len(recovered) == 1, recovered
        event = recovered[0]
        assert event["recovery_point"] >= 20
        assert event["bytes_checked"] <= 5 * len(one)
        assert event["batches_replayed"] <= 5
        assert event["log_end_offset"] == 25
    else:
        # a checkpoint ran between the last send and the kill and covered all 25 records: the
        # log ends at its recovery point, so the start checked nothing (and logged no recovery)
        assert recovery_points(broker)[(topic, 0)] == 25
    with WireClient.to(broker) as c:
        assert c.list_offsets(topic, 0, -1).offset == 25


def test_sigkill_start_after_a_checkpoint_that_caught_up_checks_nothing(broker_factory):
    """Nothing appended since the last checkpoint: the start after a SIGKILL opens the log as a
    clean start does (no recovery logged) and serves every record and producer sequence."""
    broker = broker_factory({"log.flush.offset.checkpoint.interval.ms": 200})
    topic = unique_name("rp-caught-up")
    create_topic(broker, topic, 1)
    with WireClient.to(broker) as c:
        for seq in range(20):
            batch = build_batch([(b"k", b"v" * 100, [])], producer_id=1, producer_epoch=0, base_sequence=seq)
            assert c.produce(topic, 0, batch).error_code == 0
    wait_until(lambda: recovery_points(broker).get((topic, 0)) == 20, 10, message="recovery point 20")
    since = broker.log_size()
    broker.restart(kill=True)
    assert recovery_events(broker, since, topic) == []
    with WireClient.to(broker) as c:
        assert c.list_offsets(topic, 0, -1).offset == 20
        retry = build_batch([(b"k", b"v" * 100, [])], producer_id=1, producer_epoch=0, base_sequence=19)
        answer = c.produce(topic, 0, retry)  # a resent batch is still known as a duplicate
        assert answer.error_code == 0 and answer.base_offset == 19
        assert c.list_offsets(topic, 0, -1).offset == 20
