"""Topic configs under Apache Kafka's names, and the effective config of a partition log.

A topic stores only its overrides (what CreateTopics / AlterConfigs set). The effective value of
every topic config is the override if there is one, else the broker default under its broker
name (``segment.bytes`` <- ``log.segment.bytes``...), else Kafka's built-in default. Keeping the
overrides separate is what lets DescribeConfigs say which values are defaults and lets a later
change of a broker default reach topics that never overrode it.

Kafka accepts only known topic config names (INVALID_CONFIG otherwise). The ones this broker acts
on are in ``LogConfig``; the rest are validated, stored and reported but have no effect (one
replica, no compaction, no tiered storage; retention deletion is not implemented).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from protocol.errors import ErrorCode
from storage.errors import KafkaStorageError

__all__ = ["LogConfig", "TOPIC_CONFIGS", "validate_topic_configs", "effective_topic_configs",
           "broker_value", "default_origin", "LONG_MAX", "INTERNAL_SEGMENT_BYTES"]

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


def _int(lo: int, hi: int = LONG_MAX) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        v = int(str(raw).strip())
        if not lo <= v <= hi:
            raise ValueError(f"must be in [{lo}, {hi}]")
        return v
    return parse


def _float(lo: float, hi: float) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        v = float(str(raw).strip())
        if not lo <= v <= hi:
            raise ValueError(f"must be in [{lo}, {hi}]")
        return v
    return parse


def _bool(raw: str) -> bool:
    low = str(raw).strip().lower()
    if low not in ("true", "false"):
        raise ValueError("must be true or false")
    return low == "true"


def _one_of(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        v = str(raw).strip()
        if v not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return v
    return parse


def _cleanup_policy(raw: str) -> str:
    parts = [p.strip() for p in str(raw).split(",") if p.strip()]
    if any(p not in ("delete", "compact") for p in parts):
        raise ValueError("must be a list of delete, compact")
    return ",".join(parts)


def _any(raw: str) -> str:
    return str(raw)


def _hours(name: str) -> Callable[[Any], int | None]:
    def get(config: Any) -> int | None:
        v = broker_value(config, name)
        return None if v is None else int(v) * 3_600_000
    get.property = name
    return get


def _minutes(name: str) -> Callable[[Any], int | None]:
    def get(config: Any) -> int | None:
        v = broker_value(config, name)
        return None if v is None else int(v) * 60_000
    get.property = name
    return get


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    name: str
    parse: Callable[[str], Any]
    default: str  # Kafka's built-in default, as a string
    broker_names: tuple = ()  # broker properties (or callables) giving the default, in order


_DAY_MS = 86_400_000
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {d.name: d for d in [
    TopicConfigDef("segment.bytes", _int(14, INT_MAX), "1073741824", ("log.segment.bytes",)),
    TopicConfigDef("segment.ms", _int(1), str(7 * _DAY_MS),
                   ("log.roll.ms", _hours("log.roll.hours"))),
    TopicConfigDef("segment.jitter.ms", _int(0), "0",
                   ("log.roll.jitter.ms", _hours("log.roll.jitter.hours"))),
    TopicConfigDef("segment.index.bytes", _int(4, INT_MAX), "10485760",
                   ("log.index.size.max.bytes",)),
    TopicConfigDef("index.interval.bytes", _int(0, INT_MAX), "4096", ("log.index.interval.bytes",)),
    TopicConfigDef("message.timestamp.type", _one_of("CreateTime", "LogAppendTime"), "CreateTime",
                   ("log.message.timestamp.type",)),
    TopicConfigDef("max.message.bytes", _int(0, INT_MAX), "1048588", ("message.max.bytes",)),
    TopicConfigDef("flush.messages", _int(1), str(LONG_MAX), ("log.flush.interval.messages",)),
    TopicConfigDef("flush.ms", _int(0), str(LONG_MAX), ("log.flush.interval.ms",)),
    TopicConfigDef("retention.ms", _int(-1), str(7 * _DAY_MS),
                   ("log.retention.ms", _minutes("log.retention.minutes"),
                    _hours("log.retention.hours"))),
    TopicConfigDef("retention.bytes", _int(-1), "-1", ("log.retention.bytes",)),
    TopicConfigDef("cleanup.policy", _cleanup_policy, "delete", ("log.cleanup.policy",)),
    TopicConfigDef("compression.type",
                   _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
                   "producer", ("compression.type",)),
    TopicConfigDef("compression.gzip.level", _int(-1, 9), "-1", ("compression.gzip.level",)),
    TopicConfigDef("compression.lz4.level", _int(1, 17), "9", ("compression.lz4.level",)),
    TopicConfigDef("compression.zstd.level", _int(-131072, 22), "3", ("compression.zstd.level",)),
    TopicConfigDef("min.insync.replicas", _int(1, INT_MAX), "1", ("min.insync.replicas",)),
    TopicConfigDef("unclean.leader.election.enable", _bool, "false",
                   ("unclean.leader.election.enable",)),
    TopicConfigDef("delete.retention.ms", _int(0), str(_DAY_MS),
                   ("log.cleaner.delete.retention.ms",)),
    TopicConfigDef("min.compaction.lag.ms", _int(0), "0", ("log.cleaner.min.compaction.lag.ms",)),
    TopicConfigDef("max.compaction.lag.ms", _int(1), str(LONG_MAX),
                   ("log.cleaner.max.compaction.lag.ms",)),
    TopicConfigDef("min.cleanable.dirty.ratio", _float(0, 1), "0.5",
                   ("log.cleaner.min.cleanable.ratio",)),
    TopicConfigDef("file.delete.delay.ms", _int(0), "60000", ("log.segment.delete.delay.ms",)),
    TopicConfigDef("preallocate", _bool, "false", ("log.preallocate",)),
    TopicConfigDef("message.timestamp.before.max.ms", _int(0), str(LONG_MAX),
                   ("log.message.timestamp.before.max.ms",)),
    TopicConfigDef("message.timestamp.after.max.ms", _int(0), "3600000",  # Kafka 4 default
                   ("log.message.timestamp.after.max.ms",)),
    TopicConfigDef("message.timestamp.difference.max.ms", _int(0), str(LONG_MAX),
                   ("log.message.timestamp.difference.max.ms",)),
    TopicConfigDef("message.downconversion.enable", _bool, "true",
                   ("log.message.downconversion.enable",)),
    TopicConfigDef("message.format.version", _any, "3.0-IV1", ("log.message.format.version",)),
    TopicConfigDef("local.retention.ms", _int(-2), "-2", ("log.local.retention.ms",)),
    TopicConfigDef("local.retention.bytes", _int(-2), "-2", ("log.local.retention.bytes",)),
    TopicConfigDef("remote.storage.enable", _bool, "false", ()),
    TopicConfigDef("remote.log.copy.disable", _bool, "false", ()),
    TopicConfigDef("remote.log.delete.on.disable", _bool, "false", ()),
    TopicConfigDef("leader.replication.throttled.replicas", _any, "", ()),
    TopicConfigDef("follower.replication.throttled.replicas", _any, "", ()),
]}


def _invalid(message: str) -> KafkaStorageError:
    return KafkaStorageError(ErrorCode.invalid_config, message)


def validate_topic_configs(configs: Mapping[str, Any] | None) -> dict[str, str]:
    """Check overrides given by a client; returns them normalized to strings. Unknown names,
    null values and values out of range -> INVALID_CONFIG (as Kafka's LogConfig.validate)."""
    out: dict[str, str] = {}
    for name, raw in (configs or {}).items():
        d = TOPIC_CONFIGS.get(name)
        if d is None:
            raise _invalid(f"unknown topic config {name}")
        if raw is None:
            raise _invalid(f"null value not supported for topic config {name}")
        try:
            d.parse(raw)
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


def effective_topic_configs(broker_config: Any, overrides: Mapping[str, str]
                            ) -> dict[str, tuple[str, bool]]:
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


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The topic configs a partition log acts on, parsed."""

    segment_bytes: int = 1073741824
    segment_ms: int = 7 * _DAY_MS
    index_interval_bytes: int = 4096
    log_append_time: bool = False  # message.timestamp.type == LogAppendTime
    max_message_bytes: int = 1048588
    flush_messages: int | None = None  # None: never fsync because of a message count
    flush_ms: int | None = None  # None: never fsync because of time
    retention_ms: int = 7 * _DAY_MS
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    timestamp_before_max_ms: int = LONG_MAX  # CreateTime at most this far in the past
    timestamp_after_max_ms: int = 3_600_000  # ... and this far in the future
    delete_retention_ms: int = _DAY_MS
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    compact: bool = False  # cleanup.policy includes compact (checked on every append)

    @classmethod
    def from_configs(cls, broker_config: Any = None, overrides: Mapping[str, str] | None = None
                     ) -> "LogConfig":
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
