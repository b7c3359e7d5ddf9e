"""How JoinGroup and SyncGroup wait for their answer.

The group coordinator answers through a callback, now or later: a JoinGroup is parked until the
rebalance completes, a follower's SyncGroup until the leader's assignment is stored. The handler
awaits that answer here, the one place a coordinator callback becomes an awaitable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

__all__ = ["answer_of"]

R = TypeVar("R")
T = TypeVar("T")


async def answer_of(operation: Callable[[R, Callable[[T], None]], None], request: R) -> T:
    """Run `operation(request, answer)` and wait until the coordinator calls `answer`. If the
    handler goes first (its connection closed, the broker stopping), a later answer is dropped."""
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()

    def answer(result: T) -> None:
        if not future.done():
            future.set_result(result)

    operation(request, answer)
    return await future
