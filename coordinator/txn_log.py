"""Where the transaction coordinator's state goes: the internal topic `__transaction_state`.

The coordinator sees it through a small interface, so its state machine can be tested without
disks:
  num_partitions()                  partitions of the topic (existing, else configured)
  coordinator_epoch(partition)      the partition's leader epoch (stamped into markers)
  append(partition, key, value)     append one record (value None = tombstone); returns the
                                    PartitionLog to fsync (the coordinator awaits its group
                                    commit), or None when there is nothing to fsync; raises
  replay()                          (key, value) of every record, in log order per partition

`LogTxnStore` is the real one over storage.LogManager (one magic-2 batch per record, built with
protocol.record_batch.build_batch, appended with PartitionLog.append(internal=True));
`MemoryTxnStore` keeps records in lists (unit tests). The topic is created on the first
write with `cleanup.policy=compact`: records are keyed by transactional id, so compaction keeps
each id's latest state.
"""

from __future__ import annotations

import time
from typing import Iterator

import structlog

from storage.config import INTERNAL_SEGMENT_BYTES, broker_value
from storage.file_slice import slice_bytes

__all__ = ["TXN_TOPIC", "LogTxnStore", "MemoryTxnStore"]

TXN_TOPIC = "__transaction_state"

log = structlog.get_logger(__name__)


class MemoryTxnStore:
    """In-memory stand-in: one list of (key, value) per partition."""

    def __init__(self, partitions: int = 1):
        self._partitions = partitions
        self.records: dict[int, list[tuple[bytes, bytes | None]]] = {
            p: [] for p in range(partitions)}
        self.fail_with: Exception | None = None  # raise this from the next append
        self.appends = 0

    def num_partitions(self) -> int:
        return self._partitions

    def coordinator_epoch(self, partition: int) -> int:
        return 0

    def append(self, partition: int, key: bytes, value: bytes | None) -> None:
        """Returns None: nothing to fsync."""
        if self.fail_with is not None:
            exc, self.fail_with = self.fail_with, None
            raise exc
        self.records[partition].append((key, value))
        self.appends += 1

    def replay(self) -> Iterator[tuple[bytes, bytes | None]]:
        for p in range(self._partitions):
            yield from list(self.records[p])


class LogTxnStore:
    """__transaction_state in the broker's own storage engine."""

    def __init__(self, logs, configured_partitions: int):
        self.logs = logs
        self.configured_partitions = configured_partitions

    def num_partitions(self) -> int:
        info = self.logs.topics.get(TXN_TOPIC)
        return info.num_partitions if info is not None else self.configured_partitions

    def _log(self, partition: int, create: bool):
        if TXN_TOPIC not in self.logs.topics:
            if not create:
                return None
            self.logs.create_topic(TXN_TOPIC, self.configured_partitions,
                                   {"cleanup.policy": "compact", "segment.bytes": str(
                                       broker_value(self.logs.config,
                                                    "transaction.state.log.segment.bytes")
                                       or INTERNAL_SEGMENT_BYTES)})
        return self.logs.get_log(TXN_TOPIC, partition)

    def coordinator_epoch(self, partition: int) -> int:
        plog = self._log(partition, create=False)
        epoch = getattr(plog, "leader_epoch", 0) if plog is not None else 0
        return max(int(epoch), 0)

    def append(self, partition: int, key: bytes, value: bytes | None):
        from protocol.record_batch import build_batch

        plog = self._log(partition, create=True)
        if plog is None:
            raise RuntimeError(f"{TXN_TOPIC}-{partition} does not exist")
        batch = build_batch([(key, value)], timestamp=int(time.time() * 1000))
        plog.append(batch, internal=True)
        return plog

    def replay(self) -> Iterator[tuple[bytes, bytes | None]]:
        for partition in range(self.num_partitions()):
            plog = self._log(partition, create=False)
            if plog is None:
                continue
            offset = plog.log_start_offset
            end = plog.log_end_offset
            while offset < end:
                result = plog.read(offset, 1 << 20, 0)
                data = b"".join(slice_bytes(chunk) for chunk in result.chunks)
                if not data:
                    break
                advanced = False
                for header, records in readable_batches(data, TXN_TOPIC, partition):
                    last = header.base_offset + header.last_offset_delta
                    if last < offset:
                        continue
                    advanced = True
                    offset = last + 1
                    if header.is_control or records is None:
                        continue
                    for rec_offset, key, value in records:
                        if key is not None:
                            yield key, value
                if not advanced:
                    break


def readable_batches(data: bytes, topic: str, partition: int):
    """(header, [(offset, key, value)]) of each batch in ``data`` whose CRC holds and whose
    records decode; a damaged batch (a flipped byte on disk that a clean start did not check)
    is skipped with a warning naming what was lost, so replay starts with the rest."""
    from protocol.record_batch import CorruptBatchError, crc_ok, iter_batches, iter_records

    mv = memoryview(data)
    for pos, header in iter_batches(mv):
        batch = mv[pos:pos + header.size]
        try:
            if not crc_ok(batch):
                raise CorruptBatchError("CRC mismatch")
            records = [(r.offset, r.key, r.value) for r in iter_records(batch)]
        except CorruptBatchError as exc:
            log.warning("skipped a damaged batch of an internal topic; the state changes it "
                        "held are lost", topic=topic, partition=partition,
                        offsets=f"{header.base_offset}-{header.last_offset}", error=str(exc))
            yield header, None
            continue
        yield header, records
