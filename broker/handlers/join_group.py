"""JoinGroup (11): the coordinator's answer is a parked response (coordinator/runtime.py
`Deferred`) that the coordinator runtime waits for until the group's rebalance completes; the
state machine is coordinator/group_join.py, reached through GroupCoordinator."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.coordinator.group_requests import JoinRequest
from minibroker.protocol.codec import field, millis
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import JoinGroupRequest, JoinGroupResponse
    from minibroker.broker.context import RequestContext

API_KEY = 11


def client_host(peer: str) -> str:
    """Kafka reports the client's address as InetAddress.toString(): "/127.0.0.1"."""
    return "/" + peer.rsplit(":", 1)[0].strip("[]")


async def handle(ctx: RequestContext, req: JoinGroupRequest) -> JoinGroupResponse:
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
    rebalance_timeout_ms = millis(field(req, "rebalance_timeout", req.session_timeout))
    if rebalance_timeout_ms < 0:
        rebalance_timeout_ms = session_timeout_ms
    request = JoinRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        group_instance_id=field(req, "group_instance_id", None),
        client_id=ctx.client_id or "",
        client_host=client_host(ctx.peer),
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms,
        protocol_type=req.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in req.protocols),
        require_known_member_id=version >= 4,
        supports_skip_assignment=version >= 9,
        reason=field(req, "reason", None),
    )
    runtime, groups = ctx.broker.coordinators, ctx.broker.groups
    result = await runtime.answer(await runtime.run(groups, groups.join_group(request)))
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
