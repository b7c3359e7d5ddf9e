"""Runtime config changes (AlterConfigs, IncrementalAlterConfigs): topic overrides and dynamic
broker configs, validated like CreateTopics and persisted in the data directory.

* Topic resources change the topic's overrides (``topics/<name>.json``, through LogManager);
  the topic's logs use the new values at once.
* Broker resources change the dynamic broker configs Kafka allows to change at runtime (the
  log defaults topics fall back to, and a few more): per broker (resource name = node id) or
  cluster-wide default (empty name). They are kept in ``dynamic-broker-configs.json`` in the
  data directory, loaded at startup on top of the static configuration (Kafka's precedence:
  per-broker dynamic, cluster default dynamic, static, built-in default).
* CLIENT_METRICS resources (KIP-714 subscriptions, ``kafka-client-metrics.sh``) are validated as
  Kafka's ClientMetricsConfigs and handed to the broker's ClientTelemetry (broker/telemetry.py);
  they are kept in the same file, under ``client-metrics``. Removing every config of one removes
  the subscription.

Errors as Kafka gives them: UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG (unknown name, bad
value, APPEND/SUBTRACT on a non-list config), INVALID_REQUEST (a config that cannot change at
runtime, duplicate names, unknown broker id, unsupported resource type).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Set
from typing import TYPE_CHECKING, Any

import structlog
from minibroker.broker.config import DYNAMIC_BROKER, DYNAMIC_DEFAULT, PROPERTIES, BrokerConfig, ConfigError
from minibroker.broker.telemetry import CLIENT_METRICS, ClientTelemetry
from minibroker.broker.telemetry import validate as validate_client_metrics
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.config import validate_topic_configs
from minibroker.storage.durable_files import atomic_write
from minibroker.storage.errors import KafkaStorageError

if TYPE_CHECKING:
    from minibroker.broker.api_types import AlterConfigsRequest, IncrementalAlterConfigsRequest
    from minibroker.broker.context import RequestContext
    from minibroker.broker.security.checks import ConfigResource
    from minibroker.storage.log_manager import LogManager

#: (config name, AlterConfigOp type, value): one change of a config request
AlterOp = tuple[str, int, "str | None"]

__all__ = [
    "DynamicConfigs",
    "TOPIC",
    "BROKER",
    "CLIENT_METRICS",
    "SET",
    "DELETE",
    "APPEND",
    "SUBTRACT",
    "DYNAMIC_BROKER_CONFIGS",
]

log = structlog.get_logger(__name__)

TOPIC, BROKER = 2, 4  # ConfigResource.Type
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # AlterConfigOp.OpType
FILE_NAME = "dynamic-broker-configs.json"
_CLIENT_METRICS_KEY = "client-metrics"  # the file's section of CLIENT_METRICS subscriptions
_CLIENT_METRICS_LISTS: frozenset[str] = frozenset()  # Kafka: APPEND/SUBTRACT on none (INVALID_CONFIG)

# Broker properties Kafka lets AlterConfigs change at runtime (DynamicLogConfig and friends)
# that this broker knows. Only a topic config's primary synonym is dynamic in Kafka:
# log.retention.ms and log.roll.ms, not their .hours/.minutes forms (read-only in Kafka 4.4).
DYNAMIC_BROKER_CONFIGS = frozenset(
    {
        "log.segment.bytes",
        "log.roll.ms",
        "log.index.interval.bytes",
        "log.message.timestamp.type",
        "message.max.bytes",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.retention.ms",
        "log.retention.bytes",
        "log.cleanup.policy",
        "log.segment.delete.delay.ms",
        "producer.id.expiration.ms",
    }
)
# Topic configs that are lists (APPEND / SUBTRACT apply to them only).
_LIST_CONFIGS = frozenset(
    {"cleanup.policy", "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)


def _error(code: ErrorCode, message: str) -> KafkaStorageError:
    return KafkaStorageError(code, message)


def _apply_ops(
    current: dict[str, str],
    ops: Iterable[AlterOp],
    list_configs: Set[str],
    effective: Callable[[str], str | None],
) -> dict[str, str | None]:
    """IncrementalAlterConfigs: the new full set from ``current`` and (name, op, value).
    APPEND / SUBTRACT start from the value in force (``effective(name)``), as in Kafka."""
    out: dict[str, str | None] = dict(current)
    for name, op, value in ops:
        if op == SET:
            out[name] = value
        elif op == DELETE:
            out.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if name not in list_configs:
                raise _error(
                    ErrorCode.invalid_config, f"config {name} is not a list; APPEND and SUBTRACT do not apply"
                )
            base = out[name] if name in out else effective(name)
            items = [v for v in (base or "").split(",") if v]
            given = [v.strip() for v in (value or "").split(",") if v.strip()]
            if op == APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            out[name] = ",".join(items)
        else:
            raise _error(ErrorCode.invalid_request, f"unknown config operation {op}")
    return out


class DynamicConfigs:
    def __init__(
        self,
        data_dir: str,
        config: BrokerConfig,
        logs: LogManager,
        telemetry: ClientTelemetry,
        write: Callable[[str, bytes], None] = atomic_write,
    ) -> None:
        """``telemetry``: where CLIENT_METRICS subscriptions take effect; ``write``: how the file
        is replaced (the broker's ``Durability.write_file``: off the event loop, the answer
        waits for it)."""
        self.path = os.path.join(data_dir, FILE_NAME)
        self._write = write
        self.config = config
        self.logs = logs
        self.telemetry = telemetry
        #: CLIENT_METRICS subscriptions as set: name -> {config: value}
        self.client_metrics: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        """Apply the persisted dynamic broker configs (before the logs open). A damaged file
        is logged and ignored: the static configuration applies."""
        try:
            with open(self.path, "rb") as f:
                data = json.loads(f.read().decode("utf-8"))
            for level in (DYNAMIC_BROKER, DYNAMIC_DEFAULT):
                values = {k: BrokerConfig.parse(k, v) for k, v in (data.get(level) or {}).items()}
                self.config.set_dynamic(level, values)
            for name, configs in (data.get(_CLIENT_METRICS_KEY) or {}).items():
                self.telemetry.set_subscription(name, configs)
                self.client_metrics[name] = dict(configs)
        except FileNotFoundError:
            return
        except (ValueError, UnicodeDecodeError, AttributeError, ConfigError, KafkaStorageError) as exc:
            log.warning(
                "dynamic broker config file is damaged; using the static configuration "
                "(set the values again with kafka-configs.sh)",
                path=self.path,
                error=str(exc),
            )

    # ------------------------------------------------------------------ one resource
    def alter_result(
        self, resource: ConfigResource, ops: list[AlterOp], *, incremental: bool, validate_only: bool
    ) -> dict[str, Any]:
        """The per-resource answer of (Incremental)AlterConfigs."""
        out = dict(
            error_code=ErrorCode.none,
            error_message=None,
            resource_type=resource.resource_type,
            resource_name=resource.resource_name,
        )
        try:
            self.alter(
                resource.resource_type,
                resource.resource_name,
                ops,
                incremental=incremental,
                validate_only=validate_only,
            )
        except KafkaStorageError as exc:
            out.update(error_code=exc.error_code, error_message=exc.message)
        return out

    def alter(
        self,
        resource_type: int,
        resource_name: str,
        ops: list[AlterOp],
        *,
        incremental: bool,
        validate_only: bool,
    ) -> None:
        """``ops``: [(name, op, value)]; for AlterConfigs (not incremental) every op is SET and
        the result replaces the whole set. Raises KafkaStorageError."""
        names = [name for name, _, _ in ops]
        if len(set(names)) != len(names):
            raise _error(
                ErrorCode.invalid_request, f"duplicate config names in the request for {resource_name!r}"
            )
        if resource_type == TOPIC:
            self._alter_topic(resource_name, ops, incremental, validate_only)
        elif resource_type == BROKER:
            self._alter_broker(resource_name, ops, incremental, validate_only)
        elif resource_type == CLIENT_METRICS:
            self._alter_client_metrics(resource_name, ops, incremental, validate_only)
        else:
            raise _error(ErrorCode.invalid_request, f"resource type {resource_type} is not supported")

    def _alter_topic(self, name: str, ops: list[AlterOp], incremental: bool, validate_only: bool) -> None:
        info = self.logs.topics.get(name)
        if info is None:
            raise _error(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
        for cname, op, value in ops:
            if op != DELETE and value is None:
                raise _error(ErrorCode.invalid_config, f"null value not supported for topic config {cname}")
        base = info.configs if incremental else {}
        in_force = self.logs.describe_topic_configs(name)
        new = validate_topic_configs(
            _apply_ops(base, ops, _LIST_CONFIGS, lambda n: in_force.get(n, ("",))[0])
        )
        if validate_only:
            return
        self.logs.set_topic_configs(name, new)
        log.info("topic configs changed", topic=name, configs=new)

    def _alter_broker(self, name: str, ops: list[AlterOp], incremental: bool, validate_only: bool) -> None:
        if name == "":
            level = DYNAMIC_DEFAULT
        elif name == str(self.logs.node_id):
            level = DYNAMIC_BROKER
        else:
            raise _error(
                ErrorCode.invalid_request, f"unknown broker {name}; this is node {self.logs.node_id}"
            )
        fixed = sorted(n for n, _, _ in ops if n in PROPERTIES and n not in DYNAMIC_BROKER_CONFIGS)
        if fixed:
            raise _error(
                ErrorCode.invalid_request, f"cannot update these configs dynamically: {', '.join(fixed)}"
            )
        unknown = sorted(n for n, _, _ in ops if n not in PROPERTIES)
        if unknown:
            raise _error(ErrorCode.invalid_config, f"unknown broker configs: {', '.join(unknown)}")
        current = {k: _text(v) for k, v in self.config.dynamic(level).items()}
        raw = _apply_ops(
            current if incremental else {}, ops, {"log.cleanup.policy"}, lambda n: _text(self.config[n])
        )
        try:
            parsed = {k: BrokerConfig.parse(k, v) for k, v in raw.items()}
        except ConfigError as exc:
            raise _error(ErrorCode.invalid_config, str(exc)) from None
        if validate_only:
            return
        self.config.set_dynamic(level, parsed)
        self._save()
        self.logs.refresh_log_configs()
        log.info("dynamic broker configs changed", level=level, configs=raw)

    def _alter_client_metrics(
        self, name: str, ops: list[AlterOp], incremental: bool, validate_only: bool
    ) -> None:
        """Kafka validates the subscription's whole new set (ClientMetricsConfigs.validate)."""
        current = self.client_metrics.get(name, {})
        raw = _apply_ops(
            current if incremental else {}, ops, _CLIENT_METRICS_LISTS, lambda n: current.get(n, "")
        )
        new = {k: v or "" for k, v in raw.items()}
        validate_client_metrics(name, new)
        if validate_only:
            return
        if new:
            self.client_metrics[name] = new
        else:
            self.client_metrics.pop(name, None)
        self.telemetry.set_subscription(name, new)
        self._save()
        log.info("client metrics subscription changed", name=name, configs=new)

    def _save(self) -> None:
        data: dict[str, Any] = {
            level: {k: _text(v) for k, v in self.config.dynamic(level).items()}
            for level in (DYNAMIC_BROKER, DYNAMIC_DEFAULT)
        }
        if self.client_metrics:
            data[_CLIENT_METRICS_KEY] = self.client_metrics
        self._write(self.path, json.dumps(data, indent=1, sort_keys=True).encode())


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def alter_configs_response(
    ctx: RequestContext,
    req: AlterConfigsRequest | IncrementalAlterConfigsRequest,
    operations: Callable[[Any], list[AlterOp]],
    *,
    incremental: bool,
) -> Any:
    """The one path of AlterConfigs and IncrementalAlterConfigs: per resource, authorization
    (Kafka: ALTER_CONFIGS on the topic, or on the cluster for a broker), then validation and the
    change (``DynamicConfigs.alter``). ``operations(resource)`` gives its [(name, op, value)]."""
    from minibroker.broker.security.acls import Operation
    from minibroker.broker.security.checks import config_resource_denial, denied_config_result

    dynamic = ctx.broker.dynamic_configs
    responses = []
    for r in req.resources:
        # authorization
        denial = config_resource_denial(ctx, r.resource_type, r.resource_name, Operation.ALTER_CONFIGS)
        responses.append(
            denied_config_result(r, denial)
            if denial
            else dynamic.alter_result(
                r, operations(r), incremental=incremental, validate_only=req.validate_only
            )
        )
    return ctx.response(throttle_time_ms=0, responses=responses)
