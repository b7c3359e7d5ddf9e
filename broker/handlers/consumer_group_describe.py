"""ConsumerGroupDescribe (69): KIP-848 consumer groups as Kafka describes them (state, epochs,
assignor, members with their current and target assignments)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse
    from minibroker.broker.context import RequestContext

API_KEY = 69


async def handle(ctx: RequestContext, req: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
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
                authorized_operations=-(2**31),
            )
            for group_id in req.group_ids
        ],
    )
