"""Issue 9: topic names as Kafka's Topic.validate, and CreateTopics / CreatePartitions on a full
disk: KAFKA_STORAGE_ERROR and nothing half-created left registered or on disk."""

from __future__ import annotations

import asyncio
import errno
import json
import os
from concurrent.futures import Future

import pytest
from minibroker.broker.durability import registry_written
from minibroker.common.clock import SYSTEM_CLOCK
from minibroker.protocol.errors import ErrorCode
from minibroker.storage import log as log_module
from minibroker.storage.durable_files import atomic_write
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log import InlineFlusher
from minibroker.storage.log_manager import LogManager, validate_topic_name

from tests.unit.test_storage_log_manager import manager


@pytest.mark.parametrize(
    "name", ["x\n", "..\n", "ok\n", "a b", "é", ".", "..", "", "x" * 250, "a/b", "tab\t"]
)
def test_illegal_names(name):
    with pytest.raises(KafkaStorageError) as e:
        validate_topic_name(name)
    assert e.value.error_code == ErrorCode.invalid_topic_exception


@pytest.mark.parametrize("name", ["a", "A.b_c-9", "x" * 249, "...", "_"])
def test_legal_names(name):
    validate_topic_name(name)


@pytest.fixture
def full_disk_after(monkeypatch):
    """Make the n-th PartitionLog.open from now on fail with ENOSPC."""
    real_open = log_module.PartitionLog.open.__func__

    def arm(n: int) -> None:
        calls = {"n": 0}

        def failing(cls, *args, **kw):
            calls["n"] += 1
            if calls["n"] >= n:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_open(cls, *args, **kw)

        monkeypatch.setattr(log_module.PartitionLog, "open", classmethod(failing))

    return arm


def test_create_topic_on_full_disk_rolls_back(tmp_path, full_disk_after):
    m = manager(tmp_path)
    full_disk_after(3)
    with pytest.raises(KafkaStorageError) as e:
        m.create_topic("t", 4, {})
    assert e.value.error_code == ErrorCode.kafka_storage_error
    assert "t" not in m.topics and m.get_log("t", 0) is None
    assert not [d for d in os.listdir(tmp_path) if d.startswith("t-")]
    assert not os.path.exists(tmp_path / "topics" / "t.json")


def test_create_partitions_on_full_disk_rolls_back(tmp_path, full_disk_after):
    m = manager(tmp_path)
    m.create_topic("t", 2, {})
    full_disk_after(2)
    with pytest.raises(KafkaStorageError) as e:
        m.create_partitions("t", 5)
    assert e.value.error_code == ErrorCode.kafka_storage_error
    assert m.topics["t"].num_partitions == 2 and m.get_log("t", 2) is None
    assert sorted(d for d in os.listdir(tmp_path) if d.startswith("t-")) == ["t-0", "t-1"]


class RegistryWritesFail(InlineFlusher):
    """A flusher whose topic registry writes fail in its thread once ``failing`` is set (the
    broker's Durability finds a full disk there, after create_topic returned)."""

    failing = False

    def write(self, fn, /, *args):
        if self.failing and fn is atomic_write and str(args[0]).endswith(".json"):
            written: Future[None] = Future()
            written.set_exception(OSError(errno.ENOSPC, "No space left on device"))
            return written
        return super().write(fn, *args)


def test_a_registry_write_that_fails_later_undoes_the_creation(tmp_path):
    flusher = RegistryWritesFail()
    m = LogManager(str(tmp_path), {}, clock=SYSTEM_CLOCK, flusher=flusher)
    m.open()
    m.create_topic("kept", 2, {})
    flusher.failing = True
    m.create_topic("t", 3, {})
    assert "t" in m.topics  # created in memory; its file is the flusher's
    error = asyncio.run(registry_written(m, "t", 0))
    assert error is not None and error.error_code == ErrorCode.kafka_storage_error
    assert "t" not in m.topics and m.get_log("t", 0) is None
    assert not [d for d in os.listdir(tmp_path) if d.startswith("t-")]
    m.create_partitions("kept", 4)
    error = asyncio.run(registry_written(m, "kept", 2))
    assert error is not None and error.error_code == ErrorCode.kafka_storage_error
    assert m.topics["kept"].num_partitions == 2 and m.get_log("kept", 2) is None
    assert sorted(d for d in os.listdir(tmp_path) if d.startswith("kept-")) == ["kept-0", "kept-1"]
    flusher.failing = False
    m.create_partitions("kept", 3)
    assert asyncio.run(registry_written(m, "kept", 2)) is None
    assert json.loads((tmp_path / "topics" / "kept.json").read_text())["num_partitions"] == 3
