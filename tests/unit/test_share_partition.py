"""coordinator/share_partition.py: Kafka 4.4's SharePartition as a sans-I/O state machine (cases
after Kafka's SharePartitionTest). Time is an argument: no clock, no sleeps."""

from __future__ import annotations

import uuid

import pytest
from minibroker.coordinator.share_partition import AckResult, SharePartition, Transition
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
)
from minibroker.protocol.errors import ErrorCode

KEY = SharePartitionKey("group", uuid.UUID(int=7), 0)
M1 = "member-1"
M2 = "member-2"
LOCK = 30_000
AVAILABLE = RecordState.AVAILABLE
ACQUIRED = RecordState.ACQUIRED
ACKNOWLEDGED = RecordState.ACKNOWLEDGED
ARCHIVED = RecordState.ARCHIVED
ACCEPT = AckType.ACCEPT
RELEASE = AckType.RELEASE
REJECT = AckType.REJECT
GAP = AckType.GAP
RENEW = AckType.RENEW


def partition(state: PartitionState | None = None, start_offset: int = 0, **config: object) -> SharePartition:
    return SharePartition(
        KEY,
        SharePartitionConfig()._replace(**config),  # type: ignore[arg-type]
        state if state is not None else PartitionState(state_epoch=0, leader_epoch=0, start_offset=-1),
        start_offset,
    )


def persisted(
    start_offset: int, *batches: StateBatch, state_epoch: int = 0, leader_epoch: int = 0
) -> PartitionState:
    """A share-partition's persisted state as ReadShareGroupState answers it."""
    return PartitionState(state_epoch, leader_epoch, start_offset, batches=batches)


def log(*spans: tuple[int, int]) -> list[LogBatch]:
    """Log batches (base offset, record count)."""
    return [LogBatch(base, base + count - 1) for base, count in spans]


def acquire(
    sp: SharePartition,
    member: str,
    batches: list[LogBatch],
    *,
    max_records: int = 500,
    batch_size: int = 500,
    mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
    now_ms: int = 0,
    **kw: object,
) -> list[tuple[int, int, int]]:
    got = sp.acquire(
        member, batches, max_records=max_records, batch_size=batch_size, mode=mode, now_ms=now_ms, **kw
    )  # type: ignore[arg-type]
    assert all(isinstance(r, AcquiredRange) for r in got)
    return [tuple(r) for r in got]  # type: ignore[misc]


def ack(sp: SharePartition, member: str, *batches: tuple[int, int, list[int]], now_ms: int = 0) -> AckResult:
    return sp.acknowledge(
        member, [AckBatch(f, last, tuple(int(t) for t in types)) for f, last, types in batches], now_ms
    )


def per_offset(sp: SharePartition) -> list[tuple[int, RecordState, int, str]]:
    """Every cached record's (offset, state, delivery count, member), split batches or not."""
    return [
        (o, state, count, member)
        for first, last, state, count, member in sp.records()
        for o in range(first, last + 1)
    ]


def committed(result: AckResult | Transition | None) -> Transition:
    transition = result.transition if isinstance(result, AckResult) else result
    assert transition is not None, result
    transition.commit()
    return transition


# -- acquisition ---------------------------------------------------------------------------------


def test_acquire_single_batch() -> None:
    sp = partition()
    assert sp.next_fetch_offset() == 0
    assert acquire(sp, M1, log((0, 5))) == [(0, 4, 1)]
    assert sp.next_fetch_offset() == 5
    assert sp.in_flight_records() == 5
    assert sp.records() == [(0, 4, ACQUIRED, 1, M1)]
    assert sp.next_lock_deadline() == LOCK


def test_acquire_from_start_offset_and_empty_reads() -> None:
    sp = partition(start_offset=10)
    assert acquire(sp, M1, []) == []
    assert acquire(sp, M1, log((0, 5))) == []  # wholly below the start offset
    assert acquire(sp, M1, log((5, 10))) == [(10, 14, 1)]  # the part from the start offset
    assert acquire(sp, M1, log((5, 10)), max_records=0) == []


def test_acquire_same_batch_again_gives_nothing() -> None:
    sp = partition()
    assert acquire(sp, M1, log((10, 5))) == [(10, 14, 1)]
    assert acquire(sp, M2, log((10, 5))) == []
    assert acquire(sp, M2, log((10, 2))) == []
    assert sp.next_fetch_offset() == 15


def test_acquire_overlap_then_new_records() -> None:
    sp = partition()
    assert acquire(sp, M1, log((0, 5))) == [(0, 4, 1)]
    assert acquire(sp, M2, log((0, 5), (5, 5))) == [(5, 9, 1)]
    assert sp.in_flight_batches() == 2
    assert sp.next_fetch_offset() == 10


def test_batch_size_splits_at_log_batch_boundaries() -> None:
    sp = partition()
    batches = log((0, 5), (5, 5), (10, 5), (15, 5))
    assert acquire(sp, M1, batches, batch_size=10) == [(0, 9, 1), (10, 19, 1)]
    sp2 = partition()
    assert acquire(sp2, M1, batches, batch_size=3) == [(0, 4, 1), (5, 9, 1), (10, 14, 1), (15, 19, 1)]
    # a log batch larger than batch_size is never cut
    sp3 = partition()
    assert acquire(sp3, M1, log((0, 10), (10, 2)), batch_size=4) == [(0, 9, 1), (10, 11, 1)]


def test_batch_optimized_acquires_whole_log_batches_past_max_records() -> None:
    sp = partition()
    assert acquire(sp, M1, log((0, 10), (10, 10)), max_records=5) == [(0, 9, 1)]
    assert acquire(sp, M1, log((10, 10), (20, 10)), max_records=15) == [(10, 29, 1)]


def test_record_limit_acquires_exact_count() -> None:
    sp = partition()
    assert acquire(sp, M1, log((0, 10)), max_records=3, mode=AcquireMode.RECORD_LIMIT) == [(0, 2, 1)]
    assert sp.records()[3] == (3, 3, AVAILABLE, 0, "")
    assert sp.next_fetch_offset() == 3
    # the log read from 3 returns the whole batch again
    assert acquire(sp, M2, log((0, 10)), max_records=4, mode=AcquireMode.RECORD_LIMIT, fetch_offset=3) == [
        (3, 6, 1)
    ]
    assert acquire(sp, M1, log((0, 10)), max_records=10, mode=AcquireMode.RECORD_LIMIT, fetch_offset=7) == [
        (7, 9, 1)
    ]
    assert sp.next_fetch_offset() == 10


def test_max_record_locks_limits_in_flight_records() -> None:
    sp = partition(max_record_locks=10)
    assert acquire(sp, M1, log((0, 10))) == [(0, 9, 1)]
    assert not sp.can_acquire_records()
    assert acquire(sp, M1, log((10, 10)), fetch_offset=10) == []
    # records released below the end can still be acquired at the limit
    committed(ack(sp, M1, (0, 9, [RELEASE])))
    assert sp.can_acquire_records()
    assert sp.next_fetch_offset() == 0
    assert acquire(sp, M2, log((0, 10), (10, 10)), fetch_offset=0) == [(0, 9, 2)]
    # acknowledging moves the start offset: room again
    committed(ack(sp, M2, (0, 4, [ACCEPT])))
    assert sp.in_flight_records() == 5
    assert acquire(sp, M1, log((10, 10)), max_records=500) == [(10, 19, 1)]


# -- acknowledgement -------------------------------------------------------------------------------


def test_accept_moves_start_offset_and_persists_the_change() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 5)))
    acquire(sp, M1, log((5, 5)))
    result = ack(sp, M1, (0, 4, [ACCEPT]))
    assert result.error_code == 0
    assert result.transition is not None
    request = result.transition.request
    assert request.key == KEY
    assert request.start_offset == 0  # Kafka writes the start offset it has before the commit
    assert request.delivery_complete_count == 5
    assert request.batches == (StateBatch(0, 4, ACKNOWLEDGED, 1),)
    committed(result)
    assert sp.start_offset == 5
    assert sp.delivery_complete_count == 0
    assert sp.records() == [(5, 9, ACQUIRED, 1, M1)]
    committed(ack(sp, M1, (5, 9, [ACCEPT])))
    assert (sp.start_offset, sp.end_offset, sp.in_flight_records()) == (10, 10, 0)
    assert sp.next_fetch_offset() == 10


def test_release_redelivers_with_delivery_count_two() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 5)))
    result = ack(sp, M1, (0, 4, [RELEASE]))
    assert result.transition is not None
    assert result.transition.request.batches == (StateBatch(0, 4, AVAILABLE, 1),)
    committed(result)
    assert sp.next_fetch_offset() == 0
    assert sp.next_lock_deadline() is None
    assert acquire(sp, M2, log((0, 5)), now_ms=100) == [(0, 4, 2)]
    assert sp.redeliveries == 5
    assert sp.next_lock_deadline() == 100 + LOCK


def test_delivery_limit_archives_on_release() -> None:
    sp = partition(delivery_count_limit=2)
    acquire(sp, M1, log((0, 5)), now_ms=0)
    committed(ack(sp, M1, (0, 4, [RELEASE])))
    assert acquire(sp, M1, log((0, 5))) == [(0, 4, 2)]
    result = ack(sp, M1, (0, 4, [RELEASE]))
    assert result.transition is not None
    assert result.transition.request.batches == (StateBatch(0, 4, ARCHIVED, 2),)
    assert result.transition.request.delivery_complete_count == 5
    committed(result)
    assert (sp.start_offset, sp.in_flight_records()) == (5, 0)
    assert acquire(sp, M1, log((0, 5))) == []


@pytest.mark.parametrize("ack_type", [REJECT, GAP])
def test_reject_and_gap_archive(ack_type: AckType) -> None:
    sp = partition()
    acquire(sp, M1, log((0, 5)))
    acquire(sp, M1, log((5, 5)))
    result = ack(sp, M1, (0, 4, [ack_type]))
    assert result.transition is not None
    assert result.transition.request.batches == (StateBatch(0, 4, ARCHIVED, 1),)
    committed(result)
    assert sp.start_offset == 5


def test_per_offset_acknowledgement_splits_the_batch() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 10)))
    result = ack(sp, M1, (0, 4, [ACCEPT, ACCEPT, RELEASE, REJECT, GAP]))
    assert result.transition is not None
    assert result.transition.request.batches == (
        StateBatch(0, 1, ACKNOWLEDGED, 1),
        StateBatch(2, 2, AVAILABLE, 1),
        StateBatch(3, 4, ARCHIVED, 1),
    )
    committed(result)
    assert sp.start_offset == 2
    assert sp.delivery_complete_count == 2  # 3 and 4
    rows = sp.records()
    assert rows[2:6] == [
        (2, 2, AVAILABLE, 1, ""),
        (3, 3, ARCHIVED, 1, ""),
        (4, 4, ARCHIVED, 1, ""),
        (5, 5, ACQUIRED, 1, M1),
    ]
    assert sp.next_fetch_offset() == 2
    assert acquire(sp, M2, log((0, 10)), fetch_offset=2) == [(2, 2, 2)]
    # a subset of the still acquired part, one type for the range
    committed(ack(sp, M1, (5, 9, [ACCEPT])))
    committed(ack(sp, M2, (2, 2, [ACCEPT])))
    assert (sp.start_offset, sp.in_flight_records(), sp.delivery_complete_count) == (10, 0, 0)


def test_partial_range_of_a_batch() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 10)))
    committed(ack(sp, M1, (3, 5, [ACCEPT])))
    assert sp.start_offset == 0
    assert sp.delivery_complete_count == 3
    committed(ack(sp, M1, (0, 2, [ACCEPT])))
    assert sp.start_offset == 6
    assert sp.in_flight_records() == 4
    assert sp.delivery_complete_count == 0


def test_acknowledge_errors() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 5)))
    acquire(sp, M2, log((5, 5)))
    code = ErrorCode.invalid_record_state
    assert ack(sp, M2, (0, 4, [ACCEPT])) == (code, "Member is not the owner of batch record", None)
    assert ack(sp, M1, (8, 12, [ACCEPT])) == (
        ErrorCode.invalid_request,
        "Batch record not found. The last offset in request is past acquired records.",
        None,
    )
    assert ack(sp, M1, (20, 25, [ACCEPT])) == (
        ErrorCode.invalid_request,
        "Batch record not found. The first offset in request is past acquired records.",
        None,
    )
    assert ack(sp, M1, (0, 0, [9])) == (ErrorCode.invalid_request, "Invalid acknowledge type: [9]", None)
    committed(ack(sp, M2, (5, 9, [ACCEPT])))
    assert ack(sp, M2, (5, 9, [ACCEPT])) == (
        code,
        "The batch cannot be acknowledged. The batch is not in the acquired state.",
        None,
    )
    # a split batch: per offset
    committed(ack(sp, M1, (0, 0, [RELEASE])))
    assert ack(sp, M2, (1, 1, [ACCEPT])) == (code, "Member is not the owner of offset", None)
    assert ack(sp, M1, (0, 1, [ACCEPT])) == (
        code,
        "The offset cannot be acknowledged. The offset is not acquired.",
        None,
    )
    # nothing of the partition cached at or below the batch
    empty = partition(start_offset=10)
    assert ack(empty, M1, (10, 10, [ACCEPT])) == (
        code,
        "Batch record not found. The request batch offsets are not found in the cache.",
        None,
    )
    # wholly below the start offset: ignored
    assert ack(empty, M1, (0, 3, [ACCEPT])) == AckResult()


def test_failed_batch_stages_nothing() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 5)))
    acquire(sp, M2, log((5, 5)))
    before = per_offset(sp)
    result = ack(sp, M1, (0, 4, [ACCEPT]), (5, 9, [ACCEPT]))
    assert result == (ErrorCode.invalid_record_state, "Member is not the owner of batch record", None)
    assert per_offset(sp) == before
    assert sp.delivery_complete_count == 0
    committed(ack(sp, M1, (0, 4, [ACCEPT])))


def test_renew_extends_the_lock_without_a_write() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 5)), now_ms=0)
    assert ack(sp, M1, (0, 4, [RENEW]), now_ms=20_000) == AckResult()
    assert sp.next_lock_deadline() == 20_000 + LOCK
    assert sp.expire_locks(LOCK) is None
    # per offset
    assert ack(sp, M1, (1, 1, [RENEW]), now_ms=25_000) == AckResult()
    assert sp.next_lock_deadline() == 20_000 + LOCK
    expired = sp.expire_locks(50_000)
    assert expired is not None
    assert expired.request.batches == (StateBatch(0, 0, AVAILABLE, 1), StateBatch(2, 4, AVAILABLE, 1))
    assert sp.records()[1] == (1, 1, ACQUIRED, 1, M1)
    assert sp.next_lock_deadline() == 25_000 + LOCK


def test_renew_refused_when_disabled() -> None:
    sp = partition(renew_enabled=False)
    acquire(sp, M1, log((0, 5)))
    assert ack(sp, M1, (0, 4, [RENEW])) == (
        ErrorCode.invalid_record_state,
        "Renewing acquisition locks is not enabled for the group.",
        None,
    )


# -- transitions: staged, committed, rolled back ----------------------------------------------------


def test_staged_records_are_not_acquirable_until_commit() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 5)))
    result = ack(sp, M1, (0, 4, [RELEASE]))
    assert result.transition is not None
    assert acquire(sp, M2, log((0, 5)), fetch_offset=0) == []
    assert ack(sp, M1, (0, 4, [ACCEPT])).error_code == ErrorCode.invalid_record_state
    result.transition.commit()
    assert acquire(sp, M2, log((0, 5)), fetch_offset=0) == [(0, 4, 2)]


def test_rollback_restores_exactly() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 10)), now_ms=5)
    acquire(sp, M1, log((10, 5)), now_ms=5)
    before = (per_offset(sp), sp.start_offset, sp.delivery_complete_count, sp.next_lock_deadline())
    result = ack(sp, M1, (0, 4, [ACCEPT, REJECT, RELEASE, ACCEPT, ACCEPT]), (10, 14, [ACCEPT]))
    assert result.transition is not None
    assert sp.delivery_complete_count == 9
    result.transition.rollback()
    result.transition.commit()  # the first of commit/rollback wins
    assert (per_offset(sp), sp.start_offset, sp.delivery_complete_count, sp.next_lock_deadline()) == before
    committed(ack(sp, M1, (0, 9, [ACCEPT])))
    assert sp.start_offset == 10


def test_lock_expiry_releases_and_counts() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 5)), now_ms=1_000)
    assert sp.next_lock_deadline() == 1_000 + LOCK
    assert sp.expire_locks(1_000 + LOCK - 1) is None
    transition = sp.expire_locks(1_000 + LOCK)
    assert transition is not None
    assert transition.request.batches == (StateBatch(0, 4, AVAILABLE, 1),)
    assert sp.records() == [(0, 4, AVAILABLE, 1, "")]  # at once, as Kafka's timer task does
    assert sp.next_lock_deadline() is None
    assert sp.lock_expiries == 0
    transition.commit()
    assert sp.lock_expiries == 5
    assert acquire(sp, M2, log((0, 5))) == [(0, 4, 2)]
    assert ack(sp, M1, (0, 4, [ACCEPT])).error_message == "Member is not the owner of batch record"


def test_lock_expiry_at_the_delivery_limit_archives() -> None:
    sp = partition(delivery_count_limit=2)
    acquire(sp, M1, log((0, 5)))
    committed(sp.expire_locks(LOCK))
    assert acquire(sp, M1, log((0, 5)), now_ms=LOCK) == [(0, 4, 2)]
    transition = committed(sp.expire_locks(2 * LOCK))
    assert transition.request.batches == (StateBatch(0, 4, ARCHIVED, 2),)
    assert (sp.start_offset, sp.in_flight_records()) == (5, 0)


def test_lock_expiring_under_a_staged_ack() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 5)))
    acquire(sp, M1, log((5, 5)))
    first = ack(sp, M1, (0, 4, [ACCEPT]))
    second = ack(sp, M1, (5, 9, [ACCEPT]))
    assert first.transition is not None and second.transition is not None
    assert sp.expire_locks(LOCK) is None  # both staged: nothing released
    assert sp.next_lock_deadline() is None
    first.transition.commit()  # written: acknowledged
    second.transition.rollback()  # failed write after the lock ran out: released
    assert sp.records() == [(5, 9, AVAILABLE, 1, "")]
    assert sp.start_offset == 5
    assert acquire(sp, M2, log((5, 5)), fetch_offset=5) == [(5, 9, 2)]


def test_release_member() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 5)))
    acquire(sp, M2, log((5, 5)))
    acquire(sp, M1, log((10, 5)))
    committed(ack(sp, M1, (12, 12, [ACCEPT])))  # splits 10..14
    transition = sp.release_member(M1)
    assert transition is not None
    assert transition.request.batches == (
        StateBatch(0, 4, AVAILABLE, 1),
        StateBatch(10, 11, AVAILABLE, 1),
        StateBatch(13, 14, AVAILABLE, 1),
    )
    transition.commit()
    assert sp.release_member(M1) is None  # twice: nothing more
    assert sp.next_fetch_offset() == 0
    assert acquire(sp, M2, log((0, 5), (5, 5), (10, 5)), fetch_offset=0) == [
        (0, 4, 2),
        (10, 11, 2),
        (13, 14, 2),
    ]
    assert sp.records()[1] == (5, 9, ACQUIRED, 1, M2)


# -- start offset --------------------------------------------------------------------------------


def test_log_start_offset_moving_past_in_flight_records() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 10)))
    committed(ack(sp, M1, (0, 9, [RELEASE])))
    transition = sp.on_log_start_offset(5)
    assert transition is not None
    assert transition.request.start_offset == 5
    assert transition.request.batches == ()
    transition.commit()
    assert sp.start_offset == 5
    assert sp.next_fetch_offset() == 5
    assert acquire(sp, M2, log((5, 5)), fetch_offset=5) == [(5, 9, 2)]
    assert sp.on_log_start_offset(3) is None
    # past everything
    empty = partition()
    committed(empty.on_log_start_offset(50))
    assert (empty.start_offset, empty.end_offset, empty.next_fetch_offset()) == (50, 50, 50)


def test_records_gone_from_the_log_are_archived_on_fetch() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 10)))
    committed(ack(sp, M1, (0, 9, [RELEASE])))
    # compaction removed 0..4: the read from 0 starts at 5
    assert acquire(sp, M2, log((5, 5)), fetch_offset=0) == [(5, 9, 2)]
    assert sp.records()[:5] == [(o, o, ARCHIVED, 1, "") for o in range(5)]


# -- load from persisted state --------------------------------------------------------------------


def test_load_with_gaps_delivers_the_holes() -> None:
    state = persisted(
        10,
        StateBatch(15, 19, ACKNOWLEDGED, 1),
        StateBatch(25, 29, AVAILABLE, 2),
        state_epoch=3,
        leader_epoch=1,
    )
    sp = partition(state, start_offset=99)
    assert (sp.start_offset, sp.end_offset, sp.delivery_complete_count) == (10, 29, 5)
    assert sp.next_fetch_offset() == 10
    batches = log((10, 5), (15, 5), (20, 5), (25, 5), (30, 5))
    assert acquire(sp, M1, batches, fetch_offset=10) == [(10, 14, 1), (20, 24, 1), (25, 29, 3), (30, 34, 1)]
    assert sp.next_fetch_offset() == 35
    committed(ack(sp, M1, (10, 14, [ACCEPT])))
    assert sp.start_offset == 20
    assert sp.delivery_complete_count == 0
    transition = ack(sp, M1, (20, 29, [ACCEPT])).transition
    assert transition is not None
    assert transition.request.state_epoch == 3
    assert transition.request.leader_epoch == 1
    transition.commit()
    assert (sp.start_offset, sp.in_flight_records()) == (30, 5)


def test_load_with_a_hole_after_a_terminal_prefix() -> None:
    state = persisted(0, StateBatch(0, 4, ACKNOWLEDGED, 1), StateBatch(10, 14, AVAILABLE, 1))
    sp = partition(state)
    assert (sp.start_offset, sp.end_offset) == (5, 14)  # not past the hole 5..9
    assert sp.next_fetch_offset() == 5
    assert acquire(sp, M1, log((5, 5), (10, 5)), fetch_offset=5) == [(5, 9, 1), (10, 14, 2)]
    # with a budget smaller than the hole: the hole's log batch alone
    again = partition(state)
    assert acquire(again, M1, log((5, 5), (10, 5)), max_records=3, fetch_offset=5) == [(5, 9, 1)]
    assert again.next_fetch_offset() == 10


def test_load_resolves_start_and_drops_terminal_prefix() -> None:
    fresh = partition(PartitionState(state_epoch=0, leader_epoch=0, start_offset=-1), start_offset=42)
    assert (fresh.start_offset, fresh.end_offset, fresh.next_fetch_offset()) == (42, 42, 42)
    state = persisted(0, StateBatch(0, 4, ARCHIVED, 5), StateBatch(5, 9, AVAILABLE, 1))
    sp = partition(state)
    assert (sp.start_offset, sp.end_offset, sp.delivery_complete_count) == (5, 9, 0)
    assert sp.next_fetch_offset() == 5
    assert acquire(sp, M1, log((5, 5), (10, 5)), fetch_offset=5) == [(5, 9, 2), (10, 14, 1)]


def test_load_refuses_batches_below_the_start_offset() -> None:
    state = persisted(10, StateBatch(5, 12, AVAILABLE, 1))
    with pytest.raises(ValueError, match="Failed to initialize the share partition"):
        partition(state)


# -- read_committed -------------------------------------------------------------------------------


def _transactional_log() -> list[LogBatch]:
    return [
        LogBatch(0, 4, producer_id=1, is_transactional=True),
        LogBatch(5, 5, producer_id=1, is_transactional=True, is_control=True),  # abort marker
        LogBatch(6, 9, producer_id=2, is_transactional=True),
        LogBatch(10, 10, producer_id=2, is_transactional=True, is_control=True),  # commit marker
    ]


def test_read_committed_archives_aborted_records() -> None:
    sp = partition(read_committed=True)
    assert acquire(sp, M1, _transactional_log(), aborted=[(1, 0)]) == [(5, 10, 1)]
    assert sp.records()[:5] == [(o, o, ARCHIVED, 1, "") for o in range(5)]
    assert (sp.start_offset, sp.delivery_complete_count) == (5, 0)  # past the archived prefix
    # the client acknowledges the markers as GAP
    committed(ack(sp, M1, (5, 10, [GAP, ACCEPT, ACCEPT, ACCEPT, ACCEPT, GAP])))
    assert (sp.start_offset, sp.in_flight_records()) == (11, 0)


def test_aborted_records_alone_do_not_fill_the_in_flight_limit() -> None:
    sp = partition(read_committed=True, max_record_locks=10)
    aborted_txn = [LogBatch(0, 9, producer_id=3, is_transactional=True)]
    assert acquire(sp, M1, aborted_txn, aborted=[(3, 0)]) == []
    assert (sp.start_offset, sp.in_flight_records(), sp.delivery_complete_count) == (10, 0, 0)
    assert acquire(sp, M1, log((10, 5)), aborted=[(3, 0)]) == [(10, 14, 1)]


def test_read_uncommitted_hands_out_everything() -> None:
    sp = partition()
    assert acquire(sp, M1, _transactional_log(), aborted=[(1, 0)]) == [(0, 10, 1)]


def test_aborted_batch_in_the_middle_cuts_a_range() -> None:
    sp = partition(read_committed=True)
    batches = [
        LogBatch(0, 2),
        LogBatch(3, 5, producer_id=4, is_transactional=True),
        LogBatch(6, 6, producer_id=4, is_transactional=True, is_control=True),
        LogBatch(7, 9),
    ]
    assert acquire(sp, M1, batches, aborted=[(4, 3)]) == [(0, 2, 1), (6, 9, 1)]
    assert (sp.start_offset, sp.delivery_complete_count) == (0, 3)


# -- throttled delivery near the limit ---------------------------------------------------------------


def _released_n_times(sp: SharePartition, first: int, count: int, times: int) -> None:
    for _ in range(times):
        acquired = acquire(sp, M1, log((first, count)), fetch_offset=first)
        assert acquired, sp.records()
        committed(ack(sp, M1, (first, first + count - 1, [RELEASE])))


def test_throttled_batch_is_delivered_alone_and_in_part() -> None:
    sp = partition()  # limit 5: throttled from delivery count 3
    acquire(sp, M1, log((0, 8)))
    acquire(sp, M1, log((8, 2)))
    committed(ack(sp, M1, (0, 7, [RELEASE])))
    _released_n_times(sp, 0, 8, 2)  # 0..7 AVAILABLE, delivered 3 times
    committed(ack(sp, M1, (8, 9, [RELEASE])))  # 8..9 AVAILABLE, delivered once
    # the throttled batch goes alone, half of it (8 >> 1)
    assert acquire(sp, M2, log((0, 8), (8, 2)), fetch_offset=0) == [(0, 3, 4)]
    assert acquire(sp, M2, log((0, 8), (8, 2)), fetch_offset=4) == [(4, 7, 4)]
    assert acquire(sp, M2, log((8, 2)), fetch_offset=8) == [(8, 9, 2)]
    committed(ack(sp, M2, (0, 7, [RELEASE])))
    # delivery count 4 = limit - 1: one record per fetch, its last delivery
    assert acquire(sp, M2, log((0, 8)), fetch_offset=0) == [(0, 0, 5)]
    assert acquire(sp, M2, log((0, 8)), fetch_offset=1) == [(1, 1, 5)]
    # its release archives it
    transition = committed(ack(sp, M2, (0, 0, [RELEASE])))
    assert transition.request.batches == (StateBatch(0, 0, ARCHIVED, 5),)


def test_throttled_batch_ends_the_fetch_after_others() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 4)))
    acquire(sp, M1, log((4, 4)))
    committed(ack(sp, M1, (0, 3, [RELEASE])))
    committed(ack(sp, M1, (4, 7, [RELEASE])))
    _released_n_times(sp, 4, 4, 2)  # 4..7 delivered 3 times, AVAILABLE
    # 0..3 (delivered once) goes, the throttled 4..7 waits for the next fetch
    assert acquire(sp, M2, log((0, 4), (4, 4)), fetch_offset=0) == [(0, 3, 2)]
    assert acquire(sp, M2, log((4, 4)), fetch_offset=4) == [(4, 5, 4)]


# -- record_limit re-acquisition, partly archived acknowledgements ----------------------------------


def test_record_limit_reacquires_part_of_a_released_batch() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 10)))
    committed(ack(sp, M1, (0, 9, [RELEASE])))
    got = acquire(sp, M2, log((0, 10)), max_records=3, mode=AcquireMode.RECORD_LIMIT, fetch_offset=0)
    assert got == [(0, 2, 2)]
    assert sp.next_fetch_offset() == 3
    assert acquire(sp, M1, log((0, 10)), max_records=100, mode=AcquireMode.RECORD_LIMIT, fetch_offset=3) == [
        (3, 9, 2)
    ]


def test_acknowledgement_reaching_below_the_start_offset() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 10)))
    committed(ack(sp, M1, (0, 4, [ACCEPT])))
    assert sp.start_offset == 5
    # a client acknowledging the whole range again: the part below the start is skipped
    result = ack(sp, M1, (0, 9, [REJECT]))
    transition = committed(result)
    assert transition.request.batches == (StateBatch(5, 9, ARCHIVED, 1),)
    assert (sp.start_offset, sp.in_flight_records()) == (10, 0)


def test_many_renewals_keep_one_deadline() -> None:
    sp = partition()
    acquire(sp, M1, log((0, 10)), now_ms=0)
    committed(ack(sp, M1, (0, 0, [ACCEPT])))  # split per offset
    for t in range(1, 500):
        assert ack(sp, M1, (1, 9, [RENEW]), now_ms=t) == AckResult()
    assert sp.next_lock_deadline() == 499 + LOCK
    assert sp.expire_locks(498 + LOCK) is None
    transition = committed(sp.expire_locks(499 + LOCK))
    assert transition.request.batches == (StateBatch(1, 9, AVAILABLE, 1),)
    assert sp.next_lock_deadline() is None


def test_nothing_below_the_start_offset_is_acquired() -> None:
    sp = partition(start_offset=5)
    assert acquire(sp, M1, log((5, 1))) == [(5, 5, 1)]
    committed(sp.on_log_start_offset(7))  # DeleteRecords into the middle of the log batch 6..13
    assert sp.next_fetch_offset() == 7
    assert acquire(sp, M2, log((6, 8)), fetch_offset=7) == [(7, 13, 1)]
    # the record still held below the start offset is archived when its lock runs out
    transition = committed(sp.expire_locks(LOCK))
    assert transition.request.batches == (StateBatch(5, 5, ARCHIVED, 1), StateBatch(7, 13, AVAILABLE, 1))
    assert sp.delivery_complete_count == 0


def test_log_start_offset_moving_into_a_hole_of_the_persisted_state() -> None:
    state = persisted(0, StateBatch(0, 4, ACKNOWLEDGED, 1), StateBatch(10, 14, AVAILABLE, 1))
    sp = partition(state)
    assert sp.start_offset == 5
    committed(sp.on_log_start_offset(8))
    assert sp.next_fetch_offset() == 8
    assert acquire(sp, M1, log((5, 5), (10, 5)), fetch_offset=8) == [(8, 9, 1), (10, 14, 2)]
    committed(ack(sp, M1, (8, 9, [ACCEPT]), (10, 14, [ACCEPT])))
    assert (sp.start_offset, sp.in_flight_records()) == (15, 0)
