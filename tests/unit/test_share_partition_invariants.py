"""coordinator/share_partition.py under seeded random sequences of fetches, acknowledgements,
releases, lock expiries, log start offset moves and persisted (committed) or failed (rolled back)
writes: the invariants a share-partition keeps whatever happens. Deterministic (fixed seeds, time
as an argument)."""

from __future__ import annotations

import random
import uuid

import pytest
from minibroker.coordinator.share_inflight import InFlightState, is_terminal
from minibroker.coordinator.share_partition import SharePartition, Transition
from minibroker.coordinator.share_types import (
    AckBatch,
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

MEMBERS = ("a", "b", "c")


def _states(sp: SharePartition) -> list[tuple[int, int, InFlightState]]:
    out: list[tuple[int, int, InFlightState]] = []
    for key in sp._keys:
        batch = sp._cache[key]
        if batch.offset_state is None:
            out.append((batch.first_offset, batch.last_offset, batch.state))
        else:
            out.extend((o, o, s) for o, s in batch.offsets())
    return out


def _check(sp: SharePartition, *, exact_count: bool) -> None:
    previous_last = None
    deadlines = []
    terminal = 0
    for first, last, s in _states(sp):
        assert previous_last is None or first > previous_last
        previous_last = last
        if s.rollback is None:
            if s.state is RecordState.ACQUIRED:
                assert s.deadline_ms is not None and s.member_id
            else:
                assert s.deadline_ms is None and s.member_id == ""
        if s.deadline_ms is not None and not s.expired:
            deadlines.append(s.deadline_ms)
        if is_terminal(s.state) and last >= sp.start_offset:
            terminal += last - max(first, sp.start_offset) + 1
    assert sp.next_lock_deadline() == (min(deadlines) if deadlines else None)
    assert sp.in_flight_records() >= 0
    if exact_count:
        assert sp.delivery_complete_count == terminal, (
            sp.start_offset,
            sp.delivery_complete_count,
            terminal,
            sp.records(),
        )


def _log(rnd: random.Random) -> list[LogBatch]:
    batches = []
    offset = 0
    while offset < 300:
        n = rnd.randint(1, 8)
        txn = rnd.random() < 0.2
        batches.append(LogBatch(offset, offset + n - 1, producer_id=7 if txn else -1, is_transactional=txn))
        offset += n
    return batches


class _Persisted:
    """What the share coordinator keeps of the committed writes (a ShareUpdate merged per offset,
    the start offset never going back, nothing below it), loaded as a restart would."""

    def __init__(self) -> None:
        self.start = -1
        self.offsets: dict[int, tuple[int, int]] = {}

    def write(self, request: WriteStateRequest) -> None:
        self.start = max(self.start, request.start_offset)
        for b in request.batches:
            for o in range(b.first_offset, b.last_offset + 1):
                self.offsets[o] = (b.delivery_state, b.delivery_count)
        self.offsets = {o: v for o, v in self.offsets.items() if o >= self.start}

    def state(self) -> PartitionState:
        batches = [StateBatch(o, o, state, count) for o, (state, count) in sorted(self.offsets.items())]
        return PartitionState(state_epoch=0, leader_epoch=0, start_offset=self.start, batches=tuple(batches))


@pytest.mark.parametrize("restarts", [False, True], ids=["running", "restarting"])
@pytest.mark.parametrize("seed", range(8))
def test_random_operations_keep_the_invariants(seed: int, restarts: bool) -> None:
    """Also across restarts (loads from what was persisted, in-flight writes lost): a record
    acknowledged and persisted is never delivered again."""
    rnd = random.Random(seed)
    config = SharePartitionConfig(
        record_lock_duration_ms=1_000,
        delivery_count_limit=rnd.choice([2, 3, 5]),
        max_record_locks=rnd.choice([20, 50, 200]),
        read_committed=rnd.random() < 0.4,
    )
    key = SharePartitionKey("g", uuid.UUID(int=1), 0)
    sp = SharePartition(key, config, PartitionState(0, 0, -1), 0)
    persisted = _Persisted()
    log = _log(rnd)
    aborted = [(7, b.base_offset) for b in log if b.is_transactional and rnd.random() < 0.5]
    held: dict[str, list[AcquiredRange]] = {m: [] for m in MEMBERS}
    pending: list[tuple[Transition, frozenset[int]]] = []
    accepted: set[int] = set()  # acknowledged and persisted: never delivered again
    now = 0
    for _ in range(300):
        now += rnd.randint(0, 300)
        op = rnd.random()
        if restarts and rnd.random() < 0.03:
            sp = SharePartition(key, config, persisted.state(), 0)
            held = {m: [] for m in MEMBERS}
            pending = []
            _check(sp, exact_count=True)
        if op < 0.35:
            member = rnd.choice(MEMBERS)
            fetch_offset = sp.next_fetch_offset()
            read = [b for b in log if b.last_offset >= fetch_offset][: rnd.randint(1, 6)]
            if not read:
                continue
            before = {o: state for first, last, state, _, _ in sp.records() for o in range(first, last + 1)}
            got = sp.acquire(
                member,
                read,
                max_records=rnd.randint(1, 40),
                batch_size=rnd.randint(1, 20),
                mode=rnd.choice(list(AcquireMode)),
                now_ms=now,
                aborted=aborted,
                fetch_offset=fetch_offset,
            )
            for r in got:
                assert r.first_offset >= sp.start_offset
                for o in range(r.first_offset, r.last_offset + 1):
                    assert o not in accepted
                    assert before.get(o, RecordState.AVAILABLE) is RecordState.AVAILABLE
            held[member].extend(got)
        elif op < 0.65:
            member = rnd.choice(MEMBERS)
            if not held[member]:
                continue
            r = held[member].pop(rnd.randrange(len(held[member])))
            first = rnd.randint(r.first_offset, r.last_offset)
            last = rnd.randint(first, r.last_offset)
            if rnd.random() < 0.5:
                types: tuple[int, ...] = (rnd.choice([0, 1, 2, 3, 4]),)
            else:
                types = tuple(rnd.choice([0, 1, 2, 3]) for _ in range(last - first + 1))
            result = sp.acknowledge(member, [AckBatch(first, last, types)], now)
            if result.transition is not None:
                acked = frozenset(
                    o
                    for b in result.transition.request.batches
                    if b.delivery_state == RecordState.ACKNOWLEDGED
                    for o in range(b.first_offset, b.last_offset + 1)
                )
                pending.append((result.transition, acked))
        elif op < 0.72:
            transition = sp.release_member(rnd.choice(MEMBERS))
            if transition is not None:
                pending.append((transition, frozenset()))
        elif op < 0.85:
            transition = sp.expire_locks(now)
            if transition is not None:
                pending.append((transition, frozenset()))
        elif op < 0.97 and pending:
            # the share coordinator persists writes in the order they were made: with restarts the
            # writes complete in that order; without, in any
            transition, acked = pending.pop(0 if restarts else rnd.randrange(len(pending)))
            if rnd.random() < 0.8:
                persisted.write(transition.request)
                transition.commit()
                accepted |= acked
            else:
                transition.rollback()
        else:
            moved = sp.on_log_start_offset(sp.start_offset + rnd.randint(0, 5))
            if moved is not None:
                persisted.write(moved.request)
                moved.commit()
        _check(sp, exact_count=not pending)
    for transition, acked in pending:
        persisted.write(transition.request)
        transition.commit()
        accepted |= acked
    _check(sp, exact_count=False)
