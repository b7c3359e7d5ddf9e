"""broker/durability.py's fsync rounds (group commit) over real partition logs, and the
transaction coordinator on top of it: fsyncs run off the event loop, concurrent callers share
fsync rounds, the recovery point moves only once the data is on disk, an fsync error reaches the
callers, and a crash while a transaction's markers are being fsynced still ends in a completed
transaction. With the service as the logs' flusher, an append under a flush policy and a roll
never fsync on the caller's thread."""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from minibroker.broker.coordinator_runtime import CoordinatorRuntime
from minibroker.broker.durability import Durability
from minibroker.common.clock import SYSTEM_CLOCK
from minibroker.common.faults import Faults
from minibroker.coordinator.transactions import TransactionCoordinator, TransactionSettings
from minibroker.coordinator.txn_log import LogTxnStore
from minibroker.coordinator.txn_state import TxnState
from minibroker.protocol.records import CONTROL_COMMIT, build_batch, iter_batches, parse_control_record
from minibroker.storage.log_manager import LogManager
from minibroker.storage.segment import LogSegment

from tests.support.storage import crash

pytestmark = pytest.mark.timeout(20)


class GatedExecutor(ThreadPoolExecutor):
    """A one-thread executor whose jobs from number `hold_from` on (1-based) wait for `gate`:
    an fsync round held open."""

    def __init__(self, hold_from=1):
        super().__init__(max_workers=1)
        self.gate = threading.Event()
        self.hold_from = hold_from
        self.started = 0

    def submit(self, fn, *args, **kwargs):
        def gated():
            self.started += 1
            if self.started >= self.hold_from and not self.gate.wait(10):
                raise TimeoutError("gate never opened")
            return fn(*args, **kwargs)

        return super().submit(gated)


def open_logs(path, **config) -> LogManager:
    m = LogManager(str(path), config, clock=SYSTEM_CLOCK)
    m.open()
    return m


async def until(predicate, timeout=5.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.001)


def test_concurrent_callers_share_one_round_and_loop_keeps_running(tmp_path):
    logs = open_logs(tmp_path)
    logs.create_topic("t", 3, {})
    parts = [logs.get_log("t", p) for p in range(3)]
    executor = GatedExecutor()
    gc = Durability(executor)

    async def scenario():
        parts[0].append(build_batch([(b"k", b"v")]))
        first = asyncio.ensure_future(gc.sync([parts[0]]))
        await until(lambda: executor.started == 1)
        # the round is blocked in its thread; the loop still runs and more callers arrive
        for plog in parts:
            plog.append(build_batch([(b"k", b"w")]))
        later = [asyncio.ensure_future(gc.sync([plog])) for plog in parts * 4]
        await asyncio.sleep(0.01)
        assert not first.done() and not any(f.done() for f in later)
        assert all(plog.recovery_point == 0 for plog in parts)  # nothing claimed durable yet
        executor.gate.set()
        await asyncio.gather(first, *later)

    asyncio.run(scenario())
    assert gc.rounds == 2  # 13 callers, two fsync rounds
    assert [plog.recovery_point for plog in parts] == [2, 1, 1]
    assert [plog.log_end_offset for plog in parts] == [2, 1, 1]
    gc.close()
    logs.close()


def test_a_log_deleted_while_it_waited_for_a_round_is_left_out(tmp_path):
    """DeleteTopics and CreateTopics of the same name while a log waits for the next round: its
    pending index entries must not be written into the new topic's files, and the other callers
    of the round succeed."""
    logs = open_logs(tmp_path)
    logs.create_topic("t", 1, {})
    logs.create_topic("u", 1, {})
    old, other = logs.get_log("t", 0), logs.get_log("u", 0)
    executor = GatedExecutor()
    gc = Durability(executor)

    async def scenario():
        other.append(build_batch([(b"k", b"v")]))
        first = asyncio.ensure_future(gc.sync([other]))  # a round running: the next ones wait
        await until(lambda: executor.started == 1)
        for _ in range(100):  # enough batches for offset-index entries waiting to be written
            old.append(build_batch([(b"k", b"v" * 100)]))
            other.append(build_batch([(b"k", b"v")]))
        waiting = asyncio.ensure_future(gc.sync([old, other]))
        logs.delete_topic("t")
        logs.create_topic("t", 1, {})
        executor.gate.set()
        await asyncio.gather(first, waiting)

    asyncio.run(scenario())
    new = logs.get_log("t", 0)
    assert new is not old and new.log_end_offset == 0
    assert os.path.getsize(new.segments[0].index.path) == 0, "the deleted log's index entries landed"
    assert other.recovery_point == other.log_end_offset == 101
    gc.close()
    logs.close()


def test_fsync_error_reaches_callers_and_next_round_retries(tmp_path, monkeypatch):
    logs = open_logs(tmp_path)
    logs.create_topic("t", 1, {})
    plog = logs.get_log("t", 0)
    plog.append(build_batch([(b"k", b"v")]))
    gc = Durability()
    planned = _fail_first_sync(monkeypatch)

    async def scenario():
        with pytest.raises(OSError):
            await gc.sync([plog])
        assert plog.recovery_point == 0
        await gc.sync([plog])  # the segment was marked dirty again: fsynced now

    asyncio.run(scenario())
    assert plog.recovery_point == 1 and gc.rounds == 2
    # the retry covered the index files again, not just the .log
    assert planned[1][1] == planned[0][1] and len(planned[0][1]) >= 2
    gc.close()
    logs.close()


# --------------------------------------------------------------------------- coordinator


class Ids:
    def __init__(self):
        self.next = 1000

    def allocate(self):
        self.next += 1
        return self.next - 1


CONFIG = {
    "transaction.max.timeout.ms": 900000,
    "transactional.id.expiration.ms": 604800000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10000,
    "transaction.remove.expired.transaction.cleanup.interval.ms": 3600000,
    "transaction.state.log.num.partitions": 1,
    "offsets.topic.num.partitions": 1,
    "minibroker.test.fault": "",
}


class NoGroups:
    """`TxnOffsetsParticipant` of a broker whose transactions never touch offsets."""

    def partition_for(self, group_id):
        return 0

    def complete_txn(self, producer_id, commit, partition=None):
        pass


def coordinator(logs: LogManager) -> TransactionCoordinator:
    return TransactionCoordinator(
        TransactionSettings.from_config(CONFIG),
        store=LogTxnStore(logs, 1, clock=SYSTEM_CLOCK),
        logs=logs,
        groups=NoGroups(),
        producer_ids=Ids(),
        clock=SYSTEM_CLOCK,
        faults=Faults(),
    )


def markers(plog) -> list[tuple[int, bool]]:
    """(producer id, commit) of every control batch in the log."""
    out = []
    result = plog.read(0, 1 << 20, 0)
    data = b"".join(c.read(c.position, c.length) for c in result.chunks)
    mv = memoryview(data)
    for pos, header in iter_batches(mv):
        if header.is_control:
            control = parse_control_record(mv[pos : pos + header.size])
            out.append((header.producer_id, control.type == CONTROL_COMMIT))
    return out


def test_unchanged_index_files_are_not_fsynced_again(tmp_path):
    logs = open_logs(tmp_path)
    logs.create_topic("t", 1, {})
    plog = logs.get_log("t", 0)
    plog.append(build_batch([(b"k", b"v")]))
    first = plog.begin_flush()
    plog.finish_flush(first, ok=True)
    plog.append(build_batch([(b"k", b"w")]))  # far below log.index.interval.bytes
    second = plog.begin_flush()
    plog.finish_flush(second, ok=True)
    assert len(first.plans[0][1]) >= 2 and second.plans[0][1] == ()
    logs.close()


def test_concurrent_end_txn_share_fsync_rounds(tmp_path):
    logs = open_logs(tmp_path)
    logs.create_topic("t", 4, {})
    gc = Durability()
    tc = coordinator(logs)
    n = 24

    async def scenario():
        await CoordinatorRuntime(gc).run(tc, tc.load())
        ids = {}
        for i in range(n):
            err, pid, epoch = await CoordinatorRuntime(gc).run(tc, tc.init_producer_id(f"tx-{i}", 60000))
            assert err == 0
            ids[f"tx-{i}"] = (pid, epoch)
            assert (
                await CoordinatorRuntime(gc).run(tc, tc.add_partitions(f"tx-{i}", pid, epoch, [("t", i % 4)]))
                == 0
            )
        rounds_before = gc.rounds
        results = await asyncio.gather(
            *(
                CoordinatorRuntime(gc).run(tc, tc.end_txn(t, pid, epoch, True))
                for t, (pid, epoch) in ids.items()
            )
        )
        assert [r[0] for r in results] == [0] * n
        return gc.rounds - rounds_before

    rounds = asyncio.run(scenario())
    # each EndTxn waits on two fsync barriers (PrepareCommit, markers): 48 without sharing
    assert rounds <= 8, rounds
    assert all(m.state == TxnState.COMPLETE_COMMIT for m in tc.txns.values())
    assert sum(len(markers(logs.get_log("t", p))) for p in range(4)) == n
    gc.close()
    logs.close()


def test_crash_while_markers_are_fsynced_recovers_to_complete(tmp_path):
    # flush by every message: the transaction path waits for the disk at each barrier (with
    # Kafka's default, log.flush.interval.messages unset, it never does: broker/durable_ops.py)
    logs = open_logs(tmp_path, **{"log.flush.interval.messages": 1})
    logs.create_topic("t", 2, {})
    # fsync rounds: 1 InitProducerId, 2 AddPartitions, 3 PrepareCommit, 4 the markers (held)
    executor = GatedExecutor(hold_from=4)
    gc = Durability(executor)
    tc = coordinator(logs)

    async def commit_and_crash():
        await CoordinatorRuntime(gc).run(tc, tc.load())
        err, pid, epoch = await CoordinatorRuntime(gc).run(tc, tc.init_producer_id("tx", 60000))
        assert (
            await CoordinatorRuntime(gc).run(tc, tc.add_partitions("tx", pid, epoch, [("t", 0), ("t", 1)]))
            == 0
        )
        task = asyncio.ensure_future(CoordinatorRuntime(gc).run(tc, tc.end_txn("tx", pid, epoch, True)))
        await until(lambda: executor.started == 4)
        assert tc.txns["tx"].state == TxnState.PREPARE_COMMIT
        assert len(markers(logs.get_log("t", 0))) == 1 and len(markers(logs.get_log("t", 1))) == 1
        # the process dies while the markers' fsync is in flight
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return pid

    loop = asyncio.new_event_loop()
    pid = loop.run_until_complete(commit_and_crash())
    executor.gate.set()
    gc.close()
    loop.close()
    crash(logs)

    logs2 = open_logs(tmp_path)
    gc2 = Durability()
    tc2 = coordinator(logs2)
    asyncio.run(CoordinatorRuntime(gc2).run(tc2, tc2.load()))
    assert tc2.txns["tx"].state == TxnState.COMPLETE_COMMIT
    for p in range(2):
        assert (pid, True) in markers(logs2.get_log("t", p))
        assert logs2.get_log("t", p).last_stable_offset == logs2.get_log("t", p).log_end_offset
    gc2.close()
    logs2.close()


@pytest.mark.parametrize("flush_messages,waits", [(None, False), (1, True)])
def test_transaction_barriers_follow_the_log_flush_policy(tmp_path, flush_messages, waits):
    """Kafka's default never fsyncs on commit; log.flush.interval.messages=1 waits at every
    barrier (InitProducerId, AddPartitions, prepare, markers) before answering."""
    config = {} if flush_messages is None else {"log.flush.interval.messages": flush_messages}
    logs = open_logs(tmp_path, **config)
    logs.create_topic("t", 1, {})
    gc = Durability()
    tc = coordinator(logs)

    async def commit():
        await CoordinatorRuntime(gc).run(tc, tc.load())
        err, pid, epoch = await CoordinatorRuntime(gc).run(tc, tc.init_producer_id("tx", 60000))
        assert await CoordinatorRuntime(gc).run(tc, tc.add_partitions("tx", pid, epoch, [("t", 0)])) == 0
        assert (await CoordinatorRuntime(gc).run(tc, tc.end_txn("tx", pid, epoch, True)))[0] == 0

    asyncio.run(commit())
    assert tc.txns["tx"].state == TxnState.COMPLETE_COMMIT
    assert (gc.rounds >= 4) if waits else (gc.rounds == 0), gc.rounds
    gc.close()
    logs.close()


# --------------------------------------------------------------------------- the service as flusher


class FsyncThreads:
    """``os.fsync`` wrapped: the name of the thread of every call."""

    def __init__(self, monkeypatch):
        self.names: list[str] = []
        real = os.fsync

        def fsync(fd):
            self.names.append(threading.current_thread().name)
            real(fd)

        monkeypatch.setattr(os, "fsync", fsync)


def test_a_due_append_and_a_roll_fsync_off_the_callers_thread(tmp_path, monkeypatch):
    """log.flush.interval.messages=1 and small segments: the append marks the log due and
    fsyncs nothing; the round does it in the service's thread; a roll's fsync and snapshot and
    the recovery-point file go to its io thread."""
    durability, logs, plog = _one_log_with_durability(
        tmp_path, **{"log.flush.interval.messages": 1, "log.segment.bytes": 400}
    )
    fsyncs = FsyncThreads(monkeypatch)

    async def scenario():
        for i in range(12):
            plog.append(build_batch([(b"k", b"v" * 100)]))
            assert plog.flush_due and plog.recovery_point <= i
            assert fsyncs.names.count("MainThread") == 0
            await durability.sync([plog])
            assert not plog.flush_due and plog.recovery_point == i + 1
        rounds = durability.rounds
        await durability.checkpoint(logs)
        return rounds

    rounds = asyncio.run(scenario())
    assert len(plog.segments) > 2, "segments rolled"
    assert "MainThread" not in fsyncs.names, fsyncs.names
    assert {name.rsplit("_", 1)[0] for name in fsyncs.names} == {"durability-sync", "durability-io"}
    assert rounds == 12  # one per append: each one's round had ended before the next append
    snapshots = [n for n in os.listdir(plog.dir) if n.endswith(".snapshot")]
    assert snapshots, "the rolled segments' producer snapshots were written"
    durability.close()
    logs.close()
    assert f"t 0 {plog.log_end_offset}" in (tmp_path / "recovery-point-offset-checkpoint").read_text()


def test_a_due_log_nobody_awaits_is_fsynced_and_settle_waits_for_it(tmp_path, monkeypatch):
    """A background append (an offset expiry, a CompleteCommit) reaching the flush policy: its
    round starts by itself; an answer that saw the log come due waits in settle()."""
    durability, logs, plog = _one_log_with_durability(tmp_path, **{"log.flush.interval.messages": 2})

    async def scenario():
        marks = durability.marks
        plog.append(build_batch([(b"k", b"v")]))
        assert durability.marks == marks and not plog.flush_due  # 1 of 2 messages: not due
        plog.append(build_batch([(b"k", b"v")]))
        assert durability.marks == marks + 1 and plog.flush_due
        await durability.settle()
        assert plog.recovery_point == 2
        plog.append(build_batch([(b"k", b"v"), (b"k", b"w")]))
        await until(lambda: plog.recovery_point == 4)  # nobody awaited: the kicked round did it

    asyncio.run(scenario())
    assert durability.rounds == 2
    durability.close()
    logs.close()


def test_a_failed_round_leaves_the_log_due_for_the_next(tmp_path, monkeypatch):
    durability, logs, plog = _one_log_with_durability(tmp_path, **{"log.flush.interval.messages": 1})
    _fail_first_sync(monkeypatch)

    async def scenario():
        plog.append(build_batch([(b"k", b"v")]))
        with pytest.raises(OSError):
            await durability.sync([plog])
        assert plog.recovery_point == 0
        await durability.settle()  # the failed log is still waiting: fsynced now
        assert plog.recovery_point == 1

    asyncio.run(scenario())
    durability.close()
    logs.close()


def _one_log_with_durability(path, **config):
    """A LogManager on `path` whose flusher is a real Durability service, with one topic "t" of
    one partition: (durability, logs, the partition's log)."""
    durability = Durability()
    logs = LogManager(str(path), config, clock=SYSTEM_CLOCK, flusher=durability)
    logs.open()
    logs.create_topic("t", 1, {})
    return durability, logs, logs.get_log("t", 0)


def _fail_first_sync(monkeypatch) -> list:
    """The first segment fsync plan run fails with EIO, the others run; returns the plans run."""
    real_sync = LogSegment.run_sync_plan
    failures = iter([OSError(5, "Input/output error")])
    planned: list = []

    def flaky_sync(plan):
        planned.append(plan)
        exc = next(failures, None)
        if exc is not None:
            raise exc
        real_sync(plan)

    monkeypatch.setattr(LogSegment, "run_sync_plan", staticmethod(flaky_sync))
    return planned
