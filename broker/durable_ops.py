"""Runs the transaction coordinator's sans-I/O operations on the event loop.

An operation (coordinator/transactions.py) is a generator: it appends to logs itself (page
cache, on the loop) and yields `MakeDurable(logs)` wherever it must not go on before those logs
are fsynced. Here each request is awaited through the group commit (broker/group_commit.py: the
fsync runs in a worker thread, shared with concurrent transactions); an fsync failure is thrown
back into the operation at its yield, where the coordinator handles it.

Which logs are waited for follows Kafka's flush policy, as for any append: only a log whose
`flush.messages` is set (from `log.flush.interval.messages`) promises its appends to the disk.
Kafka's default (Long.MAX_VALUE: never by count) leaves transaction state and markers in the page
cache, which a killed broker process does not lose; Kafka itself does not fsync on commit either
(its durability comes from replication). `log.flush.interval.messages=1` makes every EndTxn wait
for the disk at each barrier (prepare, markers) before it answers.
"""

from __future__ import annotations

from typing import TypeVar

from minibroker.broker.group_commit import GroupCommit
from minibroker.coordinator.collaborators import DurableOp

__all__ = ["run_durably"]

T = TypeVar("T")


async def run_durably(op: DurableOp[T], durability: GroupCommit) -> T:
    """Drive `op` to its result, waiting for the disk wherever it asks to."""
    try:
        request = next(op)
        while True:
            try:
                await durability.sync(plog for plog in request.logs if plog.config.flush_messages is not None)
            except Exception as exc:  # noqa: BLE001 - the operation decides what a failure means
                request = op.throw(exc)
            else:
                request = op.send(None)
    except StopIteration as done:
        return done.value
    except BaseException:
        op.close()  # cancelled: run the operation's cleanup (its `finally` blocks) now
        raise
