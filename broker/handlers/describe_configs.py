"""DescribeConfigs (32): topic configs (overrides and the defaults they fall back to), this
broker's properties, CLIENT_METRICS subscriptions (KIP-714: metrics, interval.ms, match; a name
never set shows the defaults, as Kafka) and GROUP configs (KIP-848 per-group settings, see
broker/group_configs.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minibroker.broker import config_descriptions as describe
from minibroker.broker.config import DYNAMIC_BROKER, DYNAMIC_DEFAULT, PROPERTIES
from minibroker.broker.dynamic_config import DYNAMIC_BROKER_CONFIGS, KAFKA_DYNAMIC_BROKER_CONFIGS
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.checks import config_resource_denial, denied_config_result
from minibroker.broker.security.settings import is_sensitive, listener_property
from minibroker.broker.telemetry import config_list
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log_manager import validate_topic_name

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        DescribeConfigsRequest,
        DescribeConfigsResource,
        DescribeConfigsResponse,
    )
    from minibroker.broker.config import BrokerConfig
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 32

TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32
# ConfigSource values from DescribeConfigsResponse.
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, CLIENT_METRICS_CONFIG = 4, 5, 7
# Kafka's ClientMetricsConfigs: (type, default, documentation)
_CLIENT_METRICS = {
    "metrics": (describe.LIST, "", "Telemetry metric name prefix list"),
    "interval.ms": (describe.INT, "300000", "Metrics push interval in milliseconds"),
    "match": (describe.LIST, "", "Client match criteria"),
}
_SOURCES = {
    "broker": DYNAMIC_BROKER_CONFIG,
    "cluster": DYNAMIC_DEFAULT_BROKER_CONFIG,
    "static": STATIC_BROKER_CONFIG,
    "default": DEFAULT_CONFIG,
}


_KAFKA_TYPES = {
    "BOOLEAN": describe.BOOLEAN,
    "STRING": describe.STRING,
    "INT": describe.INT,
    "SHORT": describe.SHORT,
    "LONG": describe.LONG,
    "DOUBLE": describe.DOUBLE,
    "LIST": describe.LIST,
    "CLASS": describe.CLASS,
    "PASSWORD": describe.PASSWORD,
}


def _kafka_type(name: str) -> int:
    """The type Kafka gives a dynamic config minibroker does not declare."""
    return _KAFKA_TYPES.get(KAFKA_DYNAMIC_BROKER_CONFIGS.get(name, ("", "STRING", None))[1], describe.STRING)


def _topic(broker: HandlerServices, name: str, synonyms: bool, documentation: bool) -> list[dict]:
    return [
        dict(
            name=key,
            value=value,
            read_only=False,
            is_sensitive=False,
            config_source=describe.topic_default_source(broker.config, key) if is_default else TOPIC_CONFIG,
            config_type=describe.topic_type(key),
            synonyms=describe.topic_synonyms(key, None if is_default else value, broker.config)
            if synonyms
            else [],
            documentation=describe.topic_documentation(key) if documentation else None,
        )
        for key, (value, is_default) in sorted(broker.logs.describe_topic_configs(name).items())
    ]


def _broker(
    broker: HandlerServices, synonyms: bool, documentation: bool, cluster_defaults: bool
) -> list[dict]:
    """This broker's properties (with Kafka's dynamic configs minibroker does not declare), or
    (``cluster_defaults``, the resource named "") only the cluster-wide dynamic defaults, as
    Kafka answers."""
    config = broker.config
    if cluster_defaults:
        items = sorted(config.dynamic(DYNAMIC_DEFAULT).items())
    else:
        undeclared = {
            name: entry[2] for name, entry in KAFKA_DYNAMIC_BROKER_CONFIGS.items() if name not in PROPERTIES
        }
        for level in (DYNAMIC_DEFAULT, DYNAMIC_BROKER):
            undeclared.update(config.dynamic(level))
        items = sorted({**undeclared, **dict(config.items())}.items())
    out: list[dict] = []
    for key, value in items:
        if key.startswith("minibroker."):
            continue
        sensitive = is_sensitive(key)  # passwords and JAAS configs: Kafka sends null
        text = None if value is None or sensitive else _text(value)
        levels: list[dict[str, Any]]
        if cluster_defaults:
            source = DYNAMIC_DEFAULT_BROKER_CONFIG
            levels = [dict(name=key, value=text, source=source)] if text is not None else []
        else:
            levels = _levels(config, key, sensitive)
            source = levels[0]["source"] if levels else DEFAULT_CONFIG
        prop = PROPERTIES.get(key) or listener_property(key)
        out.append(
            dict(
                name=key,
                value=text,
                read_only=key not in DYNAMIC_BROKER_CONFIGS,
                is_sensitive=sensitive,
                config_source=source,
                config_type=describe.broker_type(prop) if prop is not None else _kafka_type(key),
                synonyms=levels if synonyms else [],
                documentation=prop.doc if documentation and prop is not None else None,
            )
        )
    return out


def _levels(config: BrokerConfig, key: str, sensitive: bool) -> list[dict[str, Any]]:
    """Kafka's synonyms of a broker config: where it is set, highest precedence first (per-broker
    dynamic, cluster dynamic default, static), then its default when it has one."""
    out = []
    for level, source in (
        (DYNAMIC_BROKER, DYNAMIC_BROKER_CONFIG),
        (DYNAMIC_DEFAULT, DYNAMIC_DEFAULT_BROKER_CONFIG),
    ):
        dynamic = config.dynamic(level)
        if key in dynamic:
            out.append(dict(name=key, value=None if sensitive else _text(dynamic[key]), source=source))
    try:
        value, explicit = config.static_value(key)
        default = PROPERTIES[key].default if key in PROPERTIES else None
    except KeyError:  # a Kafka config minibroker does not declare
        value, explicit = None, False
        default = KAFKA_DYNAMIC_BROKER_CONFIGS.get(key, ("", "", None))[2]
    if explicit and value is not None:
        out.append(dict(name=key, value=None if sensitive else _text(value), source=STATIC_BROKER_CONFIG))
    if default is not None:
        out.append(dict(name=key, value=None if sensitive else _text(default), source=DEFAULT_CONFIG))
    return out


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _client_metrics(broker: HandlerServices, name: str, synonyms: bool, documentation: bool) -> list[dict]:
    if not name:
        raise KafkaStorageError(
            ErrorCode.invalid_request, "Client metrics subscription name must not be empty"
        )
    set_ = broker.dynamic_configs.client_metrics.get(name, {})
    out = []
    for key, (kind, default, doc) in sorted(_CLIENT_METRICS.items()):
        if key not in set_:
            value = default
        elif kind == describe.LIST:  # Kafka shows the parsed list joined with ","
            value = ",".join(config_list(set_[key]))
        else:
            value = str(int(set_[key]))
        source = CLIENT_METRICS_CONFIG if key in set_ else DEFAULT_CONFIG
        out.append(
            dict(
                name=key,
                value=value,
                read_only=False,
                is_sensitive=False,
                config_source=source,
                config_type=kind,
                synonyms=[dict(name=key, value=value, source=source)] if synonyms and key in set_ else [],
                documentation=doc if documentation else None,
            )
        )
    return out


def _describe(
    broker: HandlerServices, resource: DescribeConfigsResource, synonyms: bool, documentation: bool
) -> dict:
    out: dict[str, Any] = dict(
        error_code=ErrorCode.none,
        error_message=None,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
        configs=[],
    )
    try:
        if resource.resource_type == TOPIC:
            validate_topic_name(resource.resource_name)  # INVALID_TOPIC_EXCEPTION before lookup
            configs = _topic(broker, resource.resource_name, synonyms, documentation)
        elif resource.resource_type == BROKER:
            if resource.resource_name not in ("", str(broker.node_id)):
                return {
                    **out,
                    "error_code": ErrorCode.invalid_request,
                    "error_message": f"unknown broker {resource.resource_name}; "
                    f"this is node {broker.node_id}",
                }
            configs = _broker(broker, synonyms, documentation, cluster_defaults=not resource.resource_name)
        elif resource.resource_type == CLIENT_METRICS:
            configs = _client_metrics(broker, resource.resource_name, synonyms, documentation)
        elif resource.resource_type == GROUP:
            config = broker.config
            configs = broker.group_configs.describe(
                resource.resource_name,
                synonyms=synonyms,
                documentation=documentation,
                broker_levels=lambda name: _levels(config, name, False),
            )
        else:
            return {
                **out,
                "error_code": ErrorCode.invalid_request,
                "error_message": f"resource type {resource.resource_type} is not supported",
            }
    except KafkaStorageError as exc:
        return {**out, "error_code": exc.error_code, "error_message": exc.message}
    wanted = resource.configuration_keys
    if wanted:
        configs = [c for c in configs if c["name"] in set(wanted)]
    return {**out, "configs": configs}


async def handle(ctx: RequestContext, req: DescribeConfigsRequest) -> DescribeConfigsResponse:
    synonyms = bool(field(req, "include_synonyms", False))
    documentation = bool(field(req, "include_documentation", False))
    results = []
    for r in req.resources:
        # authorization (Kafka: DESCRIBE_CONFIGS on the topic, or on the cluster for a broker)
        denial = config_resource_denial(ctx, r.resource_type, r.resource_name, Op.DESCRIBE_CONFIGS)
        results.append(
            {**denied_config_result(r, denial), "configs": []}
            if denial
            else _describe(ctx.broker, r, synonyms, documentation)
        )
    return ctx.response(throttle_time_ms=0, results=results)
