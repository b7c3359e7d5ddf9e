"""One share-partition: the in-flight records of a (share group, topic, partition), as Kafka's
SharePartition keeps them (sans-I/O; broker/share_partitions.py drives it).

Start offset (SPSO) and end offset (SPEO), in-flight batches (batch-level state until a part of a
batch is acknowledged differently, then per-offset: coordinator/share_inflight.py), each record
AVAILABLE / ACQUIRED (by a member, until its acquisition lock expires) / ACKNOWLEDGED / ARCHIVED,
with its delivery count. Acquiring writes nothing; every other change (acknowledge, release, lock
expiry, start offset move) is a `Transition`: staged here, persisted by the driver through the
share coordinator (`request`), then `commit()`ed, or `rollback()`ed when the write failed. Records
in a staged transition are neither acquired nor acknowledged by anyone else meanwhile.

Lock expiry and a log start offset moving past in-flight records change the records at once, as
Kafka's timer handler and updateCacheAndOffsets do (only the write follows); their transitions'
commit and rollback both just finish the step. Acquisition locks are deadlines in ms: the driver
arms a timer at `next_lock_deadline()` and calls `expire_locks(now_ms)`.

Kafka's facts: kafka.server.share.SharePartition (4.4), InFlightBatch/InFlightState/RecordState of
org.apache.kafka.server.share.fetch. No dead-letter queue (ARCHIVING is never entered)."""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import structlog
from minibroker.coordinator.share_inflight import (
    INCREASE,
    NO_OP,
    InFlightBatch,
    InFlightState,
    is_terminal,
)
from minibroker.coordinator.share_types import (
    AckBatch,
    AckType,
    AcquiredRange,
    AcquireMode,
    LogBatch,
    PartitionState,
    RecordState,
    SharePartitionConfig,
    SharePartitionKey,
    StateBatch,
    WriteStateRequest,
)
from minibroker.protocol.errors import ErrorCode

__all__ = ["AckResult", "SharePartition", "Transition"]

log = structlog.get_logger("minibroker.coordinator.share_partition")

_AVAILABLE = RecordState.AVAILABLE
_ACQUIRED = RecordState.ACQUIRED
_ACKNOWLEDGED = RecordState.ACKNOWLEDGED
_ARCHIVED = RecordState.ARCHIVED

# SharePartition.ACK_TYPE_TO_RECORD_STATE (RENEW changes no state)
_ACK_STATE: dict[int, RecordState] = {
    AckType.GAP.value: _ARCHIVED,
    AckType.ACCEPT.value: _ACKNOWLEDGED,
    AckType.RELEASE.value: _AVAILABLE,
    AckType.REJECT.value: _ARCHIVED,
}
_RENEW = AckType.RENEW.value
_ACK_TYPE_IDS = frozenset(int(t) for t in AckType)
_MIN_THROTTLE_LIMIT = 2  # MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT

# Kafka's exception messages (InvalidRecordStateException / InvalidRequestException)
_NOT_IN_CACHE = "Batch record not found. The request batch offsets are not found in the cache."
_FIRST_PAST = "Batch record not found. The first offset in request is past acquired records."
_LAST_PAST = "Batch record not found. The last offset in request is past acquired records."
_BATCH_NOT_ACQUIRED = "The batch cannot be acknowledged. The batch is not in the acquired state."
_SUBSET_NOT_ACQUIRED = "The batch cannot be acknowledged. The subset batch is not in the acquired state."
_NOT_BATCH_OWNER = "Member is not the owner of batch record"
_NOT_OFFSET_OWNER = "Member is not the owner of offset"
_OFFSET_NOT_ACQUIRED = "The offset cannot be acknowledged. The offset is not acquired."
_ONGOING = "The record state is invalid. The acknowledgement of delivery could not be completed."
_UNABLE = "Unable to acknowledge records for the batch"
_RENEW_DISABLED = "Renewing acquisition locks is not enabled for the group."

_Error = tuple[int, str]
_Staged = list[tuple[InFlightState, StateBatch]]


def _throttle_limit(max_delivery_count: int) -> int:
    """throttleRecordsDeliveryLimit: max(2, ceil(limit / 2))."""
    return max(_MIN_THROTTLE_LIMIT, -(-max_delivery_count // 2))


def _coalesce(batches: Iterable[StateBatch]) -> tuple[StateBatch, ...]:
    """Adjacent ranges in the same state and delivery count as one StateBatch (a per-offset
    acknowledgement of 500 records is one row, not 500; the persisted state is the same)."""
    out: list[StateBatch] = []
    first = last = state = count = -1
    for b in batches:
        if b[0] == last + 1 and b[2] == state and b[3] == count:
            last = b[1]
            continue
        if first != -1:
            out.append(StateBatch(first, last, state, count))
        first, last, state, count = b
    if first != -1:
        out.append(StateBatch(first, last, state, count))
    return tuple(out)


class _GapWindow:
    """Kafka's GapWindow: after a load from persisted state with holes, the offsets from
    gap_start up to end_offset not in any batch are AVAILABLE (never delivered yet)."""

    __slots__ = ("end_offset", "gap_start")

    def __init__(self, end_offset: int, gap_start: int) -> None:
        self.end_offset = end_offset
        self.gap_start = gap_start


class Transition:
    """A staged change: persist `request` (share coordinator write_state), then commit or roll back.
    commit() and rollback() are each effective once; the first of them wins."""

    request: WriteStateRequest

    def __init__(
        self,
        request: WriteStateRequest,
        *,
        on_commit: Callable[[], None],
        on_rollback: Callable[[], None],
    ) -> None:
        self.request = request
        self._on_commit = on_commit
        self._on_rollback = on_rollback
        self._done = False

    def __repr__(self) -> str:
        return f"Transition({self.request})"

    def commit(self) -> None:
        if not self._done:
            self._done = True
            self._on_commit()

    def rollback(self) -> None:
        if not self._done:
            self._done = True
            self._on_rollback()


class AckResult(NamedTuple):
    """The outcome of acknowledging one partition's batches: an error for the partition (Kafka's
    code and message; nothing staged) or a transition to persist (None: nothing to write)."""

    error_code: int = 0
    error_message: str | None = None
    transition: Transition | None = None


class SharePartition:
    def __init__(
        self, key: SharePartitionKey, config: SharePartitionConfig, state: PartitionState, start_offset: int
    ) -> None:
        """Load from the persisted state; `start_offset` is used when `state.start_offset` is -1
        (the driver resolved share.auto.offset.reset against the log). Persisted batches below the
        start offset or with last < first make the load fail (ValueError), as in Kafka."""
        self.key = key
        self.config = config  # replaced by the driver when the group's configs change
        self.state_epoch = state.state_epoch
        self.leader_epoch = state.leader_epoch
        # counters the broker's metrics read: records handed out again (delivery count > 1) and
        # records whose acquisition lock ran out
        self.redeliveries = 0
        self.lock_expiries = 0
        self._keys: list[int] = []  # first offsets of the in-flight batches, ascending
        self._cache: dict[int, InFlightBatch] = {}
        self._locks: list[tuple[int, int, InFlightState]] = []  # (deadline, seq, state) min-heap
        self._seq = itertools.count()
        self._live_locks = 0  # live heap entries at its last rebuild
        self._find_next = False
        self._gap: _GapWindow | None = None
        self._dcc = 0  # deliveryCompleteCount: terminal records at or above the start offset
        self._start = state.start_offset if state.start_offset != -1 else start_offset

        gap_start = -1
        previous_last = self._start - 1
        for sb in sorted(state.batches):
            if sb.first_offset < self._start or sb.last_offset < sb.first_offset:
                log.error(
                    "Invalid state batch found for the share partition",
                    group_id=key.group_id,
                    topic_id=str(key.topic_id),
                    partition=key.partition,
                    batch=sb,
                    start_offset=self._start,
                )
                raise ValueError(
                    f"Failed to initialize the share partition {key.group_id}-{key.topic_id}:{key.partition}"
                )
            if gap_start == -1 and sb.first_offset > previous_last + 1:
                gap_start = previous_last + 1
            previous_last = sb.last_offset
            record_state = RecordState(sb.delivery_state)
            if record_state is RecordState.ARCHIVING:  # no dead-letter queue here: it ends archived
                record_state = _ARCHIVED
            elif record_state is _ACQUIRED:  # never persisted by Kafka; a lock without an owner
                record_state = _AVAILABLE
            self._put(InFlightBatch(sb.first_offset, sb.last_offset, record_state, sb.delivery_count, ""))
            if is_terminal(record_state):
                self._dcc += sb.last_offset - sb.first_offset + 1
        if self._keys:
            self._find_next = True
            self._end = self._cache[self._keys[-1]].last_offset
            if gap_start != -1:
                self._gap = _GapWindow(self._end, gap_start)
            self._maybe_update_cached_state_and_offsets()
        else:
            self._end = self._start

    # -- reading ---------------------------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._end

    @property
    def delivery_complete_count(self) -> int:
        return self._dcc

    def in_flight_records(self) -> int:
        """numInFlightRecords: end - start + 1 while anything is cached (InFlightMessageCount)."""
        return self._end - self._start + 1 if self._keys else 0

    def in_flight_batches(self) -> int:
        """InFlightBatchCount."""
        return len(self._keys)

    def records(self) -> list[tuple[int, int, RecordState, int, str]]:
        """The cached records as (first, last, state, delivery count, member) ranges, for tests and
        diagnostics (per-offset batches one row per offset)."""
        out: list[tuple[int, int, RecordState, int, str]] = []
        for key in self._keys:
            batch = self._cache[key]
            if batch.offset_state is None:
                s = batch.state
                out.append((batch.first_offset, batch.last_offset, s.state, s.delivery_count, s.member_id))
            else:
                out.extend((o, o, s.state, s.delivery_count, s.member_id) for o, s in batch.offsets())
        return out

    def can_acquire_records(self) -> bool:
        """canAcquireRecords: something AVAILABLE below the end, or room for new records."""
        if self.next_fetch_offset() != self._end + 1:
            return True
        return self.in_flight_records() < self.config.max_record_locks

    def next_fetch_offset(self) -> int:
        """Where the next ShareFetch reads the log from: the first AVAILABLE record (or a hole of
        the persisted state) once records were released, else past the end."""
        keys = self._keys
        if keys and self._start <= self._cache[keys[-1]].last_offset:
            if not self._find_next:
                return self._end + 1
            next_offset = -1
            gap_start = self._gap.gap_start if self._gap_window_active() and self._gap is not None else -1
            for key in keys:
                batch = self._cache[key]
                if self._gap_window_active():
                    if key > gap_start:
                        next_offset = gap_start
                        break
                    gap_start = max(batch.last_offset + 1, gap_start)
                if batch.offset_state is None:
                    s = batch.state
                    if s.state is _AVAILABLE and s.rollback is None:
                        next_offset = key
                        break
                else:
                    for offset, s in batch.offsets():
                        if s.state is _AVAILABLE and s.rollback is None:
                            next_offset = offset
                            break
                    if next_offset != -1:
                        break
            if next_offset == -1:
                self._find_next = False
                next_offset = self._end + 1
            return next_offset
        self._find_next = False
        return self._end

    def next_lock_deadline(self) -> int | None:
        """The earliest acquisition-lock deadline (ms), None when nothing is acquired."""
        locks = self._locks
        while locks:
            deadline, _, state = locks[0]
            if state.deadline_ms == deadline and not state.expired:
                return deadline
            heapq.heappop(locks)
        return None

    # -- acquisition -------------------------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        batches: Sequence[LogBatch],
        *,
        max_records: int,
        batch_size: int,
        mode: AcquireMode,
        now_ms: int,
        aborted: Sequence[tuple[int, int]] = (),
        fetch_offset: int | None = None,
    ) -> list[AcquiredRange]:
        """Acquire for `member_id` from the log batches read at next_fetch_offset(): at most
        max_records (whole log batches in BATCH_OPTIMIZED), split at batch_size; locks until
        now_ms + record_lock_duration_ms. `aborted`: (producer id, first offset) of the aborted
        transactions in the range (read_committed: their records are archived, not handed out).
        `fetch_offset`: the offset the log was read from (default: the first batch's base
        offset); AVAILABLE records between it and the first batch read (gone from the log) are
        archived."""
        if max_records <= 0 or not batches:
            return []
        last_batch = batches[-1]
        if last_batch.last_offset < self._start:
            return []
        first_batch = batches[0]
        if fetch_offset is None:
            fetch_offset = first_batch.base_offset
        last_to_acquire, max_to_acquire = self._last_offset_and_max_records(
            fetch_offset, max_records, last_batch.last_offset
        )
        if max_to_acquire <= 0:
            return []
        record_limit = mode == AcquireMode.RECORD_LIMIT
        request_first = first_batch.base_offset
        base = request_first
        self._maybe_archive_stale_batches(fetch_offset, base)
        floor = self._floor(base)
        if floor is None:
            if base < self._start:
                base = self._start
        elif floor.last_offset >= base:
            base = floor.first_offset

        overlap = self._range(min(request_first, base), last_to_acquire)
        if not overlap:
            acquired, _ = self._acquire_new(
                member_id, batches, record_limit, base, last_to_acquire, batch_size, max_to_acquire, now_ms
            )
            return self._finish_acquire(acquired, batches, aborted)

        result, count, max_to_acquire = self._acquire_overlapping(
            member_id,
            batches,
            overlap,
            record_limit,
            base,
            last_to_acquire,
            batch_size,
            max_to_acquire,
            now_ms,
        )
        last_cached = overlap[-1].last_offset
        if count < max_to_acquire and last_cached < last_to_acquire:
            got, n = self._acquire_new(
                member_id,
                batches,
                record_limit,
                last_cached + 1,
                last_to_acquire,
                batch_size,
                max_to_acquire - count,
                now_ms,
            )
            result.extend(got)
            count += n
        if not result:
            return result
        self._maybe_update_gap_window_start(result[-1].last_offset + 1)
        return self._finish_acquire(result, batches, aborted)

    def _acquire_overlapping(
        self,
        member_id: str,
        batches: Sequence[LogBatch],
        overlap: list[InFlightBatch],
        record_limit: bool,
        base: int,
        last_to_acquire: int,
        batch_size: int,
        max_to_acquire: int,
        now_ms: int,
    ) -> tuple[list[AcquiredRange], int, int]:
        """The in-flight batches the fetched range overlaps: whole AVAILABLE batches again (count
        + 1), partly available or throttled ones per offset, holes of the persisted state as new
        records. Returns the ranges, their record count and the (maybe zeroed) budget."""
        request_first = batches[0].base_offset
        result: list[AcquiredRange] = []
        count = 0
        gap_start = base
        for batch in overlap:
            if count >= max_to_acquire:
                break
            if self._gap_window_active():
                # a hole of the persisted state before this batch: never delivered records
                if gap_start < batch.first_offset:
                    got, n = self._acquire_new(
                        member_id,
                        batches,
                        record_limit,
                        gap_start,
                        batch.first_offset - 1,
                        batch_size,
                        max_to_acquire - count,
                        now_ms,
                    )
                    result.extend(got)
                    count += n
                    if count >= max_to_acquire:
                        break
                gap_start = batch.last_offset + 1
            size = batch.last_offset - batch.first_offset + 1
            full_match = batch.first_offset >= request_first and batch.last_offset <= last_to_acquire
            remaining = max_to_acquire - count
            record_limit_subset = record_limit and size > remaining
            throttle = self._should_throttle(batch, request_first, last_to_acquire)
            if throttle and count > 0:
                max_to_acquire = 0
                break
            if full_match and batch.offset_state is None and not record_limit_subset and not throttle:
                count += self._reacquire_batch(member_id, batch, result, now_ms)
                continue
            if batch.offset_state is None:
                s = batch.state
                if s.state is not _AVAILABLE or s.rollback is not None:
                    continue
                self._split(batch)
            n = self._acquire_subset(
                member_id, record_limit, remaining, request_first, last_to_acquire, batch, result, now_ms
            )
            count += n
            if throttle and n > 0:
                max_to_acquire = 0
                break

        return result, count, max_to_acquire

    def _reacquire_batch(
        self, member_id: str, batch: InFlightBatch, result: list[AcquiredRange], now_ms: int
    ) -> int:
        """A whole AVAILABLE batch acquired again, delivery count + 1."""
        s = batch.state
        if s.state is not _AVAILABLE or s.rollback is not None:
            return 0
        if not (
            s.try_update(_ACQUIRED, INCREASE, self.config.delivery_count_limit, member_id)
            and s.state is _ACQUIRED
        ):
            return 0
        self._lock(s, now_ms)
        result.append(AcquiredRange(batch.first_offset, batch.last_offset, s.delivery_count))
        return batch.last_offset - batch.first_offset + 1

    def _finish_acquire(
        self, acquired: list[AcquiredRange], batches: Sequence[LogBatch], aborted: Sequence[tuple[int, int]]
    ) -> list[AcquiredRange]:
        if acquired and self.config.read_committed and aborted:
            acquired = self._filter_aborted(acquired, batches, aborted)
        for r in acquired:
            if r.delivery_count > 1:
                self.redeliveries += r.last_offset - r.first_offset + 1
        return acquired

    def _last_offset_and_max_records(
        self, fetch_offset: int, max_fetch: int, last_offset: int
    ) -> tuple[int, int]:
        """lastOffsetAndMaxRecordsToAcquire: share.partition.max.record.locks caps the in-flight
        records; at the cap, records between the in-flight batches can still be re-acquired."""
        max_records = min(max_fetch, self.config.max_record_locks - self.in_flight_records())
        if max_records <= 0 and fetch_offset <= self._end:
            return min(last_offset, self._end), min(max_fetch, self._end - fetch_offset + 1)
        return last_offset, max_records

    def _acquire_new(
        self,
        member_id: str,
        batches: Sequence[LogBatch],
        record_limit: bool,
        first_offset: int,
        last_offset: int,
        batch_size: int,
        max_fetch: int,
        now_ms: int,
    ) -> tuple[list[AcquiredRange], int]:
        """acquireNewBatchRecords: records never in flight, as new batches (delivery count 1);
        past max_fetch only up to the end of the log batch holding the last wanted record."""
        first = first_offset
        if not self._keys and self._end > first:
            first = self._end
        # Not in Kafka: never below the start offset (Kafka hands out the head of a log batch the
        # log start offset moved into when a record below it is still in flight)
        first = max(first, self._start)
        last = last_offset
        if max_fetch < last - first + 1:
            last = self._last_offset_of_batch_with(batches, first + max_fetch - 1)
            if self._gap_window_active() and last > last_offset:
                last = last_offset
        if last < first:
            return [], 0
        acquired = self._create_batches(
            member_id, batches, record_limit, max_fetch, first, last, batch_size, now_ms
        )
        if self._keys[0] == first:
            self._start = first
        if last > self._end:
            self._end = last
        if record_limit:
            last = acquired[0].last_offset
        self._maybe_update_gap_window_start(last + 1)
        return acquired, last - first + 1

    def _create_batches(
        self,
        member_id: str,
        batches: Sequence[LogBatch],
        record_limit: bool,
        max_fetch: int,
        first: int,
        last: int,
        batch_size: int,
        now_ms: int,
    ) -> list[AcquiredRange]:
        """createBatches: split at log-batch boundaries once a chunk holds batch_size records
        (BATCH_OPTIMIZED); RECORD_LIMIT acquires exactly max_fetch records of the range and keeps
        the rest of it AVAILABLE (per-offset)."""
        ranges: list[tuple[int, int]] = []
        current = first
        if not record_limit and batch_size > 0 and last - first + 1 > batch_size:
            for b in batches:
                if b.base_offset > last:
                    break
                if b.base_offset - current >= batch_size:
                    ranges.append((current, b.base_offset - 1))
                    current = b.base_offset
        ranges.append((current, last))
        if record_limit:
            f, lo = ranges[0]
            if lo - f + 1 > max_fetch:
                batch = InFlightBatch(f, lo, _ACQUIRED, 1, member_id)
                target = f + max_fetch - 1
                deadline = now_ms + self.config.record_lock_duration_ms
                for s in batch.split_acquired_up_to(target, deadline):
                    self._track(s)
                self._find_next = True
                self._put(batch)
                return [AcquiredRange(f, target, 1)]
        out: list[AcquiredRange] = []
        for f, lo in ranges:
            batch = InFlightBatch(f, lo, _ACQUIRED, 1, member_id)
            self._lock(batch.state, now_ms)
            self._put(batch)
            out.append(AcquiredRange(f, lo, 1))
        return out

    def _acquire_subset(
        self,
        member_id: str,
        record_limit: bool,
        max_fetch: int,
        request_first: int,
        request_last: int,
        batch: InFlightBatch,
        result: list[AcquiredRange],
        now_ms: int,
    ) -> int:
        """acquireSubsetBatchRecords: AVAILABLE offsets of a per-offset batch; a record on its
        last delivery goes alone, throttled records (delivery count at or past the throttle
        limit) in shrinking numbers."""
        count = 0
        max_while_throttled = -1
        throttled = False
        max_delivery = self.config.delivery_count_limit
        limit = _throttle_limit(max_delivery)
        assert batch.offset_state is not None
        size = len(batch.offset_state)
        got: list[AcquiredRange] = []
        for offset, s in batch.offsets():
            if offset < request_first:
                continue
            if offset > request_last:
                break
            if s.state is not _AVAILABLE or s.rollback is not None:
                continue
            delivery_count = s.delivery_count
            if max_delivery > 2 and delivery_count == max_delivery - 1 and count > 0:
                break  # on its last delivery attempt: delivered alone in the next fetch
            if delivery_count >= limit and max_while_throttled < 0:
                max_while_throttled = max(1, size >> (delivery_count - limit + 1))
                throttled = True
            if not (s.try_update(_ACQUIRED, INCREASE, max_delivery, member_id) and s.state is _ACQUIRED):
                continue
            self._lock(s, now_ms)
            got.append(AcquiredRange(offset, offset, s.delivery_count))
            count += 1
            if s.delivery_count == max_delivery and max_delivery > 2:
                break  # on its last delivery attempt: delivered alone in this fetch
            if record_limit and count == max_fetch:
                break
            if throttled and count == max_while_throttled:
                break
        # ShareFetchUtils.accumulateAcquiredRecords: consecutive offsets of this batch with one
        # delivery count as one range
        merged: list[AcquiredRange] = []
        for r in got:
            if (
                merged
                and merged[-1].last_offset + 1 == r.first_offset
                and merged[-1].delivery_count == r.delivery_count
            ):
                merged[-1] = merged[-1]._replace(last_offset=r.last_offset)
            else:
                merged.append(r)
        result.extend(merged)
        return count

    def _should_throttle(self, batch: InFlightBatch, request_first: int, request_last: int) -> bool:
        """shouldThrottleRecordsDelivery: the batch has AVAILABLE records delivered at least
        max(2, ceil(limit / 2)) times."""
        limit = _throttle_limit(self.config.delivery_count_limit)
        if batch.offset_state is None:
            s = batch.state
            return s.state is _AVAILABLE and s.rollback is None and s.delivery_count >= limit
        highest = 0
        for offset, s in batch.offsets():
            if request_first <= offset <= request_last and s.state is _AVAILABLE and s.rollback is None:
                highest = max(highest, s.delivery_count)
        return highest >= limit

    @staticmethod
    def _last_offset_of_batch_with(batches: Sequence[LogBatch], offset: int) -> int:
        """lastOffsetFromBatchWithRequestOffset: the end of the log batch holding `offset`."""
        previous: LogBatch | None = None
        for b in batches:
            if offset < b.base_offset:
                break
            previous = b
        if previous is not None and offset <= previous.last_offset:
            return previous.last_offset
        return offset

    # -- read_committed --------------------------------------------------------------------------

    def _filter_aborted(
        self, acquired: list[AcquiredRange], batches: Sequence[LogBatch], aborted: Sequence[tuple[int, int]]
    ) -> list[AcquiredRange]:
        """maybeFilterAbortedTransactionalAcquiredRecords: the acquired records of aborted
        transactional batches are archived at once and cut from the answer. Control batches
        (transaction markers) stay acquired: the client acknowledges their offsets as GAP."""
        to_archive = self._aborted_batches(batches, aborted)
        if not to_archive:
            return acquired
        for b in to_archive:
            floor = self._floor(b.base_offset)
            if floor is None:
                continue
            self._archive_records(
                b.base_offset,
                b.last_offset + 1,
                self._range(floor.first_offset, b.last_offset),
                _ACQUIRED,
                True,
            )
        # Not in Kafka: a start offset past a prefix of archived aborted records moves at once (Kafka
        # waits for the next write, and stalls when aborted records alone fill
        # share.partition.max.record.locks)
        self._maybe_update_cached_state_and_offsets()
        out: list[AcquiredRange] = []
        for r in acquired:
            first = r.first_offset
            for b in to_archive:
                if b.last_offset < first or b.base_offset > r.last_offset:
                    continue
                if b.base_offset > first:
                    out.append(AcquiredRange(first, b.base_offset - 1, r.delivery_count))
                first = b.last_offset + 1
                if first > r.last_offset:
                    break
            if first <= r.last_offset:
                out.append(AcquiredRange(first, r.last_offset, r.delivery_count))
        return out

    @staticmethod
    def _aborted_batches(batches: Sequence[LogBatch], aborted: Sequence[tuple[int, int]]) -> list[LogBatch]:
        """fetchAbortedTransactionRecordBatches: transactional batches of a producer whose aborted
        transaction began at or before them and whose abort marker is not yet passed."""
        ordered = sorted(aborted, key=lambda a: a[1])
        i = 0
        producers: set[int] = set()
        out: list[LogBatch] = []
        for b in batches:
            if b.producer_id < 0:
                continue
            while i < len(ordered) and ordered[i][1] <= b.last_offset:
                producers.add(ordered[i][0])
                i += 1
            if b.is_control:
                # an abort marker ends the producer's aborted transaction (a commit marker's
                # producer has no open aborted transaction)
                producers.discard(b.producer_id)
            elif b.is_transactional and b.producer_id in producers:
                out.append(b)
        return out

    # -- acknowledgement ---------------------------------------------------------------------------

    def acknowledge(self, member_id: str, batches: Sequence[AckBatch], now_ms: int) -> AckResult:
        """ACCEPT -> ACKNOWLEDGED, RELEASE -> AVAILABLE (ARCHIVED at the delivery limit), REJECT and
        GAP -> ARCHIVED, RENEW -> a new lock deadline (no write). Batches wholly below the start
        offset are ignored. An error stages nothing."""
        staged: _Staged = []
        error: _Error | None = None
        for ack in batches:
            types = ack.ack_types
            if (
                any(t not in _ACK_TYPE_IDS for t in types)
                or not types
                or (len(types) > 1 and len(types) != ack.last_offset - ack.first_offset + 1)
            ):
                error = (
                    ErrorCode.invalid_request,
                    f"Invalid acknowledge type: [{', '.join(map(str, types))}]",
                )
                break
            if ack.last_offset < self._start:
                continue  # already archived
            found = self._ack_range(ack)
            if isinstance(found, tuple):
                error = found
                break
            error = self._acknowledge_batches(member_id, ack, found, staged, now_ms)
            if error is not None:
                break
        if error is not None:
            self._rollback(staged)
            log.debug(
                "Share acknowledgement refused",
                group_id=self.key.group_id,
                partition=self.key.partition,
                member_id=member_id,
                error=error[1],
            )
            return AckResult(int(error[0]), error[1])
        if not staged:
            return AckResult()
        return AckResult(transition=self._staged_transition(staged))

    def _ack_range(self, ack: AckBatch) -> list[InFlightBatch] | _Error:
        """fetchSubMapForAcknowledgementBatch."""
        floor = self._floor(ack.first_offset)
        if floor is None:
            if not self._start_within(ack.first_offset, ack.last_offset):
                return (ErrorCode.invalid_record_state, _NOT_IN_CACHE)
            floor = self._floor(self._start)
            if floor is None:
                return (ErrorCode.invalid_record_state, _NOT_IN_CACHE)
        found = self._range(floor.first_offset, ack.last_offset)
        if found[-1].last_offset < ack.first_offset:
            return (ErrorCode.invalid_request, _FIRST_PAST)
        if ack.last_offset > found[-1].last_offset:
            return (ErrorCode.invalid_request, _LAST_PAST)
        return found

    def _acknowledge_batches(
        self, member_id: str, ack: AckBatch, found: list[InFlightBatch], staged: _Staged, now_ms: int
    ) -> _Error | None:
        """acknowledgeBatchRecords."""
        per_offset_ack = len(ack.ack_types) > 1
        for batch in found:
            if batch.last_offset < self._start:
                continue
            if batch.offset_state is None:
                s = batch.state
                if s.member_id == "":
                    return (ErrorCode.invalid_record_state, _BATCH_NOT_ACQUIRED)
                if s.member_id != member_id:
                    return (ErrorCode.invalid_record_state, _NOT_BATCH_OWNER)
                if s.rollback is not None:
                    return (ErrorCode.invalid_record_state, _ONGOING)
            full_match = batch.first_offset >= ack.first_offset and batch.last_offset <= ack.last_offset
            start_moved = self._start_within(batch.first_offset, batch.last_offset)
            if full_match and batch.offset_state is None and not per_offset_ack and not start_moved:
                error = self._acknowledge_whole_batch(batch, ack.ack_types[0], staged, now_ms)
            else:
                if batch.offset_state is None:
                    if batch.state.state is not _ACQUIRED:
                        return (ErrorCode.invalid_record_state, _SUBSET_NOT_ACQUIRED)
                    self._split(batch)
                error = self._acknowledge_offsets(member_id, ack, batch, staged, now_ms)
            if error is not None:
                return error
        return None

    def _acknowledge_whole_batch(
        self, batch: InFlightBatch, ack_type: int, staged: _Staged, now_ms: int
    ) -> _Error | None:
        """acknowledgeCompleteBatch."""
        s = batch.state
        if s.state is not _ACQUIRED:
            return (ErrorCode.invalid_record_state, _BATCH_NOT_ACQUIRED)
        if ack_type == _RENEW:
            if not self.config.renew_enabled:
                return (ErrorCode.invalid_record_state, _RENEW_DISABLED)
            s.clear_lock()
            self._lock(s, now_ms)
            return None
        if not s.start_transition(_ACK_STATE[ack_type], NO_OP, self.config.delivery_count_limit, ""):
            return (ErrorCode.invalid_record_state, _UNABLE)
        staged.append((s, StateBatch(batch.first_offset, batch.last_offset, s.state, s.delivery_count)))
        if is_terminal(s.state):
            self._dcc += batch.last_offset - batch.first_offset + 1
        return None

    def _acknowledge_offsets(
        self, member_id: str, ack: AckBatch, batch: InFlightBatch, staged: _Staged, now_ms: int
    ) -> _Error | None:
        """acknowledgePerOffsetBatchRecords."""
        types = ack.ack_types
        per_offset_ack = len(types) > 1
        max_delivery = self.config.delivery_count_limit
        states = batch.offset_state
        assert states is not None
        first = batch.first_offset
        for offset in range(
            max(ack.first_offset, self._start, first), min(ack.last_offset, batch.last_offset) + 1
        ):
            s = states[offset - first]
            if s.state is not _ACQUIRED:
                return (ErrorCode.invalid_record_state, _OFFSET_NOT_ACQUIRED)
            if s.rollback is not None:
                return (ErrorCode.invalid_record_state, _ONGOING)
            if s.member_id != member_id:
                return (ErrorCode.invalid_record_state, _NOT_OFFSET_OWNER)
            ack_type = types[offset - ack.first_offset] if per_offset_ack else types[0]
            if ack_type == _RENEW:
                if not self.config.renew_enabled:
                    return (ErrorCode.invalid_record_state, _RENEW_DISABLED)
                s.clear_lock()
                self._lock(s, now_ms)
                continue
            if not s.start_transition(_ACK_STATE[ack_type], NO_OP, max_delivery, ""):
                return (ErrorCode.invalid_record_state, _UNABLE)
            staged.append((s, StateBatch(offset, offset, s.state, s.delivery_count)))
            if is_terminal(s.state):
                self._dcc += 1
        return None

    # -- release and lock expiry -----------------------------------------------------------------

    def release_member(self, member_id: str) -> Transition | None:
        """Every record `member_id` holds back to AVAILABLE (ARCHIVED at the delivery limit): its
        share session closed or it left the group."""
        staged: _Staged = []
        max_delivery = self.config.delivery_count_limit
        for key in self._keys:
            batch = self._cache[key]
            if batch.offset_state is None:
                s = batch.state
                if (
                    s.state is _ACQUIRED
                    and s.member_id == member_id
                    and self._start_within(batch.first_offset, batch.last_offset)
                ):
                    self._split(batch)
            if batch.offset_state is not None:
                for offset, s in batch.offsets():
                    if s.member_id != member_id and s.member_id != "":
                        continue
                    if s.state is not _ACQUIRED:
                        continue
                    target = _ARCHIVED if offset < self._start else _AVAILABLE
                    if not s.start_transition(target, NO_OP, max_delivery, ""):
                        log.warning("Unable to release acquired records for the offset", offset=offset)
                        self._rollback(staged)
                        return None
                    staged.append((s, StateBatch(offset, offset, s.state, s.delivery_count)))
                    if offset >= self._start and is_terminal(s.state):
                        self._dcc += 1
                continue
            s = batch.state
            if (s.member_id != member_id and s.member_id != "") or s.state is not _ACQUIRED:
                continue
            target = _ARCHIVED if batch.last_offset < self._start else _AVAILABLE
            if not s.start_transition(target, NO_OP, max_delivery, ""):
                log.warning(
                    "Unable to release acquired records for the batch", first_offset=batch.first_offset
                )
                self._rollback(staged)
                return None
            staged.append((s, StateBatch(batch.first_offset, batch.last_offset, s.state, s.delivery_count)))
            if is_terminal(s.state):
                self._dcc += self._in_flight_in_batch(batch.first_offset, batch.last_offset)
        if not staged:
            return None
        return self._staged_transition(staged)

    def expire_locks(self, now_ms: int) -> Transition | None:
        """Acquisition locks due at now_ms released as release_member does (Kafka's
        releaseAcquisitionLockOnTimeout: the records change at once, the write follows). A lock
        running out under a staged acknowledgement makes its rollback release the record."""
        deadline = self.next_lock_deadline()
        if deadline is None or deadline > now_ms:
            return None
        changes: list[StateBatch] = []
        expired = 0
        for key in self._keys:
            batch = self._cache[key]
            if batch.offset_state is None:
                s = batch.state
                if not (
                    s.state is _ACQUIRED
                    and self._lock_due(s, now_ms)
                    and self._start_within(batch.first_offset, batch.last_offset)
                ):
                    expired += self._expire(s, batch.first_offset, batch.last_offset, now_ms, changes)
                    continue
                self._split(batch)
            for offset, s in batch.offsets():
                expired += self._expire(s, offset, offset, now_ms, changes)
        self.next_lock_deadline()  # drop the spent heap entries
        if not changes:
            return None
        if expired:
            log.debug(
                "Share acquisition locks expired",
                group_id=self.key.group_id,
                partition=self.key.partition,
                records=expired,
            )

        def done() -> None:
            self.lock_expiries += expired
            self._maybe_update_cached_state_and_offsets()

        return Transition(self._request(changes), on_commit=done, on_rollback=done)

    @staticmethod
    def _lock_due(s: InFlightState, now_ms: int) -> bool:
        return s.deadline_ms is not None and s.deadline_ms <= now_ms and not s.expired

    def _expire(self, s: InFlightState, first: int, last: int, now_ms: int, changes: list[StateBatch]) -> int:
        """releaseAcquisitionLockOnTimeoutFor{Complete,PerOffset}Batch for one due lock: the
        records back to AVAILABLE (ARCHIVED at the delivery limit or below the start offset).
        Under a staged transition the lock only ends (Kafka's hasExpired): see complete_transition."""
        if not self._lock_due(s, now_ms):
            return 0
        if s.rollback is not None:
            s.expired = True
            return 0
        if s.state is not _ACQUIRED:
            s.clear_lock()  # the timer finds nothing to release
            return 0
        target = _ARCHIVED if last < self._start else _AVAILABLE
        if not s.try_update(target, NO_OP, self.config.delivery_count_limit, ""):
            return 0
        s.clear_lock()
        changes.append(StateBatch(first, last, s.state, s.delivery_count))
        if s.state is not _ARCHIVED:
            self._find_next = True
        if is_terminal(s.state):
            self._dcc += self._in_flight_in_batch(first, last)
        return last - first + 1

    def on_log_start_offset(self, offset: int) -> Transition | None:
        """The log start offset moved to `offset` (retention, DeleteRecords, a fetch answered
        OFFSET_OUT_OF_RANGE): AVAILABLE records below it are archived and the start offset moves
        to it (Kafka's updateCacheAndOffsets, applied at once). The transition carries the new
        start offset to persist (Kafka writes it with the next change; earlier is harmless)."""
        if offset <= self._start:
            return None
        if self._gap is not None and self._gap.gap_start < offset:
            self._gap.gap_start = offset  # Not in Kafka: the hole's records below it are gone too
        if self._keys:
            removed = self._count_terminal_below(offset)
            if self._archive_records(self._start, offset, self._batches(), _AVAILABLE, False):
                self._find_next = True
            self._start = offset
            self._dcc -= removed
            if self._end < self._start:
                self._end = self._start
        else:
            self._start = offset
            self._end = offset
            self._dcc = 0
        return Transition(self._request(()), on_commit=_nothing, on_rollback=_nothing)

    # -- transitions -----------------------------------------------------------------------------

    def _request(self, batches: Iterable[StateBatch]) -> WriteStateRequest:
        return WriteStateRequest(
            key=self.key,
            state_epoch=self.state_epoch,
            leader_epoch=self.leader_epoch,
            start_offset=self._start,
            delivery_complete_count=self._dcc,
            batches=_coalesce(batches),
        )

    def _staged_transition(self, staged: _Staged) -> Transition:
        def commit() -> None:
            for s, _ in staged:
                s.complete_transition(True)
                if s.state is _AVAILABLE:
                    self._find_next = True
            self._archive_released_below_start(staged)
            self._maybe_update_cached_state_and_offsets()

        return Transition(
            self._request(b for _, b in staged), on_commit=commit, on_rollback=lambda: self._rollback(staged)
        )

    def _rollback(self, staged: _Staged) -> None:
        """rollbackOrProcessStateUpdates on failure."""
        for s, b in staged:
            s.complete_transition(False)
            if s.state is _AVAILABLE:
                self._find_next = True
            was_terminal = is_terminal(RecordState(b.delivery_state))
            if was_terminal and not is_terminal(s.state):
                self._dcc -= self._in_flight_in_batch(b.first_offset, b.last_offset)
            elif not was_terminal and is_terminal(s.state):
                # Not in Kafka: a lock that ran out under the staged change archived the records
                # at the delivery limit; counted (Kafka's count misses them)
                self._dcc += self._in_flight_in_batch(b.first_offset, b.last_offset)
        self._archive_released_below_start(staged)

    def _archive_released_below_start(self, staged: _Staged) -> None:
        """Not in Kafka: records made AVAILABLE by a change staged before the log start offset
        moved past them are archived, as a release after the move archives them (Kafka would
        deliver them again although they are below the start offset)."""
        for s, b in staged:
            if s.state is not _AVAILABLE or s.rollback is not None or b.first_offset >= self._start:
                continue
            if b.last_offset < self._start:
                s.archive()
                continue
            batch = self._floor(b.first_offset)
            if batch is None or batch.batch_state is not s:
                continue
            self._split(batch)
            for offset, state in batch.offsets():
                if offset >= self._start:
                    break
                if state.state is _AVAILABLE and state.rollback is None:
                    state.archive()

    def _maybe_update_cached_state_and_offsets(self) -> bool:
        """maybeUpdateCachedStateAndOffsets: the start offset moves past a prefix of terminal
        (ACKNOWLEDGED/ARCHIVED) records; batches wholly below it are dropped."""
        if not self._can_move_start_offset():
            return False
        last_acked, terminal_records = self._last_offset_acknowledged()
        if last_acked == -1:
            return False
        last_cached = self._cache[self._keys[-1]].last_offset
        if last_acked == last_cached:
            self._start = last_cached + 1
            self._end = last_cached + 1
            self._keys.clear()
            self._cache.clear()
            self._dcc = 0
            return True
        entry = self._floor(last_acked)
        assert entry is not None
        previous_start = self._start
        if last_acked == entry.last_offset:
            higher = self._keys[bisect.bisect_right(self._keys, last_acked)]
            if higher > self._start:
                self._start = higher
            if self._gap_window_active() and self._gap is not None:
                # not past the hole's never delivered records (nor back below where it was)
                self._start = max(min(self._gap.gap_start, self._start), previous_start)
            remove_through = bisect.bisect_right(self._keys, entry.first_offset)
        else:
            if last_acked + 1 > self._start:
                self._start = last_acked + 1
            remove_through = bisect.bisect_left(self._keys, entry.first_offset)
        self._dcc -= terminal_records
        for key in self._keys[:remove_through]:
            del self._cache[key]
        del self._keys[:remove_through]
        return True

    def _can_move_start_offset(self) -> bool:
        if not self._keys:
            return False
        entry = self._floor(self._start)
        if entry is None:
            return False  # an acquirable gap at the beginning
        if entry.offset_state is None:
            s = entry.state
        else:
            s = entry.offset_state[min(self._start, entry.last_offset) - entry.first_offset]
        return s.rollback is None and is_terminal(s.state)

    def _last_offset_acknowledged(self) -> tuple[int, int]:
        """findLastOffsetAcknowledgedAndMetadata: the end of the terminal prefix, and how many of
        its records are at or above the start offset."""
        last = -1
        count = 0
        for key in self._keys:
            batch = self._cache[key]
            if (
                self._gap_window_active()
                and self._gap is not None
                and batch.last_offset >= self._gap.gap_start
            ):
                break
            if batch.offset_state is None:
                s = batch.state
                if s.rollback is not None or not is_terminal(s.state):
                    break
                last = batch.last_offset
                count += self._in_flight_in_batch(batch.first_offset, batch.last_offset)
                continue
            for offset, s in batch.offsets():
                if s.rollback is not None or not is_terminal(s.state):
                    return last, count
                last = offset
                if offset >= self._start:
                    count += 1
        return last, count

    # -- archiving -------------------------------------------------------------------------------

    def _maybe_archive_stale_batches(self, fetch_offset: int, base_offset: int) -> None:
        """AVAILABLE records between the fetch offset and the first batch the log returned are
        gone from the log (compaction, retention): archived."""
        if not self._keys or fetch_offset >= base_offset:
            return
        floor_offset = fetch_offset
        floor = self._floor(fetch_offset)
        if floor is not None and floor.last_offset >= fetch_offset:
            floor_offset = floor.first_offset
        found = self._range(floor_offset, base_offset - 1)
        if found and self._archive_records(fetch_offset, base_offset, found, _AVAILABLE, True):
            self._find_next = True

    def _archive_records(
        self,
        start: int,
        end: int,
        batches: Iterable[InFlightBatch],
        initial: RecordState,
        count_complete: bool,
    ) -> bool:
        """archiveRecords: records in [start, end) in state `initial` to ARCHIVED."""
        archived = False
        for batch in batches:
            if batch.first_offset >= end:
                break
            full_match = batch.first_offset >= start and batch.last_offset <= end - 1
            if full_match and batch.offset_state is None:
                s = batch.state
                if s.state is initial:
                    s.archive()
                    if count_complete:
                        self._dcc += batch.last_offset - batch.first_offset + 1
                    archived = True
                continue
            if batch.offset_state is None:
                if batch.state.state is not initial:
                    continue
                self._split(batch)
            for offset, s in batch.offsets():
                if offset < start:
                    continue
                if offset > end - 1:
                    break
                if s.state is initial:
                    s.archive()
                    if count_complete:
                        self._dcc += 1
                    archived = True
        return archived

    def _count_terminal_below(self, new_start: int) -> int:
        """countTerminalRecordsUpToNewLSO."""
        count = 0
        for batch in self._range(-1, new_start - 1):
            if batch.last_offset < self._start:
                continue
            if batch.offset_state is not None:
                count += sum(
                    1 for o, s in batch.offsets() if self._start <= o < new_start and is_terminal(s.state)
                )
            elif is_terminal(batch.state.state):
                first = max(self._start, batch.first_offset)
                last = min(new_start - 1, batch.last_offset)
                if first <= last:
                    count += last - first + 1
        return count

    # -- helpers ---------------------------------------------------------------------------------

    def _in_flight_in_batch(self, first: int, last: int) -> int:
        """numInFlightRecordsInBatch: the records of first..last at or above the start offset."""
        return last - max(self._start, first) + 1 if last >= self._start else 0

    def _start_within(self, first: int, last: int) -> bool:
        """checkForStartOffsetWithinBatch."""
        return first < self._start <= last

    def _gap_window_active(self) -> bool:
        return self._gap is not None and self._gap.end_offset == self._end

    def _maybe_update_gap_window_start(self, offset: int) -> None:
        gap = self._gap
        if gap is not None:
            if gap.end_offset == self._end and offset <= gap.end_offset:
                gap.gap_start = offset
            else:
                self._gap = None

    def _lock(self, state: InFlightState, now_ms: int) -> None:
        state.deadline_ms = now_ms + self.config.record_lock_duration_ms
        state.expired = False
        self._track(state)

    def _track(self, state: InFlightState) -> None:
        if state.deadline_ms is not None:
            locks = self._locks
            heapq.heappush(locks, (state.deadline_ms, next(self._seq), state))
            if len(locks) > 2 * self._live_locks + 64:
                # spent entries (acknowledged, renewed, released) are dropped lazily at the top; a
                # heap grown to twice its live entries is rebuilt from them (amortized O(1))
                locks[:] = [e for e in locks if e[2].deadline_ms == e[0] and not e[2].expired]
                heapq.heapify(locks)
                self._live_locks = len(locks)

    def _split(self, batch: InFlightBatch) -> None:
        for s in batch.split():
            self._track(s)

    def _put(self, batch: InFlightBatch) -> None:
        key = batch.first_offset
        if key not in self._cache:
            bisect.insort(self._keys, key)
        self._cache[key] = batch

    def _floor(self, offset: int) -> InFlightBatch | None:
        i = bisect.bisect_right(self._keys, offset)
        return self._cache[self._keys[i - 1]] if i else None

    def _range(self, low: int, high: int) -> list[InFlightBatch]:
        """The batches whose first offset is in [low, high]."""
        keys = self._keys
        i = bisect.bisect_left(keys, low)
        j = bisect.bisect_right(keys, high)
        return [self._cache[k] for k in keys[i:j]]

    def _batches(self) -> list[InFlightBatch]:
        return [self._cache[k] for k in self._keys]


def _nothing() -> None:
    pass
