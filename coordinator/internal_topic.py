"""One internal topic (`__consumer_offsets`, `__transaction_state`) in the broker's own storage.

Both coordinators keep their state the way Kafka does: as records in a compacted topic they
append to (one magic-2 batch per write, `PartitionLog.append(internal=True)`) and replay at
startup. `InternalTopic` is that writer and reader; coordinator/group_store.py and
coordinator/txn_log.py specialise it for their record shapes. The topic is created on the first
write with `cleanup.policy=compact` and the segment size of its broker property.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import structlog
from minibroker.common.clock import Clock
from minibroker.protocol.records import (
    BatchHeader,
    CorruptBatchError,
    build_batch,
    crc_ok,
    iter_batches,
    iter_records,
)
from minibroker.storage.config import INTERNAL_SEGMENT_BYTES, broker_value
from minibroker.storage.file_slice import slice_bytes

if TYPE_CHECKING:
    from minibroker.storage.log import PartitionLog
    from minibroker.storage.log_manager import LogManager

__all__ = ["InternalBatch", "InternalTopic", "StoredBatch"]

log = structlog.get_logger(__name__)

_READ_BYTES = 1 << 20
_INT32_MAX = 0x7FFFFFFF  # sequences wrap to 0 after it


class InternalBatch(NamedTuple):
    """One batch to append to an internal topic: (key, value or None) records, plain or (with a
    producer) inside that producer's transaction."""

    records: Sequence[tuple[bytes, bytes | None]]
    producer_id: int = -1
    producer_epoch: int = -1
    transactional: bool = False


@dataclass(slots=True)
class StoredBatch:
    """One batch of an internal topic, as replay sees it."""

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


class InternalTopic:
    def __init__(
        self,
        logs: LogManager,
        name: str,
        configured_partitions: int,
        segment_bytes_property: str,
        clock: Clock,
        *,
        topic_configs: Mapping[str, str] | None = None,
    ) -> None:
        self.logs = logs
        # the topic's configs at creation (segment.bytes added): compacted unless told otherwise
        self.topic_configs = dict(topic_configs or {"cleanup.policy": "compact"})
        self.clock = clock  # the appended batches' timestamps
        self.name = name
        self.configured_partitions = configured_partitions
        self.segment_bytes_property = segment_bytes_property

    def num_partitions(self) -> int:
        """The partitions of the topic if it exists, else the configured count."""
        info = self.logs.topics.get(self.name)
        return info.num_partitions if info is not None else self.configured_partitions

    def partition_log(self, partition: int, *, create: bool) -> PartitionLog | None:
        if self.name not in self.logs.topics:
            if not create:
                return None
            segment_bytes = broker_value(self.logs.config, self.segment_bytes_property)
            self.logs.create_topic(
                self.name,
                self.configured_partitions,
                {**self.topic_configs, "segment.bytes": str(segment_bytes or INTERNAL_SEGMENT_BYTES)},
            )
        return self.logs.get_log(self.name, partition)

    def append_batch(self, partition: int, batch: InternalBatch) -> tuple[PartitionLog, int]:
        """Append one batch; (the log written, offset of its first record). A producer's
        batch continues the sequence the partition's producer state holds for it (0 in a new
        epoch). Raises KafkaStorageError (or RuntimeError if the partition does not exist)."""
        plog = self.partition_log(partition, create=True)
        if plog is None:
            raise RuntimeError(f"{self.name}-{partition} does not exist")
        base_sequence = -1
        producer_id, producer_epoch = batch.producer_id, batch.producer_epoch
        if producer_id >= 0:
            base_sequence = 0
            entry = plog.producer_state.get(producer_id)
            if entry is not None and entry.epoch == producer_epoch:
                base_sequence = (entry.last_sequence + 1) & _INT32_MAX
        built = build_batch(
            list(batch.records),
            timestamp=self.clock.wall_ms(),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            transactional=batch.transactional,
        )
        return plog, plog.append(built, internal=True).base_offset

    def batches(self, partition: int) -> Iterator[StoredBatch]:
        """Every readable batch of the partition in log order (a damaged one is skipped with a
        warning naming what was lost, so replay starts with the rest)."""
        plog = self.partition_log(partition, create=False)
        if plog is None:
            return
        offset, end = plog.log_start_offset, plog.log_end_offset
        while offset < end:
            result = plog.read(offset, _READ_BYTES, 0)
            data = b"".join(slice_bytes(chunk) for chunk in result.chunks)
            if not data:
                break
            advanced = False
            mv = memoryview(data)
            for pos, header in iter_batches(mv):
                last = header.base_offset + header.last_offset_delta
                if last < offset:
                    continue
                advanced = True
                offset = last + 1
                records = self._records(mv[pos : pos + header.size], header, partition)
                if records is None:
                    continue
                if header.is_control:
                    kind = _control_type(records[0][1]) if records else None
                    yield StoredBatch(
                        header.base_offset,
                        header.producer_id,
                        True,
                        True,
                        None if kind is None else kind == 1,
                        [],
                        header.producer_epoch,
                    )
                    continue
                yield StoredBatch(
                    header.base_offset,
                    header.producer_id,
                    header.is_transactional,
                    False,
                    None,
                    records,
                    header.producer_epoch,
                    header.base_sequence,
                )
            if not advanced:
                break

    def _records(
        self, batch: memoryview, header: BatchHeader, partition: int
    ) -> list[tuple[int, bytes | None, bytes | None]] | None:
        try:
            if not crc_ok(batch):
                raise CorruptBatchError("CRC mismatch")
            return [(r.offset, r.key, r.value) for r in iter_records(batch)]
        except CorruptBatchError as exc:
            log.warning(
                "skipped a damaged batch of an internal topic; the state changes it held are lost",
                topic=self.name,
                partition=partition,
                offsets=f"{header.base_offset}-{header.last_offset}",
                error=str(exc),
            )
            return None


def _control_type(key: bytes | None) -> int | None:
    if key is None or len(key) < 4:
        return None
    version, kind = struct.unpack_from(">hh", key, 0)
    return kind if version == 0 else None
