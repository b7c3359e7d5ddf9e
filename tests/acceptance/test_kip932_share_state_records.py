"""Issue 26, the __share_group_state records against Apache Kafka itself: Kafka's kafka-dump-log
(DumpLogSegments --share-group-state-decoder) reads a segment minibroker's share coordinator
wrote (snapshots, updates with and without DeliveryCompleteCount, a tombstone), and a load of it
gives the same state back."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
from minibroker.common.clock import ManualClock
from minibroker.coordinator.internal_topic import InternalTopic
from minibroker.coordinator.share_coordinator import (
    SHARE_STATE_TOPIC,
    SHARE_STATE_TOPIC_CONFIGS,
    ShareCoordinator,
    ShareCoordinatorSettings,
)
from minibroker.coordinator.share_types import SharePartitionKey, StateBatch, WriteStateRequest
from minibroker.storage.log_manager import LogManager

from tests.support.java import dump_log_segments
from tests.unit.coordinator_fakes import run_now

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)"),
]


def _coordinator(logs: LogManager, clock: ManualClock) -> ShareCoordinator:
    store = InternalTopic(
        logs,
        SHARE_STATE_TOPIC,
        1,
        "share.coordinator.state.topic.segment.bytes",
        clock,
        topic_configs=SHARE_STATE_TOPIC_CONFIGS,
    )
    return ShareCoordinator(
        ShareCoordinatorSettings(num_partitions=1, snapshot_update_records_per_snapshot=2),
        store=store,
        clock=clock,
    )


def test_kafka_dump_log_reads_what_the_share_coordinator_writes(tmp_path):
    clock = ManualClock()
    logs = LogManager(str(tmp_path), {}, clock=clock)
    logs.open()
    topic_id = logs.create_topic("t", 2).topic_id
    sc = _coordinator(logs, clock)
    a, b = SharePartitionKey("sg", topic_id, 0), SharePartitionKey("sg", topic_id, 1)
    assert run_now(sc, sc.initialize_state(a, 0, -1)) == 0  # snapshot, count -1 left out
    assert run_now(sc, sc.initialize_state(b, 1, 5)) == 0  # snapshot, count 0 written
    assert run_now(sc, sc.read_state(a, 2)).error_code == 0  # update: the leader epoch
    for i, count in enumerate((3, 5)):  # an update, then a snapshot (two updates per snapshot)
        request = WriteStateRequest(a, 0, 2, 0, count, (StateBatch(i * 2, i * 2 + 1, 2 + 2 * i, 1),))
        assert run_now(sc, sc.write_state(request)) == 0
    assert run_now(sc, sc.delete_state([b])) == 0  # tombstone
    expected = dict(sc.states)
    logs.close()

    stdout, lines = dump_log_segments(
        Path(tmp_path) / f"{SHARE_STATE_TOPIC}-0", "--share-group-state-decoder"
    )
    assert len(lines) == 6, stdout[-3000:]
    decoded = [_record(line) for line in lines]
    assert [(key["type"], value is None) for key, value in decoded] == [
        ("0", False),
        ("0", False),
        ("1", False),
        ("1", False),
        ("0", False),
        ("0", True),
    ]
    first_key, first = decoded[0]
    assert first_key["data"] == {"groupId": "sg", "topicId": _kafka_uuid(topic_id), "partition": 0}
    assert first["data"]["startOffset"] == -1 and "deliveryCompleteCount" not in first["data"]
    assert decoded[1][1]["data"]["deliveryCompleteCount"] == 0 and decoded[1][1]["data"]["stateEpoch"] == 1
    assert decoded[2][1]["data"]["leaderEpoch"] == 2 and decoded[2][1]["data"]["stateBatches"] == []
    assert decoded[3][1]["data"]["stateBatches"] == [
        {"firstOffset": 0, "lastOffset": 1, "deliveryState": 2, "deliveryCount": 1}
    ]
    snapshot = decoded[4][1]["data"]
    assert snapshot["snapshotEpoch"] == 1 and snapshot["deliveryCompleteCount"] == 5
    assert snapshot["stateBatches"] == [
        {"firstOffset": 0, "lastOffset": 1, "deliveryState": 2, "deliveryCount": 1},
        {"firstOffset": 2, "lastOffset": 3, "deliveryState": 4, "deliveryCount": 1},
    ]

    logs = LogManager(str(tmp_path), {}, clock=clock)
    logs.open()
    loaded = _coordinator(logs, clock)
    loaded.load()
    assert loaded.states == expected
    logs.close()


def _record(line: str) -> tuple[dict, dict | None]:
    """The key and payload JSON of one DumpLogSegments record line."""
    key_text = line.split(" key: ", 1)[1].split(" payload: ", 1)[0]
    payload = line.split(" payload: ", 1)[1]
    return json.loads(key_text), None if payload.startswith("<DELETE>") else json.loads(payload)


def _kafka_uuid(topic_id) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")
