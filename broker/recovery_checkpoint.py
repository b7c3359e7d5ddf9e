"""The broker's side of the periodic recovery-point checkpoint (storage/recovery_checkpoint.py):
snapshots planned on the loop, the logs made durable by the shared group commit, the snapshots
written in a worker thread, then the checkpoint file."""

from __future__ import annotations

import asyncio

from minibroker.broker.group_commit import GroupCommit
from minibroker.storage.log_manager import LogManager
from minibroker.storage.recovery_checkpoint import plan_snapshots, write_snapshots

__all__ = ["checkpoint_recovery_points"]


async def checkpoint_recovery_points(logs: LogManager, durability: GroupCommit) -> None:
    pending = plan_snapshots(logs.all_logs())
    if pending:
        # everything appended before the plan reaches the disk: recovery points >= the offsets
        await durability.sync(item.log for item in pending)
        written = await asyncio.get_running_loop().run_in_executor(None, write_snapshots, pending)
        for item in written:
            item.log.snapshot_written(item.offset)
    logs.checkpoint_recovery_points()
