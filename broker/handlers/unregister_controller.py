"""UnregisterController (94), version 0 (Admin unregisterController): the only controller is
this node, which is the active one. Its own id is INVALID_REQUEST ("cannot unregister itself
while it is active"), any other CONTROLLER_ID_NOT_REGISTERED (136), as Kafka 4.4 answers.
kio 0.6.5 has no schema for this key: protocol/unregister_controller_v0.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import UnregisterControllerRequest, UnregisterControllerResponse
    from minibroker.broker.context import RequestContext

API_KEY = 94

#: CONTROLLER_ID_NOT_REGISTERED: newer than kio's error table (the schema's error_code is int16)
CONTROLLER_ID_NOT_REGISTERED = 136


async def handle(ctx: RequestContext, req: UnregisterControllerRequest) -> UnregisterControllerResponse:
    # authorization (Kafka: ALTER on the cluster)
    if not ctx.allowed(Op.ALTER, Res.CLUSTER, CLUSTER_NAME):
        return ctx.response(
            throttle_time_ms=0,
            error_code=int(ErrorCode.cluster_authorization_failed),
            error_message="Cluster authorization failed.",
        )
    if req.controller_id == ctx.broker.node_id:
        return ctx.response(
            throttle_time_ms=0,
            error_code=int(ErrorCode.invalid_request),
            error_message="Controller cannot unregister itself while it is active.",
        )
    return ctx.response(
        throttle_time_ms=0,
        error_code=CONTROLLER_ID_NOT_REGISTERED,
        error_message=f"Controller ID {req.controller_id} is not currently registered.",
    )
