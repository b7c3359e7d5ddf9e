"""ListGroups (16): every live group; v4+ filters by state (case-insensitive), v5+ by type
(all groups here are "classic")."""

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

API_KEY = 16


async def handle(ctx, req):
    groups = ctx.broker.groups.list_groups(
        getattr(req, "states_filter", ()) or (), getattr(req, "types_filter", ()) or ()
    )
    # authorization (Kafka: DESCRIBE on the cluster lists all; otherwise the groups with DESCRIBE)
    if not ctx.allowed(Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME):
        groups = [g for g in groups if ctx.allowed(Op.DESCRIBE, Res.GROUP, g["group_id"])]
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.none, groups=groups)
