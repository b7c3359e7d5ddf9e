"""AlterConfigs (33): replace the whole set of a topic's overrides or of the dynamic broker
configs (the older Admin.alterConfigs); see broker/dynamic_config.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.dynamic_config import SET, alter_configs_response

if TYPE_CHECKING:
    from minibroker.broker.api_types import AlterConfigsRequest, AlterConfigsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 33


async def handle(ctx: RequestContext, req: AlterConfigsRequest) -> AlterConfigsResponse:
    return alter_configs_response(
        ctx, req, lambda r: [(c.name, SET, c.value) for c in r.configs], incremental=False
    )
