"""IncrementalAlterConfigs (44): SET / DELETE / APPEND / SUBTRACT on topic configs and dynamic
broker configs (kafka-configs.sh --alter, Admin.incrementalAlterConfigs); see
broker/dynamic_config.py."""

from minibroker.broker.dynamic_config import alter_configs_response

API_KEY = 44


async def handle(ctx, req):
    return alter_configs_response(
        ctx, req, lambda r: [(c.name, c.config_operation, c.value) for c in r.configs], incremental=True
    )
