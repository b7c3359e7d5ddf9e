"""DescribeShareGroupOffsets (90), v0-1: share groups' start offsets (and lag, v1) per
share-partition. Stub of the issue-26 contract (WP5 fills it in)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        DescribeShareGroupOffsetsRequest,
        DescribeShareGroupOffsetsResponse,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 90


async def handle(
    ctx: RequestContext, req: DescribeShareGroupOffsetsRequest
) -> DescribeShareGroupOffsetsResponse:
    return ctx.response(
        throttle_time_ms=0,
        groups=[
            dict(group_id=g.group_id, topics=[], error_code=ErrorCode.unsupported_version, error_message=None)
            for g in req.groups
        ],
    )
