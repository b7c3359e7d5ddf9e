"""DescribeConfigs (32): topic configs (overrides and the defaults they fall back to) and this
broker's properties."""

from broker.config import PROPERTIES
from broker.security.acls import CLUSTER_NAME, Operation as Op, ResourceType as Res
from broker.security.settings import is_sensitive, listener_property
from protocol.errors import ErrorCode
from storage.errors import KafkaStorageError

API_KEY = 32
MIN_VERSION, MAX_VERSION = 1, 4

TOPIC, BROKER = 2, 4
# ConfigSource values from DescribeConfigsResponse.
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


def _topic(broker, name: str) -> list[dict]:
    return [
        dict(name=key, value=value, read_only=False, is_sensitive=False,
             config_source=DEFAULT_CONFIG if is_default else TOPIC_CONFIG)
        for key, (value, is_default) in sorted(broker.logs.describe_topic_configs(name).items())
    ]


def _broker(broker) -> list[dict]:
    config = broker.config
    out = []
    for key, value in sorted(config.items()):
        if key.startswith("minibroker."):
            continue
        sensitive = is_sensitive(key)  # passwords and JAAS configs: Kafka sends null
        out.append(dict(
            name=key,
            value=None if value is None or sensitive else (str(value).lower() if isinstance(value, bool) else str(value)),
            read_only=True, is_sensitive=sensitive,
            config_source=DEFAULT_CONFIG if config.is_default(key) else STATIC_BROKER_CONFIG,
            documentation=(PROPERTIES.get(key) or listener_property(key)).doc,
        ))
    return out


def _describe(broker, resource) -> dict:
    out = dict(error_code=ErrorCode.none, error_message=None,
               resource_type=resource.resource_type, resource_name=resource.resource_name, configs=[])
    try:
        if resource.resource_type == TOPIC:
            configs = _topic(broker, resource.resource_name)
        elif resource.resource_type == BROKER:
            if resource.resource_name not in ("", str(broker.node_id)):
                return {**out, "error_code": ErrorCode.invalid_request,
                        "error_message": f"unknown broker {resource.resource_name}; this is node {broker.node_id}"}
            configs = _broker(broker)
        else:
            return {**out, "error_code": ErrorCode.invalid_request,
                    "error_message": f"resource type {resource.resource_type} is not supported"}
    except KafkaStorageError as exc:
        return {**out, "error_code": exc.error_code, "error_message": exc.message}
    wanted = resource.configuration_keys
    if wanted:
        configs = [c for c in configs if c["name"] in set(wanted)]
    return {**out, "configs": configs}


async def handle(ctx, req):
    return ctx.response(throttle_time_ms=0, results=[
        _describe(ctx.broker, r) if _allowed(ctx, r) else
        dict(error_code=ErrorCode.cluster_authorization_failed if r.resource_type == BROKER
             else ErrorCode.topic_authorization_failed, error_message=None, resource_type=r.resource_type,
             resource_name=r.resource_name, configs=[])
        for r in req.resources])


def _allowed(ctx, resource) -> bool:
    # authorization (Kafka: DESCRIBE_CONFIGS on the topic, or on the cluster for a broker)
    if resource.resource_type == BROKER:
        return ctx.allowed(Op.DESCRIBE_CONFIGS, Res.CLUSTER, CLUSTER_NAME)
    return ctx.allowed(Op.DESCRIBE_CONFIGS, Res.TOPIC, resource.resource_name)
