"""The clock tests move (common/clock.py ControlledClock) and the broker's timers on it
(broker/coordinator_runtime.py ClockTimers): due order, timers set while advancing, cancel,
periodic duties, awaiting what fired, the offset clock's loop timer, and the system clock's path
left to asyncio."""

from __future__ import annotations

import asyncio
import time

import pytest
from minibroker.broker.coordinator_runtime import REAL_TIME_BELOW_MS, CoordinatorRuntime
from minibroker.common.clock import SYSTEM_CLOCK, ControlledClock, clock_for_mode
from minibroker.coordinator.runtime import Write

START = 1_700_000_000_000


class NoDurability:
    async def sync(self, logs):
        await asyncio.sleep(0)


class Shard:
    """A toy coordinator shard whose timer operations log what they did and when."""

    def __init__(self, clock, events):
        self.clock = clock
        self.events = events

    def write(self, records):
        return []

    def replay(self, record):
        self.events.append((record, self.clock.wall_ms() - START))


def runtime_on(clock):
    return CoordinatorRuntime(NoDurability(), clock)


# --- the clock ---------------------------------------------------------------------------------------
def test_manual_clock_stands_still_and_moves_forward_only():
    clock = ControlledClock("manual", start_ms=START)
    assert clock.wall_ms() == START
    before = clock.monotonic()
    clock.move_by(1500)
    assert (clock.wall_ms(), clock.offset_ms) == (START + 1500, 1500)
    clock.move_to(START + 1000)  # in the past: nothing
    assert clock.wall_ms() == START + 1500
    clock.move_to(START + 2000)
    assert clock.offset_ms == 2000
    assert clock.monotonic() >= before  # real time: durations of waiting stay real
    with pytest.raises(ValueError, match="cannot go back"):
        clock.move_by(-1)


def test_manual_clock_starts_at_the_wall_time_and_offset_follows_it():
    now = time.time_ns() // 1_000_000
    manual = ControlledClock("manual")
    assert abs(manual.wall_ms() - now) < 5_000
    offset = ControlledClock("offset")
    offset.move_by(3_600_000)
    assert abs(offset.wall_ms() - (time.time_ns() // 1_000_000 + 3_600_000)) < 5_000
    assert clock_for_mode("system") is SYSTEM_CLOCK
    assert isinstance(clock_for_mode("manual"), ControlledClock)
    with pytest.raises(ValueError):
        ControlledClock("system")


def test_system_clock_keeps_asyncio_timers():
    assert runtime_on(SYSTEM_CLOCK).clock_timers is None


# --- one-shot timers -------------------------------------------------------------------------------
async def test_advance_fires_in_due_order_at_their_due_times():
    clock = ControlledClock("manual", start_ms=START)
    timers = runtime_on(clock).clock_timers
    seen = []
    for delay in (300, 100, 200, 100, 5000):
        timers.call_later(delay, lambda d=delay: seen.append((d, clock.wall_ms() - START)))
    assert await timers.advance(250) == 3
    assert seen == [(100, 100), (100, 100), (200, 200)]
    assert clock.wall_ms() == START + 250  # exactly where it was told, not at the last timer
    await timers.advance(50)
    assert seen[-1] == (300, 300)
    assert timers.pending() == [(START + 5000, "timer")]


async def test_a_timer_set_by_a_fired_timer_inside_the_window_fires_at_its_own_time():
    clock = ControlledClock("manual", start_ms=START)
    timers = runtime_on(clock).clock_timers
    seen = []

    def session_expired():
        seen.append(("expired", clock.wall_ms() - START))
        timers.call_later(300, lambda: seen.append(("rebalance timeout", clock.wall_ms() - START)))
        timers.call_later(5_000, lambda: seen.append(("too late", clock.wall_ms() - START)))

    timers.call_later(1000, session_expired)
    await timers.advance(2000)
    assert seen == [("expired", 1000), ("rebalance timeout", 1300)]
    await timers.advance(10_000)
    assert seen[-1] == ("too late", 6000)


async def test_cancelled_timers_do_not_fire_and_are_forgotten():
    clock = ControlledClock("manual", start_ms=START)
    timers = runtime_on(clock).clock_timers
    seen = []
    keep = timers.call_later(10, lambda: seen.append("kept"))
    handles = [timers.call_later(10 + i, lambda: seen.append("cancelled")) for i in range(200)]
    for handle in handles:  # heartbeats: cancel and set again, many times
        handle.cancel()
    assert len(timers._heap) < 100  # the cancelled ones are dropped, not kept until due
    await timers.advance(1000)
    assert seen == ["kept"]
    keep.cancel()  # after firing: nothing happens
    assert timers.pending() == []


async def test_a_timer_of_a_few_ms_fires_on_real_time_without_an_advance():
    clock = ControlledClock("manual", start_ms=START)
    timers = runtime_on(clock).clock_timers
    fired = asyncio.Event()
    timers.call_later(5, fired.set)  # the initial rebalance delay's floor (delay 0 configured)
    later = []
    timers.call_later(REAL_TIME_BELOW_MS, lambda: later.append(1))
    await asyncio.wait_for(fired.wait(), 5)
    await asyncio.sleep(0.05)
    assert later == []  # the manual clock does not get there by itself
    assert clock.wall_ms() == START
    cancelled = timers.call_later(1, lambda: later.append("cancelled"))
    cancelled.cancel()
    await timers.advance(REAL_TIME_BELOW_MS)
    await asyncio.sleep(0.02)
    assert later == [1]


async def test_advance_waits_for_what_a_fired_timer_operation_writes():
    """runtime.fire runs a timer's operation until it waits for the disk, then in a task:
    the advance answers only after that task is done."""
    clock = ControlledClock("manual", start_ms=START)
    runtime = runtime_on(clock)
    events = []
    shard = Shard(clock, events)
    timer = runtime.timer()
    timer.bind(shard)

    def expire():
        yield Write(("member gone",), durable=False)
        yield Write(("group record",))  # durable: goes on in a task

    timer.call_later(45_000, expire)
    await runtime.clock_timers.advance(45_000)
    assert events == [("member gone", 45_000), ("group record", 45_000)]


# --- periodic duties -------------------------------------------------------------------------------
async def test_duties_run_at_clock_times_and_once_more_after_the_advance():
    clock = ControlledClock("manual", start_ms=START)
    runtime = runtime_on(clock)
    runs = []

    async def abort_timed_out():
        await asyncio.sleep(0)
        runs.append(clock.wall_ms() - START)

    runtime.every(10_000, "txn-abort-timed-out", abort_timed_out)
    await asyncio.sleep(0.05)
    assert runs == []  # the manual clock stands still: nothing is due
    await runtime.clock_timers.advance(25_000)
    # due at 10 s and 20 s with no timer between: one run, at 20 s; then the pass at 25 s
    assert runs == [20_000, 25_000]
    await runtime.clock_timers.advance(3_000)
    assert runs[-1] == 28_000  # the pass runs whatever the interval
    await runtime.close()


async def test_duties_run_before_a_timer_due_after_them():
    clock = ControlledClock("manual", start_ms=START)
    runtime = runtime_on(clock)
    timers = runtime.clock_timers
    seen = []
    runtime.every(10_000, "retention", lambda: seen.append(("duty", clock.wall_ms() - START)))
    timers.call_later(35_000, lambda: seen.append(("timer", clock.wall_ms() - START)))
    await timers.advance(60_000)
    assert seen == [
        ("duty", 30_000),  # 10, 20 and 30 s coalesced: nothing else happened between them
        ("timer", 35_000),
        ("duty", 60_000),  # 40, 50, 60 s
        ("duty", 60_000),  # the pass after the advance
    ]
    await runtime.close()


async def test_a_failing_duty_or_timer_does_not_stop_the_others():
    clock = ControlledClock("manual", start_ms=START)
    runtime = runtime_on(clock)
    seen = []

    def broken():
        raise RuntimeError("boom")

    runtime.every(1000, "broken", broken)
    runtime.clock_timers.call_later(500, broken)
    runtime.clock_timers.call_later(600, lambda: seen.append("after"))
    runtime.every(1000, "fine", lambda: seen.append("duty"))
    await runtime.clock_timers.advance(1000)
    assert seen == ["after", "duty", "duty"]
    await runtime.close()


async def test_real_time_duties_run_on_the_loop_and_in_the_pass():
    clock = ControlledClock("manual", start_ms=START)
    runtime = runtime_on(clock)
    runs = []
    runtime.every(10, "log-cleaner", lambda: runs.append(clock.wall_ms() - START), real_time=True)
    for _ in range(200):
        if runs:
            break
        await asyncio.sleep(0.01)
    assert runs and runs[0] == 0  # on real time though the clock stands still
    await runtime.clock_timers.advance(5000)
    assert 5000 in runs
    await runtime.close()


async def test_advance_refuses_to_go_back():
    timers = runtime_on(ControlledClock("manual", start_ms=START)).clock_timers
    with pytest.raises(ValueError):
        await timers.advance(-1)


# --- the offset clock ------------------------------------------------------------------------------
async def test_offset_clock_fires_timers_as_real_time_passes_and_after_an_advance():
    clock = ControlledClock("offset")
    runtime = runtime_on(clock)
    timers = runtime.clock_timers
    fired = asyncio.Event()
    timers.call_later(30, fired.set)  # real time gets there by itself
    await asyncio.wait_for(fired.wait(), 5)
    jumped = []
    timers.call_later(3_600_000, lambda: jumped.append(clock.offset_ms))
    before = clock.wall_ms()
    await timers.advance(3_600_000)
    assert jumped and jumped[0] <= 3_600_000
    assert clock.offset_ms == 3_600_000  # the offset is exactly what was advanced
    assert clock.wall_ms() - before >= 3_600_000
    await runtime.close()


async def test_offset_clock_runs_duties_on_its_loop_timer():
    clock = ControlledClock("offset")
    runtime = runtime_on(clock)
    ran = asyncio.Event()
    runtime.every(20, "txn-abort-timed-out", ran.set)
    await asyncio.wait_for(ran.wait(), 5)
    await runtime.close()
    assert runtime.clock_timers.pending()  # closed: nothing runs any more
