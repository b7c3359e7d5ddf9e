"""The request budget (broker/limits.py RequestBudget): bytes are charged as they arrive, not for
the size a frame announces; request slots are taken by complete frames only; a frame still
arriving waits while the budget is full, except for the one holding the overdraft; waiters are
served in arrival order."""

from __future__ import annotations

import asyncio

import pytest
from minibroker.broker.config import BrokerConfig
from minibroker.broker.limits import ConnectionSettings, RequestBudget


def test_stalled_frames_hold_only_what_they_sent():
    budget = RequestBudget(max_requests=2, max_bytes=100)
    for _ in range(500):  # 500 frames announced and barely started: 3 bytes each, no slot
        budget.charge(3)
    assert budget.requests == 0 and budget.bytes == 1500
    budget.release(1500, slot=False)
    assert budget.try_take_slot(40) and budget.try_take_slot(40)  # two complete requests
    assert not budget.try_take_slot(10)  # queued.max.requests=2
    assert budget.bytes == 90 and budget.requests == 2


async def test_slot_waiters_are_served_in_order():
    budget = RequestBudget(max_requests=1, max_bytes=-1)
    assert budget.try_take_slot(10)
    assert not budget.try_take_slot(5)
    first = asyncio.create_task(budget.take_slot())
    await asyncio.sleep(0)
    assert not budget.try_take_slot(1)  # a waiter is first in line
    second = asyncio.create_task(budget.take_slot())
    await asyncio.sleep(0)
    budget.release(10, slot=True)
    await asyncio.wait_for(first, 1)
    assert not second.done() and budget.requests == 1
    budget.release(5, slot=True)
    await asyncio.wait_for(second, 1)
    budget.release(1, slot=True)
    assert budget.requests == 0 and budget.bytes == 0


async def test_a_slot_waiter_cancelled_before_the_slot_frees_leaves_quietly():
    """Cancelled, then the slot is released before the task resumes: _wake() drops the cancelled
    future, and the task must still end with CancelledError (not ValueError) holding no slot."""
    budget = RequestBudget(max_requests=1, max_bytes=-1)
    assert budget.try_take_slot(10)
    waiter = asyncio.create_task(budget.take_slot())
    behind = asyncio.create_task(budget.take_slot())
    await asyncio.sleep(0)
    waiter.cancel()
    budget.release(10, slot=True)  # the slot goes past the cancelled waiter to the next one
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(waiter, 1)
    await asyncio.wait_for(behind, 1)
    assert budget.requests == 1 and not budget._slot_waiters
    budget.release(0, slot=True)
    assert budget.requests == 0


async def test_a_slot_granted_as_its_waiter_is_cancelled_is_given_back():
    budget = RequestBudget(max_requests=1, max_bytes=-1)
    assert budget.try_take_slot(10)
    waiter = asyncio.create_task(budget.take_slot())
    await asyncio.sleep(0)
    budget.release(10, slot=True)  # granted to the waiter...
    waiter.cancel()  # ...which is cancelled before it resumes
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(waiter, 1)
    assert budget.requests == 0 and not budget._slot_waiters
    assert budget.try_take_slot(1)


async def test_a_full_budget_holds_frames_still_arriving_but_one_may_overdraw():
    budget = RequestBudget(max_requests=10, max_bytes=100)
    budget.charge(120)  # frames still arriving: over the bound
    assert budget.full()
    a, b, c = object(), object(), object()
    await asyncio.wait_for(budget.wait_for_room(a), 1)  # nobody holds the overdraft: `a` goes on
    await asyncio.wait_for(budget.wait_for_room(a), 1)  # and keeps it until its frame is complete
    waiting_b = asyncio.create_task(budget.wait_for_room(b))
    waiting_c = asyncio.create_task(budget.wait_for_room(c))
    await asyncio.sleep(0)
    assert not waiting_b.done() and not waiting_c.done()
    budget.end_overdraft(a)  # `a`'s frame is complete: the overdraft passes to the first waiter
    await asyncio.wait_for(waiting_b, 1)
    await asyncio.sleep(0)
    assert not waiting_c.done()
    budget.end_overdraft(b)
    await asyncio.wait_for(waiting_c, 1)
    budget.end_overdraft(c)
    budget.release(120, slot=False)
    assert not budget.full()
    await asyncio.wait_for(budget.wait_for_room(b), 1)


async def test_room_frees_every_waiter_and_a_cancelled_waiter_gives_up_its_place():
    budget = RequestBudget(max_requests=10, max_bytes=100)
    budget.charge(100)
    holder, quitter, w1, w2 = object(), object(), object(), object()
    await budget.wait_for_room(holder)  # takes the overdraft
    gone = asyncio.create_task(budget.wait_for_room(quitter))
    t1 = asyncio.create_task(budget.wait_for_room(w1))
    t2 = asyncio.create_task(budget.wait_for_room(w2))
    await asyncio.sleep(0)
    gone.cancel()
    await asyncio.sleep(0)
    budget.release(60, slot=False)  # below the bound: everyone waiting may read on
    await asyncio.wait_for(asyncio.gather(t1, t2), 1)
    budget.end_overdraft(holder)
    assert budget.bytes == 40


def test_unbounded_bytes_never_fill():
    budget = RequestBudget(max_requests=1, max_bytes=-1)
    budget.charge(1 << 40)
    assert not budget.full()


def test_connection_settings_are_read_once_under_kafkas_names():
    cases = {  # property: (value set, field, value read)
        "socket.request.max.bytes": ("1000", "max_request_bytes", 1000),
        "max.connections": ("7", "max_connections", 7),
        "max.connections.per.ip": ("3", "max_connections_per_ip", 3),
        "queued.max.requests": ("5", "queued_max_requests", 5),
        "queued.max.request.bytes": ("-1", "queued_max_request_bytes", -1),
        "connections.max.idle.ms": ("1500", "idle_s", 1.5),
        "minibroker.request.receive.timeout.ms": ("2500", "receive_timeout_s", 2.5),
        "minibroker.ssl.handshake.timeout.ms": ("3500", "ssl_handshake_timeout_s", 3.5),
        "connection.failed.authentication.delay.ms": ("0", "failed_authentication_delay_s", 0.0),
    }
    assert {field for _, field, _ in cases.values()} == {*ConnectionSettings._fields}
    settings = ConnectionSettings.from_config(
        BrokerConfig({name: raw for name, (raw, _, _) in cases.items()})
    )
    assert {field: getattr(settings, field) for _, field, _ in cases.values()} == {
        field: read for _, field, read in cases.values()
    }
    # Kafka's defaults where nothing is set
    defaults = ConnectionSettings.from_config(BrokerConfig())
    assert (defaults.max_request_bytes, defaults.queued_max_requests, defaults.idle_s) == (
        104857600,
        500,
        600.0,
    )
    with pytest.raises(AttributeError):
        defaults.max_connections = 1  # type: ignore[misc]
