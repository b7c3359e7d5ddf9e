"""Heartbeat (12): keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import HeartbeatRequest, HeartbeatResponse
    from minibroker.broker.context import RequestContext

API_KEY = 12


async def handle(ctx: RequestContext, req: HeartbeatRequest) -> HeartbeatResponse:
    # authorization (Kafka: READ on the group)
    if not ctx.allowed(Op.READ, Res.GROUP, req.group_id):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.group_authorization_failed)
    groups = ctx.broker.groups
    operation = groups.heartbeat(
        req.group_id, req.member_id, field(req, "group_instance_id", None), req.generation_id
    )
    error = await ctx.broker.coordinators.run(groups, operation)
    return ctx.response(throttle_time_ms=0, error_code=error)
