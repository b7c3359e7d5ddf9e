"""ShareGroupDescribe (77): share groups as Kafka describes them. Stub of the issue-26 contract
(WP5 fills it in)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.authorizer import OPERATIONS_NOT_REQUESTED
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ShareGroupDescribeRequest, ShareGroupDescribeResponse
    from minibroker.broker.context import RequestContext

API_KEY = 77


async def handle(ctx: RequestContext, req: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse:
    return ctx.response(
        throttle_time_ms=0,
        groups=[
            dict(
                error_code=ErrorCode.unsupported_version,
                error_message=None,
                group_id=group_id,
                group_state="",
                group_epoch=0,
                assignment_epoch=0,
                assignor_name="",
                members=[],
                authorized_operations=OPERATIONS_NOT_REQUESTED,
            )
            for group_id in req.group_ids
        ],
    )
