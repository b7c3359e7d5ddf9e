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
from minibroker.broker.security.settings import listener_property
from minibroker.broker.telemetry import CLIENT_METRICS, ClientTelemetry
from minibroker.broker.telemetry import validate as validate_client_metrics
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.config import TOPIC_CONFIGS, validate_topic_configs
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

TOPIC, BROKER, GROUP = 2, 4, 32  # ConfigResource.Type
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # AlterConfigOp.OpType
FILE_NAME = "dynamic-broker-configs.json"
_CLIENT_METRICS_KEY = "client-metrics"  # the file's section of CLIENT_METRICS subscriptions
_CLIENT_METRICS_LISTS: frozenset[str] = frozenset()  # Kafka: APPEND/SUBTRACT on none (INVALID_CONFIG)

PER_BROKER, CLUSTER = "per-broker", "cluster-wide"  # Kafka's update modes
# Every broker config Kafka 4.4 lets AlterConfigs change at runtime: name -> (update mode, Kafka
# type, Kafka's default as DescribeConfigs shows it), from
# conformance/java/DynamicBrokerConfigNames.java (DynamicBrokerConfig's ALL_DYNAMIC_CONFIGS and
# DynamicConfig.Broker). Only a topic config's primary synonym is dynamic:
# log.retention.ms and log.roll.ms, not their .hours/.minutes forms. Those minibroker declares
# (broker/config.py) take effect as they do statically (the log.* defaults reach every topic at
# once); the others are stored, reported by DescribeConfigs, and reach the topic configs they
# are the default of (min.insync.replicas, compression.type, ...); the rest (thread counts,
# Kerberos, remote storage...) mean nothing on one process.
KAFKA_DYNAMIC_BROKER_CONFIGS: dict[str, tuple[str, str, str | None]] = {
    "background.threads": (CLUSTER, "INT", "10"),
    "compression.gzip.level": (CLUSTER, "INT", "-1"),
    "compression.lz4.level": (CLUSTER, "INT", "9"),
    "compression.type": (CLUSTER, "STRING", "producer"),
    "compression.zstd.level": (CLUSTER, "INT", "3"),
    "config.providers": (CLUSTER, "LIST", ""),
    "cordoned.log.dirs": (PER_BROKER, "LIST", ""),
    "errors.deadletterqueue.auto.create.topics.enable": (CLUSTER, "BOOLEAN", "false"),
    "errors.deadletterqueue.topic.name.prefix": (CLUSTER, "STRING", "dlq."),
    "follower.fetch.last.tiered.offset.enable": (CLUSTER, "BOOLEAN", "false"),
    "follower.replication.throttled.rate": (CLUSTER, "LONG", "9223372036854775807"),
    "group.consumer.assignment.interval.ms": (CLUSTER, "INT", "1000"),
    "group.consumer.assignor.offload.enable": (CLUSTER, "BOOLEAN", "true"),
    "group.coordinator.cached.buffer.max.bytes": (CLUSTER, "INT", "1048588"),
    "group.share.assignment.interval.ms": (CLUSTER, "INT", "1000"),
    "group.share.assignor.offload.enable": (CLUSTER, "BOOLEAN", "true"),
    "group.streams.assignment.interval.ms": (CLUSTER, "INT", "1000"),
    "group.streams.assignor.offload.enable": (CLUSTER, "BOOLEAN", "true"),
    "leader.replication.throttled.rate": (CLUSTER, "LONG", "9223372036854775807"),
    "listener.security.protocol.map": (
        PER_BROKER,
        "STRING",
        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
    ),
    "listeners": (PER_BROKER, "LIST", "PLAINTEXT://:9092"),
    "log.cleaner.backoff.ms": (CLUSTER, "LONG", "15000"),
    "log.cleaner.dedupe.buffer.size": (CLUSTER, "LONG", "134217728"),
    "log.cleaner.delete.retention.ms": (CLUSTER, "LONG", "86400000"),
    "log.cleaner.io.buffer.load.factor": (CLUSTER, "DOUBLE", "0.9"),
    "log.cleaner.io.buffer.size": (CLUSTER, "INT", "524288"),
    "log.cleaner.io.max.bytes.per.second": (CLUSTER, "DOUBLE", "1.7976931348623157E308"),
    "log.cleaner.max.compaction.lag.ms": (CLUSTER, "LONG", "9223372036854775807"),
    "log.cleaner.min.cleanable.ratio": (CLUSTER, "DOUBLE", "0.5"),
    "log.cleaner.min.compaction.lag.ms": (CLUSTER, "LONG", "0"),
    "log.cleaner.threads": (CLUSTER, "INT", "1"),
    "log.cleanup.policy": (CLUSTER, "LIST", "delete"),
    "log.flush.interval.messages": (CLUSTER, "LONG", "9223372036854775807"),
    "log.flush.interval.ms": (CLUSTER, "LONG", None),
    "log.index.interval.bytes": (CLUSTER, "INT", "4096"),
    "log.index.size.max.bytes": (CLUSTER, "INT", "10485760"),
    "log.local.retention.bytes": (CLUSTER, "LONG", "-2"),
    "log.local.retention.ms": (CLUSTER, "LONG", "-2"),
    "log.message.timestamp.after.max.ms": (CLUSTER, "LONG", "3600000"),
    "log.message.timestamp.before.max.ms": (CLUSTER, "LONG", "9223372036854775807"),
    "log.message.timestamp.type": (CLUSTER, "STRING", "CreateTime"),
    "log.preallocate": (CLUSTER, "BOOLEAN", "false"),
    "log.remote.copy.lag.bytes": (CLUSTER, "LONG", "-1"),
    "log.remote.copy.lag.ms": (CLUSTER, "LONG", "0"),
    "log.retention.bytes": (CLUSTER, "LONG", "-1"),
    "log.retention.ms": (CLUSTER, "LONG", None),
    "log.roll.jitter.ms": (CLUSTER, "LONG", None),
    "log.roll.ms": (CLUSTER, "LONG", None),
    "log.segment.bytes": (CLUSTER, "INT", "1073741824"),
    "log.segment.delete.delay.ms": (CLUSTER, "LONG", "60000"),
    "max.connection.creation.rate": (CLUSTER, "INT", "2147483647"),
    "max.connections": (CLUSTER, "INT", "2147483647"),
    "max.connections.per.ip": (CLUSTER, "INT", "2147483647"),
    "max.connections.per.ip.overrides": (CLUSTER, "STRING", ""),
    "max.decompressed.message.bytes": (CLUSTER, "INT", "2147483639"),
    "message.max.bytes": (CLUSTER, "INT", "1048588"),
    "metric.reporters": (CLUSTER, "LIST", "org.apache.kafka.common.metrics.JmxReporter"),
    "min.insync.replicas": (CLUSTER, "INT", "1"),
    "num.io.threads": (CLUSTER, "INT", "8"),
    "num.network.threads": (CLUSTER, "INT", "3"),
    "num.recovery.threads.per.data.dir": (CLUSTER, "INT", "2"),
    "num.replica.fetchers": (CLUSTER, "INT", "1"),
    "principal.builder.class": (
        PER_BROKER,
        "CLASS",
        "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
    ),
    "producer.id.expiration.ms": (CLUSTER, "INT", "86400000"),
    "remote.fetch.max.wait.ms": (CLUSTER, "INT", "500"),
    "remote.list.offsets.request.timeout.ms": (CLUSTER, "LONG", "30000"),
    "remote.log.index.file.cache.total.size.bytes": (CLUSTER, "LONG", "1073741824"),
    "remote.log.manager.copier.thread.pool.size": (CLUSTER, "INT", "10"),
    "remote.log.manager.copy.max.bytes.per.second": (CLUSTER, "LONG", "9223372036854775807"),
    "remote.log.manager.expiration.thread.pool.size": (CLUSTER, "INT", "10"),
    "remote.log.manager.fetch.max.bytes.per.second": (CLUSTER, "LONG", "9223372036854775807"),
    "remote.log.manager.follower.thread.pool.size": (CLUSTER, "INT", "2"),
    "remote.log.reader.threads": (CLUSTER, "INT", "10"),
    "replica.alter.log.dirs.io.max.bytes.per.second": (CLUSTER, "LONG", "9223372036854775807"),
    "sasl.enabled.mechanisms": (PER_BROKER, "LIST", "GSSAPI"),
    "sasl.jaas.config": (PER_BROKER, "PASSWORD", None),
    "sasl.kerberos.kinit.cmd": (PER_BROKER, "STRING", "/usr/bin/kinit"),
    "sasl.kerberos.min.time.before.relogin": (PER_BROKER, "LONG", "60000"),
    "sasl.kerberos.principal.to.local.rules": (PER_BROKER, "LIST", "DEFAULT"),
    "sasl.kerberos.service.name": (PER_BROKER, "STRING", None),
    "sasl.kerberos.ticket.renew.jitter": (PER_BROKER, "DOUBLE", "0.05"),
    "sasl.kerberos.ticket.renew.window.factor": (PER_BROKER, "DOUBLE", "0.8"),
    "sasl.login.refresh.buffer.seconds": (PER_BROKER, "SHORT", "300"),
    "sasl.login.refresh.min.period.seconds": (PER_BROKER, "SHORT", "60"),
    "sasl.login.refresh.window.factor": (PER_BROKER, "DOUBLE", "0.8"),
    "sasl.login.refresh.window.jitter": (PER_BROKER, "DOUBLE", "0.05"),
    "sasl.mechanism.inter.broker.protocol": (PER_BROKER, "STRING", "GSSAPI"),
    "share.coordinator.cached.buffer.max.bytes": (CLUSTER, "INT", "1048588"),
    "ssl.cipher.suites": (PER_BROKER, "LIST", ""),
    "ssl.client.auth": (PER_BROKER, "STRING", "none"),
    "ssl.enabled.protocols": (PER_BROKER, "LIST", "TLSv1.2,TLSv1.3"),
    "ssl.endpoint.identification.algorithm": (PER_BROKER, "STRING", "https"),
    "ssl.engine.factory.class": (PER_BROKER, "CLASS", None),
    "ssl.key.password": (PER_BROKER, "PASSWORD", None),
    "ssl.keymanager.algorithm": (PER_BROKER, "STRING", "SunX509"),
    "ssl.keystore.certificate.chain": (PER_BROKER, "PASSWORD", None),
    "ssl.keystore.key": (PER_BROKER, "PASSWORD", None),
    "ssl.keystore.location": (PER_BROKER, "STRING", None),
    "ssl.keystore.password": (PER_BROKER, "PASSWORD", None),
    "ssl.keystore.type": (PER_BROKER, "STRING", "JKS"),
    "ssl.protocol": (PER_BROKER, "STRING", "TLSv1.3"),
    "ssl.provider": (PER_BROKER, "STRING", None),
    "ssl.secure.random.implementation": (PER_BROKER, "STRING", None),
    "ssl.trustmanager.algorithm": (PER_BROKER, "STRING", "PKIX"),
    "ssl.truststore.certificates": (PER_BROKER, "PASSWORD", None),
    "ssl.truststore.location": (PER_BROKER, "STRING", None),
    "ssl.truststore.password": (PER_BROKER, "PASSWORD", None),
    "ssl.truststore.type": (PER_BROKER, "STRING", "JKS"),
    "transaction.partition.verification.enable": (CLUSTER, "BOOLEAN", "true"),
    "unclean.leader.election.enable": (CLUSTER, "BOOLEAN", "false"),
}
DYNAMIC_BROKER_CONFIGS = frozenset(KAFKA_DYNAMIC_BROKER_CONFIGS)
# Kafka's DYNAMIC_SECURITY_CONFIGS: changed only per listener (listener.name.<l>.<config>)
_SECURITY_CONFIGS = frozenset(
    {
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.truststore.certificates",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
    }
)
#: Written at the first start of a data directory, as Kafka 4.1+'s format writes it: the
#: cluster-wide dynamic default of min.insync.replicas (every topic reports it as
#: DYNAMIC_DEFAULT_BROKER_CONFIG).
FORMAT_TIME_DEFAULTS = ("min.insync.replicas",)
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
                values = {k: _parse(k, v) for k, v in (data.get(level) or {}).items()}
                self.config.set_dynamic(level, values)
            for name, configs in (data.get(_CLIENT_METRICS_KEY) or {}).items():
                self.telemetry.set_subscription(name, configs)
                self.client_metrics[name] = dict(configs)
        except FileNotFoundError:  # a new data directory: what Kafka's format writes
            self.config.set_dynamic(
                DYNAMIC_DEFAULT,
                {name: self.config.kafka_setting(name) or "1" for name in FORMAT_TIME_DEFAULTS},
            )
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
        from minibroker.broker.kafka_compat import kafka_knows

        names = [n for n, _, _ in ops]
        unknown = sorted(
            n for n in names if n not in PROPERTIES and n not in DYNAMIC_BROKER_CONFIGS and not kafka_knows(n)
        )
        if unknown:
            raise _error(ErrorCode.invalid_config, f"unknown broker configs: {', '.join(unknown)}")
        fixed = sorted(n for n in names if n not in DYNAMIC_BROKER_CONFIGS and not _per_listener(n))
        if fixed:
            raise _error(
                ErrorCode.invalid_request, f"cannot update these configs dynamically: {', '.join(fixed)}"
            )
        unprefixed = sorted(n for n in names if n in _SECURITY_CONFIGS)
        if unprefixed:
            raise _error(
                ErrorCode.invalid_request,
                "these security configs can be dynamically updated only per-listener using the "
                f"listener prefix: {', '.join(unprefixed)}",
            )
        per_broker = sorted(
            n
            for n in names
            if _per_listener(n) or KAFKA_DYNAMIC_BROKER_CONFIGS.get(n, ("", "", None))[0] == PER_BROKER
        )
        if level == DYNAMIC_DEFAULT and per_broker:
            raise _error(
                ErrorCode.invalid_request,
                "cannot update these configs at default cluster level, broker id must be specified: "
                + ", ".join(per_broker),
            )
        current = {k: _text(v) for k, v in self.config.dynamic(level).items()}
        raw = _apply_ops(
            current if incremental else {}, ops, _BROKER_LISTS, lambda n: _in_force(self.config, n)
        )
        try:
            parsed = {k: _parse(k, v) for k, v in raw.items()}
        except ConfigError as exc:  # Kafka: INVALID_REQUEST "Invalid config value for resource"
            raise _error(ErrorCode.invalid_request, str(exc)) from None
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


_BROKER_LISTS = frozenset(n for n, (_, kind, _) in KAFKA_DYNAMIC_BROKER_CONFIGS.items() if kind == "LIST")
_LISTENER_PREFIX = "listener.name."


def _per_listener(name: str) -> bool:
    """``listener.name.<listener>.<config>``: dynamic, per broker, in Kafka."""
    return name.startswith(_LISTENER_PREFIX)


def _in_force(config: BrokerConfig, name: str) -> str:
    try:
        return _text(config[name])
    except KeyError:  # a Kafka config minibroker does not declare, not set dynamically
        return ""


def _parse(name: str, raw: str | None) -> Any:
    """A dynamic value: parsed as minibroker's property where it declares one; otherwise
    checked against Kafka's type and kept as text."""
    if name in PROPERTIES or listener_property(name) is not None:
        return BrokerConfig.parse(name, raw)
    text = "" if raw is None else str(raw).strip()
    kind = KAFKA_DYNAMIC_BROKER_CONFIGS.get(name, ("", "STRING", None))[1]
    try:
        if kind in ("INT", "LONG", "SHORT"):
            bits = {"INT": 31, "LONG": 63, "SHORT": 15}[kind]
            if not -(2**bits) <= int(text) < 2**bits:
                raise ValueError
        elif kind == "DOUBLE":
            float(text)
        elif kind == "BOOLEAN" and text.lower() not in ("true", "false"):
            raise ValueError
    except ValueError:
        raise ConfigError(
            f"Invalid value {text} for configuration {name}: Not a number of type {kind}"
        ) from None
    for topic_config in _TOPIC_DEFAULT_OF.get(name, ()):  # Kafka: LogConfig's rules for a log default
        try:
            validate_topic_configs({topic_config: text})
        except KafkaStorageError as exc:
            raise ConfigError(f"{name}: {exc.message}") from None
    return text


#: The topic configs a broker config is the default of (compression.type, min.insync.replicas...).
_TOPIC_DEFAULT_OF: dict[str, list[str]] = {}
for _topic_name, _definition in TOPIC_CONFIGS.items():
    for _broker_name in _definition.broker_names:
        if isinstance(_broker_name, str):
            _TOPIC_DEFAULT_OF.setdefault(_broker_name, []).append(_topic_name)


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
        # GROUP resources (type 32) are the group config store's (broker/group_configs.py)
        store = ctx.broker.group_configs if r.resource_type == GROUP else dynamic
        responses.append(
            denied_config_result(r, denial)
            if denial
            else store.alter_result(
                r, operations(r), incremental=incremental, validate_only=req.validate_only
            )
        )
    return ctx.response(throttle_time_ms=0, responses=responses)
