"""Where each partition lives, as Metadata and DescribeTopicPartitions report it.

One node: this broker is the leader and the one replica (in sync) of every partition, at the
fixed leader epoch of storage/log_manager.py. The one place both APIs take it from.
"""

from __future__ import annotations

from typing import Any

from minibroker.protocol.errors import ErrorCode
from minibroker.storage.log_manager import LEADER_EPOCH

__all__ = ["partition_leadership"]


def partition_leadership(node_id: int, index: int) -> dict[str, Any]:
    """The leader, epoch, replicas and ISR of partition `index` (Metadata's partition fields)."""
    return dict(
        error_code=ErrorCode.none,
        partition_index=index,
        leader_id=node_id,
        leader_epoch=LEADER_EPOCH,
        replica_nodes=[node_id],
        isr_nodes=[node_id],
    )
