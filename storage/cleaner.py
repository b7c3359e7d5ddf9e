"""One compaction pass over one partition log (Kafka's ``Cleaner``), run in a worker process.

It reads segment files through its own file descriptors and writes complete replacement segments
into ``<partition dir>/cleaner/``; it touches no state of the live log (its input and output are
plain picklable values), so the event loop keeps appending and serving fetches meanwhile. ``LogCleaner`` (storage/log_cleaner.py) chooses what to
clean and swaps the results in on the event loop.

The pass, with Kafka's rules:

1. **Offset map**: for every record in the dirty range ``[first_dirty, end)`` (skipping control
   batches and batches of aborted transactions) remember the last offset of each key.
2. **Rewrite** every segment below ``end``, batch by batch:
   * a batch of an aborted transaction is dropped whole (read_committed readers never saw it;
     read_uncommitted readers lose it, as in Kafka);
   * a record is kept if no later record has its key (offset >= the map's offset for the key);
     keyless records are dropped; a tombstone (null value) is kept until its segment lies in the
     already-cleaned part and its newest timestamp is older than ``delete.retention.ms``;
   * a COMMIT marker goes once no batch of its transaction remains before it in this pass, an
     ABORT marker once no batch of its transaction was seen, both only past the same delete
     horizon as tombstones (Kafka's CleanedTransactionMetadata);
   * a batch whose records are all dropped disappears, except the last batch of a producer
     that still has state (kept whole so producer state can be rebuilt from the log);
   * a batch that loses some records is rebuilt with the same base offset, last offset delta,
     producer fields and codec: **offsets never change**.
3. Consecutive segments that fit in segment.bytes together are rewritten as one (Kafka's
   groupSegmentsBySize); a lone segment in which nothing changed is not rewritten.
"""

from __future__ import annotations

import os
import shutil
import time
from bisect import bisect_right
from dataclasses import dataclass, field

from protocol.record_batch import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    CorruptBatchError,
    filter_batch,
    iter_record_keys,
    parse_control_record,
)
from storage.segment import LogSegment, ScanStop, scan_batches
from storage.transaction_index import AbortedTxn

__all__ = ["CleanJob", "CleanResult", "SegmentToClean", "clean", "CLEANER_DIR"]

CLEANER_DIR = "cleaner"
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class SegmentToClean:
    base_offset: int
    path: str
    size: int  # bytes to read (the file does not grow: only the active segment does)
    max_timestamp: int


@dataclass(slots=True)
class CleanJob:
    """Everything the worker thread needs, copied from the live log on the event loop."""

    partition_dir: str
    segments: list[SegmentToClean]  # every segment below ``end``, oldest first
    first_dirty: int
    end: int  # first offset not cleaned (a segment base)
    aborted: list[AbortedTxn]  # aborted transactions with a marker below ``end``
    producer_last_offsets: dict[int, int]  # producer id -> last data offset in the log
    delete_horizon_ms: int  # tombstones and markers older than this may go
    index_interval_bytes: int
    max_segment_bytes: int
    now_ms: int
    max_map_keys: int = 5_000_000


@dataclass(slots=True)
class CleanResult:
    end: int  # new first dirty offset
    # base of each new segment -> base offsets of the old segments it replaces
    rewritten: dict[int, list[int]] = field(default_factory=dict)
    bytes_read: int = 0
    bytes_written: int = 0
    records_removed: int = 0
    worker_ms: float = 0.0  # the pass itself, in the worker (without its start-up or queueing)


class _AbortedRanges:
    """Is the batch (producer id, offset) part of an aborted transaction?"""

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self._by_pid: dict[int, list[AbortedTxn]] = {}
        for txn in sorted(aborted, key=lambda t: t.first_offset):
            self._by_pid.setdefault(txn.producer_id, []).append(txn)
        self._firsts = {pid: [t.first_offset for t in txns] for pid, txns in self._by_pid.items()}

    def find(self, producer_id: int, offset: int) -> AbortedTxn | None:
        txns = self._by_pid.get(producer_id)
        if not txns:
            return None
        i = bisect_right(self._firsts[producer_id], offset) - 1
        if i >= 0 and txns[i].first_offset <= offset <= txns[i].last_offset:
            return txns[i]
        return None


def _batches(seg: SegmentToClean, fd: int):
    stop = ScanStop()
    yield from scan_batches(fd, 0, seg.size, stop, with_bytes=True)


def build_offset_map(job: CleanJob, fds: dict[int, int], aborted: _AbortedRanges
                     ) -> tuple[dict[bytes, int], int]:
    """key -> last offset in the dirty range; returns (map, end). ``end`` moves back to a
    segment base if the map would exceed ``max_map_keys`` (the rest waits for a later pass)."""
    offsets: dict[bytes, int] = {}
    end = job.end
    for seg in job.segments:
        if seg.base_offset < job.first_dirty and _next_base(job, seg) <= job.first_dirty:
            continue
        if len(offsets) > job.max_map_keys and seg.base_offset > job.first_dirty:
            end = seg.base_offset
            break
        for _, h, data in _batches(seg, fds[seg.base_offset]):
            if h.base_offset + h.last_offset_delta < job.first_dirty or h.is_control:
                continue
            if h.is_transactional and aborted.find(h.producer_id, h.base_offset) is not None:
                continue
            first_dirty = job.first_dirty
            for offset, key, _ in iter_record_keys(data):
                if key is not None and offset >= first_dirty:
                    offsets[key] = offset
    return offsets, end


def _next_base(job: CleanJob, seg: SegmentToClean) -> int:
    for other in job.segments:
        if other.base_offset > seg.base_offset:
            return other.base_offset
    return job.end


class _TxnMetadata:
    """Kafka's CleanedTransactionMetadata, across the whole pass."""

    def __init__(self, aborted: _AbortedRanges) -> None:
        self.aborted = aborted
        self.committed: set[int] = set()  # producers with a batch seen since their last marker
        self.aborted_seen: dict[int, AbortedTxn] = {}  # aborted txns with a batch seen

    def on_batch(self, h) -> bool:
        """True if the (data) batch is discarded."""
        if not h.is_transactional:
            return False
        txn = self.aborted.find(h.producer_id, h.base_offset)
        if txn is not None:
            self.aborted_seen[h.producer_id] = txn
            return True
        self.committed.add(h.producer_id)
        return False

    def on_marker(self, h, kind: int) -> tuple[bool, AbortedTxn | None]:
        """(can the marker go, the index entry to keep for it)."""
        pid = h.producer_id
        if kind == CONTROL_ABORT:
            txn = self.aborted_seen.pop(pid, None)
            if txn is not None:
                return False, txn
            return True, None
        if kind == CONTROL_COMMIT:
            seen = pid in self.committed
            self.committed.discard(pid)
            return not seen, None
        return False, None


def clean(job: CleanJob) -> CleanResult:
    """Run one pass (see the module docstring). Raises OSError / CorruptBatchError on trouble;
    the caller then drops the partial output and leaves the log as it was."""
    started = time.perf_counter()
    out_dir = os.path.join(job.partition_dir, CLEANER_DIR)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    fds: dict[int, int] = {}
    try:
        for seg in job.segments:
            fds[seg.base_offset] = os.open(seg.path, os.O_RDONLY)
        aborted = _AbortedRanges(job.aborted)
        offset_map, end = build_offset_map(job, fds, aborted)
        result = CleanResult(end)
        txn = _TxnMetadata(aborted)
        for group in group_segments(job, end):
            _clean_group(job, group, fds, offset_map, txn, out_dir, result)
        result.worker_ms = round((time.perf_counter() - started) * 1000, 1)
        return result
    finally:
        for fd in fds.values():
            os.close(fd)


def group_segments(job: CleanJob, end: int) -> list[list[SegmentToClean]]:
    """Kafka's groupSegmentsBySize: consecutive segments below ``end`` whose sizes add up to
    at most segment.bytes (and whose offsets fit one segment's 32-bit relative offsets) are
    rewritten as one, so compacted-away segments do not pile up as small files."""
    groups: list[list[SegmentToClean]] = []
    current: list[SegmentToClean] = []
    size = 0
    for seg in job.segments:
        if seg.base_offset >= end:
            break
        if current and (size + seg.size > job.max_segment_bytes
                        or _next_base(job, seg) - current[0].base_offset > _INT32_MAX):
            groups.append(current)
            current, size = [], 0
        current.append(seg)
        size += seg.size
    if current:
        groups.append(current)
    return groups


def _clean_group(job: CleanJob, group: list[SegmentToClean], fds: dict[int, int],
                 offset_map: dict[bytes, int], txn: _TxnMetadata, out_dir: str,
                 result: CleanResult) -> None:
    """Write the survivors of ``group`` into one new segment (streamed: memory stays at one
    batch); dropped again if it is one segment in which nothing changed."""
    base = group[0].base_offset
    new = LogSegment.create(out_dir, base, job.index_interval_bytes, job.now_ms)
    changed = len(group) > 1
    try:
        for seg in group:
            changed |= _clean_segment(job, seg, fds[seg.base_offset], offset_map, txn, new,
                                      result)
        if changed:
            new.on_become_inactive()
            new.flush()
            result.bytes_written += new.size
    finally:
        new.close()
    if changed:
        result.rewritten[base] = [seg.base_offset for seg in group]
    else:
        new.delete_files()


def _clean_segment(job: CleanJob, seg: SegmentToClean, fd: int, offset_map: dict[bytes, int],
                   txn: _TxnMetadata, new: LogSegment, result: CleanResult) -> bool:
    """Append what survives of ``seg`` to ``new``; True if anything was dropped or changed."""
    # tombstones and markers may go only from the already-cleaned part, past the horizon
    retain_deletes = not (seg.base_offset < job.first_dirty
                          and 0 <= seg.max_timestamp <= job.delete_horizon_ms)
    changed = False

    def write(h, data) -> None:
        new.append([data], len(data), h.base_offset, h.base_offset + h.last_offset_delta + 1,
                   h.max_timestamp)

    for _, h, data in _batches(seg, fd):
        result.bytes_read += h.size
        if h.is_control:
            try:
                kind = parse_control_record(data).type
            except CorruptBatchError:
                kind = -1
            can_go, entry = txn.on_marker(h, kind)
            if entry is not None:
                new.txn_index.append(entry)
            if can_go and not retain_deletes:
                changed = True
                continue
            write(h, bytes(data))
            continue
        if txn.on_batch(h):
            changed = True
            result.records_removed += h.records_count
            continue
        keep = [key is not None and offset >= offset_map.get(key, -1)
                and (has_value or retain_deletes)
                for offset, key, has_value in iter_record_keys(data)]
        if all(keep):
            write(h, bytes(data))
            continue
        last_of_producer = (h.producer_id >= 0 and job.producer_last_offsets.get(h.producer_id)
                            == h.base_offset + h.last_offset_delta)
        if last_of_producer:
            write(h, bytes(data))  # producer state must stay rebuildable
            continue
        changed = True
        survivors = sum(keep)
        result.records_removed += len(keep) - survivors
        if survivors:
            write(h, filter_batch(h, data, keep))
    return changed
