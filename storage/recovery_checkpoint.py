"""The periodic recovery-point checkpoint (Kafka's ``log.flush.offset.checkpoint.interval.ms``).

Kafka writes every log's recovery point to ``recovery-point-offset-checkpoint`` on this period
and an unclean start recovers only from there. Kafka's recovery point moves only when a log is
flushed, which with Kafka's default flush policy means at segment roll: a SIGKILL then costs a
recovery of the whole active segment (up to 1 GiB). minibroker makes each checkpoint worth its
name instead, for every log appended to since the last one:

1. on the event loop, ``plan_snapshots``: the producer state encoded as of the log end offset X
   (``PartitionLog.checkpoint_snapshot``);
2. everything below X is fsynced off the loop (a round of the broker's ``Durability``), which
   moves the recovery point to X or beyond;
3. ``write_snapshots`` (the durability service's io thread) writes ``<X>.snapshot``; then the
   checkpoint file (the same thread).

So an unclean start checks only what was appended in the last interval and replays producer
state from a snapshot at or below the recovery point. The extra fsync covers one interval of
appends (the kernel has usually written most of them back already) and never blocks the loop.
A crash between the steps leaves an older snapshot or recovery point, which the loader handles:
snapshots above the checkpointed recovery point are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import structlog
from minibroker.storage.log import PartitionLog

__all__ = ["PendingSnapshot", "plan_snapshots", "write_snapshots"]

log = structlog.get_logger(__name__)


class PendingSnapshot(NamedTuple):
    log: PartitionLog
    offset: int  # the log end offset it was taken at
    data: bytes  # the snapshot file's content


def plan_snapshots(logs: Iterable[PartitionLog]) -> list[PendingSnapshot]:
    """On the event loop: the snapshots of the logs appended to since their last one."""
    out = []
    for plog in logs:
        taken = plog.checkpoint_snapshot()
        if taken is not None:
            out.append(PendingSnapshot(plog, *taken))
    return out


def write_snapshots(pending: Iterable[PendingSnapshot]) -> list[PendingSnapshot]:
    """Write the planned snapshots once their logs are durable up to them (a worker thread).
    Returns those written; a log closed or deleted meanwhile gets none (the lock it shares with
    ``PartitionLog.close`` keeps a snapshot out of a directory a new topic may have taken). A
    failure costs a longer replay after a crash, nothing else: it is logged and the other
    snapshots are still written."""
    written = []
    for item in pending:
        try:
            if item.log.write_checkpoint_snapshot(item.offset, item.data):
                written.append(item)
        except OSError as exc:
            log.warning(
                "could not write a producer-state snapshot; an unclean start will replay more",
                topic=item.log.topic,
                partition=item.log.partition,
                offset=item.offset,
                error=str(exc),
            )
    return written
