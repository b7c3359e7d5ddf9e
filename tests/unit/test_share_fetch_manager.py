"""The broker's driver of share-partitions (broker/share_partitions.py) over a real log, with a
small share-partition and share coordinator of the test's own: loading (share.auto.offset.reset,
the share coordinator's errors), acquisition from the log batches read at the next fetch offset
(whole batches answered as they are on disk), acknowledgements persisted before they are
answered (rolled back when the write fails), releases, acquisition-lock expiry on a clock the
test moves, and the long poll woken by an append or a release."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest
from minibroker.broker import share_partitions as module
from minibroker.broker.coordinator_runtime import CoordinatorRuntime
from minibroker.broker.group_configs import GroupConfigs
from minibroker.broker.share_partitions import SharePartitionManager
from minibroker.broker.waiters import DataWaiters
from minibroker.common.clock import ControlledClock
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.share_partition import AckResult
from minibroker.coordinator.share_types import (
    AckBatch,
    AcquiredRange,
    AcquireMode,
    LogBatch,
    PartitionState,
    ReadStateResult,
    RecordState,
    SharePartitionConfig,
    SharePartitionKey,
    StateBatch,
    WriteStateRequest,
)
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records.batch import iter_batches

from tests.support.storage import Clock, manager_with_topic
from tests.support.wire import build_batch

GROUP = "g"


class FakeTransition:
    def __init__(self, sp: FakeSharePartition, changes: dict[int, tuple[int, int, str]]) -> None:
        self.sp = sp
        self.changes = changes
        self.request = WriteStateRequest(
            sp.key,
            0,
            0,
            -1,
            -1,
            tuple(StateBatch(o, o, s, c) for o, (s, c, _m) in sorted(changes.items())),
        )
        self.outcome: str | None = None

    def commit(self) -> None:
        self.outcome = "commit"
        for offset, (state, count, member) in self.changes.items():
            self.sp.records[offset] = (state, count, member, None)

    def rollback(self) -> None:
        self.outcome = "rollback"


class FakeSharePartition:
    """Per-offset records: offset -> (state, delivery count, member, lock deadline)."""

    def __init__(
        self, key: SharePartitionKey, config: SharePartitionConfig, state: PartitionState, start_offset: int
    ) -> None:
        self.key = key
        self.config = config
        self._start = state.start_offset if state.start_offset >= 0 else start_offset
        self.records: dict[int, tuple[int, int, str, int | None]] = {}
        self.acquired_with: list[dict[str, Any]] = []

    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return max(self.records, default=self._start - 1)

    def next_fetch_offset(self) -> int:
        for offset in sorted(self.records):
            if self.records[offset][0] == RecordState.AVAILABLE:
                return offset
        return self.end_offset + 1

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
    ) -> list[AcquiredRange]:
        self.acquired_with.append({"batches": list(batches), "max_records": max_records})
        out: list[AcquiredRange] = []
        taken = 0
        deadline = now_ms + self.config.record_lock_duration_ms
        for b in batches:
            if taken >= max_records:
                break
            for offset in range(max(b.base_offset, self._start), b.last_offset + 1):
                state, count, _m, _d = self.records.get(offset, (RecordState.AVAILABLE, 0, "", None))
                if state != RecordState.AVAILABLE:
                    continue
                self.records[offset] = (RecordState.ACQUIRED, count + 1, member_id, deadline)
                if out and out[-1].last_offset == offset - 1 and out[-1].delivery_count == count + 1:
                    out[-1] = out[-1]._replace(last_offset=offset)
                else:
                    out.append(AcquiredRange(offset, offset, count + 1))
                taken += 1
        return out

    def acknowledge(self, member_id: str, batches: Sequence[AckBatch], now_ms: int) -> AckResult:
        changes: dict[int, tuple[int, int, str]] = {}
        for b in batches:
            for i, offset in enumerate(range(b.first_offset, b.last_offset + 1)):
                rec = self.records.get(offset)
                if rec is None or rec[0] != RecordState.ACQUIRED:
                    return AckResult(ErrorCode.invalid_record_state, "The offset cannot be acknowledged.")
                if rec[2] != member_id:
                    return AckResult(ErrorCode.invalid_record_state, "Member is not the owner of offset")
                ack = b.ack_types[0] if len(b.ack_types) == 1 else b.ack_types[i]
                state = {1: RecordState.ACKNOWLEDGED, 2: RecordState.AVAILABLE}.get(ack, RecordState.ARCHIVED)
                changes[offset] = (state, rec[1], "" if state != RecordState.ACQUIRED else member_id)
        return AckResult(transition=FakeTransition(self, changes))

    def release_member(self, member_id: str) -> FakeTransition | None:
        changes = {
            o: (RecordState.AVAILABLE, r[1], "")
            for o, r in self.records.items()
            if r[0] == RecordState.ACQUIRED and r[2] == member_id
        }
        return FakeTransition(self, changes) if changes else None

    def expire_locks(self, now_ms: int) -> FakeTransition | None:
        changes = {
            o: (RecordState.AVAILABLE, r[1], "")
            for o, r in self.records.items()
            if r[0] == RecordState.ACQUIRED and r[3] is not None and r[3] <= now_ms
        }
        return FakeTransition(self, changes) if changes else None

    def can_acquire_records(self) -> bool:
        if self.next_fetch_offset() != self.end_offset + 1:
            return True
        return self.in_flight_records() < self.config.max_record_locks

    def next_lock_deadline(self) -> int | None:
        deadlines = [r[3] for r in self.records.values() if r[0] == RecordState.ACQUIRED and r[3] is not None]
        return min(deadlines, default=None)

    def in_flight_records(self) -> int:
        return sum(1 for r in self.records.values() if r[0] in (RecordState.ACQUIRED, RecordState.AVAILABLE))


class FakeShareCoordinator:
    """read_state/write_state as operations that write nothing."""

    def __init__(self) -> None:
        self.states: dict[SharePartitionKey, PartitionState] = {}
        self.writes: list[WriteStateRequest] = []
        self.fail_with = 0

    def write(self, records: Any) -> Any:
        return []

    def replay(self, record: Any) -> None:
        pass

    def read_state(self, key: SharePartitionKey, leader_epoch: int) -> Any:
        state = self.states.get(key)
        if state is None:
            return ReadStateResult(ErrorCode.unknown_topic_or_partition)
        return ReadStateResult(0, None, state)
        yield  # an operation

    def write_state(self, request: WriteStateRequest) -> Any:
        if self.fail_with:
            return self.fail_with
        self.writes.append(request)
        return 0
        yield  # an operation


class Setup:
    def __init__(self, tmp_path: Any, group_configs: dict[str, Any] | None = None) -> None:
        now = time.time_ns() // 1_000_000
        self.clock = ControlledClock("manual", start_ms=now)
        self.logs, self.plog = manager_with_topic(tmp_path, Clock(now), 1 << 20, {})
        self.topic_id = self.logs.topics["t"].topic_id
        self.key = SharePartitionKey(GROUP, self.topic_id, 0)
        self.coordinator = FakeShareCoordinator()
        self.runtime = CoordinatorRuntime(durability=None, clock=self.clock)
        self.waiters = DataWaiters()
        self.waiters.log_opened("t", 0, self.plog)
        configs = GroupConfigs(str(tmp_path), GroupSettings())
        configs.groups[GROUP] = {name: str(value) for name, value in (group_configs or {}).items()}
        self.manager = SharePartitionManager(
            GroupSettings(),
            share_coordinator=self.coordinator,
            coordinators=self.runtime,
            logs=self.logs,
            group_configs=configs,
            data_waiters=self.waiters,
            clock=self.clock,
        )

    def produce(self, *batch_sizes: int) -> None:
        for n in batch_sizes:
            self.plog.append(build_batch([(None, b"v%d" % i, None) for i in range(n)]))

    def initialize(self, start_offset: int = -1) -> None:
        self.coordinator.states[self.key] = PartitionState(0, 0, start_offset)

    async def fetch(self, member: str = "m1", **kw: Any) -> Any:
        error, sp = await self.manager.load(self.key, "t")
        assert error == 0 and sp is not None
        args = dict(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500)
        args.update(kw)
        out = await self.manager.fetch(member, [(sp, "t")], mode=AcquireMode.BATCH_OPTIMIZED, **args)
        return out[self.key]


@pytest.fixture(autouse=True)
def fake_share_partition(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "SharePartition", FakeSharePartition)


def offsets(records: bytes) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for _pos, h in iter_batches(records)]


async def test_a_partition_never_initialized_answers_the_coordinators_error(tmp_path: Any) -> None:
    s = Setup(tmp_path)
    error, sp = await s.manager.load(s.key, "t")
    assert (error, sp) == (ErrorCode.unknown_topic_or_partition, None)
    assert s.manager.partitions == {}
    error, sp = await s.manager.load(s.key._replace(partition=5), "t")
    assert (error, sp) == (ErrorCode.unknown_topic_or_partition, None)


@pytest.mark.parametrize(
    ("reset", "start"),
    [("latest", 6), ("earliest", 0), ("by_duration:PT1H", 0), ("by_duration:PT0S", 6)],
)
async def test_auto_offset_reset_when_the_state_has_no_start(tmp_path: Any, reset: str, start: int) -> None:
    s = Setup(tmp_path, {"share.auto.offset.reset": reset})
    s.produce(3, 3)  # stamped with the machine's time, well before the clock's "now" + 0
    s.clock.move_by(60_000)
    s.initialize()
    error, sp = await s.manager.load(s.key, "t")
    assert error == 0 and sp is not None and sp.start_offset == start


async def test_a_persisted_start_offset_wins(tmp_path: Any) -> None:
    s = Setup(tmp_path, {"share.auto.offset.reset": "latest"})
    s.produce(5)
    s.initialize(start_offset=2)
    error, sp = await s.manager.load(s.key, "t")
    assert sp is not None and sp.start_offset == 2


async def test_fetch_acquires_and_answers_whole_log_batches(tmp_path: Any) -> None:
    s = Setup(tmp_path, {"share.auto.offset.reset": "earliest"})
    s.produce(3, 4, 5)  # offsets 0-2, 3-6, 7-11
    s.initialize()
    out = await s.fetch(max_records=5)
    assert out.error_code == 0
    # whole log batches until max records are reached: 0-2 and 3-6, answered as on disk
    assert out.acquired == (AcquiredRange(0, 6, 1),)
    assert offsets(out.records) == [(0, 2), (3, 6)]
    assert s.plog.read(0, 1 << 20).chunks[0].read(0, len(out.records)) == out.records
    out = await s.fetch(member="m2")
    assert out.acquired == (AcquiredRange(7, 11, 1),)
    assert offsets(out.records) == [(7, 11)]
    assert s.manager.in_flight_records() == 12
    # released records from the middle of a batch: the answer starts at the batch holding them
    await s.manager.acknowledge("m1", s.key, [AckBatch(5, 6, (2,))])
    out = await s.fetch(member="m3")
    assert out.acquired == (AcquiredRange(5, 6, 2),)
    assert offsets(out.records)[0] == (3, 6)


async def test_max_records_is_a_budget_across_partitions(tmp_path: Any) -> None:
    s = Setup(tmp_path, {"share.auto.offset.reset": "earliest"})
    s.produce(4, 4)
    s.initialize()
    out = await s.fetch(max_records=0)
    assert out.acquired == () and out.records == b""


async def test_acknowledgements_are_persisted_before_they_are_answered(tmp_path: Any) -> None:
    s = Setup(tmp_path, {"share.auto.offset.reset": "earliest"})
    s.produce(4)
    s.initialize()
    await s.fetch()
    sp = s.manager.partitions[s.key]
    code, message = await s.manager.acknowledge("m1", s.key, [AckBatch(0, 1, (1,)), AckBatch(2, 3, (2,))])
    assert (code, message) == (0, None)
    assert [b.first_offset for b in s.coordinator.writes[-1].batches] == [0, 1, 2, 3]
    assert sp.records[0][0] == RecordState.ACKNOWLEDGED and sp.records[2][0] == RecordState.AVAILABLE
    assert s.manager.counters["acknowledgements_accept"] == 2
    assert s.manager.counters["acknowledgements_release"] == 2
    # released records come again, with their delivery count up
    out = await s.fetch()
    assert out.acquired == (AcquiredRange(2, 3, 2),)
    assert s.manager.counters["redeliveries"] == 2


async def test_a_failed_write_rolls_back_and_answers_kafkas_error(tmp_path: Any) -> None:
    s = Setup(tmp_path, {"share.auto.offset.reset": "earliest"})
    s.produce(2)
    s.initialize()
    await s.fetch()
    sp = s.manager.partitions[s.key]
    s.coordinator.fail_with = ErrorCode.coordinator_load_in_progress
    code, _ = await s.manager.acknowledge("m1", s.key, [AckBatch(0, 1, (1,))])
    assert code == ErrorCode.coordinator_not_available
    assert sp.records[0][0] == RecordState.ACQUIRED  # rolled back
    s.coordinator.fail_with = ErrorCode.fenced_state_epoch
    code, _ = await s.manager.acknowledge("m1", s.key, [AckBatch(0, 1, (1,))])
    assert code == ErrorCode.not_leader_or_follower
    assert s.key not in s.manager.partitions  # fenced: loaded again at its next use


async def test_the_share_partitions_errors_are_answered_as_they_are(tmp_path: Any) -> None:
    s = Setup(tmp_path, {"share.auto.offset.reset": "earliest"})
    s.produce(2)
    s.initialize()
    await s.fetch()
    code, message = await s.manager.acknowledge("other", s.key, [AckBatch(0, 1, (1,))])
    assert (code, message) == (ErrorCode.invalid_record_state, "Member is not the owner of offset")
    assert s.coordinator.writes == []
    unknown = s.key._replace(group_id="nobody")
    code, message = await s.manager.acknowledge("m1", unknown, [AckBatch(0, 1, (1,))])
    assert code == ErrorCode.unknown_topic_or_partition


async def test_release_member_gives_records_back(tmp_path: Any) -> None:
    s = Setup(tmp_path, {"share.auto.offset.reset": "earliest"})
    s.produce(3)
    s.initialize()
    await s.fetch(member="m1")
    await s.manager.release(GROUP, "m1")
    out = await s.fetch(member="m2")
    assert out.acquired == (AcquiredRange(0, 2, 2),)


async def test_acquisition_locks_expire_on_the_brokers_clock(tmp_path: Any) -> None:
    s = Setup(tmp_path, {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": 15_000})
    s.produce(3)
    s.initialize()
    await s.fetch()
    assert s.runtime.clock_timers is not None
    await s.runtime.clock_timers.advance(14_999)
    assert s.manager.counters["lock_expiries"] == 0
    assert (await s.fetch(member="m2")).acquired == ()
    await s.runtime.clock_timers.advance(1)
    assert s.manager.counters["lock_expiries"] == 1
    assert s.coordinator.writes  # the expiry was persisted
    out = await s.fetch(member="m2")
    assert out.acquired == (AcquiredRange(0, 2, 2),)


async def test_the_long_poll_wakes_on_an_append(tmp_path: Any) -> None:
    s = Setup(tmp_path, {"share.auto.offset.reset": "earliest"})
    s.initialize()
    waiting = asyncio.create_task(s.fetch(max_wait_ms=10_000))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    s.produce(2)
    out = await asyncio.wait_for(waiting, 5)
    assert out.acquired == (AcquiredRange(0, 1, 1),)


async def test_the_long_poll_wakes_on_a_release(tmp_path: Any) -> None:
    s = Setup(tmp_path, {"share.auto.offset.reset": "earliest"})
    s.produce(2)
    s.initialize()
    await s.fetch(member="m1")
    waiting = asyncio.create_task(s.fetch(member="m2", max_wait_ms=10_000))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await s.manager.acknowledge("m1", s.key, [AckBatch(0, 1, (2,))])
    out = await asyncio.wait_for(waiting, 5)
    assert out.acquired == (AcquiredRange(0, 1, 2),)


async def test_the_long_poll_ends_after_max_wait(tmp_path: Any) -> None:
    s = Setup(tmp_path, {"share.auto.offset.reset": "earliest"})
    s.initialize()
    out = await asyncio.wait_for(s.fetch(max_wait_ms=50), 5)
    assert out.acquired == () and out.error_code == 0
