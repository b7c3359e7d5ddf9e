"""DeleteGroups (42): only Empty groups can be deleted (NON_EMPTY_GROUP otherwise); their
offsets and metadata get tombstones in __consumer_offsets. v3 (kio lacks it:
protocol/delete_groups_v3.py) adds a per-group error_message, which Kafka leaves null for
every error this coordinator gives (it explains only GROUP_DELETION_FAILED)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DeleteGroupsRequest, DeleteGroupsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 42


async def handle(ctx: RequestContext, req: DeleteGroupsRequest) -> DeleteGroupsResponse:
    # authorization (Kafka: DELETE on each group)
    denied = [g for g in req.groups_names if not ctx.allowed(Op.DELETE, Res.GROUP, g)]
    groups = ctx.broker.groups
    results = await ctx.broker.coordinators.run(
        groups, groups.delete_groups([g for g in req.groups_names if g not in denied])
    )
    results.update({g: ErrorCode.group_authorization_failed for g in denied})
    return ctx.response(
        throttle_time_ms=0,
        results=[dict(group_id=g, error_code=e, error_message=None) for g, e in results.items()],
    )
