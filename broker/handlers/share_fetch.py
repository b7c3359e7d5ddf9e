"""ShareFetch (78), v1-2: records acquired for a share group member, acknowledgements
piggy-backed (broker/share_partitions.py, broker/share_sessions.py). Stub of the issue-26
contract (WP4 fills it in)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ShareFetchRequest, ShareFetchResponse
    from minibroker.broker.context import RequestContext

API_KEY = 78


async def handle(ctx: RequestContext, req: ShareFetchRequest) -> ShareFetchResponse:
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.unsupported_version,
        error_message=None,
        acquisition_lock_timeout=timedelta(0),
        responses=[],
        node_endpoints=[],
    )
