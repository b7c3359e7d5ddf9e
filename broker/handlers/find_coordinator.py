"""FindCoordinator (10): this broker coordinates every group (key type 0) and every
transactional id (key type 1). Share groups (key type 2) and anything else: INVALID_REQUEST.
v4+ batches the keys (coordinator_keys) and answers one entry per key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import FindCoordinatorRequest, FindCoordinatorResponse
    from minibroker.broker.context import RequestContext

API_KEY = 10

_GROUP, _TRANSACTION = 0, 1


def _refusal(key: str, error_code: ErrorCode, message: str | None = None) -> dict:
    return dict(key=key, node_id=-1, host="", port=-1, error_code=error_code, error_message=message)


def _entry(ctx: RequestContext, key: str, key_type: int) -> dict:
    broker = ctx.broker
    if key_type not in (_GROUP, _TRANSACTION):
        return _refusal(key, ErrorCode.invalid_request, f"unsupported coordinator key type {key_type}")
    # authorization (Kafka: DESCRIBE on the group or the transactional id)
    if key_type == _GROUP and not ctx.allowed(Op.DESCRIBE, Res.GROUP, key):
        return _refusal(key, ErrorCode.group_authorization_failed)
    if key_type == _TRANSACTION and not ctx.allowed(Op.DESCRIBE, Res.TRANSACTIONAL_ID, key):
        return _refusal(key, ErrorCode.transactional_id_authorization_failed)
    if key_type == _GROUP and not broker.groups.coordinates(key):
        # its __consumer_offsets partition cannot be written (full disk): as Kafka for a
        # partition without a leader, so clients back off and ask again
        return _refusal(key, ErrorCode.coordinator_not_available)
    return dict(
        key=key,
        node_id=broker.node_id,
        host=ctx.advertised[0],
        port=ctx.advertised[1],
        error_code=ErrorCode.none,
        error_message=None,
    )


async def handle(ctx: RequestContext, req: FindCoordinatorRequest) -> FindCoordinatorResponse:
    key_type = field(req, "key_type", _GROUP)
    if ctx.api_version >= 4:
        return ctx.response(
            throttle_time_ms=0,
            coordinators=[_entry(ctx, key, key_type) for key in field(req, "coordinator_keys", ())],
        )
    entry = _entry(ctx, field(req, "key", ""), key_type)
    entry.pop("key")
    if entry["error_code"] != ErrorCode.none and ctx.api_version >= 1:
        entry["error_message"] = entry["error_message"] or entry["error_code"].name
    return ctx.response(throttle_time_ms=0, **entry)
