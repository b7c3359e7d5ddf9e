"""GetTelemetrySubscriptions (71, KIP-714): the client instance id (a new one for a zero id),
the metrics its matching CLIENT_METRICS subscriptions ask for, the push interval (300 s without
any) and Kafka's other answers; see broker/telemetry.py. Served whether or not ApiVersions
advertises it (Kafka answers it unadvertised, too)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.telemetry import client_attributes

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        GetTelemetrySubscriptionsRequest,
        GetTelemetrySubscriptionsResponse,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 71


async def handle(
    ctx: RequestContext, req: GetTelemetrySubscriptionsRequest
) -> GetTelemetrySubscriptionsResponse:
    telemetry = ctx.broker.dynamic_configs.telemetry
    answer = telemetry.get_subscriptions(req.client_instance_id, client_attributes(ctx))
    return ctx.response(throttle_time_ms=0, **answer)
