"""One compaction pass over one partition log (Kafka's ``Cleaner``), run in a worker process.

It reads segment files through its own file descriptors and writes complete replacement segments
into ``<partition dir>/cleaner/``; it touches no state of the live log (its input and output are
plain picklable values), so the event loop keeps appending and serving fetches meanwhile.
``LogCleaner`` (storage/log_cleaner.py) chooses what to clean and swaps the results in on the
event loop.

The pass, with Kafka's rules:

1. **Offset map**: for every record in the dirty range ``[first_dirty, end)`` (skipping control
   batches and batches of aborted transactions) remember the last offset of each key.
2. **Rewrite** every segment below ``end``, batch by batch:
   * a batch of an aborted transaction is dropped whole (read_committed readers never saw it;
     read_uncommitted readers lose it, as in Kafka);
   * a record is kept if no later record has its key (offset >= the map's offset for the key);
     keyless records are dropped;
   * **delete horizon, per batch** (Kafka 2.8+, KIP-534): the first pass that keeps a tombstone
     (null value) rewrites its batch with base timestamp = now + ``delete.retention.ms`` and
     attribute bit 6 set (record timestamps unchanged: their deltas are re-encoded); a later
     pass drops the batch's tombstones once that horizon has passed;
   * a COMMIT marker may go once a pass saw no batch of its transaction before it, an ABORT
     marker once no batch of its transaction was seen (Kafka's CleanedTransactionMetadata); the
     first such pass stamps the marker's horizon the same way, a pass after it removes it;
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
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from minibroker.protocol.records import (
    ATTR_DELETE_HORIZON,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    BatchHeader,
    CorruptBatchError,
    parse_control_record,
    record_keys,
    rewrite_batch,
)
from minibroker.protocol.varint import BytesLike
from minibroker.storage.compiled_walk import compiled_keys
from minibroker.storage.segment import CLEANER_DIR, LogSegment, ScanStop, scan_batches
from minibroker.storage.transaction_index import AbortedTxn

__all__ = ["CleanJob", "CleanResult", "SegmentToClean", "clean", "CLEANER_DIR"]

_INT32_MAX = 2**31 - 1


class SegmentToClean(NamedTuple):
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
    delete_retention_ms: int  # a kept tombstone or removable marker goes this long after
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
    worker_cpu_ms: float = 0.0  # CPU time of the pass (on a busy machine wall time says little)


class _OffsetMap:
    """Kafka's OffsetMap (key -> offset of its latest record in the dirty range), plus the
    sorted offsets it holds: a batch of the dirty range that no cleaner filtered before keeps
    exactly the records whose offsets are in it, which ``survivors`` counts without decoding."""

    def __init__(self, latest: dict[bytes, int], deletes: list[int]) -> None:
        self.latest = latest
        self._offsets = sorted(latest.values())
        kept = set(self._offsets)
        self._deletes = sorted(o for o in deletes if o in kept)  # kept tombstones

    def survivors(self, first: int, last: int) -> tuple[int, int]:
        """(records kept, tombstones among them) of the offsets first..last."""
        offsets, deletes = self._offsets, self._deletes
        kept = bisect_right(offsets, last) - bisect_left(offsets, first)
        if not deletes:
            return kept, 0
        return kept, bisect_right(deletes, last) - bisect_left(deletes, first)

    def keep_flags(self, first: int, last: int) -> list[bool]:
        offsets = self._offsets
        kept = set(offsets[bisect_left(offsets, first) : bisect_right(offsets, last)])
        return [o in kept for o in range(first, last + 1)]


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


def _batches(seg: SegmentToClean, fd: int) -> Iterator[tuple[BatchHeader, memoryview]]:
    for _, h, data in scan_batches(fd, 0, seg.size, ScanStop(), with_bytes=True):
        assert data is not None  # with_bytes=True
        yield h, data


def build_offset_map(job: CleanJob, fds: dict[int, int], aborted: _AbortedRanges) -> tuple[_OffsetMap, int]:
    """key -> last offset in the dirty range; returns (map, end). ``end`` moves back to a
    segment base if the map would exceed ``max_map_keys`` (the rest waits for a later pass)."""
    offsets: dict[bytes, int] = {}
    deletes: list[int] = []  # offsets of the dirty range's tombstones
    end = job.end
    first_dirty = job.first_dirty
    for seg in job.segments:
        if seg.base_offset < first_dirty and _next_base(job, seg) <= first_dirty:
            continue
        if len(offsets) > job.max_map_keys and seg.base_offset > first_dirty:
            end = seg.base_offset
            break
        for h, data in _batches(seg, fds[seg.base_offset]):
            if h.base_offset + h.last_offset_delta < first_dirty or h.is_control:
                continue
            if h.is_transactional and aborted.find(h.producer_id, h.base_offset) is not None:
                continue
            _add_to_map(offsets, deletes, data, first_dirty)
    return _OffsetMap(offsets, deletes), end


def _add_to_map(offsets: dict[bytes, int], deletes: list[int], data: BytesLike, first_dirty: int) -> None:
    """The batch's records of the dirty range; keyless ones (refused today, maybe in old logs)
    are dropped."""
    for offset, key, has_value in record_keys(data, compiled_keys):
        if key is not None and offset >= first_dirty:
            offsets[key] = offset
            if not has_value:
                deletes.append(offset)


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

    def on_batch(self, h: BatchHeader) -> bool:
        """True if the (data) batch is discarded."""
        if not h.is_transactional:
            return False
        txn = self.aborted.find(h.producer_id, h.base_offset)
        if txn is not None:
            self.aborted_seen[h.producer_id] = txn
            return True
        self.committed.add(h.producer_id)
        return False

    def on_marker(self, h: BatchHeader, kind: int) -> tuple[bool, AbortedTxn | None]:
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
    started, cpu_started = time.perf_counter(), time.process_time()
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
        result.worker_cpu_ms = round((time.process_time() - cpu_started) * 1000, 1)
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
        if current and (
            size + seg.size > job.max_segment_bytes
            or _next_base(job, seg) - current[0].base_offset > _INT32_MAX
        ):
            groups.append(current)
            current, size = [], 0
        current.append(seg)
        size += seg.size
    if current:
        groups.append(current)
    return groups


def _clean_group(
    job: CleanJob,
    group: list[SegmentToClean],
    fds: dict[int, int],
    offset_map: _OffsetMap,
    txn: _TxnMetadata,
    out_dir: str,
    result: CleanResult,
) -> None:
    """Write the survivors of ``group`` into one new segment (streamed: memory stays at one
    batch); dropped again if it is one segment in which nothing changed."""
    base = group[0].base_offset
    new = LogSegment.create(out_dir, base, job.index_interval_bytes, job.now_ms)
    changed = len(group) > 1
    try:
        for seg in group:
            changed |= _clean_segment(job, seg, fds[seg.base_offset], offset_map, txn, new, result)
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


def _clean_segment(
    job: CleanJob,
    seg: SegmentToClean,
    fd: int,
    omap: _OffsetMap,
    txn: _TxnMetadata,
    new: LogSegment,
    result: CleanResult,
) -> bool:
    """Append what survives of ``seg`` to ``new``; True if anything was dropped or changed."""
    horizon = job.now_ms + job.delete_retention_ms  # stamped where a delete is first kept
    unfiltered = seg.base_offset >= job.first_dirty  # batches here were never cleaned before
    changed = False
    out: BytesLike | None
    for h, data in _batches(seg, fd):
        result.bytes_read += h.size
        if h.is_control:
            out = _clean_marker(h, data, txn, new, job.now_ms, horizon)
        elif txn.on_batch(h):
            out = None  # a batch of an aborted transaction
            result.records_removed += h.records_count
        else:
            keep, kept, deletes = _keep_flags(h, data, omap, unfiltered, job.now_ms)
            last = h.base_offset + h.last_offset_delta
            if keep is None or (h.producer_id >= 0 and job.producer_last_offsets.get(h.producer_id) == last):
                out = data  # unchanged, or the producer's last batch (its state stays rebuildable)
            else:
                result.records_removed += h.records_count - kept
                if not kept:
                    out = None
                elif deletes and not h.attributes & ATTR_DELETE_HORIZON:
                    out = rewrite_batch(data, keep, horizon)  # KIP-534: carries the horizon
                else:
                    out = rewrite_batch(data, keep)
        if out is not data:
            changed = True
        if out is not None:
            out = bytes(out)
            new.append(
                [out], len(out), h.base_offset, h.base_offset + h.last_offset_delta + 1, h.max_timestamp
            )
    return changed


def _clean_marker(
    h: BatchHeader, data: memoryview, txn: _TxnMetadata, new: LogSegment, now: int, horizon: int
) -> BytesLike | None:
    """What is written for a control batch: ``data`` itself, a copy stamped with the delete
    horizon (Kafka 2.8+: a marker that may go is first stamped, then removed by a pass after
    the horizon), or None (removed)."""
    try:
        kind = parse_control_record(data).type
    except CorruptBatchError:
        kind = -1
    can_go, entry = txn.on_marker(h, kind)
    if entry is not None:
        assert new.txn_index is not None  # LogSegment.create made it
        new.txn_index.append(entry)
    if not can_go:
        return data
    if not h.attributes & ATTR_DELETE_HORIZON:
        return rewrite_batch(data, None, horizon)
    return None if h.base_timestamp <= now else data


def _keep_flags(
    h: BatchHeader, data: memoryview, omap: _OffsetMap, unfiltered: bool, now: int
) -> tuple[list[bool] | None, int, int]:
    """(which records of a data batch stay, or None when the batch stays as it is; how many
    stay; how many of those are tombstones). A record stays if it is its key's latest and,
    for a tombstone, its batch has no delete horizon or the horizon is still ahead (KIP-534)."""
    stamped = h.attributes & ATTR_DELETE_HORIZON
    count = h.records_count
    if unfiltered and not stamped and count == h.last_offset_delta + 1:
        # offsets base..last: which survive is known from the map's offsets alone
        first, last = h.base_offset, h.base_offset + h.last_offset_delta
        kept, deletes = omap.survivors(first, last)
        if kept == count and not deletes:
            return None, kept, 0
        return (omap.keep_flags(first, last) if kept else [False] * count), kept, deletes
    retain_deletes = not stamped or now < h.base_timestamp
    latest = omap.latest
    flags = [
        (key is not None and offset >= latest.get(key, -1) and (has_value or retain_deletes), not has_value)
        for offset, key, has_value in record_keys(data, compiled_keys)
    ]
    keep = [k for k, _ in flags]
    kept = sum(keep)
    deletes = sum(1 for k, tomb in flags if k and tomb)
    if kept == count and (stamped or not deletes):
        return None, kept, deletes
    return keep, kept, deletes
