"""Group commit: make partition logs durable off the event loop, one fsync round for many callers.

The transaction path must not answer before its records are on disk (``__transaction_state``
transitions, then the markers), but an fsync blocks for ~0.1-10 ms. ``await
group_commit.sync(logs)`` returns once everything appended to ``logs`` before the call is on
disk. The fsyncs run in one dedicated thread, so the loop keeps serving; callers that arrive while
a round is running join the next round, which starts as soon as the running one ends and covers
all of them: N EndTxn in flight cost about two fsync rounds, not N (classic group commit).

Each round: on the loop, ``PartitionLog.begin_flush()`` per log (pending index entries written,
dirty segments captured); in the thread, ``ticket.sync()`` (fsync); back on the loop,
``finish_flush`` (recovery point advanced, or segments marked dirty again after an error).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minibroker.storage.log import PartitionLog

__all__ = ["GroupCommit"]


def _sync_all(tickets) -> None:
    for ticket in tickets:
        ticket.sync()


class GroupCommit:
    def __init__(self, executor=None) -> None:
        self._executor = executor
        self._waiting: dict[int, PartitionLog] = {}  # id(log) -> log, for the next round
        self._waiting_done: asyncio.Future | None = None
        self._running = False
        #: fsync rounds started (tests and the benchmark read it)
        self.rounds = 0

    async def sync(self, logs: Iterable[PartitionLog]) -> None:
        """Return when everything appended to `logs` so far is durable; raise OSError if an
        fsync failed (the data stays in the page cache and the next round tries again)."""
        added = False
        for plog in logs:
            self._waiting.setdefault(id(plog), plog)
            added = True
        if not added:
            return
        loop = asyncio.get_running_loop()
        if self._waiting_done is None:
            self._waiting_done = loop.create_future()
            self._waiting_done.add_done_callback(_retrieve)
        done = self._waiting_done
        if not self._running:
            self._start_round(loop)
        await asyncio.shield(done)

    def _start_round(self, loop: asyncio.AbstractEventLoop) -> None:
        # a log deleted while it waited has nothing left to make durable, and its pending index
        # entries must not be written: its path may name a re-created topic's files by now
        logs = [plog for plog in self._waiting.values() if not plog.closed]
        done = self._waiting_done
        assert done is not None  # created with the first waiting log
        self._waiting, self._waiting_done = {}, None
        self._running = True
        self.rounds += 1
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="group-commit")
        tickets = []
        try:
            for plog in logs:
                tickets.append(plog.begin_flush())
        except Exception as exc:  # noqa: BLE001 - an index write failed: report it to the callers
            for plog, ticket in zip(logs, tickets, strict=False):  # the tickets begun
                plog.finish_flush(ticket, ok=False)
            self._running = False
            done.set_exception(exc)
            return
        work = loop.run_in_executor(self._executor, _sync_all, tickets)
        work.add_done_callback(lambda w: self._round_done(loop, w, logs, tickets, done))

    def _round_done(self, loop, work: asyncio.Future, logs, tickets, done: asyncio.Future) -> None:
        self._running = False
        exc = work.exception()
        for plog, ticket in zip(logs, tickets, strict=True):
            plog.finish_flush(ticket, ok=exc is None)
        if not done.done():
            if exc is None:
                done.set_result(None)
            else:
                done.set_exception(exc)
        if self._waiting:
            self._start_round(loop)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None


def _retrieve(fut: asyncio.Future) -> None:
    """A round's error is reported to its callers; if they were all cancelled, nobody awaits it."""
    if not fut.cancelled():
        fut.exception()
