"""DeleteShareGroupOffsets (92), v0: a share group's state of whole topics deleted
(kafka-share-groups.sh --delete-offsets).
Stub of the issue-26 contract (WP5 fills it in)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 92


async def handle(ctx: RequestContext, req: DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse:
    return ctx.response(
        throttle_time_ms=0, error_code=ErrorCode.unsupported_version, error_message=None, responses=[]
    )
