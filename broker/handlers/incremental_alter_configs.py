"""IncrementalAlterConfigs (44): SET / DELETE / APPEND / SUBTRACT on topic configs and dynamic
broker configs (kafka-configs.sh --alter, Admin.incrementalAlterConfigs); see
broker/dynamic_config.py."""

API_KEY = 44
MIN_VERSION, MAX_VERSION = 0, 1


async def handle(ctx, req):
    dynamic = ctx.broker.dynamic_configs
    return ctx.response(throttle_time_ms=0, responses=[
        dynamic.alter_result(r, [(c.name, c.config_operation, c.value) for c in r.configs],
                             incremental=True, validate_only=req.validate_only)
        for r in req.resources])
