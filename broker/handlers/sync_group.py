"""SyncGroup (14): a follower's answer is parked (coordinator/runtime.py `Deferred`) until the
leader's assignment is stored; the coordinator runtime waits for it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.coordinator.group_requests import SyncRequest
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import SyncGroupRequest, SyncGroupResponse
    from minibroker.broker.context import RequestContext

API_KEY = 14


async def handle(ctx: RequestContext, req: SyncGroupRequest) -> SyncGroupResponse:
    # authorization (Kafka: READ on the group)
    if not ctx.allowed(Op.READ, Res.GROUP, req.group_id):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.group_authorization_failed,
            assignment=b"",
        )
    request = SyncRequest(
        group_id=req.group_id,
        generation_id=req.generation_id,
        member_id=req.member_id,
        group_instance_id=field(req, "group_instance_id", None),
        protocol_type=field(req, "protocol_type", None),
        protocol_name=field(req, "protocol_name", None),
        assignments={a.member_id: a.assignment for a in req.assignments},
    )
    runtime, groups = ctx.broker.coordinators, ctx.broker.groups
    result = await runtime.answer(await runtime.run(groups, groups.sync_group(request)))
    return ctx.response(
        throttle_time_ms=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )
