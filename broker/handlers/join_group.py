"""JoinGroup (11): the answer waits (an asyncio Future) until the group's rebalance completes;
the state machine is coordinator.groups.GroupCoordinator."""

import asyncio

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import millis
from minibroker.protocol.errors import ErrorCode

API_KEY = 11


def client_host(peer: str) -> str:
    """Kafka reports the client's address as InetAddress.toString(): "/127.0.0.1"."""
    return "/" + peer.rsplit(":", 1)[0].strip("[]")


async def handle(ctx, req):
    version = ctx.api_version
    # authorization (Kafka: READ on the group)
    if not ctx.allowed(Op.READ, Res.GROUP, req.group_id):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.group_authorization_failed,
            generation_id=-1,
            protocol_name=None if version >= 7 else "",
            leader="",
            member_id=req.member_id,
            members=[],
        )
    session_timeout_ms = millis(req.session_timeout)
    # v0 has no rebalance timeout: Kafka uses the session timeout
    rebalance_timeout_ms = millis(req.rebalance_timeout) if version >= 1 else session_timeout_ms
    if rebalance_timeout_ms < 0:
        rebalance_timeout_ms = session_timeout_ms
    future = asyncio.get_running_loop().create_future()

    def done(result) -> None:
        if not future.done():
            future.set_result(result)

    ctx.broker.groups.join_group(
        req.group_id,
        req.member_id,
        getattr(req, "group_instance_id", None),
        ctx.client_id or "",
        client_host(ctx.peer),
        session_timeout_ms,
        rebalance_timeout_ms,
        req.protocol_type,
        [(p.name, p.metadata) for p in req.protocols],
        done,
        require_known_member_id=version >= 4,
        supports_skip_assignment=version >= 9,
        reason=getattr(req, "reason", None),
    )
    result = await future
    protocol_name = result.protocol_name
    if version < 7:
        protocol_name = protocol_name or ""  # non-nullable before v7
    elif protocol_name == "":
        protocol_name = None
    return ctx.response(
        throttle_time_ms=0,
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=protocol_name,
        leader=result.leader_id or "",
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[dict(member_id=m, group_instance_id=i, metadata=meta) for m, i, meta in result.members],
    )
