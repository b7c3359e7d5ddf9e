"""DescribeCluster (60), versions 0-2: one broker, which is also the controller. v2's
include_fenced_brokers (KIP-1073) changes nothing here: the one broker is never fenced, and
is_fenced is false."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.security.authorizer import OPERATIONS_NOT_REQUESTED
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DescribeClusterRequest, DescribeClusterResponse
    from minibroker.broker.context import RequestContext

API_KEY = 60


async def handle(ctx: RequestContext, req: DescribeClusterRequest) -> DescribeClusterResponse:
    b = ctx.broker
    endpoint_type = field(req, "endpoint_type", 1)
    if endpoint_type != 1:
        # 2 asks for controllers, which a broker listener does not describe (as Kafka answers)
        error = (
            ErrorCode.mismatched_endpoint_type if endpoint_type == 2 else ErrorCode.unsupported_endpoint_type
        )
        return ctx.response(
            throttle_time_ms=0,
            error_code=error,
            error_message="only broker endpoints are served",
            cluster_id=b.logs.cluster_id,
        )
    # authorization: the call needs nothing; the operations field is filled only when asked for
    operations = (
        ctx.authorized_operations(Res.CLUSTER, CLUSTER_NAME)
        if req.include_cluster_authorized_operations
        else OPERATIONS_NOT_REQUESTED
    )
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.none,
        cluster_id=b.logs.cluster_id,
        cluster_authorized_operations=operations,
        controller_id=b.node_id,
        brokers=[dict(broker_id=b.node_id, host=ctx.advertised[0], port=ctx.advertised[1], is_fenced=False)],
    )
