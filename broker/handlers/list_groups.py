"""ListGroups (16): every live group, classic, KIP-848 consumer and KIP-932 share groups; v4+
filters by state (case-insensitive), v5+ by type ("classic", "consumer", "share"; streams groups
are not served). A share group lists as Kafka's ModernGroup.asListedGroup shows it: protocol
type "share", state Empty or Stable, type "share"."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from minibroker.broker.api_types import ListGroupsRequest, ListGroupsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 16


async def handle(ctx: RequestContext, req: ListGroupsRequest) -> ListGroupsResponse:
    states = field(req, "states_filter", ()) or ()
    types = field(req, "types_filter", ()) or ()
    groups = ctx.broker.groups.list_groups(states, types)
    listed = {g["group_id"] for g in groups}
    groups.extend(g for g in _share_groups(ctx, states, types) if g["group_id"] not in listed)
    # authorization (Kafka: DESCRIBE on the cluster lists all; otherwise the groups with DESCRIBE)
    if not ctx.allowed(Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME):
        groups = [g for g in groups if ctx.allowed(Op.DESCRIBE, Res.GROUP, g["group_id"])]
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.none, groups=groups)


def _share_groups(ctx: RequestContext, states: Sequence[str], types: Sequence[str]) -> list[dict[str, Any]]:
    """The share groups matching the filters (types parsed as Kafka's GroupType, states
    lower-cased and trimmed)."""
    if types and "share" not in {t.lower() for t in types}:
        return []
    coordinator = ctx.broker.groups
    ids = list(coordinator.manager.share_groups)
    if not ids:
        return []
    wanted = {s.lower().strip() for s in states}
    out = []
    for entry in coordinator.share.describe(ids):
        state = entry["group_state"]
        if entry["error_code"] != ErrorCode.none or (wanted and state.lower() not in wanted):
            continue
        out.append(
            dict(group_id=entry["group_id"], protocol_type="share", group_state=state, group_type="share")
        )
    return out
