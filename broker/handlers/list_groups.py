"""ListGroups (16): every live group, classic and KIP-848 consumer groups; v4+ filters by state
(case-insensitive), v5+ by type ("classic", "consumer"; share and streams groups are not served)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ListGroupsRequest, ListGroupsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 16


async def handle(ctx: RequestContext, req: ListGroupsRequest) -> ListGroupsResponse:
    groups = ctx.broker.groups.list_groups(
        field(req, "states_filter", ()) or (), field(req, "types_filter", ()) or ()
    )
    # authorization (Kafka: DESCRIBE on the cluster lists all; otherwise the groups with DESCRIBE)
    if not ctx.allowed(Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME):
        groups = [g for g in groups if ctx.allowed(Op.DESCRIBE, Res.GROUP, g["group_id"])]
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.none, groups=groups)
