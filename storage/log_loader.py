"""Loading a partition log from disk, with recovery (Kafka's ``LogLoader``).

After a clean shutdown nothing is scanned: indexes are opened lazily and the active segment's
tail after its last index entry is read to find the log end. Otherwise only what lies at or
after the recovery point is recovered (CRCs checked, indexes rebuilt, a torn or corrupt tail
cut, every later segment dropped): in the segment holding the recovery point, from the batch at
it (found through the offset index), so the work is proportional to the data written since the
last checkpoint, not to the segment; a segment that ends exactly at the recovery point (nothing
appended since) is opened as after a clean shutdown. A segment with a missing or broken index
is recovered whole in either case. Then producer state is loaded from the newest usable snapshot
at or below the first recovered offset and the log after it is replayed (read in 1 MiB pieces),
rebuilding the transaction index from that offset on. The loader hands ``PartitionLog`` a ``LoadedLog``;
it keeps no state after that.

What an unclean start trusts (as Kafka): the bytes below the recovery point are not read again.
The recovery point only moves after an fsync (``PartitionLog.finish_flush``), so they survived
even a power loss; a byte damaged there later (a disk error, a hand edit) is served as it is and
the consumer's CRC check reports it. A clean start checks no CRC at all.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from typing import NamedTuple

import structlog
from minibroker.common.clock import Clock
from minibroker.protocol.records import (
    ATTR_CONTROL,
    CONTROL_ABORT,
    BatchHeader,
    CorruptBatchError,
    parse_control_record,
)
from minibroker.protocol.varint import BytesLike
from minibroker.storage.config import LogConfig
from minibroker.storage.durable_files import fsync_dir
from minibroker.storage.producer_state import ProducerStateManager
from minibroker.storage.segment import (
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    LogSegment,
    ScanStop,
    delete_segment_files,
    scan_batches,
    segment_file_name,
)
from minibroker.storage.segment_files import SegmentFilePool
from minibroker.storage.transaction_index import AbortedTxn

__all__ = ["LogLoader", "LoadedLog", "PartitionContext", "apply_txn_marker"]

log = structlog.get_logger(__name__)


class LoadedLog(NamedTuple):
    segments: list[LogSegment]  # never empty; the last is the active one
    recovery_point: int
    aborted: list[AbortedTxn]  # every segment's aborted transactions, by marker offset
    snapshot_at_end: bool  # a producer-state snapshot at the log end is on disk


def apply_txn_marker(
    producer_state: ProducerStateManager,
    seg: LogSegment,
    h: BatchHeader,
    abort: bool,
    coordinator_epoch: int,
    timestamp: int,
) -> AbortedTxn | None:
    """Close the producer's transaction; for an abort, index it in ``seg`` and return the entry
    (Kafka's ProducerAppendInfo.appendEndTxnMarker + UnifiedLog.updateTxnIndex). Used by
    appends and by recovery replay, so both produce identical indexes."""
    pid, marker = h.producer_id, h.base_offset
    first = producer_state.ongoing_first_offset(pid)
    producer_state.update(h, marker, timestamp, abort=abort, coordinator_epoch=coordinator_epoch)
    if not abort:
        return None
    fuo = producer_state.first_unstable_offset()
    # An abort with no data from this producer here still gets an entry (first = marker),
    # as in Kafka; consumers drop it when they reach the marker.
    entry = AbortedTxn(pid, marker if first is None else first, marker, marker + 1 if fuo is None else fuo)
    seg.txn_index.append(entry)
    return entry


class _Recovery:
    """What checking the segments found (for the log line and the producer-state rebuild)."""

    __slots__ = ("recovered", "dropped", "bytes_cut", "bytes_checked", "cut", "rebuild_from")

    def __init__(self) -> None:
        self.recovered: list[LogSegment] = []
        self.dropped: list[int] = []
        self.bytes_cut = 0
        self.bytes_checked = 0
        self.cut = False  # a segment's tail was cut: every later segment is dropped
        # first offset whose transaction-index entries must be rebuilt (None: none)
        self.rebuild_from: int | None = None


class PartitionContext(NamedTuple):
    """What a partition's log and its loader both work with: where it lives, which partition
    it is, its topic config, its producer state, the clock and the LogManager's pool of open
    segment files."""

    directory: str
    topic: str
    partition: int
    config: LogConfig
    producer_state: ProducerStateManager
    clock: Clock
    files: SegmentFilePool


class LogLoader:
    def __init__(self, part: PartitionContext) -> None:
        self.part = part
        self._log = log.bind(topic=part.topic, partition=part.partition)

    def load(self, recovery_point: int, clean: bool) -> LoadedLog:
        """Open (creating if needed) the segments in the directory, recovering what an unclean
        shutdown may have left torn, and bring the producer state up to the log end."""
        part = self.part
        started = part.clock.monotonic()
        names = os.listdir(part.directory)
        bases = sorted(
            int(n[:20])
            for n in names
            if n.endswith(LOG_SUFFIX) and len(n) == 20 + len(LOG_SUFFIX) and n[:20].isdigit()
        )
        _remove_orphan_index_files(part.directory, names, set(bases))
        if not bases:
            seg = LogSegment.create(
                part.directory, 0, part.config.index_interval_bytes, part.clock.wall_ms(), part.files
            )
            part.producer_state.load_snapshot(0)
            return LoadedLog([seg], 0, [], True)

        found = _Recovery()
        segments = self._open_segments(bases, recovery_point, clean, found)
        if found.dropped:
            self._log.warning(
                "deleted the segments after a corrupt point of a partition log",
                segments=[segment_file_name(b, LOG_SUFFIX) for b in found.dropped],
            )
        segments[-1].keep_open = True  # the active segment; older ones open files on demand
        leo = segments[-1].next_offset
        replayed = self._load_producer_state(segments, found.rebuild_from)
        aborted = [e for seg in segments for e in seg.txn_index.entries]

        if found.recovered or found.dropped:
            if clean:
                # a clean start rebuilt an index: made durable now, as the log end it trusts
                for seg in found.recovered:
                    seg.flush()
                fsync_dir(part.directory)
                part.producer_state.take_snapshot(leo)
                recovered_to = leo
            else:
                # As Kafka's LogLoader: an unclean start does not move the recovery point (it
                # moves only after an fsync). What recovery rewrote (a cut tail, indexes) is in
                # the page cache: a crash before the next checkpoint checks the same bytes again.
                recovered_to = min(recovery_point, leo)
            self._log.info(
                "recovered partition log",
                clean_shutdown=clean,
                recovery_point=recovery_point,
                segments_checked=len(found.recovered),
                bytes_checked=found.bytes_checked,
                segments_dropped=len(found.dropped),
                bytes_cut=found.bytes_cut,
                log_end_offset=leo,
                batches_replayed=replayed,
                ms=round((part.clock.monotonic() - started) * 1000, 1),
            )
            # (unclean: replaying nothing means the snapshot loaded is the one at the log end)
            return LoadedLog(segments, recovered_to, aborted, clean or not replayed)
        if not clean:
            # nothing followed the recovery point (== leo); a snapshot at the end, if the one
            # loaded is older, is the next checkpoint's, as after a recovery
            return LoadedLog(segments, min(recovery_point, leo), aborted, not replayed)
        if replayed:
            part.producer_state.take_snapshot(leo)
        return LoadedLog(segments, leo, aborted, True)

    # ------------------------------------------------------------------ segments
    def _open_segments(
        self, bases: list[int], recovery_point: int, clean: bool, found: _Recovery
    ) -> list[LogSegment]:
        part = self.part
        segments: list[LogSegment] = []
        now = part.clock.wall_ms()
        for i, base in enumerate(bases):
            if found.cut:
                delete_segment_files(part.directory, base)
                found.dropped.append(base)
                continue
            seg = LogSegment.open(
                part.directory, base, part.config.index_interval_bytes, now_ms=now, files=part.files
            )
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            why = seg.suspect
            from_offset = None  # recover the whole segment (always when an index is suspect)
            unflushed = not clean and (next_base is None or next_base > recovery_point)
            if why is None:
                # The tail after the last index entry (a few KiB) tells where the segment
                # really ends: a gap before the next one means a segment file was lost.
                # Unclean: a segment ending exactly at the recovery point holds only bytes
                # fsynced before the point moved (trusted, as below it), so an unclean start
                # with nothing appended since the last checkpoint costs what a clean one does.
                why = seg.load_tail(recovery_point if unflushed else None)
                if why is not None and unflushed:
                    from_offset = recovery_point
                elif why is None and next_base is not None:
                    self._check_gap(seg, next_base)
            if why is not None:
                self._recover(seg, why, from_offset, next_base, found)
            segments.append(seg)
        return segments

    def _recover(
        self, seg: LogSegment, why: str, from_offset: int | None, next_base: int | None, found: _Recovery
    ) -> None:
        result = seg.recover(from_offset)
        found.recovered.append(seg)
        found.bytes_checked += result.valid_bytes + result.truncated_bytes - result.checked_from
        if found.rebuild_from is None:
            # the transaction index below what was checked is intact (written with its batches)
            found.rebuild_from = (
                seg.base_offset if result.checked_from == 0 else max(seg.base_offset, from_offset or 0)
            )
        if result.truncated_bytes:
            found.bytes_cut += result.truncated_bytes
            self._log.warning(
                "cut a torn or corrupt tail off a partition log; records from this "
                "offset on were lost and producers will resend unacknowledged ones",
                segment=segment_file_name(seg.base_offset, LOG_SUFFIX),
                from_offset=result.next_offset,
                position=result.valid_bytes,
                bytes_removed=result.truncated_bytes,
                reason=result.reason,
                checked_because=why,
            )
        if next_base is None:
            return
        if result.truncated_bytes or result.next_offset > next_base:
            found.cut = True
        else:
            self._check_gap(seg, next_base)

    def _check_gap(self, seg: LogSegment, next_base: int) -> None:
        """``seg`` ends before the next segment begins. Compaction leaves such gaps; in a log
        that is never compacted they mean a segment file was deleted: say what was lost."""
        if seg.next_offset < next_base and not self.part.config.compact:
            self._log.warning(
                "records are missing between two segments (a segment file was deleted "
                "or lost); consumers will skip these offsets",
                missing_from_offset=seg.next_offset,
                missing_to_offset=next_base - 1,
            )
        seg.next_offset = next_base

    # ------------------------------------------------------------------ producer state
    def _load_producer_state(self, segments: list[LogSegment], rebuild_from: int | None) -> int:
        """Producer state and aborted-transaction indexes. From ``rebuild_from`` (the first
        recovered offset) on, txnindex entries may be lost or never written: drop them and
        rebuild them from the abort markers, replaying from a snapshot taken at or before that
        offset. Returns the batches replayed."""
        leo = segments[-1].next_offset
        if rebuild_from is not None:
            for seg in segments:
                if seg.base_offset >= rebuild_from:
                    seg.txn_index.reset()  # (re)creates the file: a missing one means lost
                else:  # also where the log ends at rebuild_from: a power loss can keep
                    # entries whose markers were lost
                    seg.txn_index.truncate_to(rebuild_from)
        start = self.part.producer_state.load_snapshot(leo if rebuild_from is None else rebuild_from)
        replayed = self._replay(segments, max(start, segments[0].base_offset), rebuild_from)
        self.part.producer_state.truncate_snapshots_after(leo)
        return replayed

    def _replay(self, segments: list[LogSegment], start: int, rebuild_from: int | None) -> int:
        """Feed every batch header from ``start`` to the end to the producer state (Kafka's
        rebuildProducerState); abort markers at or after ``rebuild_from`` re-create their
        txnindex entries. The segments are read in 1 MiB pieces (a marker's record comes from
        the piece, not from a read of its own). Returns the number of batches replayed."""
        if start >= segments[-1].next_offset:
            return 0
        count = 0
        loaded_at = self.part.clock.wall_ms()  # replayed producers' idle time starts now (see update())
        rebuild_at = segments[-1].next_offset if rebuild_from is None else rebuild_from
        first = bisect_right([s.base_offset for s in segments], start) - 1
        update = self.part.producer_state.update
        for seg in segments[max(first, 0) :]:
            pos = 0
            if seg.base_offset < start:
                found = seg.find_batch(start)
                if found is None:
                    continue
                pos = found[0]
            for _, h, data in scan_batches(seg.fd, pos, seg.size, ScanStop(), with_bytes=True):
                count += 1
                if h.producer_id < 0 or h.base_offset < start:
                    continue
                if h.attributes & ATTR_CONTROL:
                    assert data is not None  # with_bytes
                    self._replay_marker(seg, h, data, h.base_offset >= rebuild_at, loaded_at)
                else:
                    update(h, h.base_offset, h.max_timestamp, last_seen_ms=loaded_at)
        return count

    def _replay_marker(
        self, seg: LogSegment, h: BatchHeader, batch: BytesLike, rebuild: bool, loaded_at: int
    ) -> None:
        psm = self.part.producer_state
        try:
            ctrl = parse_control_record(batch)
        except CorruptBatchError as exc:
            self._log.warning(
                "unreadable transaction marker; treated as a commit",
                offset=h.base_offset,
                error=str(exc),
            )
            psm.update(h, h.base_offset, h.max_timestamp, abort=False, last_seen_ms=loaded_at)
            return
        if rebuild:
            apply_txn_marker(psm, seg, h, ctrl.type == CONTROL_ABORT, ctrl.coordinator_epoch, h.max_timestamp)
        else:
            psm.update(
                h,
                h.base_offset,
                h.max_timestamp,
                abort=ctrl.type == CONTROL_ABORT,
                coordinator_epoch=ctrl.coordinator_epoch,
                last_seen_ms=loaded_at,
            )


def _remove_orphan_index_files(directory: str, names: list[str], bases: set[int]) -> None:
    """Index files whose .log is gone (a crash while deleting segments) would be picked up by a
    future segment with the same base offset: remove them."""
    for n in names:
        for suffix in SEGMENT_SUFFIXES[1:]:  # the indexes
            if (
                n.endswith(suffix)
                and len(n) == 20 + len(suffix)
                and n[:20].isdigit()
                and int(n[:20]) not in bases
            ):
                try:
                    os.unlink(os.path.join(directory, n))
                except FileNotFoundError:
                    pass
