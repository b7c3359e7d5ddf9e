"""storage.log_manager.LogManager: identity, topic registry, configs, clean/unclean restarts."""

import json
import os
import re
import uuid

import pytest
import structlog
from minibroker.common.clock import SYSTEM_CLOCK
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records import build_batch
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log_manager import (
    CLEAN_SHUTDOWN_FILE,
    RECOVERY_POINT_FILE,
    LogManager,
)

from tests.support.storage import crash

pytestmark = pytest.mark.timeout(10)


def manager(path, **config) -> LogManager:
    m = LogManager(str(path), config, clock=SYSTEM_CLOCK)
    m.open()
    return m


def batch(n=1) -> bytes:
    return build_batch([(b"k", b"v", [])] * n, timestamp_ms=1000)


def test_meta_properties_cluster_id_is_stable(tmp_path):
    m = manager(tmp_path, **{"node.id": 3})
    cid = m.cluster_id
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", cid) and not cid.startswith("-")
    m.close()
    text = (tmp_path / "meta.properties").read_text()
    assert f"cluster.id={cid}" in text and "node.id=3" in text
    m = manager(tmp_path, **{"node.id": 3})
    assert m.cluster_id == cid and m.node_id == 3
    m.close()
    with pytest.raises(KafkaStorageError, match="node.id"):
        manager(tmp_path, **{"node.id": 4})


def test_create_topic_persists_id_partitions_and_configs(tmp_path):
    m = manager(tmp_path)
    info = m.create_topic("orders", 3, {"segment.bytes": "2097152", "cleanup.policy": "compact"})
    assert isinstance(info.topic_id, uuid.UUID) and info.num_partitions == 3
    assert not info.internal
    assert [m.get_log("orders", p) is not None for p in range(4)] == [True, True, True, False]
    assert m.get_log("orders", 0).config.segment_bytes == 2097152
    stored = json.loads((tmp_path / "topics" / "orders.json").read_text())
    assert stored["topic_id"] == str(info.topic_id) and stored["num_partitions"] == 3
    m.close()
    m = manager(tmp_path)
    again = m.topics["orders"]
    assert (again.topic_id, again.num_partitions, again.configs) == (
        info.topic_id,
        3,
        {"segment.bytes": "2097152", "cleanup.policy": "compact"},
    )
    assert m.get_log("orders", 0).config.segment_bytes == 2097152
    assert m.topic_names == {info.topic_id: "orders"}  # requests by topic id after a restart
    m.close()


def test_internal_topics_are_flagged(tmp_path):
    m = manager(tmp_path)
    assert m.create_topic("__consumer_offsets", 1, {"cleanup.policy": "compact"}).internal
    assert m.create_topic("__transaction_state", 1).internal
    assert not m.create_topic("__other", 1).internal
    m.close()
    m = manager(tmp_path)
    assert m.topics["__consumer_offsets"].internal and not m.topics["__other"].internal
    m.close()


@pytest.mark.parametrize(
    "name", ["", ".", "..", "a" * 250, "has space", "slash/name", "ümlaut", "semi;colon"]
)
def test_invalid_topic_names(tmp_path, name):
    m = manager(tmp_path)
    with pytest.raises(KafkaStorageError) as e:
        m.create_topic(name, 1)
    assert e.value.error_code == ErrorCode.invalid_topic_exception
    assert m.topics == {} and os.listdir(tmp_path / "topics") == []
    m.close()


def test_topic_creation_errors(tmp_path):
    m = manager(tmp_path, **{"num.partitions": 2})
    assert m.create_topic("a" * 249, 1).num_partitions == 1
    assert m.create_topic("defaults", -1).num_partitions == 2
    m.create_topic("a.b", 1)
    cases = [
        (lambda: m.create_topic("a.b", 1), ErrorCode.topic_already_exists),
        (lambda: m.create_topic("a_b", 1), ErrorCode.invalid_topic_exception),
        (lambda: m.create_topic("zero", 0), ErrorCode.invalid_partitions),
        (lambda: m.create_topic("cfg", 1, {"no.such.config": "1"}), ErrorCode.invalid_config),
        (lambda: m.create_topic("cfg", 1, {"segment.bytes": "ten"}), ErrorCode.invalid_config),
        (lambda: m.create_topic("cfg", 1, {"segment.bytes": "5"}), ErrorCode.invalid_config),
        (lambda: m.create_topic("cfg", 1, {"segment.bytes": str(1024 * 1024 - 1)}), ErrorCode.invalid_config),
        (lambda: m.create_topic("cfg", 1, {"message.timestamp.type": "Now"}), ErrorCode.invalid_config),
        (lambda: m.create_topic("cfg", 1, {"retention.ms": None}), ErrorCode.invalid_config),
        (lambda: m.validate_new_topic("a.b", 1, {}), ErrorCode.topic_already_exists),
        (lambda: m.create_partitions("missing", 3), ErrorCode.unknown_topic_or_partition),
        (lambda: m.create_partitions("a.b", 1), ErrorCode.invalid_partitions),
        (lambda: m.delete_topic("missing"), ErrorCode.unknown_topic_or_partition),
    ]
    for call, code in cases:
        with pytest.raises(KafkaStorageError) as e:
            call()
        assert e.value.error_code == code
    assert "cfg" not in m.topics and not (tmp_path / "cfg-0").exists()
    assert m.validate_new_topic("fine", 1, {"retention.ms": "5"}) == {"retention.ms": "5"}
    assert "fine" not in m.topics and not (tmp_path / "fine-0").exists()
    m.close()


def test_delete_and_recreate_topic_starts_empty(tmp_path):
    m = manager(tmp_path)
    old = m.create_topic("t", 2)
    m.get_log("t", 0).append(batch(3))
    m.delete_topic("t")
    assert "t" not in m.topics and m.get_log("t", 0) is None
    assert not (tmp_path / "topics" / "t.json").exists()
    assert old.topic_id not in m.topic_names
    new = m.create_topic("t", 1)
    assert new.topic_id != old.topic_id
    assert m.topic_names == {new.topic_id: "t"}
    assert m.get_log("t", 0).log_end_offset == 0
    m.close()
    m = manager(tmp_path)
    assert m.topics["t"].num_partitions == 1 and m.get_log("t", 0).log_end_offset == 0
    assert m.topic_names == {new.topic_id: "t"}
    assert not any(n.endswith("-delete") for n in os.listdir(tmp_path))
    m.close()


def test_create_partitions(tmp_path):
    m = manager(tmp_path)
    m.create_topic("t", 1)
    m.get_log("t", 0).append(batch(2))
    m.create_partitions("t", 3)
    assert m.topics["t"].num_partitions == 3 and m.get_log("t", 2).log_end_offset == 0
    m.close()
    m = manager(tmp_path)
    assert m.topics["t"].num_partitions == 3 and m.get_log("t", 0).log_end_offset == 2
    m.close()


def test_topic_configs_alter_and_describe(tmp_path):
    m = manager(tmp_path, **{"log.segment.bytes": 5000, "log.roll.hours": 1})
    m.create_topic("t", 1)
    plog = m.get_log("t", 0)
    assert plog.config.segment_bytes == 5000 and plog.config.segment_ms == 3_600_000
    described = m.describe_topic_configs("t")
    assert described["segment.bytes"] == ("5000", True)
    assert described["max.message.bytes"] == ("1048588", True)
    m.set_topic_configs("t", {"message.timestamp.type": "LogAppendTime", "max.message.bytes": "100"})
    assert plog.config.log_append_time and plog.config.max_message_bytes == 100
    assert m.describe_topic_configs("t")["max.message.bytes"] == ("100", False)
    with pytest.raises(KafkaStorageError) as e:
        plog.append(build_batch([(b"k", b"v" * 200)]))
    assert e.value.error_code == ErrorCode.message_too_large
    with pytest.raises(KafkaStorageError) as e:
        m.set_topic_configs("t", {"flush.ms": "-5"})
    assert e.value.error_code == ErrorCode.invalid_config
    m.close()
    m = manager(tmp_path, **{"log.segment.bytes": 5000})
    assert m.get_log("t", 0).config.log_append_time
    m.close()


def test_clean_shutdown_marker_and_recovery_points(tmp_path):
    m = manager(tmp_path)
    m.create_topic("t", 2)
    m.get_log("t", 1).append(batch(4))
    m.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    lines = (tmp_path / RECOVERY_POINT_FILE).read_text().splitlines()
    assert lines == ["0", "2", "t 0 0", "t 1 4"]
    with structlog.testing.capture_logs() as logs:
        m = manager(tmp_path)
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()  # a crash from now on is unclean
    assert not any(e["event"] == "recovered partition log" for e in logs)
    assert any(e["event"] == "loaded partition logs" and e["clean_shutdown"] for e in logs)
    m.get_log("t", 1).append(batch(1))
    crash(m)
    with structlog.testing.capture_logs() as logs:
        m = manager(tmp_path)
    assert any(e["event"] == "recovered partition log" for e in logs)
    assert m.get_log("t", 1).log_end_offset == 5
    m.flush()
    assert (tmp_path / RECOVERY_POINT_FILE).read_text().splitlines()[-1] == "t 1 5"
    m.close()


def test_leftover_directories_are_removed_but_records_are_never_deleted(tmp_path):
    m = manager(tmp_path)
    m.create_topic("t", 1)
    m.close()
    os.makedirs(tmp_path / "ghost-0")  # records, but its topic file is gone: rebuilt
    (tmp_path / "ghost-0" / "00000000000000000000.log").write_bytes(batch(1))
    os.makedirs(tmp_path / "empty-0")  # an interrupted create: removed
    (tmp_path / "empty-0" / "00000000000000000000.log").write_bytes(b"")
    os.makedirs(tmp_path / ("t-0." + "a" * 32 + "-delete"))
    os.makedirs(tmp_path / "t-7")  # beyond the partition count
    os.makedirs(tmp_path / "not-a-log-dir-1")
    (tmp_path / "not-a-log-dir-1" / "notes.txt").write_text("keep me")
    m = manager(tmp_path)
    names = set(os.listdir(tmp_path))
    assert "empty-0" not in names and "t-7" not in names
    assert not any(n.endswith("-delete") for n in names)
    assert "not-a-log-dir-1" in names and "t-0" in names
    assert m.topics["ghost"].num_partitions == 1
    assert m.get_log("ghost", 0).log_end_offset == 1
    assert (tmp_path / "topics" / "ghost.json").exists()
    m.close()


def test_roll_in_background_advances_recovery_point_checkpoint(tmp_path):
    m = manager(tmp_path, **{"log.segment.bytes": 300})  # topics may not go below 1 MiB
    m.create_topic("t", 1)
    plog = m.get_log("t", 0)
    for _ in range(10):
        plog.append(batch(3))
    plog._wait_pending_flushes()
    assert plog.recovery_point > 0 and plog.recovery_point == plog.segments[-1].base_offset
    m.close()


def test_recovery_point_checkpoint_file_is_written_when_a_point_moved(tmp_path):
    m = manager(tmp_path)
    m.create_topic("t", 1)
    path = tmp_path / "recovery-point-offset-checkpoint"
    m.checkpoint_recovery_points()
    before = path.read_text()
    os.utime(path, ns=(1, 1))
    m.checkpoint_recovery_points()  # nothing moved: not rewritten
    assert path.stat().st_mtime_ns == 1
    plog = m.get_log("t", 0)
    plog.append(batch(2))
    plog.flush()
    m.checkpoint_recovery_points()
    assert path.read_text() != before and "t 0 2" in path.read_text()
    m.close()


def test_remove_expired_producers(tmp_path):
    m = manager(tmp_path, **{"producer.id.expiration.ms": 1000})
    m.create_topic("t", 1)
    plog = m.get_log("t", 0)
    plog.append(build_batch([(b"k", b"v")], producer_id=5, producer_epoch=0, base_sequence=0))
    m.remove_expired_producers(10**13)
    # the producer was forgotten: an unknown producer may start at any sequence
    plog.append(build_batch([(b"k", b"v")], producer_id=5, producer_epoch=0, base_sequence=9))
    m.close()


def test_internal_topics_from_older_versions_get_compaction_sized_segments(tmp_path):
    m = manager(tmp_path)
    m.create_topic("__consumer_offsets", 1, {"cleanup.policy": "compact"})  # as before
    m.close()
    m = manager(tmp_path, **{"offsets.topic.segment.bytes": 4096})
    assert m.topics["__consumer_offsets"].configs == {"cleanup.policy": "compact", "segment.bytes": "4096"}
    assert m.get_log("__consumer_offsets", 0).config.segment_bytes == 4096
    m.close()


def test_every_log_opened_or_created_is_handed_to_on_log_opened(tmp_path):
    """The broker wires long-poll wake-ups there: at startup, for new topics and partitions,
    and for a topic deleted and created again (a new log under the same name)."""
    opened: list[tuple[str, int, object]] = []

    def open_manager() -> LogManager:
        m = LogManager(
            str(tmp_path),
            {},
            clock=SYSTEM_CLOCK,
            on_log_opened=lambda t, p, plog: opened.append((t, p, plog)),
        )
        m.open()
        return m

    m = open_manager()
    m.create_topic("t", 2, {})
    m.create_partitions("t", 3)
    assert [(t, p) for t, p, _ in opened] == [("t", 0), ("t", 1), ("t", 2)]
    assert [plog for _, _, plog in opened] == [m.get_log("t", p) for p in range(3)]
    first = m.get_log("t", 0)
    m.delete_topic("t")
    m.create_topic("t", 1, {})
    assert opened[-1][:2] == ("t", 0) and opened[-1][2] is m.get_log("t", 0) is not first
    m.close()
    opened.clear()
    m = open_manager()
    assert [(t, p) for t, p, _ in opened] == [("t", 0)] and opened[0][2] is m.get_log("t", 0)
    m.close()


def test_producer_id_expiration_is_read_when_a_log_opens(tmp_path):
    # producer.id.expiration.ms is a dynamic broker config: a log opened after a change uses it
    config = {"producer.id.expiration.ms": 60_000}
    m = LogManager(str(tmp_path), config, clock=SYSTEM_CLOCK)
    m.open()
    m.create_topic("before", 1)
    config["producer.id.expiration.ms"] = 5_000
    m.create_topic("after", 1)
    assert m.get_log("before", 0).producer_state.expiration_ms == 60_000
    assert m.get_log("after", 0).producer_state.expiration_ms == 5_000
    m.close()
