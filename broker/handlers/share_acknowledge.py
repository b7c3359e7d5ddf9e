"""ShareAcknowledge (79), v1-2: a share group member's acknowledgements outside a ShareFetch.
Stub of the issue-26 contract (WP4 fills it in)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ShareAcknowledgeRequest, ShareAcknowledgeResponse
    from minibroker.broker.context import RequestContext

API_KEY = 79


async def handle(ctx: RequestContext, req: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
    fields: dict = dict(
        throttle_time_ms=0,
        error_code=ErrorCode.unsupported_version,
        error_message=None,
        responses=[],
        node_endpoints=[],
    )
    if ctx.api_version >= 2:
        fields["acquisition_lock_timeout"] = timedelta(0)
    return ctx.response(**fields)
