"""AlterConfigs (33): replace the whole set of a topic's overrides or of the dynamic broker
configs (the older Admin.alterConfigs); see broker/dynamic_config.py."""

from broker.dynamic_config import SET
from protocol.errors import ErrorCode
from storage.errors import KafkaStorageError

API_KEY = 33
MIN_VERSION, MAX_VERSION = 0, 2


def _alter(broker, resource, validate_only: bool) -> dict:
    out = dict(error_code=ErrorCode.none, error_message=None,
               resource_type=resource.resource_type, resource_name=resource.resource_name)
    ops = [(c.name, SET, c.value) for c in resource.configs]
    try:
        broker.dynamic_configs.alter(resource.resource_type, resource.resource_name, ops,
                                     incremental=False, validate_only=validate_only)
    except KafkaStorageError as exc:
        out.update(error_code=exc.error_code, error_message=exc.message)
    return out


async def handle(ctx, req):
    return ctx.response(throttle_time_ms=0, responses=[
        _alter(ctx.broker, r, req.validate_only) for r in req.resources])
