"""The broker's one durability service: every fsync of a running broker happens here, off the
event loop (Kafka's log flusher and its group commit rolled into one).

Storage never fsyncs on its caller's thread (``close()`` aside). It plans on the loop and hands
the disk work here (``storage.log.Flusher``, injected into ``LogManager``):

* ``flush_due(plog)``: a log's flush policy (``flush.messages``/``flush.ms``) is due. The log
  joins the next *round*; whoever must not answer before the disk awaits it.
* ``sync(logs)``: return once everything appended to ``logs`` before the call is on disk. A
  round fsyncs in one dedicated thread (``durability-sync``), so the loop keeps serving; callers
  that arrive while a round runs join the next one, which starts as soon as the running one ends
  and covers all of them: N transactions or produces in flight cost about two rounds, not N
  fsyncs (group commit). Each round: on the loop ``PartitionLog.begin_flush()`` per log (pending
  index entries written, dirty segments captured); in the thread ``ticket.sync()`` (fsync); on
  the loop ``finish_flush`` (recovery point advanced, or segments dirty again after an error).
* ``submit(fn, *args)``: background disk work nobody answers on (a rolled segment's fsync and
  producer snapshot, the recovery-point and snapshot files of the periodic checkpoint), in a
  second thread (``durability-io``), in submission order.
* ``write(fn, *args)`` / ``write_file(path, data)``: a file a request changed (ACLs, SCRAM
  credentials, dynamic broker configs, the log-start-offset checkpoint of DeleteRecords and
  retention), written in that thread, in order.

The answer barrier: ``marks`` counts every ``flush_due`` and ``write``; a connection that
sees it move while it served a request awaits ``settle(marks)`` before it answers
(broker/connection.py). So no answer, whichever handler or coordinator wrote, leaves before the
disk has what it promised: a Produce under a flush policy (which also awaits ``sync`` itself, to
answer an fsync failure with KAFKA_STORAGE_ERROR), an offset commit or a group's record, an ACL.

The coordinator runtime (broker/coordinator_runtime.py) awaits ``sync`` for the coordinators'
writes and markers, for the logs whose flush policy is set (Kafka's default, none, leaves
them in the page cache: a killed process loses nothing, and Kafka does not fsync on commit
either). ``checkpoint`` is the periodic recovery-point checkpoint (storage/recovery_checkpoint.py)
and ``flush_logs`` the periodic ``log.flush.interval.ms`` flush.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import structlog
from minibroker.storage.durable_files import atomic_write
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log import run_now
from minibroker.storage.recovery_checkpoint import plan_snapshots, write_snapshots

if TYPE_CHECKING:
    from minibroker.storage.log import FlushTicket, PartitionLog
    from minibroker.storage.log_manager import LogManager

__all__ = ["Durability", "registry_written"]

log = structlog.get_logger(__name__)

T = TypeVar("T")


def _sync_all(tickets: list[FlushTicket]) -> None:
    for ticket in tickets:
        ticket.sync()


class Durability:
    def __init__(self, sync_thread: Executor | None = None) -> None:
        """``sync_thread``: where rounds fsync (tests hold one); by default a thread of its own.
        Threads start on first use (under Kafka's default flush policy rounds may never run)."""
        self._sync_thread = sync_thread
        self._io_thread: ThreadPoolExecutor | None = None
        self._closed = False
        self._waiting: dict[int, PartitionLog] = {}  # id(log) -> log, for the next round
        self._waiting_done: asyncio.Future[None] | None = None
        self._running: asyncio.Future[None] | None = None  # the round in flight
        self._kick_scheduled = False
        # (mark, write) of the durable file writes not known to have succeeded
        self._writes: list[tuple[int, Future[Any]]] = []
        #: fsync rounds started (tests and the benchmark read it)
        self.rounds = 0
        #: moves with every flush_due and write_file: a request that saw it move awaits settle()
        self.marks = 0

    # ------------------------------------------------------------------ storage's side (Flusher)
    def submit(self, fn: Callable[..., T], /, *args: Any) -> Future[T]:
        if self._closed:  # a stop in progress: the caller (close) runs it itself
            return run_now(fn, *args)
        if self._io_thread is None:
            self._io_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="durability-io")
        return self._io_thread.submit(fn, *args)

    def write(self, fn: Callable[..., T], /, *args: Any) -> Future[T]:
        """Run ``fn(*args)``, a durable write, in the io thread after the work submitted before
        it; the answer of the request that asked waits for it (``settle``), and a failure closes
        that connection, as an error escaping the handler did when the write ran on the loop."""
        self._writes = [
            entry for entry in self._writes[-100:] if not entry[1].done() or entry[1].exception() is not None
        ]
        self.marks += 1
        written = self.submit(fn, *args)
        self._writes.append((self.marks, written))
        return written

    def write_file(self, path: str, data: bytes) -> None:
        """Replace ``path`` with ``data`` (``atomic_write``: fsynced) by ``write`` (the stores'
        way to write a file)."""
        self.write(atomic_write, path, data)

    def flush_due(self, plog: PartitionLog) -> None:
        self._waiting.setdefault(id(plog), plog)
        self.marks += 1
        if not self._kick_scheduled:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (a tool): the next sync covers it
                return
            self._kick_scheduled = True
            loop.call_soon(self._kick, loop)

    def _kick(self, loop: asyncio.AbstractEventLoop) -> None:
        """Due logs nobody awaited (a background write): start their round anyway."""
        self._kick_scheduled = False
        if self._waiting and self._running is None and not self._closed:
            self._start_round(loop)

    # ------------------------------------------------------------------ waiting for the disk
    async def sync(self, logs: Iterable[PartitionLog]) -> None:
        """Return when everything appended to ``logs`` so far is durable; raise OSError if an
        fsync failed (the data stays in the page cache and the next round tries again)."""
        added = False
        for plog in logs:
            self._waiting.setdefault(id(plog), plog)
            added = True
        if added:
            await self._next_round()

    async def settle(self, since: int = 0) -> None:
        """Return when every log marked due so far and every file written after mark ``since``
        (``marks`` when the request began) is on disk; raise OSError if an fsync or one of
        those writes failed."""
        writes = [written for mark, written in self._writes if mark > since]
        if writes:
            await asyncio.wait([asyncio.wrap_future(w) for w in writes])
        if self._waiting:
            await self._next_round()
        elif self._running is not None:
            await asyncio.shield(self._running)
        for written in writes:
            written.result()  # raises the write's error

    async def _next_round(self) -> None:
        loop = asyncio.get_running_loop()
        if self._waiting_done is None:
            self._waiting_done = loop.create_future()
            self._waiting_done.add_done_callback(_retrieve)
        done = self._waiting_done
        if self._running is None:
            self._start_round(loop)
        await asyncio.shield(done)

    def _start_round(self, loop: asyncio.AbstractEventLoop) -> None:
        # a log deleted while it waited has nothing left to make durable, and its pending index
        # entries must not be written: its path may name a re-created topic's files by now
        logs = [plog for plog in self._waiting.values() if not plog.closed]
        done = self._waiting_done
        if done is None:  # a kicked round: nobody awaits it yet
            done = loop.create_future()
            done.add_done_callback(_retrieve)
        self._waiting, self._waiting_done = {}, None
        self._running = done
        self.rounds += 1
        if self._sync_thread is None:
            self._sync_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="durability-sync")
        tickets = []
        try:
            for plog in logs:
                tickets.append(plog.begin_flush())
        except Exception as exc:  # noqa: BLE001 - an index write failed: report it to the callers
            for plog, ticket in zip(logs, tickets, strict=False):  # the tickets begun
                plog.finish_flush(ticket, ok=False)
            self._running = None
            done.set_exception(exc)
            return
        work = loop.run_in_executor(self._sync_thread, _sync_all, tickets)
        work.add_done_callback(lambda w: self._round_done(loop, w, logs, tickets, done))

    def _round_done(
        self,
        loop: asyncio.AbstractEventLoop,
        work: asyncio.Future[None],
        logs: list[PartitionLog],
        tickets: list[FlushTicket],
        done: asyncio.Future[None],
    ) -> None:
        self._running = None
        exc = work.exception()
        for plog, ticket in zip(logs, tickets, strict=True):
            plog.finish_flush(ticket, ok=exc is None)
        more = bool(self._waiting)  # logs marked or awaited while this round ran
        if exc is not None:
            log.warning("an fsync round failed; its logs are tried again in the next one", error=str(exc))
            for plog in logs:  # still due: the next sync or settle tries them again
                self._waiting.setdefault(id(plog), plog)
        if not done.done():
            if exc is None:
                done.set_result(None)
            else:
                done.set_exception(exc)
        if more and not self._closed:
            self._start_round(loop)

    # ------------------------------------------------------------------ the broker's duties
    async def flush_logs(self, logs: LogManager) -> None:
        """``log.flush.interval.ms``: fsync every log appended to since its last fsync, then
        checkpoint the recovery points."""
        await self.sync(plog for plog in logs.all_logs() if plog.unflushed)
        await self._checkpoint_file(logs)

    async def checkpoint(self, logs: LogManager) -> None:
        """The periodic recovery-point checkpoint (storage/recovery_checkpoint.py): snapshots
        planned on the loop, their logs fsynced by a round, the snapshots written in the io
        thread, then the checkpoint file."""
        pending = plan_snapshots(logs.all_logs())
        if pending:
            # everything appended before the plan reaches the disk: recovery points >= the offsets
            await self.sync(item.log for item in pending)
            written = await asyncio.wrap_future(self.submit(write_snapshots, pending))
            for item in written:
                item.log.snapshot_written(item.offset)
        await self._checkpoint_file(logs)

    async def _checkpoint_file(self, logs: LogManager) -> None:
        written = logs.checkpoint_recovery_points()  # submitted to the io thread, if one moved
        if written is not None:
            await asyncio.wrap_future(written)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Wait for the work in flight and stop the threads (before ``LogManager.close``, which
        fsyncs the rest itself); later submissions run on the caller's thread."""
        self._closed = True
        for pool in (self._sync_thread, self._io_thread):
            if pool is not None:
                pool.shutdown(wait=True)


async def registry_written(logs: LogManager, name: str, partitions_before: int) -> KafkaStorageError | None:
    """CreateTopics (``partitions_before`` 0) and CreatePartitions: await the topic's registry
    file (written in the io thread); if it failed, the creation is undone and its error
    returned, for the answer (a failed write also closes the connection: ``settle``)."""
    written = logs.registry_writes.get(name)
    if written is None:
        return None
    try:
        await asyncio.wrap_future(written)
    except OSError as exc:
        return logs.undo_creation(name, partitions_before, exc)
    return None


def _retrieve(fut: asyncio.Future[None]) -> None:
    """A round's error is reported to its callers; if they were all cancelled, nobody awaits it."""
    if not fut.cancelled():
        fut.exception()
