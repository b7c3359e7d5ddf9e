"""AlterConfigs (33): replace the whole set of a topic's overrides or of the dynamic broker
configs (the older Admin.alterConfigs); see broker/dynamic_config.py."""

from broker.dynamic_config import SET

API_KEY = 33
MIN_VERSION, MAX_VERSION = 0, 2


async def handle(ctx, req):
    dynamic = ctx.broker.dynamic_configs
    return ctx.response(throttle_time_ms=0, responses=[
        dynamic.alter_result(r, [(c.name, SET, c.value) for c in r.configs],
                             incremental=False, validate_only=req.validate_only)
        for r in req.resources])
