"""Where the group coordinator's records go: the internal topic __consumer_offsets.

The coordinator sees the topic through a small interface so its state machine can be tested
without disks:
  num_partitions()                     partitions of the topic (existing, else configured)
  append(partition, records, producer_id=-1, producer_epoch=-1, base_sequence=-1,
         transactional=False)     append one batch of (key, value|None) records; returns the
                                       offset of the first record; raises KafkaStorageError
  batches(partition)                   replay: StoredBatch objects in log order
`LogOffsetsStore` is the real one over storage.LogManager; `MemoryOffsetsStore` keeps batches in
a list (unit tests), with `append_marker` standing in for the transaction coordinator.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass, field
from typing import Iterator

from storage.config import INTERNAL_SEGMENT_BYTES, broker_value
from storage.file_slice import slice_bytes

__all__ = ["OFFSETS_TOPIC", "StoredBatch", "LogOffsetsStore", "MemoryOffsetsStore"]

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(slots=True)
class StoredBatch:
    base_offset: int
    producer_id: int
    is_transactional: bool
    is_control: bool
    # control batches: True = COMMIT marker, False = ABORT marker, None = not a marker
    commit: bool | None = None
    # (offset, key, value) for data batches
    records: list[tuple[int, bytes | None, bytes | None]] = field(default_factory=list)
    producer_epoch: int = -1
    base_sequence: int = -1


def _control_type(key: bytes | None) -> int | None:
    if key is None or len(key) < 4:
        return None
    version, kind = struct.unpack_from(">hh", key, 0)
    return kind if version == 0 else None


class MemoryOffsetsStore:
    """An in-memory stand-in for the topic: one list of batches per partition."""

    def __init__(self, partitions: int = 1):
        self._partitions = partitions
        self.logs: dict[int, list[StoredBatch]] = {p: [] for p in range(partitions)}
        self._next: dict[int, int] = {p: 0 for p in range(partitions)}
        self.fail_with: Exception | None = None  # raise this from the next append
        self._producers: dict[tuple[int, int], tuple[int, int]] = {}  # -> (epoch, next sequence)

    def num_partitions(self) -> int:
        return self._partitions

    def append(self, partition: int, records, *, producer_id: int = -1, producer_epoch: int = -1,
               base_sequence: int = -1, transactional: bool = False) -> int:
        if self.fail_with is not None:
            exc, self.fail_with = self.fail_with, None
            raise exc
        if producer_id >= 0:
            # the same sequence rules as storage.producer_state (internal appends included)
            epoch, next_seq = self._producers.get((partition, producer_id), (None, 0))
            expected = next_seq if epoch == producer_epoch else 0
            if base_sequence != expected:
                raise AssertionError(f"sequence {base_sequence} for producer {producer_id} epoch "
                                     f"{producer_epoch}, expected {expected}")
            self._producers[(partition, producer_id)] = (producer_epoch, base_sequence + len(records))
        base = self._next[partition]
        batch = StoredBatch(base, producer_id, transactional, False, None,
                            [(base + i, k, v) for i, (k, v) in enumerate(records)],
                            producer_epoch, base_sequence)
        self.logs[partition].append(batch)
        self._next[partition] = base + len(records)
        return base

    def append_marker(self, partition: int, producer_id: int, commit: bool,
                      producer_epoch: int | None = None) -> int:
        base = self._next[partition]
        key = (partition, producer_id)
        if producer_epoch is None:
            producer_epoch = self._producers.get(key, (0, 0))[0]
        if self._producers.get(key, (None,))[0] != producer_epoch:
            self._producers[key] = (producer_epoch, 0)
        self.logs[partition].append(StoredBatch(base, producer_id, True, True, commit, [],
                                                producer_epoch))
        self._next[partition] = base + 1
        return base

    def batches(self, partition: int) -> Iterator[StoredBatch]:
        return iter(list(self.logs[partition]))


class LogOffsetsStore:
    """__consumer_offsets in the broker's own storage engine, compacted by key."""

    def __init__(self, logs, configured_partitions: int):
        self.logs = logs
        self.configured_partitions = configured_partitions

    def num_partitions(self) -> int:
        info = self.logs.topics.get(OFFSETS_TOPIC)
        return info.num_partitions if info is not None else self.configured_partitions

    def _log(self, partition: int, create: bool):
        if OFFSETS_TOPIC not in self.logs.topics:
            if not create:
                return None
            self.logs.create_topic(OFFSETS_TOPIC, self.configured_partitions,
                                   {"cleanup.policy": "compact", "segment.bytes": str(
                                       broker_value(self.logs.config, "offsets.topic.segment.bytes")
                                       or INTERNAL_SEGMENT_BYTES)})
        return self.logs.get_log(OFFSETS_TOPIC, partition)

    def append(self, partition: int, records, *, producer_id: int = -1, producer_epoch: int = -1,
               base_sequence: int = -1, transactional: bool = False) -> int:
        from protocol.record_batch import build_batch

        plog = self._log(partition, create=True)
        now = int(time.time() * 1000)
        batch = build_batch(
            [(key, value) for key, value in records],
            timestamp=now,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            transactional=transactional,
        )
        info = plog.append(batch, internal=True)
        return info.base_offset

    def batches(self, partition: int) -> Iterator[StoredBatch]:
        from coordinator.txn_log import readable_batches

        plog = self._log(partition, create=False)
        if plog is None:
            return
        offset = plog.log_start_offset
        end = plog.log_end_offset
        while offset < end:
            result = plog.read(offset, 1 << 20, 0)
            data = b"".join(slice_bytes(chunk) for chunk in result.chunks)
            if not data:
                break
            advanced = False
            for header, records in readable_batches(data, OFFSETS_TOPIC, partition):
                last = header.base_offset + header.last_offset_delta
                if last < offset:
                    continue
                advanced = True
                offset = last + 1
                if records is None:
                    continue
                if header.is_control:
                    kind = _control_type(records[0][1]) if records else None
                    yield StoredBatch(header.base_offset, header.producer_id, True, True,
                                      None if kind is None else kind == 1, [],
                                      header.producer_epoch)
                    continue
                yield StoredBatch(header.base_offset, header.producer_id,
                                  header.is_transactional, False, None,
                                  [(o, k, v) for o, k, v in records],
                                  header.producer_epoch, header.base_sequence)
            if not advanced:
                break
