"""DescribeGroups (15): state, protocol and members of each group. Member metadata and
assignments are only shown for Stable groups (as Kafka does). An unknown group is reported in
state Dead (v0-5) or with GROUP_ID_NOT_FOUND (v6, KIP-1043)."""

from protocol.errors import ErrorCode

API_KEY = 15
MIN_VERSION, MAX_VERSION = 0, 6

_UNSET_OPERATIONS = -(2**31)
# READ (3), DESCRIBE (8), DELETE (6): what a group ACL can allow; no authorizer here
_GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)


async def handle(ctx, req):
    coordinator = ctx.broker.groups
    include_ops = bool(getattr(req, "include_authorized_operations", False))
    out = []
    for group_id in req.groups:
        error, summary = coordinator.describe_group(group_id)
        entry = dict(error_code=error, error_message=None, group_id=group_id, **summary,
                     authorized_operations=_GROUP_OPERATIONS if include_ops else _UNSET_OPERATIONS)
        if ctx.api_version >= 6 and summary["group_state"] == "Dead" and error == ErrorCode.none:
            entry["error_code"] = ErrorCode.group_id_not_found
            entry["error_message"] = f"Group {group_id} not found."
        out.append(entry)
    return ctx.response(throttle_time_ms=0, groups=out)
