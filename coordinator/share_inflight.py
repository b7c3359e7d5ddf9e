"""The in-flight records of a share-partition, as Kafka's InFlightState / InFlightBatch keep them
(org.apache.kafka.server.share.fetch): one state per batch until a part of the batch is treated
differently, then one state per offset. Sans-I/O: an acquisition lock is its deadline in ms (the
driver arms the timer, coordinator/share_partition.py's expire_locks runs it)."""

from __future__ import annotations

from minibroker.coordinator.share_types import RecordState

__all__ = ["DECREASE", "INCREASE", "NO_OP", "InFlightBatch", "InFlightState", "is_terminal"]

# Kafka's DeliveryCountOps
INCREASE = 1
DECREASE = -1
NO_OP = 0

_AVAILABLE = RecordState.AVAILABLE
_ACQUIRED = RecordState.ACQUIRED
_ACKNOWLEDGED = RecordState.ACKNOWLEDGED
_ARCHIVED = RecordState.ARCHIVED


def is_terminal(state: RecordState) -> bool:
    return state is _ACKNOWLEDGED or state is _ARCHIVED


def _valid_transition(current: RecordState, new: RecordState) -> bool:
    """RecordState.validateTransition: same -> same, anything out of ACKNOWLEDGED/ARCHIVED and
    AVAILABLE -> anything but ACQUIRED are illegal."""
    if current is new or current is _ACKNOWLEDGED or current is _ARCHIVED:
        return False
    return not (current is _AVAILABLE and new is not _ACQUIRED)


class InFlightState:
    """A record's (or a whole batch's) state, delivery count, owner and acquisition-lock deadline.
    `rollback` holds what a staged transition replaced (state, count, member, max delivery
    count); `expired` is Kafka's AcquisitionLockTimerTask.hasExpired for a lock that ran out while
    a transition was staged; `terminal` is Kafka's isTerminalState (archived under a staged
    transition: a rollback keeps it archived)."""

    __slots__ = ("deadline_ms", "delivery_count", "expired", "member_id", "rollback", "state", "terminal")

    def __init__(
        self, state: RecordState, delivery_count: int, member_id: str, deadline_ms: int | None = None
    ) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.deadline_ms = deadline_ms
        self.rollback: tuple[RecordState, int, str, int] | None = None
        self.expired = False
        self.terminal = False

    def __repr__(self) -> str:
        return (
            f"InFlightState(state={self.state.name}, delivery_count={self.delivery_count}, "
            f"member_id={self.member_id!r}, deadline_ms={self.deadline_ms})"
        )

    @property
    def in_transition(self) -> bool:
        return self.rollback is not None

    def clear_lock(self) -> None:
        self.deadline_ms = None
        self.expired = False

    def try_update(self, new_state: RecordState, ops: int, max_delivery_count: int, member_id: str) -> bool:
        """InFlightState.tryUpdateState: False when a transition is staged or the move is illegal.
        A record going back to AVAILABLE at the delivery limit is ARCHIVED instead."""
        if self.rollback is not None:
            return False
        if new_state is _AVAILABLE and ops != DECREASE and self.delivery_count >= max_delivery_count:
            new_state = _ARCHIVED
        if not _valid_transition(self.state, new_state):
            return False
        self.state = new_state
        if new_state is not _ARCHIVED:
            self.delivery_count += ops
        self.member_id = member_id
        return True

    def start_transition(
        self, new_state: RecordState, ops: int, max_delivery_count: int, member_id: str
    ) -> bool:
        """InFlightState.startStateTransition: try_update, remembering what to roll back to."""
        previous = (self.state, self.delivery_count, self.member_id, max_delivery_count)
        if not self.try_update(new_state, ops, max_delivery_count, member_id):
            return False
        self.rollback = previous
        return True

    def complete_transition(self, commit: bool) -> None:
        """InFlightState.completeStateTransition: a commit (or a record archived meanwhile) ends the
        lock; a rollback restores the previous state, or releases the record when its lock ran out
        while the transition was staged."""
        rollback = self.rollback
        if not commit and not self.terminal and rollback is not None:
            # Kafka restores state and member only: staged transitions (acknowledge, release) never
            # change the delivery count
            state, delivery_count, member_id, max_delivery_count = rollback
            if self.deadline_ms is not None and self.expired:
                self.state = _ARCHIVED if delivery_count >= max_delivery_count else _AVAILABLE
                self.member_id = ""
                self.clear_lock()
            else:
                self.state = state
                self.member_id = member_id
        else:
            self.clear_lock()
        self.rollback = None

    def archive(self) -> None:
        self.terminal = True
        self.state = _ARCHIVED
        self.member_id = ""
        self.clear_lock()


class InFlightBatch:
    """Records first..last handed out together: `batch_state` until split, then `offset_state`
    (one InFlightState per offset, index offset - first_offset)."""

    __slots__ = ("batch_state", "first_offset", "last_offset", "offset_state")

    def __init__(
        self,
        first_offset: int,
        last_offset: int,
        state: RecordState,
        delivery_count: int,
        member_id: str,
        deadline_ms: int | None = None,
    ) -> None:
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.batch_state: InFlightState | None = InFlightState(state, delivery_count, member_id, deadline_ms)
        self.offset_state: list[InFlightState] | None = None

    def __repr__(self) -> str:
        return (
            f"InFlightBatch({self.first_offset}-{self.last_offset}, batch_state={self.batch_state}, "
            f"offset_state={self.offset_state})"
        )

    @property
    def state(self) -> InFlightState:
        """The batch-level state (only while the batch is not split)."""
        state = self.batch_state
        if state is None:
            raise RuntimeError("The batch state is not available as the offset state is maintained")
        return state

    def offsets(self) -> list[tuple[int, InFlightState]]:
        assert self.offset_state is not None
        first = self.first_offset
        return [(first + i, s) for i, s in enumerate(self.offset_state)]

    def split(self) -> list[InFlightState]:
        """maybeInitializeOffsetStateUpdate(): every offset takes the batch's state, count, owner
        and lock deadline. Returns the new per-offset states (empty when already split)."""
        if self.offset_state is not None:
            return []
        batch = self.state
        # a lock only for acquired records (a batch split under a staged transition has the
        # transition's new state; Kafka copies the timer there too, and it finds nothing to do)
        deadline = batch.deadline_ms if batch.state is _ACQUIRED else None
        self.offset_state = [
            InFlightState(batch.state, batch.delivery_count, batch.member_id, deadline)
            for _ in range(self.last_offset - self.first_offset + 1)
        ]
        batch.clear_lock()
        self.batch_state = None
        return self.offset_state

    def split_acquired_up_to(self, target_offset: int, deadline_ms: int) -> list[InFlightState]:
        """maybeInitializeOffsetStateUpdate(target, delay) (record_limit acquisition): offsets up
        to target keep the batch's acquired state with a lock until deadline_ms, the rest are
        AVAILABLE with one delivery less. Returns the acquired per-offset states."""
        batch = self.state
        acquired: list[InFlightState] = []
        states: list[InFlightState] = []
        for offset in range(self.first_offset, self.last_offset + 1):
            if offset <= target_offset:
                s = InFlightState(batch.state, batch.delivery_count, batch.member_id, deadline_ms)
                acquired.append(s)
            else:
                s = InFlightState(_AVAILABLE, batch.delivery_count - 1, "")
            states.append(s)
        self.offset_state = states
        self.batch_state = None
        return acquired
