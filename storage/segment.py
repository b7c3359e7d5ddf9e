"""One log segment (Kafka's ``LogSegment``): a .log file of record batches plus its indexes.

Files, named by the segment's base offset (first offset it holds) as 20 zero-padded digits::

    00000000000000001234.log        record batches, byte for byte as appended
    00000000000000001234.index      OffsetIndex
    00000000000000001234.timeindex  TimeIndex
    00000000000000001234.txnindex   TransactionIndex (always present; empty without aborts)

The .log file is opened once with O_APPEND and kept open: appends are one ``os.writev`` into the
page cache (so a SIGKILL loses nothing that was acknowledged), reads use ``os.pread`` on the same
fd and FileSlices hand that fd to the connection. fsync happens only in ``sync``/``flush``.

A segment knows nothing about producers or transactions; ``PartitionLog`` drives recovery and
decides which segments to check.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from typing import NamedTuple

from minibroker.protocol.records import (
    BATCH_OVERHEAD_LENGTH,
    HEADER_SIZE,
    HEADER_STRUCT,
    MAGIC,
    BatchHeader,
    crc_ok,
)
from minibroker.storage.abstract_index import CorruptIndexError
from minibroker.storage.durable_files import fsync_file
from minibroker.storage.offset_index import OffsetIndex
from minibroker.storage.segment_files import SegmentFilePool
from minibroker.storage.time_index import TimeIndex
from minibroker.storage.transaction_index import TransactionIndex

__all__ = [
    "LogSegment",
    "ScanStop",
    "RecoveryResult",
    "scan_batches",
    "segment_file_name",
    "delete_segment_files",
    "SEGMENT_SUFFIXES",
    "LOG_SUFFIX",
    "INDEX_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "TXN_INDEX_SUFFIX",
    "CLEANER_DIR",
]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
#: the partition directory's subdirectory a compaction pass writes in (storage/cleaner.py)
CLEANER_DIR = "cleaner"

_make_header = BatchHeader._make
_unpack_header = HEADER_STRUCT.unpack_from

# Recovery and replay read the file in pieces of this size: big enough for few syscalls, small
# enough to keep memory flat on a 1 GiB segment.
_SCAN_CHUNK = 1 << 20
# Reads that look for one batch (fetch, timestamp lookup) start with this much: the index puts
# them at most about index.interval.bytes before it.
_SEEK_CHUNK = 16 << 10


SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def delete_segment_files(directory: str, base_offset: int) -> None:
    """Unlink the files of the segment at ``base_offset`` (those that exist)."""
    for suffix in SEGMENT_SUFFIXES:
        try:
            os.unlink(os.path.join(directory, segment_file_name(base_offset, suffix)))
        except FileNotFoundError:
            pass


class ScanStop:
    """Where and why ``scan_batches`` stopped (reason None: it reached the end cleanly)."""

    __slots__ = ("position", "reason")

    def __init__(self) -> None:
        self.position = 0
        self.reason: str | None = None


def scan_batches(
    fd: int, start: int, end: int, stop: ScanStop, *, with_bytes: bool = False, chunk: int = _SCAN_CHUNK
) -> Iterator[tuple[int, BatchHeader, memoryview | None]]:
    """Yield (position, header, bytes-or-None) for each structurally whole batch in [start, end)
    (magic 2, sane length, not running past ``end``); records in ``stop`` where it stopped.
    CRCs are the caller's business (``with_bytes=True`` gives it the batch)."""
    pos = start
    buf = b""
    buf_start = start
    while True:
        if pos >= end:
            stop.position, stop.reason = pos, None
            return
        off = pos - buf_start
        if off + HEADER_SIZE > len(buf):
            buf = os.pread(fd, min(max(chunk, HEADER_SIZE), end - pos), pos)
            buf_start, off = pos, 0
            if len(buf) < HEADER_SIZE:
                stop.position = pos
                stop.reason = f"incomplete batch header ({end - pos} bytes) at the end of the file"
                return
        h = _make_header(_unpack_header(buf, off))
        problem = _framing_problem(h, end - pos)
        if problem is not None:
            stop.position, stop.reason = pos, problem
            return
        size = h.batch_length + 12
        data = None
        if with_bytes:
            if off + size > len(buf):
                buf = os.pread(fd, max(size, min(chunk, end - pos)), pos)
                buf_start, off = pos, 0
                if len(buf) < size:
                    stop.position, stop.reason = pos, "short read"
                    return
            data = memoryview(buf)[off : off + size]
        yield pos, h, data
        pos += size


def _framing_problem(h: BatchHeader, left: int) -> str | None:
    """Why the batch with header ``h`` is not structurally whole (``left`` bytes remain in the
    scanned range), or None."""
    if h.magic != MAGIC:
        return f"batch with magic {h.magic} (expected {MAGIC})"
    if h.batch_length < BATCH_OVERHEAD_LENGTH:
        return f"batch length {h.batch_length} is too small"
    if h.batch_length + 12 > left:
        return f"incomplete batch: {h.batch_length + 12} bytes announced, {left} left in the file"
    return None


class RecoveryResult(NamedTuple):
    valid_bytes: int
    truncated_bytes: int
    next_offset: int
    reason: str | None  # why the tail was cut (None if nothing was cut)
    batches: int  # batches checked
    checked_from: int  # position the check started at (0: the whole segment)


class LogSegment:
    __slots__ = (
        "dir",
        "base_offset",
        "log_path",
        "_fd",
        "_keep_open",
        "_detached",
        "files",
        "size",
        "next_offset",
        "index",
        "time_index",
        "txn_index",
        "max_timestamp",
        "offset_of_max_timestamp",
        "rolling_timestamp",
        "created_ms",
        "bytes_since_last_index_entry",
        "index_interval_bytes",
        "dirty",
        "suspect",
    )

    def __init__(
        self,
        directory: str,
        base_offset: int,
        index_interval_bytes: int,
        files: SegmentFilePool | None = None,
    ) -> None:
        """``files``: the pool of open segment files of the segment's LogManager (a segment of
        none, such as the cleaner worker's output, gets a pool of its own)."""
        self.dir = directory
        self.base_offset = base_offset
        self.log_path = self.path(LOG_SUFFIX)
        self._fd = -1  # the .log, opened on first use (see fd)
        self._keep_open = False  # out of the pool: never closed to make room
        self._detached = False  # left the log: its path may name another file now
        self.files = files if files is not None else SegmentFilePool()
        self.size = 0
        self.next_offset = base_offset  # offset after the last batch (exact for the active one)
        # replaced by create() or open(); unread objects until then (no file is touched)
        self.index = OffsetIndex(self.path(INDEX_SUFFIX), base_offset)
        self.time_index = TimeIndex(self.path(TIME_INDEX_SUFFIX), base_offset)
        self.txn_index = TransactionIndex(self.path(TXN_INDEX_SUFFIX), base_offset)
        self.max_timestamp = -1  # largest batch maxTimestamp seen
        self.offset_of_max_timestamp = -1  # base offset of the batch that first reached it
        self.rolling_timestamp: int | None = None  # first batch's maxTimestamp (segment.ms)
        self.created_ms = 0
        self.bytes_since_last_index_entry = 0
        self.index_interval_bytes = index_interval_bytes
        self.dirty = False  # appended since the last flush
        self.suspect: str | None = None  # why the indexes cannot be trusted (open found it)

    def path(self, suffix: str) -> str:
        return os.path.join(self.dir, segment_file_name(self.base_offset, suffix))

    @property
    def fd(self) -> int:
        """The open .log, opened now if the pool closed it (or it was never opened). Valid
        until the next segment file is opened: use it, never keep it."""
        if self._fd < 0:
            if self._detached:
                raise FileNotFoundError(errno.ENOENT, "the segment was deleted or replaced", self.log_path)
            self._fd = os.open(self.log_path, os.O_RDWR | os.O_APPEND)
        if not self._keep_open:
            self.files.add(self)
        return self._fd

    @property
    def keep_open(self) -> bool:
        return self._keep_open

    @keep_open.setter
    def keep_open(self, value: bool) -> None:
        """True for the active segment (and a deleted one still serving reads): its file is
        not in the pool of files closed least recently used first."""
        self._keep_open = value
        if value:
            self.files.remove(self)
        elif self._fd >= 0:
            self.files.add(self)

    # ------------------------------------------------------------------ opening
    @classmethod
    def create(
        cls, directory: str, base: int, interval: int, now_ms: int, files: SegmentFilePool | None = None
    ) -> LogSegment:
        """A new, empty segment at offset ``base`` (the active one) with an index entry every
        ``interval`` bytes."""
        seg = cls(directory, base, interval, files)
        seg._keep_open = True  # a new segment is the active one
        seg._fd = os.open(seg.log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        seg.index = OffsetIndex.create(seg.path(INDEX_SUFFIX), base)
        seg.time_index = TimeIndex.create(seg.path(TIME_INDEX_SUFFIX), base)
        seg.txn_index = TransactionIndex(seg.path(TXN_INDEX_SUFFIX), base)
        # Always present (empty: no aborts), so a missing one is known to be lost and is
        # rebuilt whatever the start; this also truncates a leftover with this base.
        seg.txn_index.reset()
        seg.created_ms = now_ms
        return seg

    @classmethod
    def open(
        cls,
        directory: str,
        base_offset: int,
        index_interval_bytes: int,
        *,
        now_ms: int,
        files: SegmentFilePool | None = None,
    ) -> LogSegment:
        """Open an existing segment without reading its batches or opening its .log (that
        happens on first use). Index problems are noted in ``suspect`` (the caller then runs
        ``recover``), never raised."""
        seg = cls(directory, base_offset, index_interval_bytes, files)
        seg.size = os.stat(seg.log_path).st_size
        seg.created_ms = now_ms
        seg.txn_index = TransactionIndex(seg.path(TXN_INDEX_SUFFIX), base_offset)
        try:
            if not os.path.exists(seg.txn_index.path):
                raise CorruptIndexError(f"{seg.txn_index.path} is missing")
            seg.index = OffsetIndex.open(seg.path(INDEX_SUFFIX), base_offset, seg.size)
            seg.time_index = TimeIndex.open(seg.path(TIME_INDEX_SUFFIX), base_offset)
            seg.txn_index = TransactionIndex.open(seg.txn_index.path, base_offset)
        except CorruptIndexError as exc:
            seg.suspect = str(exc)
            seg.index = OffsetIndex(seg.path(INDEX_SUFFIX), base_offset)
            seg.time_index = TimeIndex(seg.path(TIME_INDEX_SUFFIX), base_offset)
            return seg
        last_time = seg.time_index.last_entry()
        if last_time is not None:
            seg.max_timestamp, seg.offset_of_max_timestamp = last_time
        return seg

    def load_tail(self, recovery_point: int | None = None) -> str | None:
        """For the active segment after a clean shutdown: read the batches after the last
        offset-index entry (a few KiB) to learn the next offset and the index state. Returns a
        problem description if the tail is not clean (the caller then recovers).

        After an unclean shutdown (``recovery_point`` given) the segment must also end exactly
        at the recovery point: the scan stops at the first batch reaching it (so an unflushed
        tail is read once, by the recovery that follows, not here too)."""
        last = self.index.last_entry()
        expected, pos = last if last is not None else (self.base_offset, 0)
        stop = ScanStop()
        for p, h, _ in scan_batches(self.fd, pos, self.size, stop, chunk=_SEEK_CHUNK * 4):
            if h.base_offset < expected:  # compaction leaves gaps; never overlaps
                return f"batch at position {p} has offset {h.base_offset}, expected at least {expected}"
            if recovery_point is not None and h.last_offset >= recovery_point:
                return "unclean shutdown"
            if h.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = h.max_timestamp, h.base_offset
            expected = h.last_offset + 1
        if stop.reason is not None:
            return stop.reason
        if recovery_point is not None:
            if expected != recovery_point:
                return "unclean shutdown"  # the segment ends below the recovery point
            if self._indexed_past(recovery_point):
                return "unclean shutdown"
        self.next_offset = expected
        # as if appended in this process: bytes written since the last indexed batch started
        self.bytes_since_last_index_entry = self.size - pos
        return None

    def _indexed_past(self, recovery_point: int) -> bool:
        """Index entries at or past the recovery point although the log ends there: after a
        power loss the index files (written as the log was, fsynced with it) can keep entries
        whose batches were lost, e.g. an aborted transaction that read_committed consumers
        would then skip. The recovery rebuilds them from the log."""
        txns = self.txn_index.entries
        if txns and txns[-1].last_offset >= recovery_point:
            return True
        last_time = self.time_index.last_entry()
        return last_time is not None and last_time[1] >= recovery_point

    # ------------------------------------------------------------------ appending
    def append(
        self,
        parts: list[bytes | bytearray | memoryview],
        size: int,
        base_offset: int,
        next_offset: int,
        max_timestamp: int,
    ) -> int:
        """Write one batch (given as buffers) at the end; returns its position. On an OSError
        the file is cut back to its previous size, so a failed append leaves nothing behind."""
        pos = self.size
        try:
            written = os.writev(self.fd, parts)
            while written < size:  # rare: a partial write (e.g. a signal); finish it
                flat = b"".join(bytes(p) for p in parts)
                written += os.write(self.fd, flat[written:])
        except OSError:
            try:
                os.ftruncate(self.fd, pos)
            except OSError:
                pass
            raise
        # Kafka's order: the running maximum first, then (every index.interval.bytes) one
        # offset-index entry for this batch and one time-index entry for the maximum so far.
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, base_offset
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self.index.append(base_offset, pos)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_last_index_entry = 0
        if pos == 0:
            self.rolling_timestamp = max_timestamp
        self.bytes_since_last_index_entry += size
        self.size = pos + size
        self.next_offset = next_offset
        self.dirty = True
        return pos

    def first_batch_timestamp(self) -> int | None:
        """maxTimestamp of the first batch (Kafka rolls on segment.ms from it)."""
        if self.rolling_timestamp is None and self.size >= HEADER_SIZE:
            self.rolling_timestamp = self.read_header(0).max_timestamp
        return self.rolling_timestamp

    # ------------------------------------------------------------------ reading
    def read_header(self, position: int) -> BatchHeader:
        return _make_header(_unpack_header(os.pread(self.fd, HEADER_SIZE, position)))

    def read_batch(self, position: int, size: int) -> bytes:
        return os.pread(self.fd, size, position)

    def headers_from(self, position: int, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of the batches from ``position`` (a batch boundary) on."""
        stop = ScanStop()
        for p, h, _ in scan_batches(
            self.fd, position, self.size if end is None else end, stop, chunk=_SEEK_CHUNK
        ):
            yield p, h

    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The batch containing ``offset`` (or the first one after it): (position, header)."""
        _, pos = self.index.lookup(offset)
        for p, h in self.headers_from(pos):
            if h.base_offset + h.last_offset_delta >= offset:
                return p, h
        return None

    # ------------------------------------------------------------------ recovery
    def recover(self, from_offset: int | None = None) -> RecoveryResult:
        """Kafka's LogSegment.recover: read every batch, check structure, offset continuity and
        CRC, rebuild the offset and time indexes, and cut the file at the first bad batch. The
        transaction index is rebuilt by the caller (it needs producer state).

        With ``from_offset`` (the log's recovery point, inside this segment) only the batches
        from that offset on are checked: the ones below were checked or flushed before the
        recovery point was checkpointed. Their index entries are kept and the batch at
        ``from_offset`` is found from the offset index with a short walk of headers; if that
        walk does not land on it (a damaged or missing part below it) the whole segment is
        recovered instead."""
        file_size = os.fstat(self.fd).st_size
        start = None
        if from_offset is not None and from_offset > self.base_offset:
            start = self._resume_point(from_offset, file_size)
        if start is None:
            self.index.reset()
            self.time_index.reset()
            self.max_timestamp = self.offset_of_max_timestamp = -1
            self.bytes_since_last_index_entry = 0
            start = (0, self.base_offset)
        self.rolling_timestamp = None
        position, expected = start
        stop = ScanStop()
        reason = None
        valid = position
        batches = 0
        for pos, h, data in scan_batches(self.fd, position, file_size, stop, with_bytes=True):
            if h.base_offset < expected:  # compaction leaves gaps between batches, never overlaps
                reason = f"batch at position {pos} has offset {h.base_offset}, expected at least {expected}"
                break
            assert data is not None  # with_bytes=True: each batch comes with its bytes
            if not crc_ok(data):
                reason = f"CRC mismatch in the batch at offset {h.base_offset}, position {pos}"
                break
            # a compacted batch keeps its last offset delta with fewer records (as in Kafka)
            if not 0 <= h.records_count <= h.last_offset_delta + 1:
                reason = f"batch at offset {h.base_offset} has inconsistent record counts"
                break
            if h.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = h.max_timestamp, h.base_offset
            if self.bytes_since_last_index_entry > self.index_interval_bytes:
                self.index.append(h.base_offset, pos)
                self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += h.size
            expected = h.last_offset + 1
            valid = pos + h.size
            batches += 1
        else:
            reason = stop.reason
            valid = stop.position
        truncated = file_size - valid
        if truncated:
            os.ftruncate(self.fd, valid)
        self.size = valid
        self.next_offset = expected
        self.index.write_pending()
        self.time_index.write_pending()
        self.suspect = None
        self.dirty = True
        return RecoveryResult(valid, truncated, expected, reason if truncated else None, batches, position)

    def _resume_point(self, offset: int, file_size: int) -> tuple[int, int] | None:
        """(position, offset) of the first batch at or after ``offset``, with the indexes cut
        back to the entries before it and the segment's running state (largest timestamp,
        bytes since the last index entry) as of that batch; None if the batches before it do
        not lead there (then the caller recovers the whole segment)."""
        index_offset, index_position = self.index.lookup(offset)
        expected = index_offset
        max_ts, max_ts_offset = -1, -1
        stop = ScanStop()
        for p, h, _ in scan_batches(self.fd, index_position, file_size, stop, chunk=_SEEK_CHUNK * 4):
            if h.base_offset < expected:
                return None
            if h.last_offset >= offset:
                if h.base_offset < offset:
                    return None  # the recovery point is not a batch boundary: check it all
                position = p  # the first batch at or after it (compaction leaves gaps)
                break
            if h.max_timestamp > max_ts:
                max_ts, max_ts_offset = h.max_timestamp, h.base_offset
            expected = h.last_offset + 1
        else:
            if stop.reason is not None or expected != offset:
                return None  # torn, or the log ends below the recovery point
            position = stop.position
        self.index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        last_time = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = last_time if last_time is not None else (-1, -1)
        if max_ts > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_ts, max_ts_offset
        last = self.index.last_entry()
        self.bytes_since_last_index_entry = position - (last[1] if last is not None else 0)
        return position, offset

    # ------------------------------------------------------------------ lifecycle
    def on_become_inactive(self) -> None:
        """The segment was rolled: make its time index end with its largest timestamp (so it
        can be known after a restart without a scan) and write the pending index entries."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.write_pending()
        self.keep_open = False

    def write_pending(self) -> None:
        self.index.write_pending()
        self.time_index.write_pending()

    def sync(self) -> None:
        """fsync the .log and the index files. Touches no Python state, so it may run in a
        worker thread while the event loop keeps appending to another segment; it fsyncs
        through its own descriptor, so the pool may close the segment's meanwhile."""
        fsync_file(self.log_path)
        self.index.sync()
        self.time_index.sync()
        self.txn_index.sync()

    def plan_sync(self) -> tuple[str, tuple[str, ...]]:
        """On the event loop: what an fsync round must cover, the .log and the index files
        written since the last plan (run it with `run_sync_plan`, in any thread). Paths, not
        descriptors: the pool of open segment files may close this segment's meanwhile."""
        indexes = (self.index, self.time_index, self.txn_index)
        return self.log_path, tuple(idx.path for idx in indexes if idx.take_unsynced())

    @staticmethod
    def run_sync_plan(plan: tuple[str, tuple[str, ...]]) -> None:
        """fsync what `plan_sync` listed; touches no Python state (worker threads)."""
        log_path, index_paths = plan
        fsync_file(log_path)
        for path in index_paths:
            fsync_file(path)

    def forget_sync_plan(self) -> None:
        """The planned fsync failed: the next plan must cover every index again."""
        self.index.forget_sync()
        self.time_index.forget_sync()
        self.txn_index.forget_sync()

    def flush(self) -> None:
        self.write_pending()
        self.sync()
        self.dirty = False

    def close(self) -> None:
        """Close the .log (a later read opens it again, if it still exists)."""
        self.files.remove(self)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def detach(self) -> None:
        """The segment left the log (retention, compaction): keep its open file, if any, for
        reads in flight until the owner closes it, and never reopen its path, which the
        cleaner may already have filled with the compacted segment."""
        if self._fd >= 0:
            self.keep_open = True
        self._detached = True

    def delete_files(self) -> None:
        self.close()
        self.unlink_files()

    def unlink_files(self) -> None:
        """Remove the files but keep the .log open (if it is): reads in flight keep working
        until the owner closes it."""
        self.detach()
        delete_segment_files(self.dir, self.base_offset)

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, size={self.size}, next={self.next_offset})"
