"""AlterConfigs (33): replace the whole set of a topic's overrides or of the dynamic broker
configs (the older Admin.alterConfigs); see broker/dynamic_config.py."""

from minibroker.broker.dynamic_config import SET, alter_configs_response

API_KEY = 33


async def handle(ctx, req):
    return alter_configs_response(
        ctx, req, lambda r: [(c.name, SET, c.value) for c in r.configs], incremental=False
    )
