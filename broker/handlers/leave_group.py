"""LeaveGroup (13): one member (v0-2) or a batch of members by id or group instance id (v3+)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import LeaveGroupRequest, LeaveGroupResponse
    from minibroker.broker.context import RequestContext

API_KEY = 13


async def handle(ctx: RequestContext, req: LeaveGroupRequest) -> LeaveGroupResponse:
    groups, runtime = ctx.broker.groups, ctx.broker.coordinators
    # authorization (Kafka: READ on the group)
    if not ctx.allowed(Op.READ, Res.GROUP, req.group_id):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.group_authorization_failed, members=[])
    if ctx.api_version < 3:
        leaving = [(field(req, "member_id", ""), None)]
        top, results = await runtime.run(groups, groups.leave_group(req.group_id, leaving))
        if top == ErrorCode.none and results:
            top = results[0][2]
        return ctx.response(throttle_time_ms=0, error_code=top)
    leaving = [(m.member_id, m.group_instance_id) for m in field(req, "members", ())]
    top, results = await runtime.run(groups, groups.leave_group(req.group_id, leaving))
    return ctx.response(
        throttle_time_ms=0,
        error_code=top,
        members=[dict(member_id=m, group_instance_id=i, error_code=e) for m, i, e in results],
    )
