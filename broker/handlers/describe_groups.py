"""DescribeGroups (15): state, protocol and members of each group. Member metadata is only
shown for Stable groups; assignments (the last one synced) always (as Kafka does). An unknown
group is reported in state Dead (v0-5) or with GROUP_ID_NOT_FOUND (v6, KIP-1043); so is a
KIP-848 consumer group or a KIP-932 share group ("Group G is not a classic group.":
ConsumerGroupDescribe / ShareGroupDescribe describe them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.security.authorizer import OPERATIONS_NOT_REQUESTED
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DescribeGroupsRequest, DescribeGroupsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 15


async def handle(ctx: RequestContext, req: DescribeGroupsRequest) -> DescribeGroupsResponse:
    coordinator = ctx.broker.groups
    include_ops = bool(field(req, "include_authorized_operations", False))
    out: list[dict] = []
    for group_id in req.groups:
        # authorization (Kafka: DESCRIBE on the group)
        if not ctx.allowed(Op.DESCRIBE, Res.GROUP, group_id):
            out.append(
                dict(
                    error_code=ErrorCode.group_authorization_failed,
                    error_message=None,
                    group_id=group_id,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                    authorized_operations=OPERATIONS_NOT_REQUESTED,
                )
            )
            continue
        error, summary = coordinator.describe_group(group_id)
        operations = (
            ctx.authorized_operations(Res.GROUP, group_id) if include_ops else OPERATIONS_NOT_REQUESTED
        )
        entry = dict(
            error_code=error,
            error_message=None,
            group_id=group_id,
            **summary,
            authorized_operations=operations,
        )
        if ctx.api_version >= 6 and summary["group_state"] == "Dead" and error == ErrorCode.none:
            entry["error_code"] = ErrorCode.group_id_not_found
            entry["error_message"] = (
                f"Group {group_id} is not a classic group."
                if coordinator.group_type(group_id) in ("consumer", "share")
                else f"Group {group_id} not found."
            )
            entry["authorized_operations"] = OPERATIONS_NOT_REQUESTED
        out.append(entry)
    return ctx.response(throttle_time_ms=0, groups=out)
