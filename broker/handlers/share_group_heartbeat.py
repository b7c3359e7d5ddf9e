"""ShareGroupHeartbeat (76): a KIP-932 share consumer's join, heartbeat and leave
(coordinator/share_groups.py). Stub of the issue-26 contract (WP5 fills it in)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
    from minibroker.broker.context import RequestContext

API_KEY = 76


async def handle(ctx: RequestContext, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.unsupported_version,
        error_message=None,
        member_id=None,
        member_epoch=0,
        heartbeat_interval_ms=0,
        assignment=None,
    )
