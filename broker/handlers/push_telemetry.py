"""PushTelemetry (72, KIP-714): Kafka's checks (throttle, subscription id, compression, size,
terminating) and the OTLP payload decoded and kept as the instance's latest push; see
broker/telemetry.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.telemetry import client_attributes

if TYPE_CHECKING:
    from minibroker.broker.api_types import PushTelemetryRequest, PushTelemetryResponse
    from minibroker.broker.context import RequestContext

API_KEY = 72


async def handle(ctx: RequestContext, req: PushTelemetryRequest) -> PushTelemetryResponse:
    telemetry = ctx.broker.dynamic_configs.telemetry
    error = telemetry.push(
        req.client_instance_id,
        client_attributes(ctx),
        req.subscription_id,
        req.terminating,
        req.compression_type,
        bytes(req.metrics or b""),
    )
    return ctx.response(throttle_time_ms=0, error_code=error)
