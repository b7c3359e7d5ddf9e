"""The coordinator runtime's driver (broker/coordinator_runtime.py) over a toy shard: records
written, fsynced where the flush policy asks, replayed, answered; storage errors thrown back in;
parked responses answered when completed."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from minibroker.broker.coordinator_runtime import CoordinatorRuntime
from minibroker.coordinator.runtime import AwaitDurable, CoordinatorResult, Deferred, Write


class Log:
    def __init__(self, name, flush_messages=None):
        self.name = name
        self.config = SimpleNamespace(flush_messages=flush_messages)


class FakeDurability:
    def __init__(self, events, fail=None):
        self.events = events
        self.fail = fail

    async def sync(self, logs):
        names = [plog.name for plog in logs]
        if names:
            await asyncio.sleep(0)
            self.events.append(("sync", names))
            if self.fail is not None:
                raise self.fail


class Shard:
    def __init__(self, events, log, fail_write=None):
        self.events = events
        self.log = log
        self.fail_write = fail_write
        self.state: list[str] = []

    def write(self, records):
        if self.fail_write is not None:
            raise self.fail_write
        self.events.append(("write", list(records)))
        return [self.log]

    def replay(self, record):
        self.events.append(("replay", record))
        self.state.append(record)


def two_steps(shard):
    try:
        yield Write(("a",))
    except OSError:
        return "write failed"
    yield AwaitDurable((Log("data", flush_messages=1), Log("no-policy")))
    yield Write(("b",), durable=False)
    return f"done with {shard.state}"


@pytest.mark.parametrize("flush_messages, synced", [(1, True), (None, False)])
async def test_an_operation_is_written_synced_where_asked_replayed_and_answered(flush_messages, synced):
    events: list = []
    shard = Shard(events, Log("internal", flush_messages))
    runtime = CoordinatorRuntime(FakeDurability(events))
    assert await runtime.run(shard, two_steps(shard)) == "done with ['a', 'b']"
    expected = [("write", ["a"])]
    expected += [("sync", ["internal"])] if synced else []
    expected += [("replay", "a"), ("sync", ["data"]), ("write", ["b"]), ("replay", "b")]
    assert events == expected


@pytest.mark.parametrize("where", ["write", "sync"])
async def test_a_storage_failure_is_thrown_back_in_and_nothing_is_replayed(where):
    events: list = []
    error = OSError("disk full")
    shard = Shard(events, Log("internal", 1), fail_write=error if where == "write" else None)
    runtime = CoordinatorRuntime(FakeDurability(events, fail=error if where == "sync" else None))
    assert await runtime.run(shard, two_steps(shard)) == "write failed"
    assert shard.state == []


async def test_a_result_is_written_and_replayed_before_its_response():
    events: list = []
    shard = Shard(events, Log("internal"))
    runtime = CoordinatorRuntime(FakeDurability(events))
    assert await runtime.run(shard, CoordinatorResult("ok", ("x",))) == "ok"
    assert events == [("write", ["x"]), ("replay", "x")]
    assert await runtime.run(shard, CoordinatorResult("nothing to write")) == "nothing to write"


async def test_a_parked_response_is_answered_when_completed_and_only_once():
    runtime = CoordinatorRuntime(FakeDurability([]))
    assert await runtime.answer(Deferred.of(1)) == 1
    parked: Deferred[int] = Deferred()
    waiter = asyncio.ensure_future(runtime.answer(parked))
    await asyncio.sleep(0)
    assert not waiter.done()
    assert parked.complete(2) and not parked.complete(3)
    assert await asyncio.wait_for(waiter, 1) == 2
    gone: Deferred[int] = Deferred()
    cancelled = asyncio.ensure_future(runtime.answer(gone))
    await asyncio.sleep(0)
    cancelled.cancel()  # the connection closed first: a later answer is dropped
    await asyncio.sleep(0)
    assert gone.complete(4) and gone.result() == 4


async def test_duties_run_until_closed_and_a_failing_one_goes_on():
    runtime = CoordinatorRuntime(FakeDurability([]))
    ran = asyncio.Event()
    calls = []

    def duty():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first run fails")
        ran.set()

    runtime.every(1, "test-duty", duty)
    await asyncio.wait_for(ran.wait(), 5)
    await runtime.close()
    count = len(calls)
    await asyncio.sleep(0.01)
    assert len(calls) == count >= 2


async def test_a_timer_fires_an_operation_of_its_shard_through_the_driver():
    events: list = []
    shard = Shard(events, Log("internal", flush_messages=1))
    runtime = CoordinatorRuntime(FakeDurability(events))
    timer = runtime.timer()
    timer.bind(shard)
    done = asyncio.Event()

    def page_cache_only():  # written and answered within the timer's callback, no replay
        yield Write(("t",), durable=False, replay=False)
        events.append(("after", list(shard.state)))

    def durable():  # waits for the fsync: goes on in a task
        yield Write(("d",))
        done.set()

    timer.call_later(0, page_cache_only)
    cancelled = timer.call_later(0, durable)
    cancelled.cancel()
    timer.call_later(1, durable)
    await asyncio.wait_for(done.wait(), 5)
    assert events == [
        ("write", ["t"]),
        ("after", []),
        ("write", ["d"]),
        ("sync", ["internal"]),
        ("replay", "d"),
    ]
    await runtime.close()
