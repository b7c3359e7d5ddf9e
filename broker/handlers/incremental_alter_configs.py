"""IncrementalAlterConfigs (44): SET / DELETE / APPEND / SUBTRACT on topic configs and dynamic
broker configs (kafka-configs.sh --alter, Admin.incrementalAlterConfigs); see
broker/dynamic_config.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.dynamic_config import alter_configs_response

if TYPE_CHECKING:
    from minibroker.broker.api_types import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 44


async def handle(ctx: RequestContext, req: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    return alter_configs_response(
        ctx, req, lambda r: [(c.name, c.config_operation, c.value) for c in r.configs], incremental=True
    )
