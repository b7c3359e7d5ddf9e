"""KIP-714 client telemetry, as Kafka 4.4's ClientMetricsManager: CLIENT_METRICS subscriptions
(config resources of type 16), client instances and their subscription, the checks of
GetTelemetrySubscriptions (71) and PushTelemetry (72), and the pushed metrics decoded.

* A subscription (``kafka-client-metrics.sh --alter --name N --metrics ... --interval ...
  --match ...``) has ``metrics`` (name prefixes; ``*`` or an empty prefix: all), ``interval.ms``
  (100..3600000, default 300000) and ``match`` (``key=regex`` on client_instance_id, client_id,
  client_software_name, client_software_version, client_source_address, client_source_port; all
  must match in full; none: every client). Kept by DynamicConfigs with the other dynamic configs.
* A client instance gets the union of the metrics of the subscriptions it matches and the
  smallest of their intervals, and a subscription id (CRC-32C of the metrics and interval, XOR
  the instance id's hash, as Kafka); a subscription change re-evaluates every instance at its
  next request, so its old subscription id gets UNKNOWN_SUBSCRIPTION_ID.
* Kafka's throttle: a GetTelemetrySubscriptions within the push interval of the instance's last
  request, or a push within the interval of its last push (the first push after a Get is always
  accepted: clients add jitter), gets THROTTLING_QUOTA_EXCEEDED.
* Instead of an exporter plugin, each push is decoded (OTLP MetricsData, the
  `opentelemetry-proto` package) and merged into what the instance pushed before: every metric's
  latest point, where a delta sum (the temporality this broker asks for, as Kafka) is added to the
  total of the pushes before it, so a counter reads as its running total even when the last push
  carried no change (a terminating push right after a periodic one). Kept with the instance:
  Prometheus families on the metrics
  endpoint and ``GET /telemetry`` (JSON, what ``minibroker.testing`` reads). Bounded as Kafka's
  cache: at most 16384 instances (least recently used dropped), an instance expires
  max(60 s, 3 x its push interval) after its last request.
"""

from __future__ import annotations

import re
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import structlog
from minibroker.common.clock import Clock
from minibroker.protocol.crc import crc32c
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError

if TYPE_CHECKING:
    from minibroker.broker.context import RequestContext

log = structlog.get_logger(__name__)

CLIENT_METRICS = 16  # ConfigResource.Type
METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
CONFIG_NAMES = (METRICS, INTERVAL_MS, MATCH)  # Kafka's ClientMetricsConfigs.configDef(), in order
DEFAULT_INTERVAL_MS = 300_000
_MIN_INTERVAL_MS, _MAX_INTERVAL_MS = 100, 3_600_000
ALL_METRICS = "*"
MATCH_KEYS = frozenset(
    {
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    }
)
# Kafka's order: ZSTD, LZ4, GZIP, SNAPPY (CompressionType ids)
ACCEPTED_COMPRESSION = (4, 3, 1, 2)
_KNOWN_COMPRESSION = frozenset({0, 1, 2, 3, 4})
CACHE_MAX_SIZE = 16384
CACHE_EXPIRY_MS = 60_000
_ZERO = uuid.UUID(int=0)
_RESERVED = frozenset({_ZERO, uuid.UUID(int=1)})  # Uuid.RESERVED: ZERO_UUID and METADATA_TOPIC_ID


def _error(code: ErrorCode, message: str) -> KafkaStorageError:
    return KafkaStorageError(code, message)


def config_list(text: str) -> list[str]:
    """Kafka's ConfigDef LIST: comma separated, blanks around commas dropped; "" is empty."""
    text = text.strip()
    return [] if not text else [v for v in re.split(r"\s*,\s*", text)]


class Subscription(NamedTuple):
    name: str
    metrics: frozenset[str]
    interval_ms: int
    match: Mapping[str, re.Pattern[str]]


def parse_match(patterns: Iterable[str]) -> dict[str, re.Pattern[str]]:
    """``key=regex`` entries (Kafka's parseMatchingPatterns; Python regex syntax)."""
    out: dict[str, re.Pattern[str]] = {}
    for pattern in patterns:
        parts = pattern.split("=")
        while len(parts) > 1 and parts[-1] == "":  # Java's split drops trailing empty strings
            parts.pop()
        key = parts[0].strip()
        if len(parts) != 2 or key not in MATCH_KEYS:
            raise _error(ErrorCode.invalid_config, f"Illegal client matching pattern: {pattern}")
        try:
            out[key] = re.compile(parts[1].strip())
        except re.error:
            raise _error(ErrorCode.invalid_config, f"Illegal client matching pattern: {pattern}") from None
    return out


def validate(name: str, configs: Mapping[str, str]) -> Subscription | None:
    """A subscription's configs checked as Kafka's ClientMetricsConfigs.validate; None for an
    empty set (the subscription is removed). Raises KafkaStorageError."""
    if not name:
        raise _error(ErrorCode.invalid_request, "Subscription name can't be empty")
    for key in configs:
        if key not in CONFIG_NAMES:
            raise _error(ErrorCode.invalid_request, f"Unknown client metrics configuration: {key}")
    interval = DEFAULT_INTERVAL_MS
    if INTERVAL_MS in configs:
        text = (configs[INTERVAL_MS] or "").strip()
        try:
            interval = int(text)
            if not -(2**31) <= interval < 2**31:
                raise ValueError
        except ValueError:
            raise _error(
                ErrorCode.invalid_config,
                f"Invalid value {text} for configuration {INTERVAL_MS}: Not a number of type INT",
            ) from None
        if not _MIN_INTERVAL_MS <= interval <= _MAX_INTERVAL_MS:
            raise _error(
                ErrorCode.invalid_request,
                f"Invalid value {interval} for {INTERVAL_MS}, "
                "interval must be between 100 and 3600000 (1 hour)",
            )
    match = parse_match(config_list(configs.get(MATCH) or ""))
    if not configs:
        return None
    return Subscription(name, frozenset(config_list(configs.get(METRICS) or "")), interval, match)


def _java_uuid_hash(value: uuid.UUID) -> int:
    """Kafka's Uuid.hashCode: the two halves XORed, folded to 32 bits (signed)."""
    h = (value.int >> 64) ^ (value.int & 0xFFFFFFFFFFFFFFFF)
    folded = ((h >> 32) ^ h) & 0xFFFFFFFF
    return folded


def subscription_id(metrics: Iterable[str], interval_ms: int, instance: uuid.UUID) -> int:
    """CRC-32C of "[m1, m2]" + interval, XOR the instance id's hash (Kafka's computeSubscriptionId;
    Kafka's set order is a hash order, this one sorted: the id is an opaque token either way)."""
    text = "[" + ", ".join(sorted(metrics)) + "]" + str(interval_ms)
    value = (crc32c(text.encode()) ^ _java_uuid_hash(instance)) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


@dataclass(slots=True)
class PushedMetric:
    """One data point of a push: the metric's name, its point attributes, its value."""

    name: str
    value: float
    attributes: dict[str, str]
    kind: str  # "sum" (a counter; ``monotonic``), "gauge", "histogram" (value: the count)
    monotonic: bool = False
    delta: bool = False  # a sum with delta temporality: the change since the previous push

    @property
    def key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        return self.name, tuple(sorted(self.attributes.items()))


def merge_points(before: list[PushedMetric], pushed: list[PushedMetric]) -> list[PushedMetric]:
    """What an instance has pushed so far: `before` updated with a new push's points, each delta
    sum added to the total it had (then kept as that total, no longer a delta)."""
    merged = {m.key: m for m in before}
    for m in pushed:
        if m.delta:
            total = merged.get(m.key)
            m.value += total.value if total is not None else 0.0
            m.delta = False
        merged[m.key] = m
    return list(merged.values())


@dataclass(slots=True)
class Instance:
    """One client instance as Kafka's ClientMetricsInstance, plus its latest push, decoded."""

    instance_id: uuid.UUID
    attributes: dict[str, str | None]
    subscription_id: int
    version: int
    metrics: tuple[str, ...]
    push_interval_ms: int
    expires_ms: int = 0
    last_get_ms: int = 0
    last_push_ms: int = 0
    terminating: bool = False
    pushes: int = 0
    pushed_at_ms: int = -1
    resource: dict[str, str] = field(default_factory=dict)
    pushed: list[PushedMetric] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "client_instance_id": str(self.instance_id),
            **{k: v for k, v in self.attributes.items() if k != "client_instance_id"},
            "subscription_id": self.subscription_id,
            "requested_metrics": list(self.metrics),
            "push_interval_ms": self.push_interval_ms,
            "pushes": self.pushes,
            "pushed_at_ms": self.pushed_at_ms,
            "terminating": self.terminating,
            "resource": dict(self.resource),
            "metrics": [
                {
                    "name": m.name,
                    "value": m.value,
                    "attributes": m.attributes,
                    "kind": m.kind,
                    "monotonic": m.monotonic,
                }
                for m in self.pushed
            ],
        }


class ClientTelemetry:
    """Subscriptions and client instances (one per broker; all calls on the event loop)."""

    def __init__(self, clock: Clock, max_bytes: int, *, advertise: bool = False) -> None:
        """``max_bytes``: ``telemetry.max.bytes``; ``advertise``: whether ApiVersions lists 71/72
        (Kafka: only with a telemetry exporter configured)."""
        self.clock = clock
        self.max_bytes = max_bytes
        self.advertise = advertise
        self.subscriptions: dict[str, Subscription] = {}
        self._version = 0
        self.instances: OrderedDict[uuid.UUID, Instance] = OrderedDict()

    # ------------------------------------------------------------------ subscriptions
    def set_subscription(self, name: str, configs: Mapping[str, str]) -> None:
        """Replace (or, with no configs, remove) a subscription: already validated."""
        sub = validate(name, configs)
        if sub is None:
            if self.subscriptions.pop(name, None) is not None:
                self._version += 1
            return
        self.subscriptions[name] = sub
        self._version += 1

    # ------------------------------------------------------------------ instances
    def _expire(self, now: int) -> None:
        while self.instances:
            first = next(iter(self.instances.values()))
            if first.expires_ms > now and len(self.instances) <= CACHE_MAX_SIZE:
                return
            self.instances.popitem(last=False)

    def _evaluate(self, instance_id: uuid.UUID, attributes: dict[str, str | None]) -> Instance:
        interval = DEFAULT_INTERVAL_MS
        metrics: set[str] = set()
        everything = False
        for sub in self.subscriptions.values():
            if all(
                (value := attributes.get(key)) is not None and pattern.fullmatch(value) is not None
                for key, pattern in sub.match.items()
            ):
                everything = everything or ALL_METRICS in sub.metrics
                metrics |= sub.metrics
                interval = min(interval, sub.interval_ms)
        if everything:
            metrics = {ALL_METRICS}
        return Instance(
            instance_id,
            attributes,
            subscription_id(metrics, interval, instance_id),
            self._version,
            tuple(sorted(metrics)),
            interval,
        )

    def instance(self, instance_id: uuid.UUID, attributes: dict[str, str | None]) -> Instance:
        """The cached instance (re-evaluated after a subscription change) or a new one; its
        expiry moves to now + max(60 s, 3 x push interval)."""
        now = self.clock.wall_ms()
        self._expire(now)
        inst = self.instances.get(instance_id)
        if inst is None:
            inst = self._evaluate(instance_id, {**attributes, "client_instance_id": str(instance_id)})
        elif inst.version < self._version:
            fresh = self._evaluate(instance_id, inst.attributes)
            fresh.pushes, fresh.pushed_at_ms, fresh.resource, fresh.pushed = (
                inst.pushes,
                inst.pushed_at_ms,
                inst.resource,
                inst.pushed,
            )
            inst = fresh
        inst.expires_ms = now + max(CACHE_EXPIRY_MS, 3 * inst.push_interval_ms)
        self.instances[instance_id] = inst
        self.instances.move_to_end(instance_id)
        self._expire(now)
        return inst

    def new_instance_id(self) -> uuid.UUID:
        while True:
            candidate = uuid.uuid4()
            if candidate not in self.instances and candidate not in _RESERVED:
                return candidate

    # ------------------------------------------------------------------ the two requests
    def get_subscriptions(
        self, requested: uuid.UUID | None, attributes: dict[str, str | None]
    ) -> dict[str, Any]:
        """GetTelemetrySubscriptions: the response's fields (error_code set)."""
        instance_id = requested if requested is not None and requested != _ZERO else self.new_instance_id()
        inst = self.instance(instance_id, attributes)
        now = self.clock.wall_ms()
        if now - max(inst.last_get_ms, inst.last_push_ms) < inst.push_interval_ms:
            return dict(error_code=ErrorCode.throttling_quota_exceeded)
        inst.last_get_ms = now
        return dict(
            error_code=ErrorCode.none,
            client_instance_id=instance_id,
            subscription_id=inst.subscription_id,
            accepted_compression_types=ACCEPTED_COMPRESSION,
            push_interval_ms=inst.push_interval_ms,
            telemetry_max_bytes=self.max_bytes,
            delta_temporality=True,
            requested_metrics=list(inst.metrics),
        )

    def push(
        self,
        instance_id: uuid.UUID | None,
        attributes: dict[str, str | None],
        sub_id: int,
        terminating: bool,
        compression: int,
        payload: bytes,
    ) -> ErrorCode:
        """PushTelemetry: Kafka's checks in Kafka's order, then the payload decoded and kept."""
        if instance_id is None or instance_id in _RESERVED:
            return ErrorCode.invalid_request
        inst = self.instance(instance_id, attributes)
        now = self.clock.wall_ms()
        try:
            if inst.terminating:
                return ErrorCode.invalid_request
            accept = inst.last_get_ms > inst.last_push_ms or now - inst.last_push_ms >= inst.push_interval_ms
            if accept:
                inst.last_push_ms = now
            elif not terminating:
                return ErrorCode.throttling_quota_exceeded
            if sub_id != inst.subscription_id:
                return ErrorCode.unknown_subscription_id
            if compression not in _KNOWN_COMPRESSION:
                return ErrorCode.unsupported_compression_type
            if len(payload) > self.max_bytes:
                return ErrorCode.telemetry_too_large
        finally:
            inst.terminating = terminating
        if payload:
            # Kafka hands the payload to its exporter plugins and answers INVALID_RECORD (or
            # TELEMETRY_TOO_LARGE once decompressed) when one fails; without any, as by default,
            # nothing reads it. Advertising 71/72, this broker is the exporter.
            try:
                resource, points = decode(payload, compression, self.max_bytes)
            except TelemetryTooLarge:
                return ErrorCode.telemetry_too_large if self.advertise else ErrorCode.none
            except Exception as exc:  # noqa: BLE001 - any undecodable payload: INVALID_RECORD, as Kafka
                log.info("undecodable telemetry push", client_instance_id=str(instance_id), error=str(exc))
                return ErrorCode.invalid_record if self.advertise else ErrorCode.none
            inst.resource, inst.pushed = resource, merge_points(inst.pushed, points)
            inst.pushes += 1
            inst.pushed_at_ms = now
        return ErrorCode.none

    # ------------------------------------------------------------------ read-back
    def snapshot(self) -> list[dict[str, Any]]:
        """Every live instance, with its latest push (``GET /telemetry``)."""
        self._expire(self.clock.wall_ms())
        return [inst.as_json() for inst in self.instances.values()]


class TelemetryTooLarge(Exception):
    pass


def _value(any_value: Any) -> str:
    kind = any_value.WhichOneof("value")
    return "" if kind is None else str(getattr(any_value, kind))


_DELTA = 1  # OTLP's AGGREGATION_TEMPORALITY_DELTA


def decode(payload: bytes, compression: int, limit: int) -> tuple[dict[str, str], list[PushedMetric]]:
    """An OTLP MetricsData payload (decompressed first, at most ``limit`` bytes): the resource
    attributes and every data point. Raises on anything not OTLP."""
    from minibroker.protocol.records.compression import DecompressedTooLarge, decompress
    from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

    data: bytes = payload
    if compression:
        try:
            data = bytes(decompress(compression, payload, limit))
        except DecompressedTooLarge:
            raise TelemetryTooLarge from None
    message = MetricsData()
    message.ParseFromString(data)
    resource: dict[str, str] = {}
    points: list[PushedMetric] = []
    for rm in message.resource_metrics:
        resource.update({a.key: _value(a.value) for a in rm.resource.attributes})
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind = metric.WhichOneof("data")
                if kind in ("sum", "gauge"):
                    monotonic = kind == "sum" and metric.sum.is_monotonic
                    delta = kind == "sum" and metric.sum.aggregation_temporality == _DELTA
                    for p in getattr(metric, kind).data_points:
                        value = p.as_double if p.WhichOneof("value") == "as_double" else float(p.as_int)
                        attrs = {a.key: _value(a.value) for a in p.attributes}
                        points.append(PushedMetric(metric.name, value, attrs, kind, monotonic, delta))
                elif kind in ("histogram", "exponential_histogram", "summary"):
                    for p in getattr(metric, kind).data_points:
                        attrs = {a.key: _value(a.value) for a in p.attributes}
                        points.append(PushedMetric(metric.name, float(p.count), attrs, "histogram"))
    return resource, points


def client_attributes(ctx: RequestContext) -> dict[str, str | None]:
    """What a subscription's ``match`` may test of the requesting client (Kafka's
    ClientMetricsInstanceMetadata): its client id, KIP-511 software name and version (from its
    ApiVersions request on this connection), source address and port."""
    session = ctx.session
    software = getattr(session, "client_software", None) or (None, None)
    host, _, port = ctx.peer.rpartition(":")
    return {
        "client_id": ctx.client_id,
        "client_software_name": software[0],
        "client_software_version": software[1],
        "client_source_address": host or None,
        "client_source_port": port or None,
    }
