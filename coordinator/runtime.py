"""The coordinator runtime's sans-I/O half: what a coordinator operation is, as Kafka's
coordinator-common runtime (`CoordinatorRuntime`, `CoordinatorShard`, `CoordinatorResult`) has it.

A coordinator (a *shard*: the transaction coordinator, the group coordinator, and the KIP-848,
share and streams group coordinators to come) never writes, waits or schedules by itself. One
driver in the broker (broker/coordinator_runtime.py) runs its operations on the event loop:

- An operation returns a `CoordinatorResult`: the records to append to the shard's internal topic
  and the response. The driver appends them (`CoordinatorShard.write`), waits for the fsync where
  the log's flush policy asks for one, applies them (`CoordinatorShard.replay`, the same method a
  load replays the internal topic through) and answers with the response.
- A multi-step operation (EndTxn: PrepareCommit durable -> markers on the data partitions
  durable -> CompleteCommit) is a generator of `Step`s: `Write(records)` (append, wait, replay,
  resume) and `AwaitDurable(logs)` (resume once those logs are on disk). A write or fsync that
  fails is thrown back in at the yield, where the operation decides what it means. Its return
  value is the response.
- An operation whose answer depends on later operations (a JoinGroup waiting for the rebalance, a
  follower's SyncGroup waiting for the leader's assignment) returns a `Deferred`: a parked
  response that another operation or a timer completes. The driver is the one place a parked
  response becomes awaitable.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

__all__ = [
    "AwaitDurable",
    "CoordinatorResult",
    "CoordinatorShard",
    "Deferred",
    "Operation",
    "Step",
    "Write",
]

T = TypeVar("T")
R = TypeVar("R")
R_contra = TypeVar("R_contra", contravariant=True)


class CoordinatorResult(NamedTuple, Generic[R, T]):
    """Records to append to the shard's internal topic, and the response once they are applied."""

    response: T
    records: Sequence[R] = ()


class Write(NamedTuple, Generic[R]):
    """Step: append `records` to the shard's internal topic, wait for the fsync where the flush
    policy asks (`durable=False`: the page cache is enough), replay them, then resume.
    `replay=False` (Kafka's `CoordinatorResult.replayRecords`): the operation has changed the
    state itself (a classic group's membership, whose record only persists it), so the driver
    does not replay what it wrote; a load still replays those records."""

    records: Sequence[R]
    durable: bool = True
    replay: bool = True


class AwaitDurable(NamedTuple):
    """Step: resume once everything appended to these logs so far is on disk (the driver fsyncs
    the ones whose flush policy asks for it), or throw the fsync's error in."""

    logs: tuple[Any, ...]


Step = Write[Any] | AwaitDurable

#: A multi-step operation: yields steps, returns the response.
Operation = Generator[Step, None, T]


class CoordinatorShard(Protocol[R_contra]):
    """A coordinator as the driver runs it."""

    def write(self, records: Sequence[R_contra]) -> Sequence[Any]:
        """Append `records` to the shard's internal topic (through the store it was given); the
        logs they went to, to be made durable. Raises on a storage failure."""
        ...

    def replay(self, record: R_contra) -> None:
        """Apply one record: after its write (and fsync), and for each record at load."""
        ...


class Deferred(Generic[T]):
    """A parked response: completed once, later, by another operation or a timer. Completing it
    again is a no-op (the first answer wins: a member fenced while its request waits)."""

    __slots__ = ("_done", "_value", "_listeners")

    def __init__(self) -> None:
        self._done = False
        self._value: T | None = None
        self._listeners: list[Callable[[T], None]] = []

    @classmethod
    def of(cls, value: T) -> Deferred[T]:
        """An answer known at once."""
        deferred: Deferred[T] = cls()
        deferred.complete(value)
        return deferred

    @property
    def done(self) -> bool:
        return self._done

    def result(self) -> T:
        if not self._done:
            raise LookupError("the response is still parked")
        return self._value  # type: ignore[return-value]

    def complete(self, value: T) -> bool:
        """Answer; False when it was answered already."""
        if self._done:
            return False
        self._done, self._value = True, value
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener(value)
        return True

    def on_complete(self, listener: Callable[[T], None]) -> None:
        """Call `listener(value)` when completed (at once if it is)."""
        if self._done:
            listener(self._value)  # type: ignore[arg-type]
        else:
            self._listeners.append(listener)

    def __repr__(self) -> str:
        return f"Deferred({self._value!r})" if self._done else "Deferred(parked)"
