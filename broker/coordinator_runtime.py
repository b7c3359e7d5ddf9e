"""The one driver of the coordinators (Kafka's CoordinatorRuntime for one broker and one loop).

Every coordinator operation runs here, on the event loop (coordinator/runtime.py says what an
operation is): `run(shard, op)` appends the records an operation returns or yields through the
shard, waits for `Durability.sync` where the log's flush policy asks for an fsync (Kafka's
default, none, leaves them in the page cache: a killed process loses nothing, and Kafka does not
fsync on commit either), replays them into the shard and answers; a storage failure is thrown
back into the operation at its yield. `answer(deferred)` is the one place a parked response (a
JoinGroup waiting for its rebalance, a follower's SyncGroup waiting for the assignment) becomes
awaitable. The coordinators' timers (`timer()`: a `coordinator.collaborators.Scheduler` bound
to one shard, whose timers fire operations of that shard, run like a request's) and the broker's
periodic duties (`every`: storage's and the coordinators') run here too, on the same loop.

Both follow the broker's clock. On the system clock they are asyncio's (`loop.call_later`,
`asyncio.sleep`), as fast as ever. On a clock the control plane moves
(`minibroker.control.clock=manual|offset`, common/clock.py `ControlledClock`) they are due at
clock times and live in `ClockTimers`, a heap that `advance(ms)` walks in due order, moving the
clock to each due time in turn (Kafka's MockTime with MockScheduler), then runs one pass of every
duty; with the offset clock a loop timer is armed for the earliest entry as well.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import inspect
import itertools
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import structlog
from minibroker.common.clock import SYSTEM_CLOCK, Clock, ControlledClock
from minibroker.coordinator.runtime import (
    CoordinatorResult,
    CoordinatorShard,
    Deferred,
    Operation,
    Step,
    Write,
)

if TYPE_CHECKING:
    from minibroker.broker.durability import Durability
    from minibroker.coordinator.collaborators import TimerHandle

__all__ = ["ClockTimers", "CoordinatorRuntime"]

log = structlog.get_logger("minibroker.coordinator.runtime")

T = TypeVar("T")
R = TypeVar("R")


class CoordinatorRuntime:
    def __init__(self, durability: Durability, clock: Clock = SYSTEM_CLOCK) -> None:
        self._durability = durability
        self._tasks: list[asyncio.Task[None]] = []
        self._fired: set[asyncio.Task[Any]] = set()  # timer operations under way
        # the timers and duties on a clock the control plane moves; None: asyncio's (system clock)
        self.clock_timers: ClockTimers | None = (
            ClockTimers(clock, self.settle) if isinstance(clock, ControlledClock) else None
        )

    # --- operations ----------------------------------------------------------------------------
    async def run(self, shard: CoordinatorShard[Any], op: Operation[T] | CoordinatorResult[Any, T]) -> T:
        """Run an operation of `shard` to its response: write, wait, replay, answer."""
        if isinstance(op, CoordinatorResult):
            if op.records:
                await self._write(shard, Write(op.records))
            return op.response
        try:
            step = next(op)
        except StopIteration as done:
            result: T = done.value
            return result
        return await self._resume(shard, op, step)

    async def _resume(self, shard: CoordinatorShard[Any], op: Operation[T], step: Step) -> T:
        """Go on with `op` from `step` to its response."""
        try:
            while True:
                try:
                    if isinstance(step, Write):
                        await self._write(shard, step)
                    else:
                        await self._sync(step.logs)
                except Exception as exc:  # noqa: BLE001 - the operation decides what a failure means
                    step = op.throw(exc)
                else:
                    step = op.send(None)
        except StopIteration as done:
            result: T = done.value
            return result

    async def _write(self, shard: CoordinatorShard[Any], step: Write[Any]) -> None:
        logs = shard.write(step.records)
        if step.durable:
            await self._sync(logs)
        _replay(shard, step)

    async def _sync(self, logs: Iterable[Any]) -> None:
        await self._durability.sync(plog for plog in logs if plog.config.flush_messages is not None)

    @staticmethod
    async def answer(deferred: Deferred[T]) -> T:
        """Wait for a parked response. If the caller goes first (its connection closed, the
        broker stopping), a later answer is dropped."""
        if deferred.done:
            return deferred.result()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()

        def complete(value: T) -> None:
            if not future.done():
                future.set_result(value)

        deferred.on_complete(complete)
        return await future

    # --- timers --------------------------------------------------------------------------------
    def timer(self) -> ShardTimer:
        """One-shot timers for one shard (bind it once the shard is built)."""
        return ShardTimer(self)

    def fire(self, shard: CoordinatorShard[Any], op: Operation[Any]) -> None:
        """Run a timer's operation of `shard` now, as far as it goes without waiting (its
        page-cache writes included, so nothing runs between its change and its record); a step
        that waits for the disk goes on in a task. A failure is logged."""
        try:
            step = next(op)
            while isinstance(step, Write) and not step.durable:
                try:
                    shard.write(step.records)
                    _replay(shard, step)
                except Exception as exc:  # noqa: BLE001 - the operation decides what a failure means
                    step = op.throw(exc)
                else:
                    step = op.send(None)
        except StopIteration:
            return
        except Exception:  # noqa: BLE001 - a timer must never take the loop down
            log.exception("coordinator timer failed")
            return
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(self._resume(shard, op, step))
        self._fired.add(task)
        task.add_done_callback(self._fired_done)

    def _fired_done(self, task: asyncio.Task[Any]) -> None:
        self._fired.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("coordinator timer failed", exc_info=task.exception())

    async def settle(self) -> None:
        """Wait until the timer operations under way (`fire`'s tasks) have finished."""
        while self._fired:
            await asyncio.gather(*list(self._fired), return_exceptions=True)

    def every(
        self, interval_ms: int, name: str, duty: Callable[[], object], *, real_time: bool = False
    ) -> None:
        """Run a duty every interval on the loop (awaiting it when it returns an awaitable, e.g.
        `lambda: runtime.run(shard, shard.some_duty())`); `close()` stops them. The broker's one
        scheduler of periodic duties: the coordinators' and storage's (broker/state.py).

        The interval is on the broker's clock. `real_time`: a polling backoff, not a rule of time
        (the log cleaner's): on real time whatever the clock; a controlled clock's advance still
        runs it once after moving (`ClockTimers.advance`)."""
        timers = self.clock_timers
        if timers is not None:
            timers.add_duty(interval_ms, name, duty, scheduled=not real_time)
            if not real_time:
                return

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_ms / 1000)
                await run_duty(name, duty)

        self._tasks.append(asyncio.create_task(loop(), name=name))

    async def close(self) -> None:
        """Stop the periodic duties and the timer operations under way and wait for them (the
        coordinators' one-shot timers are cancelled by their own close)."""
        tasks: list[asyncio.Task[Any]] = [*self._tasks, *self._fired]
        if self.clock_timers is not None:
            tasks += self.clock_timers.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()


class ShardTimer:
    """A `coordinator.collaborators.Scheduler` for one shard (Kafka's CoordinatorTimer): a timer
    fires an operation of the shard, which the runtime runs as it runs a request's."""

    def __init__(self, runtime: CoordinatorRuntime) -> None:
        self._runtime = runtime
        self._shard: CoordinatorShard[Any] | None = None

    def bind(self, shard: CoordinatorShard[Any]) -> None:
        self._shard = shard

    def call_later(self, delay_ms: int, operation: Callable[[], Operation[None]]) -> TimerHandle:
        """Fire `operation` `delay_ms` from now on the broker's clock."""
        timers = self._runtime.clock_timers
        if timers is None:  # the system clock: asyncio's timer, as fast as ever
            return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000, self._fire, operation)
        return timers.call_later(delay_ms, functools.partial(self._fire, operation))

    def _fire(self, operation: Callable[[], Operation[None]]) -> None:
        assert self._shard is not None, "a ShardTimer fires once bound to its shard"
        try:
            op = operation()
        except Exception:  # noqa: BLE001 - a timer must never take the loop down
            log.exception("coordinator timer failed")
            return
        self._runtime.fire(self._shard, op)


async def run_duty(name: str, duty: Callable[[], object]) -> None:
    """One run of a periodic duty, awaited to its end; a failure is logged (and retried at the
    next interval)."""
    try:
        result = duty()
        if inspect.isawaitable(result):
            await result
    except Exception:  # noqa: BLE001 - a failing duty is logged and retried
        log.exception("background duty failed", duty=name)


class _Duty:
    __slots__ = ("interval_ms", "name", "fn")

    def __init__(self, interval_ms: int, name: str, fn: Callable[[], object]) -> None:
        self.interval_ms = max(interval_ms, 1)
        self.name = name
        self.fn = fn


class _Entry:
    """One due time in the heap: a one-shot timer (`callback`) or a duty's next run (`duty`)."""

    __slots__ = ("due", "seq", "callback", "duty", "cancelled", "_owner")

    def __init__(
        self,
        due: int,
        seq: int,
        callback: Callable[[], object] | None,
        duty: _Duty | None,
        owner: ClockTimers,
    ) -> None:
        self.due = due
        self.seq = seq
        self.callback = callback
        self.duty = duty
        self.cancelled = False
        self._owner = owner

    def __lt__(self, other: _Entry) -> bool:
        return (self.due, self.seq) < (other.due, other.seq)

    def cancel(self) -> None:
        """A one-shot timer that has not fired does not fire (a `TimerHandle`)."""
        if not self.cancelled:
            self.cancelled = True
            self._owner.cancelled_entry()

    def __repr__(self) -> str:
        what = self.duty.name if self.duty is not None else "timer"
        return f"<{what} due {self.due}{' cancelled' if self.cancelled else ''}>"


#: One-shot timers shorter than this fire on real time with the manual clock (ClockTimers.call_later).
REAL_TIME_BELOW_MS = 10


class ClockTimers:
    """The broker's timers and periodic duties on a `ControlledClock` (Kafka's MockScheduler).

    Every one-shot timer (`call_later`) and every duty's next run (`add_duty`) is an entry of one
    heap, due at a clock time. `advance(ms)` walks the heap in due order, moving the clock to each
    due time in turn, so a timer set by a fired one inside the window fires too, at its own due
    time; each fired timer's operation (`settle`: the runtime's `fire` tasks) and each duty is
    awaited to its end before the next. A duty due several times before the next one-shot timer
    (or the end) runs once, at the last of those times. Then every duty runs once more at the new
    time, so what is due by then is done whatever the check intervals. The manual clock moves only
    there (a timer of under `REAL_TIME_BELOW_MS` fires on real time); with the offset clock a
    loop timer is armed for the earliest entry too.
    """

    def __init__(self, clock: ControlledClock, settle: Callable[[], Awaitable[None]]) -> None:
        self.clock = clock
        self._settle = settle
        self._heap: list[_Entry] = []
        self._seq = itertools.count()
        self._duties: list[_Duty] = []
        self._cancelled = 0  # cancelled entries still in the heap
        self._lock = asyncio.Lock()  # one walk of the heap at a time (an advance, the loop timer's)
        self._armed: asyncio.TimerHandle | None = None
        self._armed_due: int | None = None
        self._runner: asyncio.Task[int] | None = None
        self._closed = False

    # --- adding -----------------------------------------------------------------------------------
    def call_later(self, delay_ms: int, callback: Callable[[], object]) -> TimerHandle:
        """Call `callback` once, `delay_ms` from now on the clock; `.cancel()` on the answer.

        A timer of a few milliseconds (`REAL_TIME_BELOW_MS`) is a pause to let concurrent
        requests in, not a rule of time (the initial rebalance delay's floor, with
        group.initial.rebalance.delay.ms=0): it fires on real time, so groups form with a
        manual clock that stands still."""
        if delay_ms < REAL_TIME_BELOW_MS and self.clock.mode == "manual":
            return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000, callback)
        entry = _Entry(self.clock.wall_ms() + max(delay_ms, 0), next(self._seq), callback, None, self)
        heapq.heappush(self._heap, entry)
        self._arm()
        return entry

    def add_duty(
        self, interval_ms: int, name: str, fn: Callable[[], object], *, scheduled: bool = True
    ) -> None:
        """A periodic duty: run every `interval_ms` on the clock (`scheduled=False`: run only by
        the pass after an advance, its caller schedules it on real time)."""
        duty = _Duty(interval_ms, name, fn)
        self._duties.append(duty)
        if scheduled:
            self._push_duty(duty, self.clock.wall_ms() + duty.interval_ms)
            self._arm()

    def _push_duty(self, duty: _Duty, due: int) -> None:
        heapq.heappush(self._heap, _Entry(due, next(self._seq), None, duty, self))

    def cancelled_entry(self) -> None:
        self._cancelled += 1
        if self._cancelled > 64 and self._cancelled * 2 > len(self._heap):
            # heartbeats cancel and re-add their timers: forget the cancelled ones now and then
            self._heap = [e for e in self._heap if not e.cancelled]
            heapq.heapify(self._heap)
            self._cancelled = 0

    # --- reading ----------------------------------------------------------------------------------
    def pending(self) -> list[tuple[int, str]]:
        """(due wall ms, what) of every live entry, earliest first."""
        return [(e.due, e.duty.name if e.duty else "timer") for e in sorted(self._heap) if not e.cancelled]

    @property
    def duties(self) -> list[str]:
        return [d.name for d in self._duties]

    # --- running ----------------------------------------------------------------------------------
    async def advance(self, ms: int) -> int:
        """Move the clock `ms` on, running everything that falls due, in due order and to its end,
        then one pass of every duty; the number of timers and duty runs fired."""
        if ms < 0:
            raise ValueError(f"a clock cannot go back ({ms} ms)")
        async with self._lock:
            offset_before = self.clock.offset_ms
            target = self.clock.wall_ms() + ms
            fired = await self._walk(target, move=True)
            self.clock.move_by(offset_before + ms - self.clock.offset_ms)  # exactly `ms` in all
            fired += await self._walk(self.clock.wall_ms(), move=False)  # offset: real time passed
            for duty in self._duties:
                await run_duty(duty.name, duty.fn)
                fired += 1
        self._arm()
        return fired

    async def run_due(self) -> int:
        """Run what is due by the clock's time now (the loop timer's work)."""
        async with self._lock:
            fired = await self._walk(self.clock.wall_ms(), move=False)
        self._arm()
        return fired

    async def _walk(self, target: int, *, move: bool) -> int:
        fired = 0
        heap = self._heap
        while not self._closed:
            while heap and heap[0].cancelled:
                heapq.heappop(heap)
                self._cancelled -= 1
            if not heap or heap[0].due > target:
                return fired
            entry = heapq.heappop(heap)
            fired += 1
            duty = entry.duty
            if duty is None:
                if move:
                    self.clock.move_to(entry.due)
                entry.cancelled = True  # fired: a late cancel() changes nothing
                assert entry.callback is not None
                try:
                    entry.callback()
                except Exception:  # noqa: BLE001 - a timer must never stop the others
                    log.exception("timer failed")
                await self._settle()
                continue
            due = entry.due
            horizon = min((e.due for e in heap if e.duty is None and not e.cancelled), default=target)
            horizon = min(horizon, target)
            if horizon > due:  # runs due before the next timer: one, at the last of them
                due += (horizon - due) // duty.interval_ms * duty.interval_ms
            if move:
                self.clock.move_to(due)
            self._push_duty(duty, due + duty.interval_ms)
            await run_duty(duty.name, duty.fn)
        return fired

    def _arm(self) -> None:
        """Arm a loop timer for the earliest entry: with the offset clock always, with the manual
        one only when it is due already (the clock will not get there by itself)."""
        if self._closed:
            return
        heap = self._heap
        while heap and heap[0].cancelled:
            heapq.heappop(heap)
            self._cancelled -= 1
        due = heap[0].due if heap else None
        if due == self._armed_due and self._armed is not None:
            return
        if self._armed is not None:
            self._armed.cancel()
            self._armed = self._armed_due = None
        if due is None:
            return
        delay = due - self.clock.wall_ms()
        if delay > 0 and self.clock.mode == "manual":
            return
        self._armed = asyncio.get_running_loop().call_later(max(delay, 0) / 1000, self._wake)
        self._armed_due = due

    def _wake(self) -> None:
        self._armed = self._armed_due = None
        if self._runner is None or self._runner.done():
            self._runner = asyncio.get_running_loop().create_task(self.run_due(), name="clock-timers")

    def close(self) -> list[asyncio.Task[int]]:
        """Nothing fires any more (the broker stops); the walk under way, cancelled, to await."""
        self._closed = True
        if self._armed is not None:
            self._armed.cancel()
            self._armed = None
        runner, self._runner = self._runner, None
        if runner is None or runner.done():
            return []
        runner.cancel()
        return [runner]


def _replay(shard: CoordinatorShard[Any], step: Write[Any]) -> None:
    if step.replay:
        for record in step.records:
            shard.replay(record)
