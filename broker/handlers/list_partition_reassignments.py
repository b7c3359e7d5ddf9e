"""ListPartitionReassignments (46), version 0: a one-broker cluster never has a reassignment in
progress (AlterPartitionReassignments completes or refuses at once), so the answer is always
an empty list, for named partitions (known or not) as for all, as Kafka answers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponse,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 46


async def handle(
    ctx: RequestContext, req: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    # authorization (Kafka: DESCRIBE on the cluster)
    if not ctx.allowed(Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message="Cluster authorization failed.",
            topics=[],
        )
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.none, error_message=None, topics=[])
