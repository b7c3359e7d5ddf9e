"""AlterPartitionReassignments (45), versions 0-1 (`kafka-reassign-partitions.sh --execute`,
Admin alterPartitionReassignments): Kafka's controller answers for a cluster of one broker.

Each partition is checked as Kafka's ReplicationControlManager does: an unknown topic or
partition is UNKNOWN_TOPIC_OR_PARTITION; a null replica list cancels a reassignment, and none
is ever in progress (NO_REASSIGNMENT_IN_PROGRESS); a target list is validated in ascending
broker order (empty, a broker that is not registered, a broker named twice: all
INVALID_REPLICA_ASSIGNMENT). What passes can only be [this node], the partition's current
assignment, so it completes at once with nothing to move (ListPartitionReassignments stays
empty). v1's allow_replication_factor_change is echoed; on one broker every valid target has the
current replication factor, so it never decides an answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minibroker.broker.partition_answers import per_partition
from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from minibroker.broker.api_types import (
        AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsResponse,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 45


def _invalid_assignment(replicas: Sequence[int], node_id: int) -> str | None:
    """Kafka's validateManualPartitionAssignment, with this node the only registered broker."""
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    previous = None
    for broker in sorted(replicas):
        if broker != node_id:
            return (
                f"The manual partition assignment includes broker {broker}, but no such broker is registered."
            )
        if broker == previous:
            return f"The manual partition assignment includes the broker {broker} more than once."
        previous = broker
    return None


def _partition(ctx: RequestContext, topic: str, partition: int, replicas: Sequence[int] | None) -> dict:
    info = ctx.broker.logs.topics.get(topic)
    if info is None:
        return dict(
            partition_index=partition,
            error_code=ErrorCode.unknown_topic_or_partition,
            error_message=f"Unable to find a topic named {topic}.",
        )
    if not 0 <= partition < info.num_partitions:
        return dict(
            partition_index=partition,
            error_code=ErrorCode.unknown_topic_or_partition,
            error_message=f"Unable to find partition {topic}:{partition}.",
        )
    if replicas is None:
        return dict(
            partition_index=partition, error_code=ErrorCode.no_reassignment_in_progress, error_message=None
        )
    invalid = _invalid_assignment(replicas, ctx.broker.node_id)
    if invalid is not None:
        return dict(
            partition_index=partition,
            error_code=ErrorCode.invalid_replica_assignment,
            error_message=invalid,
        )
    return dict(partition_index=partition, error_code=ErrorCode.none, error_message=None)


async def handle(
    ctx: RequestContext, req: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    allow_rf_change = field(req, "allow_replication_factor_change", True)
    # authorization (Kafka: ALTER on the cluster; every partition carries the error too)
    authorized = ctx.allowed(Op.ALTER, Res.CLUSTER, CLUSTER_NAME)
    error = ErrorCode.none if authorized else ErrorCode.cluster_authorization_failed
    message = None if authorized else "Cluster authorization failed."

    def entry(topic: str, p: Any) -> dict:
        if not authorized:
            return dict(partition_index=p.partition_index, error_code=error, error_message=message)
        return _partition(ctx, topic, p.partition_index, p.replicas)

    return ctx.response(
        throttle_time_ms=0,
        allow_replication_factor_change=allow_rf_change,
        error_code=error,
        error_message=message,
        responses=per_partition(((t.name, t.partitions) for t in req.topics), entry),
    )
