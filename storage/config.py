"""Topic configs under Apache Kafka's names, and the effective config of a partition log.

A topic stores only its overrides (what CreateTopics / AlterConfigs set). The effective value of
every topic config is the override if there is one, else the broker default under its broker
name (``segment.bytes`` <- ``log.segment.bytes``...), else Kafka's built-in default. Keeping the
overrides separate is what lets DescribeConfigs say which values are defaults and lets a later
change of a broker default reach topics that never overrode it.

Kafka accepts only known topic config names (INVALID_CONFIG otherwise). The ones this broker acts
on are in ``LogConfig``; the rest are validated, stored and reported but have no effect (one
replica, no tiered storage; see ``LogConfig`` for what is in effect).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.segment_files import DEFAULT_MAX_OPEN_SEGMENT_FILES

__all__ = [
    "LogConfig",
    "LogManagerSettings",
    "TOPIC_CONFIGS",
    "validate_topic_configs",
    "effective_topic_configs",
    "broker_value",
    "default_origin",
    "builtin_default",
    "check_of",
    "LONG_MAX",
    "INTERNAL_SEGMENT_BYTES",
]

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
# segment.bytes of the internal topics (offsets.topic.segment.bytes,
# transaction.state.log.segment.bytes); Kafka's 100 MiB would leave them uncompacted for long.
INTERNAL_SEGMENT_BYTES = 1 << 20


def broker_value(config: Any, name: str) -> Any:
    """A broker property from a dict or broker.config.BrokerConfig; None if absent/unset."""
    if config is None:
        return None
    try:
        return config[name]
    except (KeyError, TypeError):
        return None


class LogManagerSettings(NamedTuple):
    """The broker-level settings a LogManager reads itself (topic defaults, which a broker may
    change at runtime, are read through ``LogConfig.from_configs``). Built once, by the broker
    (``from_config``)."""

    node_id: int = 1
    num_partitions: int = 1  # of a topic created without a count
    max_open_segment_files: int = DEFAULT_MAX_OPEN_SEGMENT_FILES  # minibroker.max.open.segment.files
    producer_id_expiration_ms: int = 86_400_000
    offsets_segment_bytes: int = INTERNAL_SEGMENT_BYTES  # offsets.topic.segment.bytes
    transaction_segment_bytes: int = INTERNAL_SEGMENT_BYTES  # transaction.state.log.segment.bytes

    @classmethod
    def from_config(cls, config: Any) -> LogManagerSettings:
        """From the broker config (or a dict of broker properties: tools and tests); absent
        properties keep the defaults above."""
        defaults = cls()

        def number(name: str, default: int) -> int:
            value = broker_value(config, name)
            return default if value is None else int(value)

        return cls(
            node_id=number("node.id", defaults.node_id),
            num_partitions=number("num.partitions", defaults.num_partitions),
            max_open_segment_files=number(
                "minibroker.max.open.segment.files", defaults.max_open_segment_files
            ),
            producer_id_expiration_ms=number("producer.id.expiration.ms", defaults.producer_id_expiration_ms),
            # 0 (unset) falls back too, as Kafka's internal topics never use 0
            offsets_segment_bytes=number("offsets.topic.segment.bytes", 0) or INTERNAL_SEGMENT_BYTES,
            transaction_segment_bytes=number("transaction.state.log.segment.bytes", 0)
            or INTERNAL_SEGMENT_BYTES,
        )


class _Range:
    """Parses a number of ``kind`` (int or float) within [lo, hi]; ``doc`` says so."""

    __slots__ = ("kind", "lo", "hi", "doc")

    def __init__(self, kind: Callable[[str], Any], lo: Any, hi: Any = LONG_MAX) -> None:
        self.kind, self.lo, self.hi = kind, lo, hi
        self.doc = f"in [{lo}, {hi}]"

    def __call__(self, raw: Any) -> Any:
        v = self.kind(str(raw).strip())
        if not self.lo <= v <= self.hi:
            raise ValueError(f"must be {self.doc}")
        return v


class _OneOf:
    """Parses one of ``choices`` (``separated``: a comma-separated list of them)."""

    __slots__ = ("choices", "separated", "doc")

    def __init__(self, *choices: str, separated: bool = False) -> None:
        self.choices, self.separated = choices, separated
        self.doc = ("a list of " if separated else "one of ") + ", ".join(choices)

    def __call__(self, raw: Any) -> str:
        parts = (
            [p.strip() for p in str(raw).split(",") if p.strip()] if self.separated else [str(raw).strip()]
        )
        if any(p not in self.choices for p in parts):
            raise ValueError(f"must be {self.doc}")
        return ",".join(parts)


class _Bool:
    """true or false, in any case (Kafka's ConfigDef BOOLEAN)."""

    __slots__ = ()
    doc = "true or false"

    def __call__(self, raw: Any) -> bool:
        low = str(raw).strip().lower()
        if low not in ("true", "false"):
            raise ValueError(f"must be {self.doc}")
        return low == "true"


_bool = _Bool()


def _any(raw: Any) -> str:
    return str(raw)


class _Scaled:
    """A broker property in coarser units (log.roll.hours...), read in milliseconds."""

    __slots__ = ("property", "factor")

    def __init__(self, name: str, factor: int) -> None:
        self.property, self.factor = name, factor

    def __call__(self, config: Any) -> int | None:
        v = broker_value(config, self.property)
        return None if v is None else int(v) * self.factor


def _int(lo: int, hi: int = LONG_MAX) -> _Range:
    return _Range(int, lo, hi)


def _hours(name: str) -> _Scaled:
    return _Scaled(name, 3_600_000)


def _minutes(name: str) -> _Scaled:
    return _Scaled(name, 60_000)


class TopicConfigDef(NamedTuple):
    name: str
    parse: Callable[[str], Any]
    default: str  # Kafka's built-in default, as a string
    broker_names: tuple[str | _Scaled, ...] = ()  # broker properties giving the default, in order


_DAY_MS = 86_400_000
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    d.name: d
    for d in [
        TopicConfigDef("segment.bytes", _int(14, INT_MAX), "1073741824", ("log.segment.bytes",)),
        TopicConfigDef("segment.ms", _int(1), str(7 * _DAY_MS), ("log.roll.ms", _hours("log.roll.hours"))),
        TopicConfigDef(
            "segment.jitter.ms", _int(0), "0", ("log.roll.jitter.ms", _hours("log.roll.jitter.hours"))
        ),
        TopicConfigDef("segment.index.bytes", _int(4, INT_MAX), "10485760", ("log.index.size.max.bytes",)),
        TopicConfigDef("index.interval.bytes", _int(0, INT_MAX), "4096", ("log.index.interval.bytes",)),
        TopicConfigDef(
            "message.timestamp.type",
            _OneOf("CreateTime", "LogAppendTime"),
            "CreateTime",
            ("log.message.timestamp.type",),
        ),
        TopicConfigDef("max.message.bytes", _int(0, INT_MAX), "1048588", ("message.max.bytes",)),
        TopicConfigDef("flush.messages", _int(1), str(LONG_MAX), ("log.flush.interval.messages",)),
        TopicConfigDef("flush.ms", _int(0), str(LONG_MAX), ("log.flush.interval.ms",)),
        TopicConfigDef(
            "retention.ms",
            _int(-1),
            str(7 * _DAY_MS),
            ("log.retention.ms", _minutes("log.retention.minutes"), _hours("log.retention.hours")),
        ),
        TopicConfigDef("retention.bytes", _int(-1), "-1", ("log.retention.bytes",)),
        TopicConfigDef(
            "cleanup.policy", _OneOf("delete", "compact", separated=True), "delete", ("log.cleanup.policy",)
        ),
        TopicConfigDef(
            "compression.type",
            _OneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
            "producer",
            ("compression.type",),
        ),
        TopicConfigDef("compression.gzip.level", _int(-1, 9), "-1", ("compression.gzip.level",)),
        TopicConfigDef("compression.lz4.level", _int(1, 17), "9", ("compression.lz4.level",)),
        TopicConfigDef("compression.zstd.level", _int(-131072, 22), "3", ("compression.zstd.level",)),
        TopicConfigDef("min.insync.replicas", _int(1, INT_MAX), "1", ("min.insync.replicas",)),
        TopicConfigDef("unclean.leader.election.enable", _bool, "false", ("unclean.leader.election.enable",)),
        TopicConfigDef("delete.retention.ms", _int(0), str(_DAY_MS), ("log.cleaner.delete.retention.ms",)),
        TopicConfigDef("min.compaction.lag.ms", _int(0), "0", ("log.cleaner.min.compaction.lag.ms",)),
        TopicConfigDef(
            "max.compaction.lag.ms", _int(1), str(LONG_MAX), ("log.cleaner.max.compaction.lag.ms",)
        ),
        TopicConfigDef(
            "min.cleanable.dirty.ratio", _Range(float, 0, 1), "0.5", ("log.cleaner.min.cleanable.ratio",)
        ),
        TopicConfigDef("file.delete.delay.ms", _int(0), "60000", ("log.segment.delete.delay.ms",)),
        TopicConfigDef("preallocate", _bool, "false", ("log.preallocate",)),
        TopicConfigDef(
            "message.timestamp.before.max.ms",
            _int(0),
            str(LONG_MAX),
            ("log.message.timestamp.before.max.ms",),
        ),
        # Kafka 4 default: records more than an hour in the future are refused.
        TopicConfigDef(
            "message.timestamp.after.max.ms", _int(0), "3600000", ("log.message.timestamp.after.max.ms",)
        ),
        TopicConfigDef(
            "max.decompressed.message.bytes",
            _int(0, INT_MAX),
            "2147483639",
            ("max.decompressed.message.bytes",),
        ),
        TopicConfigDef("errors.deadletterqueue.group.enable", _bool, "false", ()),
        TopicConfigDef("remote.copy.lag.bytes", _int(-1), "-1", ("log.remote.copy.lag.bytes",)),
        TopicConfigDef("remote.copy.lag.ms", _int(0), "0", ("log.remote.copy.lag.ms",)),
        TopicConfigDef("local.retention.ms", _int(-2), "-2", ("log.local.retention.ms",)),
        TopicConfigDef("local.retention.bytes", _int(-2), "-2", ("log.local.retention.bytes",)),
        TopicConfigDef("remote.storage.enable", _bool, "false", ()),
        TopicConfigDef("remote.log.copy.disable", _bool, "false", ()),
        TopicConfigDef("remote.log.delete.on.disable", _bool, "false", ()),
        TopicConfigDef("leader.replication.throttled.replicas", _any, "", ()),
        TopicConfigDef("follower.replication.throttled.replicas", _any, "", ()),
    ]
}


#: Lower bounds Kafka 4 applies to a client's overrides but not to the broker default (which tests
#: set low to force segment rolls): segment.bytes under 1 MiB is refused (KIP-1030).
_OVERRIDE_MINIMUM = {"segment.bytes": 1024 * 1024}


def _invalid(message: str) -> KafkaStorageError:
    return KafkaStorageError(ErrorCode.invalid_config, message)


def validate_topic_configs(configs: Mapping[str, Any] | None, *, client: bool = True) -> dict[str, str]:
    """Check overrides; returns them normalized to strings. Unknown names, null values and values
    out of range -> INVALID_CONFIG (as Kafka's LogConfig.validate). The broker's own internal
    topics (``client=False``) take their sizes from broker properties, which have no 1 MiB floor."""
    out: dict[str, str] = {}
    for name, raw in (configs or {}).items():
        d = TOPIC_CONFIGS.get(name)
        if d is None:
            raise _invalid(f"unknown topic config {name}")
        if raw is None:
            raise _invalid(f"null value not supported for topic config {name}")
        try:
            if client and d.parse(raw) < _OVERRIDE_MINIMUM.get(name, d.parse(raw)):
                raise ValueError(f"must be at least {_OVERRIDE_MINIMUM[name]}")
        except ValueError as exc:
            raise _invalid(f"invalid value {raw!r} for topic config {name}: {exc}") from None
        out[name] = str(raw).strip() if d.parse is not _any else str(raw)
    return out


def _default(d: TopicConfigDef, broker_config: Any) -> str:
    for source in d.broker_names:
        v = source(broker_config) if callable(source) else broker_value(broker_config, source)
        if v is not None:
            if isinstance(v, bool):
                return "true" if v else "false"
            return str(v)
    return d.default


def default_origin(broker_config: Any, name: str) -> str | None:
    """The broker property that gives topic config ``name`` its default value here, or None
    when it is Kafka's built-in default (DescribeConfigs reports the source)."""
    for source in TOPIC_CONFIGS[name].broker_names:
        v = source(broker_config) if callable(source) else broker_value(broker_config, source)
        if v is not None:
            return source.property if callable(source) else source
    return None


def effective_topic_configs(broker_config: Any, overrides: Mapping[str, str]) -> dict[str, tuple[str, bool]]:
    """name -> (value, is_default) for every topic config (what DescribeConfigs reports)."""
    out = {}
    for name, d in TOPIC_CONFIGS.items():
        if name in overrides:
            out[name] = (overrides[name], False)
        else:
            out[name] = (_default(d, broker_config), True)
    return out


def _never_if_max(v: int) -> int | None:
    return None if v >= LONG_MAX else v


def builtin_default(name: str) -> Any:
    """Kafka's built-in default of topic config ``name``, parsed."""
    d = TOPIC_CONFIGS[name]
    return d.parse(d.default)


def check_of(name: str) -> tuple[Callable[[Any], bool], str]:
    """(accepts(value), what it accepts) for a broker property that is the default of topic
    config ``name`` (broker/config.py): the topic config's own rule, so both agree."""
    parse = TOPIC_CONFIGS[name].parse

    def accepts(value: Any) -> bool:
        try:
            parse(str(value).lower() if isinstance(value, bool) else value)
        except ValueError:
            return False
        return True

    return accepts, getattr(parse, "doc", "valid")


class LogConfig(NamedTuple):
    """The topic configs a partition log acts on, parsed; the defaults are Kafka's built-in
    ones from TOPIC_CONFIGS (``from_configs`` applies the broker's and the topic's)."""

    segment_bytes: int = builtin_default("segment.bytes")
    segment_ms: int = builtin_default("segment.ms")
    index_interval_bytes: int = builtin_default("index.interval.bytes")
    log_append_time: bool = builtin_default("message.timestamp.type") == "LogAppendTime"
    max_message_bytes: int = builtin_default("max.message.bytes")
    # None: never fsync because of a message count / of time
    flush_messages: int | None = _never_if_max(builtin_default("flush.messages"))
    flush_ms: int | None = _never_if_max(builtin_default("flush.ms"))
    retention_ms: int = builtin_default("retention.ms")
    retention_bytes: int = builtin_default("retention.bytes")
    cleanup_policy: str = builtin_default("cleanup.policy")
    # CreateTime at most this far in the past, and this far in the future
    timestamp_before_max_ms: int = builtin_default("message.timestamp.before.max.ms")
    timestamp_after_max_ms: int = builtin_default("message.timestamp.after.max.ms")
    delete_retention_ms: int = builtin_default("delete.retention.ms")
    min_compaction_lag_ms: int = builtin_default("min.compaction.lag.ms")
    max_compaction_lag_ms: int = builtin_default("max.compaction.lag.ms")
    min_cleanable_dirty_ratio: float = builtin_default("min.cleanable.dirty.ratio")
    # cleanup.policy includes compact (checked on every append)
    compact: bool = "compact" in builtin_default("cleanup.policy").split(",")

    @classmethod
    def from_configs(cls, broker_config: Any = None, overrides: Mapping[str, str] | None = None) -> LogConfig:
        overrides = overrides or {}

        def value(name: str) -> Any:
            d = TOPIC_CONFIGS[name]
            raw = overrides[name] if name in overrides else _default(d, broker_config)
            try:
                return d.parse(raw)
            except ValueError:
                return d.parse(d.default)  # a bad broker default must not stop a log opening

        return cls(
            segment_bytes=value("segment.bytes"),
            segment_ms=value("segment.ms"),
            index_interval_bytes=value("index.interval.bytes"),
            log_append_time=value("message.timestamp.type") == "LogAppendTime",
            max_message_bytes=value("max.message.bytes"),
            flush_messages=_never_if_max(value("flush.messages")),
            flush_ms=_never_if_max(value("flush.ms")),
            retention_ms=value("retention.ms"),
            retention_bytes=value("retention.bytes"),
            cleanup_policy=value("cleanup.policy"),
            timestamp_before_max_ms=value("message.timestamp.before.max.ms"),
            timestamp_after_max_ms=value("message.timestamp.after.max.ms"),
            compact="compact" in value("cleanup.policy").split(","),
            delete_retention_ms=value("delete.retention.ms"),
            min_compaction_lag_ms=value("min.compaction.lag.ms"),
            max_compaction_lag_ms=value("max.compaction.lag.ms"),
            min_cleanable_dirty_ratio=value("min.cleanable.dirty.ratio"),
        )
