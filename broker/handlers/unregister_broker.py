"""UnregisterBroker (64), version 0 (Admin unregisterBroker): the only registered broker is this
node. Another id is BROKER_ID_NOT_REGISTERED, as Kafka's controller answers. This node's own id
is accepted (NONE) as Kafka accepts it; Kafka then drops the registration and shows its
partitions offline until the broker registers again, while minibroker, one process with no
registration to drop, keeps serving (docs/limits.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import UnregisterBrokerRequest, UnregisterBrokerResponse
    from minibroker.broker.context import RequestContext

API_KEY = 64


async def handle(ctx: RequestContext, req: UnregisterBrokerRequest) -> UnregisterBrokerResponse:
    # authorization (Kafka: ALTER on the cluster)
    if not ctx.allowed(Op.ALTER, Res.CLUSTER, CLUSTER_NAME):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message="Cluster authorization failed.",
        )
    if req.broker_id != ctx.broker.node_id:
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.broker_id_not_registered,
            error_message=f"Broker ID {req.broker_id} is not currently registered",
        )
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.none, error_message="")
