"""What DescribeConfigs says about a config beyond its value: its type, a line of documentation
and its synonyms (the broker properties a topic config falls back to), as Kafka reports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minibroker.storage.config import TOPIC_CONFIGS, default_origin

if TYPE_CHECKING:
    from minibroker.broker.config import BrokerConfig
    from minibroker.broker.security.settings import Property

# DescribeConfigsResponse ConfigType values.
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(1, 10)
# DescribeConfigsResponse ConfigSource values.
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5

#: Topic configs: (type, documentation).
TOPIC = {
    "cleanup.policy": (
        LIST,
        "Retention policy for old segments: delete, compact or both (not enforced here).",
    ),
    "compression.gzip.level": (INT, "Compression level when compression.type is gzip."),
    "compression.lz4.level": (INT, "Compression level when compression.type is lz4."),
    "compression.type": (
        STRING,
        "Final compression of the topic's data; producer keeps what the producer sent.",
    ),
    "compression.zstd.level": (INT, "Compression level when compression.type is zstd."),
    "delete.retention.ms": (LONG, "How long delete tombstones are kept in a compacted topic."),
    "errors.deadletterqueue.group.enable": (
        BOOLEAN,
        "Whether share groups may use this topic as a dead-letter queue.",
    ),
    "file.delete.delay.ms": (LONG, "Wait before deleting a file from the filesystem."),
    "flush.messages": (LONG, "fsync the log after this many messages."),
    "flush.ms": (LONG, "fsync the log when its oldest unflushed message is this old."),
    "follower.replication.throttled.replicas": (LIST, "Replicas whose follower replication is throttled."),
    "index.interval.bytes": (INT, "Bytes of records between two offset-index entries."),
    "leader.replication.throttled.replicas": (LIST, "Replicas whose leader replication is throttled."),
    "local.retention.bytes": (LONG, "Local log size kept when tiered storage is on (-2: retention.bytes)."),
    "local.retention.ms": (LONG, "Local log age kept when tiered storage is on (-2: retention.ms)."),
    "max.compaction.lag.ms": (LONG, "Longest a message stays ineligible for compaction."),
    "max.decompressed.message.bytes": (INT, "Largest decompressed size of a record batch."),
    "max.message.bytes": (INT, "Largest record batch size allowed in this topic."),
    "message.timestamp.after.max.ms": (LONG, "How far a record timestamp may be ahead of the broker clock."),
    "message.timestamp.before.max.ms": (LONG, "How far a record timestamp may be behind the broker clock."),
    "message.timestamp.type": (STRING, "CreateTime (the producer's) or LogAppendTime (the broker's)."),
    "min.cleanable.dirty.ratio": (DOUBLE, "Dirty share of the log that triggers compaction."),
    "min.compaction.lag.ms": (LONG, "Shortest a message stays uncompacted."),
    "min.insync.replicas": (INT, "Replicas that must acknowledge an acks=all write."),
    "preallocate": (BOOLEAN, "Preallocate segment files."),
    "remote.copy.lag.bytes": (LONG, "Bytes a segment may wait before upload to tiered storage."),
    "remote.copy.lag.ms": (LONG, "Time a segment may wait before upload to tiered storage."),
    "remote.log.copy.disable": (BOOLEAN, "Stop copying segments to tiered storage."),
    "remote.log.delete.on.disable": (BOOLEAN, "Delete tiered data when tiered storage is turned off."),
    "remote.storage.enable": (BOOLEAN, "Keep this topic's segments in tiered storage."),
    "retention.bytes": (LONG, "Largest partition size before old segments are deleted (-1: no limit)."),
    "retention.ms": (LONG, "Longest a segment is kept before deletion (-1: no limit)."),
    "segment.bytes": (INT, "Segment file size at which a new segment is rolled."),
    "segment.index.bytes": (INT, "Size of a segment's offset index file."),
    "segment.jitter.ms": (LONG, "Random jitter subtracted from segment.ms."),
    "segment.ms": (LONG, "Age at which a segment is rolled even if not full."),
    "unclean.leader.election.enable": (BOOLEAN, "Whether an out-of-sync replica may become leader."),
}

#: First broker synonyms whose Kafka default is null (so Kafka lists no default synonym).
_NULL_BROKER_DEFAULTS = {"log.roll.jitter.ms"}
_LONG_BROKER = {"log.retention.bytes", "log.flush.interval.messages", "log.flush.scheduler.interval.ms"}


def topic_type(name: str) -> int:
    return TOPIC.get(name, (0, None))[0]


def topic_documentation(name: str) -> str | None:
    return TOPIC.get(name, (0, None))[1]


def broker_type(prop: Property | None) -> int:
    """Kafka's type for a broker property (broker.config.Property; STRING for None, a name
    minibroker does not declare)."""
    if prop is None:
        return STRING
    if prop.type == "bool":
        return BOOLEAN
    if prop.type == "list":
        return LIST
    if prop.type == "int":
        return LONG if prop.name.endswith(".ms") or prop.name in _LONG_BROKER else INT
    return STRING


_SOURCES = {
    "broker": DYNAMIC_BROKER_CONFIG,
    "cluster": DYNAMIC_DEFAULT_BROKER_CONFIG,
    "static": STATIC_BROKER_CONFIG,
    "default": DEFAULT_CONFIG,
}


def topic_default_source(config: BrokerConfig, name: str) -> int:
    """The source of a topic config that is not overridden: the broker property it falls back
    to (dynamic or static), or Kafka's built-in default (DescribeConfigs, CreateTopics)."""
    origin = default_origin(config, name)
    return DEFAULT_CONFIG if origin is None else _SOURCES[config.source(origin)]


def topic_synonyms(name: str, override: str | None, broker_config: BrokerConfig) -> list[dict[str, Any]]:
    """The topic override, then the broker properties it falls back to that are set, then the
    built-in default of its first broker property (what Kafka lists)."""
    out: list[dict[str, Any]] = []
    if override is not None:
        out.append(dict(name=name, value=override, source=TOPIC_CONFIG))
    definition = TOPIC_CONFIGS.get(name)
    if definition is None:
        return out
    names = [n for n in definition.broker_names if isinstance(n, str)]
    for level, source in (("broker", DYNAMIC_BROKER_CONFIG), ("cluster", DYNAMIC_DEFAULT_BROKER_CONFIG)):
        dynamic = broker_config.dynamic(level)  # Kafka lists the dynamic values first
        out.extend(dict(name=n, value=_text(dynamic[n]), source=source) for n in names if n in dynamic)
    for i, broker_name in enumerate(names):
        try:
            value, explicit = broker_config.static_value(broker_name)
            is_default = not explicit
        except KeyError:  # a Kafka broker property minibroker does not have: its default applies
            if i == 0 and broker_name not in _NULL_BROKER_DEFAULTS:
                out.append(dict(name=broker_name, value=definition.default, source=DEFAULT_CONFIG))
            continue
        if value is None or (is_default and i > 0):
            continue
        text = _text(value)
        out.append(
            dict(name=broker_name, value=text, source=DEFAULT_CONFIG if is_default else STATIC_BROKER_CONFIG)
        )
    return out


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
