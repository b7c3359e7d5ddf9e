"""Runs the transaction coordinator's sans-I/O operations on the event loop.

An operation (coordinator/transactions.py) is a generator: it appends to logs itself (page
cache, on the loop) and yields `MakeDurable(logs)` wherever it must not go on before those logs
are fsynced. Here each request is awaited through the group commit (broker/group_commit.py: the
fsync runs in a worker thread, shared with concurrent transactions); an fsync failure is thrown
back into the operation at its yield, where the coordinator handles it.
"""

from __future__ import annotations

from typing import TypeVar

from broker.group_commit import GroupCommit
from coordinator.collaborators import DurableOp

__all__ = ["run_durably"]

T = TypeVar("T")


async def run_durably(op: DurableOp[T], durability: GroupCommit) -> T:
    """Drive `op` to its result, waiting for the disk wherever it asks to."""
    try:
        request = next(op)
        while True:
            try:
                await durability.sync(request.logs)
            except Exception as exc:  # noqa: BLE001 - the operation decides what a failure means
                request = op.throw(exc)
            else:
                request = op.send(None)
    except StopIteration as done:
        return done.value
    except BaseException:
        op.close()  # cancelled: run the operation's cleanup (its `finally` blocks) now
        raise
