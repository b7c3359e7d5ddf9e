"""FindCoordinator (10): this broker coordinates every group (key type 0) and every
transactional id (key type 1). Share groups (key type 2) and anything else: INVALID_REQUEST.
v4+ batches the keys (coordinator_keys) and answers one entry per key."""

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

API_KEY = 10

_GROUP, _TRANSACTION = 0, 1


def _entry(ctx, key: str, key_type: int) -> dict:
    broker = ctx.broker
    if key_type not in (_GROUP, _TRANSACTION):
        return dict(
            key=key,
            node_id=-1,
            host="",
            port=-1,
            error_code=ErrorCode.invalid_request,
            error_message=f"unsupported coordinator key type {key_type}",
        )
    # authorization (Kafka: DESCRIBE on the group or the transactional id)
    if key_type == _GROUP and not ctx.allowed(Op.DESCRIBE, Res.GROUP, key):
        return dict(
            key=key,
            node_id=-1,
            host="",
            port=-1,
            error_code=ErrorCode.group_authorization_failed,
            error_message=None,
        )
    if key_type == _TRANSACTION and not ctx.allowed(Op.DESCRIBE, Res.TRANSACTIONAL_ID, key):
        return dict(
            key=key,
            node_id=-1,
            host="",
            port=-1,
            error_code=ErrorCode.transactional_id_authorization_failed,
            error_message=None,
        )
    return dict(
        key=key,
        node_id=broker.node_id,
        host=ctx.advertised[0],
        port=ctx.advertised[1],
        error_code=ErrorCode.none,
        error_message=None,
    )


async def handle(ctx, req):
    key_type = getattr(req, "key_type", _GROUP)
    if ctx.api_version >= 4:
        return ctx.response(
            throttle_time_ms=0,
            coordinators=[_entry(ctx, key, key_type) for key in req.coordinator_keys],
        )
    entry = _entry(ctx, req.key, key_type)
    entry.pop("key")
    if entry["error_code"] != ErrorCode.none and ctx.api_version >= 1:
        entry["error_message"] = entry["error_message"] or entry["error_code"].name
    return ctx.response(throttle_time_ms=0, **entry)
