"""ListGroups (16): every live group; v4+ filters by state (case-insensitive), v5+ by type
(all groups here are "classic")."""

from protocol.errors import ErrorCode

API_KEY = 16
MIN_VERSION, MAX_VERSION = 0, 5


async def handle(ctx, req):
    groups = ctx.broker.groups.list_groups(
        getattr(req, "states_filter", ()) or (), getattr(req, "types_filter", ()) or ())
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.none, groups=groups)
