"""SyncGroup (14): followers wait (an asyncio Future) for the leader's assignment."""

import asyncio

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

API_KEY = 14


async def handle(ctx, req):
    # authorization (Kafka: READ on the group)
    if not ctx.allowed(Op.READ, Res.GROUP, req.group_id):
        return ctx.response(
            throttle_time_ms=0, error_code=ErrorCode.group_authorization_failed, assignment=b""
        )
    future = asyncio.get_running_loop().create_future()

    def done(result) -> None:
        if not future.done():
            future.set_result(result)

    ctx.broker.groups.sync_group(
        req.group_id,
        req.generation_id,
        req.member_id,
        getattr(req, "group_instance_id", None),
        getattr(req, "protocol_type", None),
        getattr(req, "protocol_name", None),
        {a.member_id: a.assignment for a in req.assignments},
        done,
    )
    result = await future
    return ctx.response(
        throttle_time_ms=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )
