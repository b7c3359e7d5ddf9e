"""One partition's log (Kafka's ``UnifiedLog`` + ``LogLoader``, for a single replica).

A PartitionLog is an ordered list of LogSegments (only the last, the *active* one, is appended
to) plus the partition's producer state. It owns every rule about offsets:

* append: validate one batch (``storage/log_validator.py``, Kafka's LogValidator: the header
  and every record are checked, nothing is rewritten), check producer state (idempotence,
  epochs, retries), stamp baseOffset / partitionLeaderEpoch (and maxTimestamp when the records
  say otherwise or for LogAppendTime topics) into a copy of the 61-byte header only, write
  header + untouched payload with one writev. The records are never copied.
* high watermark == log end offset (one replica: an append is committed once written);
  last stable offset == first offset of the oldest open transaction, else the high watermark.
* reads hand out FileSlices of whole batches, limited to the HWM or LSO.
* aborted transactions: every abort marker adds an entry to its segment's TransactionIndex and
  to an in-memory list sorted by marker offset, which answers read_committed fetches.

Durability: appends reach the page cache before ``append`` returns (a SIGKILL loses nothing that
was acknowledged). A log never fsyncs on its caller's thread, except in ``close`` (and
``flush``, which only close, tools and tests call): when flush.messages / flush.ms are reached it
only marks itself due (``flush_due``) and tells its ``Flusher``; whoever must not answer before
the disk awaits the fsync round there (the broker's ``broker/durability.py``: one service does
every fsync off the event loop). A rolled segment's fsync and its producer snapshot are handed to
``Flusher.submit`` (a worker thread). The *recovery point* is the offset below which everything
is known to be on disk (it moves only after an fsync); after an unclean shutdown only the
batches from it on are re-read (``open``). Without a flusher (tools, unit tests) ``InlineFlusher``
does all of it at once on the caller's thread.

All methods run on the event loop thread except ``write_checkpoint_snapshot`` (a worker thread
of the durability service: the roll's and the recovery-point checkpoint's snapshots); it and
``close`` share one lock, so no snapshot is written for a log once it is closed (its directory
may be renamed away and a new topic's created in its place).
"""

from __future__ import annotations

import os
import threading
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, NamedTuple, Protocol, TypeVar

import structlog
from minibroker.common.clock import Clock
from minibroker.common.faults import Faults
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records import (
    ATTR_CONTROL,
    ATTR_LOG_APPEND_TIME,
    CONTROL_ABORT,
    HEADER_SIZE,
    HEADER_STRUCT,
    BatchHeader,
    CorruptBatchError,
    Record,
    build_control_batch,
    iter_records,
    parse_control_record,
    stamp_header,
)
from minibroker.protocol.varint import BytesLike
from minibroker.storage.config import LogConfig
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.file_slice import FileSlice
from minibroker.storage.log_loader import LoadedLog, LogLoader, PartitionContext, apply_txn_marker
from minibroker.storage.log_validator import validate_batch_header, validate_records
from minibroker.storage.producer_state import ProducerStateManager
from minibroker.storage.segment import LogSegment
from minibroker.storage.segment_files import SegmentFilePool

__all__ = [
    "PartitionLog",
    "Flusher",
    "InlineFlusher",
    "FlushTicket",
    "AppendInfo",
    "ReadResult",
    "LEADER_EPOCH",
    "LATEST_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "EARLIEST_LOCAL_TIMESTAMP",
    "disk_free_bytes",
]

log = structlog.get_logger(__name__)

# One broker, never a leader change: every batch carries epoch 0 (clients validate it against
# Metadata / OffsetForLeaderEpoch, which report the same constant).
LEADER_EPOCH = 0

# ListOffsets special timestamps (Kafka's ListOffsetsRequest)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4

_INT32_MAX = 2**31 - 1
_make_header = BatchHeader._make
_unpack_header = HEADER_STRUCT.unpack_from


T = TypeVar("T")


class Flusher(Protocol):
    """Where a log's fsyncs go (the broker's ``broker/durability.py``; ``InlineFlusher`` without
    one)."""

    def submit(self, fn: Callable[..., T], /, *args: Any) -> Future[T]:
        """Run ``fn(*args)`` in a worker thread (roll fsyncs, snapshots, checkpoint files);
        nobody waits for it."""
        ...

    def write(self, fn: Callable[..., T], /, *args: Any) -> Future[T]:
        """Run ``fn(*args)`` (a durable file write) in that worker thread, in order with the
        others; the answer of the request that caused it waits for it."""
        ...

    def flush_due(self, plog: PartitionLog) -> None:
        """``plog``'s flush policy is due: fsync it in the next round (the answer waits)."""
        ...


def run_now(fn: Callable[..., T], /, *args: Any) -> Future[T]:
    """``fn(*args)`` run on the caller's thread, as a done Future (its error inside it)."""
    fut: Future[T] = Future()
    try:
        fut.set_result(fn(*args))
    except BaseException as exc:  # noqa: BLE001 - handed to whoever reads the future
        fut.set_exception(exc)
    return fut


class InlineFlusher:
    """Storage without a broker (tools, unit tests): everything at once, on the caller's
    thread."""

    def submit(self, fn: Callable[..., T], /, *args: Any) -> Future[T]:
        return run_now(fn, *args)

    def write(self, fn: Callable[..., T], /, *args: Any) -> Future[T]:
        fut: Future[T] = Future()
        fut.set_result(fn(*args))  # an error is raised to the caller, as the write it stands for
        return fut

    def flush_due(self, plog: PartitionLog) -> None:
        plog.flush()


class AppendInfo(NamedTuple):
    base_offset: int
    last_offset: int
    log_append_time_ms: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    duplicate: bool  # an exact retry: nothing was written, offsets are the original ones


class FlushTicket(NamedTuple):
    """What one fsync round of a PartitionLog covers (see PartitionLog.begin_flush)."""

    segments: tuple[LogSegment, ...]  # written since the previous flush
    plans: tuple[tuple[str, tuple[str, ...]], ...]  # their LogSegment.plan_sync()
    running: tuple[Future[None], ...]  # roll fsyncs still in flight
    offset: int  # everything below is durable once sync() returns
    messages: int = 0  # flush.messages count it covers (given back if it fails)
    last_flush_ms: int = 0  # flush.ms clock before it began (restored if it fails)

    def sync(self) -> None:
        for fut in self.running:
            fut.result()
        for plan in self.plans:
            LogSegment.run_sync_plan(plan)


class ReadResult(NamedTuple):
    chunks: list[FileSlice]
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: list[tuple[int, int]] | None  # (producer_id, first_offset) sorted by the first; None: iso 0


def _error(code: ErrorCode, message: str) -> KafkaStorageError:
    return KafkaStorageError(code, message)


def disk_free_bytes(path: str) -> int | None:
    """Bytes the broker can still write on the file system holding ``path`` (for the messages of
    a full disk): the blocks free to unprivileged users, or every free block when running as
    root, which may use the reserved ones. None if the file system cannot be asked."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    return blocks * st.f_frsize


class PartitionLog:
    __slots__ = (
        "dir",
        "topic",
        "partition",
        "config",
        "leader_epoch",
        "producer_state",
        "recovery_point",
        "on_recovery_point_advanced",
        "_segments",
        "_bases",
        "_active",
        "_leo",
        "_log_start",
        "_clock",
        "_files",
        "_flusher",
        "_faults",
        "flush_due",
        "_pending_flushes",
        "_listeners",
        "_aborted",
        "_aborted_last",
        "_unflushed_messages",
        "_last_flush_ms",
        "_snapshot_offset",
        "_closed",
        "_snapshot_lock",
    )

    def __init__(
        self, part: PartitionContext, flusher: Flusher | None, loaded: LoadedLog, faults: Faults | None = None
    ) -> None:
        """The log of ``part`` made of the segments ``loaded`` (see ``open``, which loads them).
        Its fields are copied into this log's slots: the append and read paths use them.
        ``faults``: the crash point ``log.mid_roll`` (common/faults.py)."""
        self.dir = part.directory
        self.topic = part.topic
        self.partition = part.partition
        self.config = part.config
        self.leader_epoch = LEADER_EPOCH
        self.producer_state = part.producer_state
        self.recovery_point = loaded.recovery_point
        # Called (with this log) when a background fsync moved the recovery point, so the
        # LogManager can checkpoint it.
        self.on_recovery_point_advanced: Callable[[PartitionLog], None] | None = None
        self._segments = loaded.segments
        self._bases = [s.base_offset for s in loaded.segments]
        self._active = loaded.segments[-1]
        self._active.keep_open = True  # older segments open their files on demand
        self._leo = self._active.next_offset
        self._log_start = loaded.segments[0].base_offset
        self._clock = part.clock
        self._files = part.files
        self._flusher: Flusher = flusher if flusher is not None else InlineFlusher()
        self._faults = faults if faults is not None else Faults()
        #: the flush policy (flush.messages / flush.ms) asks for an fsync not yet begun
        self.flush_due = False
        # (future, offset it makes durable)
        self._pending_flushes: deque[tuple[Future[None], int]] = deque()
        self._listeners: list[Callable[[], None]] = []
        self._aborted = loaded.aborted  # sorted by last_offset (marker offset)
        self._aborted_last = [e.last_offset for e in loaded.aborted]  # the same, for bisect
        self._unflushed_messages = 0
        self._last_flush_ms = part.clock.wall_ms()
        # offset of the last producer-state snapshot written: at the log end if the loader left
        # one there; otherwise the next checkpoint writes one
        self._snapshot_offset = self._leo if loaded.snapshot_at_end else -1
        self._closed = False
        self._snapshot_lock = threading.Lock()  # see the module docstring

    def _logger(self) -> Any:
        """The module's logger with this log's topic and partition bound (for its rare lines)."""
        return log.bind(topic=self.topic, partition=self.partition)

    # ====================================================================== offsets
    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def high_watermark(self) -> int:
        return self._leo

    @property
    def last_stable_offset(self) -> int:
        fuo = self.producer_state.first_unstable_offset()
        if fuo is None:
            return self._leo
        # as Kafka's updateFirstUnstableOffset: never below the log start (DeleteRecords or
        # retention may have removed the start of an open transaction)
        return fuo if fuo >= self._log_start else self._log_start

    @property
    def segments(self) -> list[LogSegment]:
        return self._segments

    # ====================================================================== append
    def append(self, batch: BytesLike, *, internal: bool = False) -> AppendInfo:
        """Validate and append exactly one magic-2 batch (see the module docstring). Raises
        KafkaStorageError; a rejected batch changes nothing on disk or in memory."""
        mv = memoryview(batch)
        cfg = self.config
        h = validate_batch_header(mv, cfg.max_message_bytes, client=not internal)
        max_ts = None  # internal batches are built by the broker and stored as they are
        if not internal:
            max_ts = validate_records(
                mv,
                h,
                now_ms=self._clock.wall_ms(),
                log_append_time=cfg.log_append_time,
                before_max_ms=cfg.timestamp_before_max_ms,
                after_max_ms=cfg.timestamp_after_max_ms,
                compacted=cfg.compact,
                topic_partition=(self.topic, self.partition),
            ).max_timestamp
        attrs = h.attributes
        if h.producer_id >= 0:
            dup = self.producer_state.check(h)
            if dup is not None:
                # Kafka answers a duplicate with the cached batch's timestamp as its
                # log_append_time, whatever the topic's timestamp type
                return AppendInfo(dup.first_offset, dup.last_offset, dup.timestamp, self._log_start, True)
        now = self._clock.wall_ms()
        base = self._write(h, mv, now, max_ts)
        if h.producer_id >= 0:
            stored = h._replace(base_offset=base)
            if attrs & ATTR_CONTROL:  # an internal caller wrote a marker itself
                try:
                    ctrl = parse_control_record(mv)
                    self._apply_marker(stored, ctrl.type == CONTROL_ABORT, ctrl.coordinator_epoch, now)
                except CorruptBatchError:
                    self.producer_state.update(stored, base, now)
            else:
                # Kafka caches the batch's max timestamp (CreateTime or append time) for retries
                batch_ts = now if self.config.log_append_time or max_ts is None else max_ts
                self.producer_state.update(stored, base, batch_ts, last_seen_ms=now)
        self._after_append(h.records_count, now)
        return AppendInfo(
            base,
            base + h.last_offset_delta,
            now if self.config.log_append_time else -1,
            self._log_start,
            False,
        )

    def _write(self, h: BatchHeader, mv: memoryview, now: int, create_max_ts: int | None = None) -> int:
        """Assign offsets and write; returns the base offset. Only the header is copied.
        ``create_max_ts``: the records' real maximum CreateTime, stamped (with the CreateTime
        type) when the header says otherwise, as Kafka's LogValidator does."""
        size = h.batch_length + 12
        lat = self.config.log_append_time
        max_ts = h.max_timestamp
        restamp = lat  # maxTimestamp and the timestamp type are rewritten (CRC recomputed)
        if lat:
            max_ts = now
        elif create_max_ts is not None and (create_max_ts != max_ts or h.attributes & ATTR_LOG_APPEND_TIME):
            max_ts, restamp = create_max_ts, True
        seg = self._active
        if seg.size and self._should_roll(seg, h, size, max_ts, now):
            try:
                seg = self._roll(now)
            except OSError as exc:
                raise _error(
                    ErrorCode.kafka_storage_error, f"cannot roll a new segment in {self.dir}: {exc}"
                ) from exc
        base = self._leo
        head = bytearray(mv[:HEADER_SIZE])
        stamp_header(
            head,
            base,
            LEADER_EPOCH,
            max_timestamp=max_ts if restamp else None,
            log_append_time=lat,
            records=mv[HEADER_SIZE:],
        )
        next_offset = base + h.last_offset_delta + 1
        try:
            seg.append([head, mv[HEADER_SIZE:]], size, base, next_offset, max_ts)
        except OSError as exc:
            raise _error(ErrorCode.kafka_storage_error, f"cannot write to {seg.log_path}: {exc}") from exc
        self._leo = next_offset
        return base

    def append_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> int:
        """Write a COMMIT/ABORT control batch and close the producer's open transaction here;
        returns the marker's offset. Raises KafkaStorageError (e.g. INVALID_PRODUCER_EPOCH for
        a marker from an older epoch)."""
        now = self._clock.wall_ms()
        batch = build_control_batch(producer_id, producer_epoch, commit, coordinator_epoch, now)
        mv = memoryview(batch)
        h = _make_header(_unpack_header(mv, 0))
        self.producer_state.check(h)
        base = self._write(h, mv, now)
        self._apply_marker(h._replace(base_offset=base), not commit, coordinator_epoch, now)
        self._after_append(1, now)
        return base

    def _apply_marker(self, h: BatchHeader, abort: bool, coordinator_epoch: int, timestamp: int) -> None:
        """An appended COMMIT/ABORT marker: close the transaction, index an abort."""
        entry = apply_txn_marker(self.producer_state, self._active, h, abort, coordinator_epoch, timestamp)
        if entry is not None:
            self._aborted.append(entry)
            self._aborted_last.append(entry.last_offset)

    def _after_append(self, messages: int, now: int) -> None:
        cfg = self.config
        if cfg.flush_messages is not None:
            self._unflushed_messages += messages
            if self._unflushed_messages >= cfg.flush_messages:
                self._mark_due()
        if cfg.flush_ms is not None and now - self._last_flush_ms >= cfg.flush_ms:
            self._mark_due()
        if self._pending_flushes:
            self._poll_flushes()
        self._notify()

    def _mark_due(self) -> None:
        """The flush policy asks for an fsync: no fsync here, the flusher schedules it (told on
        every such append, so each one's answer waits for a round that covers it)."""
        self.flush_due = True
        self._flusher.flush_due(self)

    # ====================================================================== log start, retention
    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """DeleteRecords (Kafka's maybeIncrementLogStartOffset): records below ``offset`` become
        unreadable at once; segments wholly below it go at the next retention check. Never moves
        backwards; OFFSET_OUT_OF_RANGE above the high watermark. True if it moved."""
        if offset > self.high_watermark:
            raise _error(
                ErrorCode.offset_out_of_range,
                f"cannot delete records of {self.topic}-{self.partition} below {offset}: "
                f"the high watermark is {self.high_watermark}",
            )
        if offset <= self._log_start:
            return False
        self._set_log_start(offset)
        return True

    def _set_log_start(self, offset: int) -> None:
        self._log_start = offset
        # aborted transactions whose marker is below the log start can match no fetch any more
        drop = bisect_left(self._aborted_last, offset)
        if drop:
            del self._aborted[:drop]
            del self._aborted_last[:drop]

    def delete_oldest_segments(self, count: int) -> list[LogSegment]:
        """Kafka's deleteSegments for retention: drop the ``count`` oldest segments (rolling
        first if that is all of them, so the active segment is never the one deleted), advance
        the log start offset to the new first segment and unlink their files. Returns the
        removed segments with their files still open: a fetch answer already holding a
        FileSlice of one keeps reading it; the caller closes them after file.delete.delay.ms.
        Producer state is kept (KIP-360: a producer whose last batch was deleted continues)."""
        if count <= 0:
            return []
        if count >= len(self._segments):
            self._roll(self._clock.wall_ms())
        doomed = self._segments[:count]
        del self._segments[:count]
        del self._bases[:count]
        new_start = self._segments[0].base_offset
        if new_start > self._log_start:
            self._set_log_start(new_start)
        for seg in doomed:  # oldest first: a crash in between leaves a contiguous log
            seg.unlink_files()
        self.producer_state.delete_snapshots_before(new_start)
        return doomed

    def replace_segments(self, olds: list[LogSegment], new: LogSegment) -> None:
        """The log cleaner swapped in one compacted segment for the consecutive ``olds`` (the
        same offsets, fewer records): serve reads from it and index its aborted transactions."""
        i = self._segments.index(olds[0])
        self._segments[i : i + len(olds)] = [new]
        for old in olds:
            old.detach()
        self._bases = [s.base_offset for s in self._segments]
        self._aborted = [
            e for seg in self._segments for e in seg.txn_index.entries if e.last_offset >= self._log_start
        ]
        self._aborted_last = [e.last_offset for e in self._aborted]

    # ====================================================================== roll and flush
    def _should_roll(self, seg: LogSegment, h: BatchHeader, size: int, max_ts: int, now: int) -> bool:
        """Kafka's LogSegment.shouldRoll: size, offsets that no longer fit the int32 relative
        offsets of the indexes, or segment.ms measured from the first batch's timestamp."""
        cfg = self.config
        if seg.size > cfg.segment_bytes - size:
            return True
        if self._leo + h.last_offset_delta - seg.base_offset > _INT32_MAX:
            return True
        first_ts = seg.first_batch_timestamp()
        waited = max_ts - first_ts if first_ts is not None and first_ts >= 0 else now - seg.created_ms
        return waited > cfg.segment_ms

    def _roll(self, now: int) -> LogSegment:
        old = self._active
        old.on_become_inactive()
        new = LogSegment.create(self.dir, self._leo, self.config.index_interval_bytes, now, self._files)
        self._segments.append(new)
        self._bases.append(new.base_offset)
        self._active = new
        # a test's crash point: the new segment exists, the old one has neither its fsync nor the
        # producer snapshot at the new base (what a crash in Kafka's roll leaves)
        if self._faults.armed:
            self._faults.crash_point("log.mid_roll", f"{self.topic}-{self.partition}")
        # Kafka flushes a rolled segment asynchronously: fsync of up to a segment's worth of dirty
        # pages must not stall the caller. The producer state as of the new segment's base (the
        # most recovery replays) is encoded here and written with it, in the flusher's thread;
        # the recovery point moves when both are done (``_poll_flushes``).
        offset = self._leo
        snapshot = self.producer_state.encode_snapshot(offset)
        old.dirty = False
        self._pending_flushes.append((self._flusher.submit(self._sync_rolled, old, offset, snapshot), offset))
        self._logger().debug("rolled segment", base_offset=new.base_offset)
        return new

    def _sync_rolled(self, seg: LogSegment, offset: int, snapshot: bytes) -> None:
        """In the flusher's thread: the rolled segment's snapshot, then its fsync (raises)."""
        try:
            self.write_checkpoint_snapshot(offset, snapshot)
        except OSError as exc:  # costs a longer replay after a crash, nothing else
            self._logger().warning(
                "could not write the producer-state snapshot of a rolled segment; an unclean "
                "start will replay more",
                offset=offset,
                error=str(exc),
            )
        seg.sync()

    def _poll_flushes(self) -> None:
        advanced = False
        pending = self._pending_flushes
        while pending and pending[0][0].done():
            advanced |= self._rolled_flush_ended(*pending.popleft())
        if advanced and self.on_recovery_point_advanced is not None:
            self.on_recovery_point_advanced(self)

    def _advance_recovery_point(self, offset: int) -> bool:
        if offset > self.recovery_point:
            self.recovery_point = offset
            return True
        return False

    def _wait_pending_flushes(self) -> None:
        while self._pending_flushes:
            self._rolled_flush_ended(*self._pending_flushes.popleft())

    def _rolled_flush_ended(self, fut: Future[None], offset: int) -> bool:
        """A rolled segment's fsync (waited for if still running): the recovery point moves to
        ``offset`` (True if it moved), or the failure is logged."""
        exc = fut.exception()
        if exc is not None:
            self._logger().error(
                "could not fsync a rolled segment; its data is only in the page cache",
                error=str(exc),
            )
            return False
        return self._advance_recovery_point(offset)

    def flush(self) -> None:
        """fsync everything appended so far, on the caller's thread (``close``, tools, tests; the
        broker flushes through ``broker/durability.py``); the recovery point becomes the log
        end offset."""
        self._wait_pending_flushes()
        ticket = self.begin_flush()
        try:
            ticket.sync()
        except BaseException:
            self.finish_flush(ticket, ok=False)
            raise
        self.finish_flush(ticket, ok=True)

    def begin_flush(self) -> FlushTicket:
        """The event-loop half of a flush: write pending index entries and capture what must
        reach the disk (dirty segments, roll fsyncs still running, the offset it makes durable).
        ``ticket.sync()`` touches no Python state of this log, so it may run in a worker thread
        while appends continue; then ``finish_flush`` on the loop moves the recovery point."""
        dirty: list[LogSegment] = []
        plans: list[tuple[str, tuple[str, ...]]] = []
        for seg in self._segments:
            if seg.dirty:
                seg.write_pending()
                seg.dirty = False
                dirty.append(seg)
                plans.append(seg.plan_sync())
        running = tuple(fut for fut, _ in self._pending_flushes)
        ticket = FlushTicket(
            tuple(dirty), tuple(plans), running, self._leo, self._unflushed_messages, self._last_flush_ms
        )
        # the flush policy counts from here: appends during the round are not covered by it
        self._unflushed_messages = 0
        self._last_flush_ms = self._clock.wall_ms()
        self.flush_due = False
        return ticket

    def finish_flush(self, ticket: FlushTicket, *, ok: bool) -> None:
        if self._pending_flushes:
            self._poll_flushes()
        if not ok:
            for seg in ticket.segments:
                seg.dirty = True  # the next flush tries again, indexes included
                seg.forget_sync_plan()
            self._unflushed_messages += ticket.messages
            self._last_flush_ms = min(self._last_flush_ms, ticket.last_flush_ms)
            return
        self._advance_recovery_point(ticket.offset)

    @property
    def unflushed(self) -> bool:
        """Appended to (or a roll's fsync still running) since the last completed fsync."""
        return self.recovery_point < self._leo

    @property
    def closed(self) -> bool:
        """Closed (clean stop) or deleted: nothing may be written for it any more."""
        return self._closed

    def checkpoint_snapshot(self) -> tuple[int, bytes] | None:
        """For the periodic recovery-point checkpoint (``storage/recovery_checkpoint.py``):
        (log end offset, producer state encoded as of it), or None if nothing was appended
        since the last one. The caller writes it (``producer_state.write_snapshot``) once
        everything below that offset is on disk, so an unclean start finds a snapshot at or
        below the recovery point and replays only what follows it."""
        leo = self._leo
        if leo == self._snapshot_offset:
            return None
        return leo, self.producer_state.encode_snapshot(leo)

    def write_checkpoint_snapshot(self, offset: int, data: bytes) -> bool:
        """Any thread: write a snapshot from ``checkpoint_snapshot``; False if the log was closed
        (or deleted) first. Raises OSError if the write failed."""
        with self._snapshot_lock:
            if self._closed:
                return False
            self.producer_state.write_snapshot(offset, data)
            return True

    def snapshot_written(self, offset: int) -> None:
        """On the loop, after ``write_checkpoint_snapshot`` succeeded."""
        self._snapshot_offset = max(self._snapshot_offset, offset)

    def close(self, *, flush: bool = True) -> None:
        """Clean close: final time-index entry, flush, producer snapshot at the log end (so the
        next start replays nothing), close the files. ``flush=False`` only closes (deletion)."""
        with self._snapshot_lock:  # waits for a checkpoint snapshot being written
            if self._closed:
                return
            self._closed = True
        if not flush:  # deleted: a roll's fsync still running has nothing left to make durable
            self._pending_flushes.clear()
        self._wait_pending_flushes()
        if flush:
            active = self._active
            if active.max_timestamp >= 0:
                active.time_index.maybe_append(active.max_timestamp, active.offset_of_max_timestamp)
                active.dirty = True
            try:
                self.flush()
            except OSError as exc:  # e.g. ENOSPC writing the last index entries
                raise self._close_error(exc, "index entries") from exc
            try:
                self.producer_state.take_snapshot(self._leo)
            except OSError as exc:  # e.g. ENOSPC: atomic_write's error names no file
                raise self._close_error(exc, "producer snapshot") from exc
        for seg in self._segments:
            seg.close()
        self._listeners.clear()

    def _close_error(self, exc: OSError, what: str) -> OSError:
        """What a clean close could not write, named for the stop's message."""
        return OSError(
            exc.errno,
            f"cannot write the {what} of {self.topic}-{self.partition}: {exc.strerror or exc}",
            exc.filename or self.dir,
        )

    # ====================================================================== listeners
    def add_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        """``callback()`` runs on the event loop after every append (which includes every LSO
        change: LSO only moves when a batch or marker is appended). Returns the callback."""
        self._listeners.append(callback)
        return callback

    def _notify(self) -> None:
        for cb in self._listeners:
            try:
                cb()
            except Exception:  # noqa: BLE001 - a waiter's bug must not fail an append
                self._logger().exception("log listener failed")

    # ====================================================================== read
    def _segment_index(self, offset: int) -> int:
        return bisect_right(self._bases, offset) - 1

    def read(self, offset: int, max_bytes: int, isolation_level: int = 0) -> ReadResult:
        """Whole batches from the one containing ``offset``: at least one, then as many more as
        fit in ``max_bytes``, all below the HWM (isolation 0) or the LSO (isolation 1), from one
        segment. OFFSET_OUT_OF_RANGE outside [log start, LEO]; offset == LEO reads nothing."""
        leo = self._leo
        if offset < self._log_start or offset > leo:
            raise _error(
                ErrorCode.offset_out_of_range,
                f"offset {offset} is outside [{self._log_start}, {leo}] of {self.topic}-{self.partition}",
            )
        lso = self.last_stable_offset
        committed = isolation_level == 1
        limit = lso if committed else leo
        if offset >= limit:
            return ReadResult([], leo, lso, self._log_start, [] if committed else None)
        i = self._segment_index(offset)
        seg = self._segments[i]
        found = seg.find_batch(offset)
        while found is None and i + 1 < len(self._segments):
            # compaction removed everything from ``offset`` to this segment's end
            i += 1
            seg = self._segments[i]
            found = seg.find_batch(offset)
        if found is None or found[1].base_offset >= limit:
            return ReadResult([], leo, lso, self._log_start, [] if committed else None)
        start, first = found
        stop_offset = limit if limit < seg.next_offset else seg.next_offset
        budget_end = start + (max_bytes if max_bytes > first.size else first.size)
        end, upper = self._read_end(seg, start, first, stop_offset, budget_end)
        chunks = [FileSlice(seg, start, end - start)]
        aborted = self.aborted_transactions(offset, upper) if committed else None
        return ReadResult(chunks, leo, lso, self._log_start, aborted)

    def _read_end(
        self, seg: LogSegment, start: int, first: BatchHeader, stop_offset: int, budget_end: int
    ) -> tuple[int, int]:
        """(end position, first offset not returned): the largest run of whole batches from
        ``start`` ending by ``budget_end`` with offsets below ``stop_offset``. Jumps with the
        offset index so only the last few KiB are walked batch by batch."""
        if stop_offset >= seg.next_offset and budget_end >= seg.size:
            return seg.size, seg.next_offset  # the common tailing case: everything to the end
        # Last index entry that is certainly inside the answer (its batch starts in budget and
        # below the stop offset); every batch before it is then inside too.
        idx_off, idx_pos = seg.index.lookup_position(budget_end)
        if idx_off >= stop_offset:
            idx_off, idx_pos = seg.index.lookup(stop_offset - 1)
        pos = idx_pos if idx_pos > start else start + first.size
        if pos == start + first.size:
            next_off = first.base_offset + first.last_offset_delta + 1
        else:
            next_off = idx_off
        if next_off >= stop_offset or pos >= seg.size:
            return pos, min(next_off, stop_offset)
        for p, h in seg.headers_from(pos):
            if h.base_offset >= stop_offset or p + h.size > budget_end:
                return p, h.base_offset
            pos = p + h.size
            next_off = h.base_offset + h.last_offset_delta + 1
        return pos, min(next_off, stop_offset)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[tuple[int, int]]:
        """Kafka's collectAbortedTransactions: (producer_id, first_offset) of every aborted txn
        with marker offset >= fetch_offset and first offset < upper_bound, sorted by first
        offset. The scan stops at an entry whose LSO reached upper_bound: every later abort
        started at or after that LSO."""
        out = []
        entries = self._aborted
        for i in range(bisect_left(self._aborted_last, fetch_offset), len(entries)):
            txn = entries[i]
            if txn.first_offset < upper_bound:
                out.append((txn.producer_id, txn.first_offset))
            if txn.last_stable_offset >= upper_bound:
                break
        out.sort(key=lambda t: t[1])
        return out

    # ====================================================================== timestamps
    def offset_for_timestamp(self, timestamp: int, isolation_level: int = 0) -> tuple[int, int] | None:
        """ListOffsets: (offset, timestamp) or None (answered as -1/-1). -1 latest (HWM, or LSO
        for read_committed), -2 earliest, -3 the record with the largest timestamp, -4 earliest
        local; otherwise the first record with timestamp >= ``timestamp``. As in Kafka, a result
        at or beyond the HWM/LSO is not returned."""
        limit = self.last_stable_offset if isolation_level == 1 else self._leo
        if timestamp == LATEST_TIMESTAMP:
            return limit, -1
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return self._log_start, -1
        start = self._log_start
        if timestamp == MAX_TIMESTAMP:
            found = self._max_timestamp_record()
            if found is not None and found[0] < start:
                found = None
        elif timestamp < 0:
            return None
        else:
            found = None
            for seg in self._segments:
                if seg.max_timestamp >= timestamp and seg.next_offset > start:
                    found = self._search_segment(seg, timestamp, start)
                    if found is not None:
                        break
        if found is None or found[0] >= limit:
            return None
        return found

    def _search_segment(self, seg: LogSegment, timestamp: int, start: int) -> tuple[int, int] | None:
        """The first record at or after offset ``start`` with a timestamp >= ``timestamp``."""
        entry = seg.time_index.lookup(timestamp)
        _, pos = seg.index.lookup(max(entry[1] if entry is not None else seg.base_offset, start))
        for p, h in seg.headers_from(pos):
            if h.max_timestamp < timestamp or h.last_offset < start:
                continue
            for rec in self._records_at(seg, p, h):
                if rec.timestamp >= timestamp and rec.offset >= start:
                    return rec.offset, rec.timestamp
        return None

    def _max_timestamp_record(self) -> tuple[int, int] | None:
        best = None
        for seg in self._segments:
            if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        found = best.find_batch(best.offset_of_max_timestamp)
        if found is None:
            return None
        p, h = found
        for rec in self._records_at(best, p, h):
            if rec.timestamp == h.max_timestamp:
                return rec.offset, rec.timestamp
        return h.base_offset, h.max_timestamp

    def _records_at(self, seg: LogSegment, position: int, h: BatchHeader) -> Iterator[Record]:
        try:
            yield from iter_records(seg.read_batch(position, h.size))
        except CorruptBatchError as exc:
            self._logger().warning(
                "cannot decode the records of a batch",
                offset=h.base_offset,
                error=str(exc),
            )

    # ====================================================================== producer expiry
    def remove_expired_producers(self, now_ms: int) -> None:
        self.producer_state.remove_expired(now_ms)

    # ====================================================================== opening/recovery
    @classmethod
    def open(
        cls,
        directory: str,
        topic: str,
        partition: int,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        clean_shutdown: bool = False,
        producer_expiration_ms: int = 86_400_000,
        clock: Clock,
        files: SegmentFilePool | None = None,
        flusher: Flusher | None = None,
        faults: Faults | None = None,
    ) -> PartitionLog:
        """Open (creating if needed) the log in ``directory``: ``storage/log_loader.py`` loads
        and, after an unclean shutdown (from ``recovery_point`` on) or where an index is
        broken, recovers it. The log start offset is the checkpointed ``log_start_offset``
        (DeleteRecords) or the first segment's base, whichever is larger. ``files``: the
        LogManager's pool of open segment files (a log of none gets a pool of its own)."""
        files = files if files is not None else SegmentFilePool()
        os.makedirs(directory, exist_ok=True)
        psm = ProducerStateManager(directory, producer_expiration_ms)
        part = PartitionContext(directory, topic, partition, config, psm, clock, files)
        self = cls(part, flusher, LogLoader(part).load(recovery_point, clean_shutdown), faults)
        if log_start_offset > self._log_start:
            self._set_log_start(min(log_start_offset, self._leo))
        return self

    # ====================================================================== deletion
    def delete_files(self) -> None:
        """Close and remove every file of this log (the directory itself is the caller's)."""
        self.close(flush=False)
        for seg in self._segments:
            seg.delete_files()

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, start={self._log_start}, "
            f"leo={self._leo}, segments={len(self._segments)})"
        )
