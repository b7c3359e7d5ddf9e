"""AlterConfigs (33): replace the whole set of a topic's overrides or of the dynamic broker
configs (the older Admin.alterConfigs); see broker/dynamic_config.py."""

from broker.dynamic_config import SET
from broker.security.acls import Operation as Op
from broker.security.checks import config_resource_denial, denied_config_result

API_KEY = 33
MIN_VERSION, MAX_VERSION = 0, 2


async def handle(ctx, req):
    dynamic = ctx.broker.dynamic_configs
    responses = []
    for r in req.resources:
        # authorization (Kafka: ALTER_CONFIGS on the topic, or on the cluster for a broker)
        denial = config_resource_denial(ctx, r.resource_type, r.resource_name, Op.ALTER_CONFIGS)
        responses.append(denied_config_result(r, denial) if denial else dynamic.alter_result(
            r, [(c.name, SET, c.value) for c in r.configs], incremental=False, validate_only=req.validate_only))
    return ctx.response(throttle_time_ms=0, responses=responses)
