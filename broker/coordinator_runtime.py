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
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import structlog
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

__all__ = ["CoordinatorRuntime"]

log = structlog.get_logger("minibroker.coordinator.runtime")

T = TypeVar("T")
R = TypeVar("R")


class CoordinatorRuntime:
    def __init__(self, durability: Durability) -> None:
        self._durability = durability
        self._tasks: list[asyncio.Task[None]] = []
        self._fired: set[asyncio.Task[Any]] = set()  # timer operations under way

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

    def every(self, interval_ms: int, name: str, duty: Callable[[], object]) -> None:
        """Run a duty every interval on the loop (awaiting it when it returns an awaitable, e.g.
        `lambda: runtime.run(shard, shard.some_duty())`); `close()` stops them. The broker's one
        scheduler of periodic duties: the coordinators' and storage's (broker/state.py)."""

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_ms / 1000)
                try:
                    result = duty()
                    if inspect.isawaitable(result):
                        await result
                except Exception:  # noqa: BLE001 - a failing duty is logged and retried
                    log.exception("background duty failed", duty=name)

        self._tasks.append(asyncio.create_task(loop(), name=name))

    async def close(self) -> None:
        """Stop the periodic duties and the timer operations under way and wait for them (the
        coordinators' one-shot timers are cancelled by their own close)."""
        tasks = [*self._tasks, *self._fired]
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

    def call_later(self, delay_ms: int, operation: Callable[[], Operation[None]]) -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000, self._fire, operation)

    def _fire(self, operation: Callable[[], Operation[None]]) -> None:
        assert self._shard is not None, "a ShardTimer fires once bound to its shard"
        try:
            op = operation()
        except Exception:  # noqa: BLE001 - a timer must never take the loop down
            log.exception("coordinator timer failed")
            return
        self._runtime.fire(self._shard, op)


def _replay(shard: CoordinatorShard[Any], step: Write[Any]) -> None:
    if step.replay:
        for record in step.records:
            shard.replay(record)
