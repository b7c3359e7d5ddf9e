"""AlterShareGroupOffsets (91), v0: a share group's start offsets set (kafka-share-groups.sh --reset-offsets).
Stub of the issue-26 contract (WP5 fills it in)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 91


async def handle(ctx: RequestContext, req: AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse:
    return ctx.response(
        throttle_time_ms=0, error_code=ErrorCode.unsupported_version, error_message=None, responses=[]
    )
