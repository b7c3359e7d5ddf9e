"""Issue 25, the KIP-848 records of __consumer_offsets against Apache Kafka 4.4 itself:

- the records a Kafka 4.4 broker (conformance/reference_kafka.py) writes for a consumer of the
  consumer group protocol (Kafka's console consumer with group.protocol=consumer) decode with
  coordinator/consumer_group_records.py and encode back to the same key and value bytes, and the
  metadata hash it stores is the one coordinator/metadata_hash.py computes;
- Kafka's kafka-dump-log (DumpLogSegments --offsets-decoder) reads a segment minibroker's group
  metadata manager wrote with every record type, and a load of that segment gives the records
  back."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from minibroker.common.clock import SYSTEM_CLOCK
from minibroker.coordinator import consumer_group_records as cgr
from minibroker.coordinator.group_metadata_manager import (
    ClassicGroupTombstone,
    GroupMetadataManager,
    _loaded_records,
)
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.group_store import LogOffsetsStore
from minibroker.coordinator.metadata_hash import group_hash, topic_hash
from minibroker.protocol.records import iter_records
from minibroker.storage.log_manager import LogManager
from minibroker.storage.segment import ScanStop, scan_batches

from conformance.reference_kafka import ReferenceKafka, tools_jars
from tests.support.java import dump_log_segments
from tests.unit.test_consumer_group_records import RECORDS

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)"),
]

TOPIC = "rx-a"


def _segment_records(path: str) -> list[tuple[bytes, bytes | None]]:
    out = []
    fd = os.open(path, os.O_RDONLY)
    try:
        for _, header, data in scan_batches(fd, 0, os.fstat(fd).st_size, ScanStop(), with_bytes=True):
            if header.is_control:
                continue
            assert data is not None
            out.extend((rec.key, rec.value) for rec in iter_records(bytes(data)) if rec.key is not None)
    finally:
        os.close(fd)
    return out


def _console_consumer(bootstrap: str, group: str, *subscription: str) -> None:
    """Kafka's console consumer (kafka-console-consumer.sh) with the consumer group protocol:
    it joins, reads the topic's 4 records, commits and leaves the group."""
    done = subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            f"{tools_jars()}/*",
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server",
            bootstrap,
            *subscription,
            "--group",
            group,
            "--from-beginning",
            "--max-messages",
            "4",
            "--timeout-ms",
            "60000",
            "--consumer-property",
            "group.protocol=consumer",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Processed a total of 4 messages" in done.stderr


def test_reference_records_decode_and_encode_to_their_bytes(tmp_path):
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    kafka = ReferenceKafka(tmp_path, {})
    kafka.start()
    try:
        bootstrap = f"127.0.0.1:{kafka.port}"
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic(TOPIC, 2, 1)])
        finally:
            admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(4):
            producer.send(TOPIC, b"v%d" % i, partition=i % 2)
        producer.flush(30)
        producer.close()
        _console_consumer(bootstrap, "k848-topic", "--topic", TOPIC)
        _console_consumer(bootstrap, "k848-pattern", "--include", "rx-.*")
    finally:
        kafka.stop()

    decoded = []
    for path in sorted(glob.glob(str(tmp_path / "kafka-data" / "__consumer_offsets-*" / "*.log"))):
        for key, value in _segment_records(path):
            record = cgr.decode(key, value)
            if record is None:
                continue  # offsets and classic groups: coordinator/group_records.py's
            assert cgr.encode(record) == (key, value), record
            decoded.append(record)
    kinds = {type(r).__name__ for r in decoded}
    assert {"CgEpoch", "CgMember", "CgTargetMeta", "CgTarget", "CgCurrent"} <= kinds, kinds
    assert any(r.value is None for r in decoded if isinstance(r, cgr.CgCurrent))  # the leave

    # the stored metadata hash: the one topic's id, name and two partitions (no racks)
    topic_ids = {tp.topic_id for r in decoded if isinstance(r, cgr.CgTarget) and r.value for tp in r.value}
    assert len(topic_ids) == 1
    expected = group_hash({TOPIC: topic_hash(topic_ids.pop(), TOPIC, 2)})
    hashes = {r.value.metadata_hash for r in decoded if isinstance(r, cgr.CgEpoch) and r.value}
    assert expected in hashes and hashes <= {expected, 0}


def test_kafka_dump_log_reads_what_minibroker_writes(tmp_path):
    logs = LogManager(str(tmp_path), {}, clock=SYSTEM_CLOCK)
    logs.open()
    store = LogOffsetsStore(logs, 1, clock=SYSTEM_CLOCK)
    settings = GroupSettings.from_config({"offsets.topic.num.partitions": 1})
    manager = GroupMetadataManager(settings, store=store, topics=logs, clock=SYSTEM_CLOCK)
    written = [*RECORDS, ClassicGroupTombstone("g")]
    manager.write(written)
    assert [len(b.records) for b in store.batches(0)] == [len(written)]  # one group: one batch
    assert list(_loaded_records(next(iter(store.batches(0))), {})) == written  # what a load replays
    logs.close()

    stdout, lines = dump_log_segments(Path(tmp_path) / "__consumer_offsets-0", "--offsets-decoder")
    assert len(lines) == len(written), stdout[-3000:]
    assert not [line for line in lines if "payload: {" not in line and "payload: <DELETE>" not in line]
    for record_type in (3, 4, 5, 6, 7, 8, 16, 2):
        assert f'key: {{"type":"{record_type}"' in stdout, record_type
    assert '"metadataHash":-123456789' in stdout
    assert '"assignmentEpochs":[3]' in stdout
    assert '"classicMemberMetadata":{"sessionTimeoutMs":10000' in stdout
