"""Broker configuration under Apache Kafka's own property names.

Every property the broker understands is declared once in PROPERTIES with its type and default,
so the configuration reference (docs/configuration.md), validation and defaults cannot drift
apart. Sources, in increasing precedence: defaults, a Kafka-style properties file (--config),
command-line flags (--host/--port/--data-dir), then --set key=value overrides.

A Kafka `server.properties` starts the broker: every property Apache Kafka's broker knows
(broker/kafka_properties.py, generated from Kafka's jars) is accepted; those minibroker does not
implement are kept aside and logged once as ignored (broker/kafka_compat.py says which are
cluster-only and why), except those that would make the broker stricter (TLS protocols and
ciphers, principal mapping, connection limits, ...): set to anything but what minibroker does
anyway, they are refused, since ignoring them would weaken the broker. Names neither Kafka
nor minibroker knows are refused with a "did you mean" hint, and every problem of a file is
reported at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from minibroker.broker.features import parse_features
from minibroker.broker.security.settings import SECURITY_AND_LIMIT_PROPERTIES, Property, listener_property
from minibroker.storage.config import TOPIC_CONFIGS, builtin_default, check_of

if TYPE_CHECKING:
    from types import ModuleType

    from structlog.typing import FilteringBoundLogger

LONG_MAX = 2**63 - 1


class ConfigError(ValueError):
    """Properties are unknown or have invalid values: one problem per property, each naming it
    (`problems`); the message gives them all."""

    def __init__(self, *problems: str):
        self.problems = list(problems)
        if len(problems) > 1:
            super().__init__(f"{len(problems)} problems: " + "; ".join(problems))
        else:
            super().__init__(*problems)


def _positive(v: int) -> bool:
    return v > 0


def _non_negative(v: int) -> bool:
    return v >= 0


def _between(low: int, high: int) -> Callable[[int], bool]:
    return lambda v: low <= v <= high


def _known_assignors(value: str) -> bool:
    names = [name.strip() for name in value.split(",")]
    return bool(names) and len(set(names)) == len(names) and set(names) <= {"uniform", "range"}


def _valid_features(value: str) -> bool:
    try:
        parse_features(value)
    except ValueError:
        return False
    return True


def _topic_default(name: str, topic_config: str, type_: str, doc: str) -> Property:
    """A broker property that is the default of a topic config: its default and its rule come
    from the one registry of topic configs (storage/config.py), so the two cannot disagree."""
    check, check_doc = check_of(topic_config)
    default = builtin_default(topic_config) if type_ == "int" else TOPIC_CONFIGS[topic_config].default
    return Property(name, type_, default, doc, check, check_doc)


PROPERTIES: dict[str, Property] = {
    p.name: p
    for p in [
        # listeners and identity
        Property(
            "listeners",
            "str",
            "PLAINTEXT://127.0.0.1:9092",
            "Comma-separated NAME://host:port listeners to bind (see Security).",
        ),
        Property(
            "advertised.listeners",
            "str",
            None,
            "NAME://host:port per listener given to clients in Metadata; defaults to the bound address.",
        ),
        Property("node.id", "int", 1, "This broker's id.", _non_negative, ">= 0"),
        Property("log.dirs", "str", "./data", "Data directory (one directory)."),
        # topics
        Property("num.partitions", "int", 1, "Partitions of auto-created topics.", _positive, "> 0"),
        Property(
            "default.replication.factor",
            "int",
            1,
            "Accepted for compatibility; there is one replica.",
            lambda v: v in (1, -1),
            "1",
        ),
        Property(
            "auto.create.topics.enable",
            "bool",
            True,
            "Create a topic on first Metadata/Produce that names it.",
        ),
        Property("delete.topic.enable", "bool", True, "Allow DeleteTopics."),
        # log
        _topic_default("log.segment.bytes", "segment.bytes", "int", "Roll a segment at this size."),
        Property(
            "log.roll.ms",
            "int",
            None,
            "Roll a segment after this age (overrides log.roll.hours).",
            _positive,
            "> 0",
        ),
        Property("log.roll.hours", "int", 168, "Roll a segment after this age.", _positive, "> 0"),
        _topic_default(
            "log.index.interval.bytes", "index.interval.bytes", "int", "Bytes between offset-index entries."
        ),
        _topic_default(
            "log.message.timestamp.type", "message.timestamp.type", "str", "CreateTime or LogAppendTime."
        ),
        _topic_default(
            "log.message.timestamp.before.max.ms",
            "message.timestamp.before.max.ms",
            "int",
            "Refuse CreateTime timestamps older than this (INVALID_TIMESTAMP).",
        ),
        _topic_default(
            "log.message.timestamp.after.max.ms",
            "message.timestamp.after.max.ms",
            "int",
            "Refuse CreateTime timestamps further ahead than this (INVALID_TIMESTAMP).",
        ),
        _topic_default("message.max.bytes", "max.message.bytes", "int", "Largest record batch accepted."),
        _topic_default(
            "log.flush.interval.messages",
            "flush.messages",
            "int",
            "fsync a partition after this many appended messages.",
        ),
        Property(
            "log.flush.interval.ms",
            "int",
            None,
            "fsync a partition whose oldest unflushed data is this old.",
            _non_negative,
            ">= 0",
        ),
        Property(
            "log.flush.scheduler.interval.ms",
            "int",
            LONG_MAX,
            "How often the flusher checks log.flush.interval.ms.",
            _positive,
            "> 0",
        ),
        Property(
            "log.flush.offset.checkpoint.interval.ms",
            "int",
            60000,
            "How often each log's recovery point is checkpointed (after an fsync of what was "
            "appended since, with a producer-state snapshot); an unclean start checks only "
            "what follows it.",
            _positive,
            "> 0",
        ),
        Property(
            "log.retention.ms",
            "int",
            None,
            "Delete segments whose newest record is older than this (overrides "
            "log.retention.minutes/hours; -1: never).",
            lambda v: v >= -1,
            ">= -1",
        ),
        Property(
            "log.retention.minutes",
            "int",
            None,
            "Delete segments older than this (overrides log.retention.hours).",
            lambda v: v >= -1,
            ">= -1",
        ),
        Property(
            "log.retention.hours", "int", 168, "Delete segments older than this.", lambda v: v >= -1, ">= -1"
        ),
        _topic_default(
            "log.retention.bytes",
            "retention.bytes",
            "int",
            "Delete the oldest segments while a partition is larger than this (-1: no limit).",
        ),
        Property(
            "log.retention.check.interval.ms",
            "int",
            300000,
            "How often retention is checked.",
            _positive,
            "> 0",
        ),
        _topic_default(
            "log.segment.delete.delay.ms",
            "file.delete.delay.ms",
            "int",
            "Keep a deleted segment's file open this long for reads in flight.",
        ),
        Property(
            "log.cleaner.enable",
            "bool",
            True,
            "Run the log cleaner (compaction of topics with cleanup.policy=compact, internal topics "
            "included).",
        ),
        Property(
            "log.cleaner.backoff.ms",
            "int",
            15000,
            "How often the log cleaner looks for a log to clean.",
            _positive,
            "> 0",
        ),
        _topic_default(
            "log.cleaner.delete.retention.ms",
            "delete.retention.ms",
            "int",
            "Default delete.retention.ms: how long tombstones and transaction markers outlive cleaning.",
        ),
        _topic_default(
            "log.cleaner.min.compaction.lag.ms",
            "min.compaction.lag.ms",
            "int",
            "Default min.compaction.lag.ms.",
        ),
        _topic_default(
            "log.cleaner.max.compaction.lag.ms",
            "max.compaction.lag.ms",
            "int",
            "Default max.compaction.lag.ms.",
        ),
        _topic_default(
            "log.cleaner.min.cleanable.ratio",
            "min.cleanable.dirty.ratio",
            "str",
            "Default min.cleanable.dirty.ratio.",
        ),
        Property(
            "offsets.topic.segment.bytes",
            "int",
            1048576,
            "segment.bytes of __consumer_offsets (Kafka: 104857600; smaller here so compaction keeps it "
            "small).",
            lambda v: v >= 14,
            ">= 14",
        ),
        Property(
            "transaction.state.log.segment.bytes",
            "int",
            1048576,
            "segment.bytes of __transaction_state (Kafka: 104857600; smaller here so compaction keeps it "
            "small).",
            lambda v: v >= 14,
            ">= 14",
        ),
        _topic_default("log.cleanup.policy", "cleanup.policy", "str", "Default cleanup.policy of topics."),
        # network
        Property(
            "socket.request.max.bytes",
            "int",
            104857600,
            "Largest request frame; larger ones close the connection.",
            _positive,
            "> 0",
        ),
        Property(
            "connections.max.idle.ms",
            "int",
            600000,
            "Close a connection with no request for this long.",
            _positive,
            "> 0",
        ),
        *SECURITY_AND_LIMIT_PROPERTIES,  # broker/security/settings.py
        Property(
            "max.incremental.fetch.session.cache.slots",
            "int",
            1000,
            "Most incremental fetch sessions (KIP-227) kept at once, over 8 shards as Kafka splits them.",
            lambda v: v >= 0,
            ">= 0",
        ),
        # idempotence and transactions
        Property(
            "producer.id.expiration.ms",
            "int",
            86400000,
            "Forget an idle producer's sequence state after this long.",
            _positive,
            "> 0",
        ),
        Property(
            "producer.id.expiration.check.interval.ms",
            "int",
            600000,
            "How often idle producer state is expired.",
            _positive,
            "> 0",
        ),
        Property(
            "transaction.max.timeout.ms",
            "int",
            900000,
            "Largest transaction.timeout.ms a producer may ask for.",
            _positive,
            "> 0",
        ),
        Property(
            "transactional.id.expiration.ms",
            "int",
            604800000,
            "Expire a transactional id idle this long.",
            _positive,
            "> 0",
        ),
        Property(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "int",
            10000,
            "How often timed-out transactions are aborted.",
            _positive,
            "> 0",
        ),
        Property(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            "int",
            3600000,
            "How often expired transactional ids are removed.",
            _positive,
            "> 0",
        ),
        Property(
            "transaction.state.log.num.partitions",
            "int",
            1,
            "Partitions of __transaction_state (Kafka: 50).",
            _positive,
            "> 0",
        ),
        # groups
        Property(
            "offsets.topic.num.partitions",
            "int",
            1,
            "Partitions of __consumer_offsets (Kafka: 50).",
            _positive,
            "> 0",
        ),
        # KIP-932 share groups: the share coordinator's topic (coordinator/share_coordinator.py)
        Property(
            "share.coordinator.state.topic.num.partitions",
            "int",
            1,
            "Partitions of __share_group_state (Kafka: 50).",
            _positive,
            "> 0",
        ),
        Property(
            "share.coordinator.state.topic.segment.bytes",
            "int",
            1048576,
            "segment.bytes of __share_group_state (Kafka: 104857600; smaller here so pruning keeps it "
            "small: the topic is not compacted).",
            lambda v: v >= 14,
            ">= 14",
        ),
        Property(
            "share.coordinator.cold.partition.snapshot.interval.ms",
            "int",
            300000,
            "How often share-partitions whose state was not snapshotted for this long get a fresh "
            "ShareSnapshot, so pruning can delete the records before it.",
            _positive,
            "> 0",
        ),
        Property(
            "share.coordinator.state.topic.prune.interval.ms",
            "int",
            300000,
            "How often the records of __share_group_state no load needs any more are deleted.",
            _positive,
            "> 0",
        ),
        Property(
            "share.coordinator.snapshot.update.records.per.snapshot",
            "int",
            500,
            "A share-partition's state is written whole (a ShareSnapshot) after this many "
            "ShareUpdate records.",
            lambda v: v >= 0,
            ">= 0",
        ),
        Property(
            "offsets.retention.minutes",
            "int",
            10080,
            "Committed offsets of a group empty this long (or standalone commits this old) expire.",
            _positive,
            "> 0",
        ),
        Property(
            "offsets.retention.check.interval.ms",
            "int",
            600000,
            "How often expired offsets are removed.",
            _positive,
            "> 0",
        ),
        Property(
            "group.initial.rebalance.delay.ms",
            "int",
            3000,
            "Wait this long for more members before the first rebalance of an empty group.",
            _non_negative,
            ">= 0",
        ),
        Property(
            "group.min.session.timeout.ms",
            "int",
            6000,
            "Smallest session.timeout.ms a member may ask for.",
            _positive,
            "> 0",
        ),
        Property(
            "group.max.session.timeout.ms",
            "int",
            1800000,
            "Largest session.timeout.ms a member may ask for.",
            _positive,
            "> 0",
        ),
        Property("group.max.size", "int", 2147483647, "Most members in one group.", _positive, "> 0"),
        # KIP-848 consumer groups (coordinator/consumer_groups.py); the bounds between them are
        # checked as Kafka checks them (GroupSettings.problems)
        Property(
            "group.consumer.session.timeout.ms",
            "int",
            45000,
            "A consumer-protocol member that sends no heartbeat this long is removed from its group "
            "(a group's consumer.session.timeout.ms overrides it).",
            _positive,
            "> 0",
        ),
        Property(
            "group.consumer.min.session.timeout.ms",
            "int",
            45000,
            "Smallest consumer.session.timeout.ms a group may set.",
            _positive,
            "> 0",
        ),
        Property(
            "group.consumer.max.session.timeout.ms",
            "int",
            60000,
            "Largest consumer.session.timeout.ms a group may set.",
            _positive,
            "> 0",
        ),
        Property(
            "group.consumer.heartbeat.interval.ms",
            "int",
            5000,
            "Heartbeat interval given to consumer-protocol members (a group's "
            "consumer.heartbeat.interval.ms overrides it).",
            _positive,
            "> 0",
        ),
        Property(
            "group.consumer.min.heartbeat.interval.ms",
            "int",
            5000,
            "Smallest consumer.heartbeat.interval.ms a group may set.",
            _positive,
            "> 0",
        ),
        Property(
            "group.consumer.max.heartbeat.interval.ms",
            "int",
            15000,
            "Largest consumer.heartbeat.interval.ms a group may set.",
            _positive,
            "> 0",
        ),
        Property(
            "group.consumer.max.size",
            "int",
            2147483647,
            "Most members in one consumer-protocol group (group.max.size is the classic groups').",
            _positive,
            "> 0",
        ),
        Property(
            "group.consumer.assignors",
            "list",
            "uniform,range",
            "Server-side assignors a member may name (group.remote.assignor); the first is the "
            "default. Built in: uniform, range.",
            _known_assignors,
            "a comma-separated list of uniform and range, each once",
        ),
        Property(
            "group.consumer.migration.policy",
            "str",
            "bidirectional",
            "Which online conversions of a non-empty group between the classic and the consumer "
            "protocol are allowed: bidirectional, upgrade, downgrade or disabled.",
            lambda v: v.lower() in ("bidirectional", "upgrade", "downgrade", "disabled"),
            "bidirectional, upgrade, downgrade or disabled",
        ),
        Property(
            "group.consumer.assignment.interval.ms",
            "int",
            1000,
            "Shortest time between two target assignments of a consumer group (0: at each change; "
            "a group's consumer.assignment.interval.ms overrides it).",
            _non_negative,
            ">= 0",
        ),
        Property(
            "group.consumer.min.assignment.interval.ms",
            "int",
            0,
            "Smallest consumer.assignment.interval.ms a group may set.",
            _non_negative,
            ">= 0",
        ),
        Property(
            "group.consumer.max.assignment.interval.ms",
            "int",
            15000,
            "Largest consumer.assignment.interval.ms a group may set.",
            _non_negative,
            ">= 0",
        ),
        Property(
            "group.consumer.assignor.offload.enable",
            "bool",
            True,
            "Accepted for compatibility: assignments are computed on the coordinator's loop.",
        ),
        Property(
            "group.consumer.regex.refresh.interval.ms",
            "int",
            600000,
            "How often the topics matching a group's regex subscriptions are resolved again "
            "(also after a topic is created, at most every 10 s).",
            lambda v: v >= 10000,
            ">= 10000",
        ),
        # KIP-932 share groups (coordinator/share_groups.py, broker/share_partitions.py): Kafka's
        # GroupCoordinatorConfig and ShareGroupConfig names, defaults and ranges; the bounds between
        # them are checked as Kafka checks them (GroupSettings.problems). A group's share.* configs
        # (broker/group_configs.py) override the defaults within the min/max bounds.
        Property(
            "group.share.session.timeout.ms",
            "int",
            45000,
            "A share group member that sends no heartbeat this long is removed from its group (a "
            "group's share.session.timeout.ms overrides it).",
            _positive,
            "> 0",
        ),
        Property(
            "group.share.min.session.timeout.ms",
            "int",
            45000,
            "Smallest share.session.timeout.ms a group may set.",
            _positive,
            "> 0",
        ),
        Property(
            "group.share.max.session.timeout.ms",
            "int",
            60000,
            "Largest share.session.timeout.ms a group may set.",
            _positive,
            "> 0",
        ),
        Property(
            "group.share.heartbeat.interval.ms",
            "int",
            5000,
            "Heartbeat interval given to share group members (a group's share.heartbeat.interval.ms "
            "overrides it).",
            _positive,
            "> 0",
        ),
        Property(
            "group.share.min.heartbeat.interval.ms",
            "int",
            5000,
            "Smallest share.heartbeat.interval.ms a group may set.",
            _positive,
            "> 0",
        ),
        Property(
            "group.share.max.heartbeat.interval.ms",
            "int",
            15000,
            "Largest share.heartbeat.interval.ms a group may set.",
            _positive,
            "> 0",
        ),
        Property(
            "group.share.max.size",
            "int",
            200,
            "Most members in one share group.",
            _between(1, 1000),
            "in [1, 1000]",
        ),
        Property(
            "group.share.assignors",
            "list",
            "simple",
            "The server-side assignor of share groups (one; built in: simple).",
            lambda v: v == "simple",
            "simple",
        ),
        Property(
            "group.share.assignment.interval.ms",
            "int",
            1000,
            "Shortest time between two target assignments of a share group (0: at each change; a "
            "group's share.assignment.interval.ms overrides it).",
            _non_negative,
            ">= 0",
        ),
        Property(
            "group.share.min.assignment.interval.ms",
            "int",
            0,
            "Smallest share.assignment.interval.ms a group may set.",
            _non_negative,
            ">= 0",
        ),
        Property(
            "group.share.max.assignment.interval.ms",
            "int",
            15000,
            "Largest share.assignment.interval.ms a group may set.",
            _non_negative,
            ">= 0",
        ),
        Property(
            "group.share.assignor.offload.enable",
            "bool",
            True,
            "Accepted for compatibility: assignments are computed on the coordinator's loop.",
        ),
        Property(
            "group.share.record.lock.duration.ms",
            "int",
            30000,
            "How long a record handed to a share group member stays acquired by it before it is "
            "available again (a group's share.record.lock.duration.ms overrides it).",
            _between(1000, 3600000),
            "in [1000, 3600000]",
        ),
        Property(
            "group.share.min.record.lock.duration.ms",
            "int",
            15000,
            "Smallest share.record.lock.duration.ms a group may set.",
            _between(1000, 30000),
            "in [1000, 30000]",
        ),
        Property(
            "group.share.max.record.lock.duration.ms",
            "int",
            60000,
            "Largest share.record.lock.duration.ms a group may set.",
            _between(30000, 3600000),
            "in [30000, 3600000]",
        ),
        Property(
            "group.share.delivery.count.limit",
            "int",
            5,
            "Deliveries of a record to a share group before it is archived (a group's "
            "share.delivery.count.limit overrides it).",
            _between(2, 10),
            "in [2, 10]",
        ),
        Property(
            "group.share.min.delivery.count.limit",
            "int",
            2,
            "Smallest share.delivery.count.limit a group may set.",
            _between(2, 5),
            "in [2, 5]",
        ),
        Property(
            "group.share.max.delivery.count.limit",
            "int",
            10,
            "Largest share.delivery.count.limit a group may set.",
            _between(5, 25),
            "in [5, 25]",
        ),
        Property(
            "group.share.partition.max.record.locks",
            "int",
            2000,
            "Most records of one share-partition acquired at once (a group's "
            "share.partition.max.record.locks overrides it).",
            _between(100, 10000),
            "in [100, 10000]",
        ),
        Property(
            "group.share.min.partition.max.record.locks",
            "int",
            100,
            "Smallest share.partition.max.record.locks a group may set.",
            _between(100, 2000),
            "in [100, 2000]",
        ),
        Property(
            "group.share.max.partition.max.record.locks",
            "int",
            4000,
            "Largest share.partition.max.record.locks a group may set.",
            _between(2000, 10000),
            "in [2000, 10000]",
        ),
        Property(
            "group.share.max.share.sessions",
            "int",
            2000,
            "Most share sessions (ShareFetch/ShareAcknowledge) kept at once "
            "(SHARE_SESSION_LIMIT_REACHED beyond).",
            _positive,
            "> 0",
        ),
        # observability (minibroker's own; Kafka has no equivalent property)
        Property(
            "minibroker.request.log.enable",
            "bool",
            False,
            "Log one line per request at info level (always on at debug level).",
        ),
        Property(
            "minibroker.metrics.port",
            "int",
            None,
            "Serve Prometheus metrics over HTTP on this port (0 picks a free one); off when unset.",
            lambda v: 0 <= v <= 65535,
            "0..65535",
        ),
        Property("minibroker.metrics.host", "str", "127.0.0.1", "Address the metrics endpoint binds."),
        # KIP-714 client telemetry (broker/telemetry.py)
        Property(
            "telemetry.max.bytes",
            "int",
            1048576,
            "Largest metrics payload a client may push (PushTelemetry), compressed and decompressed.",
            _positive,
            "> 0",
        ),
        Property(
            "minibroker.telemetry.advertise",
            "bool",
            False,
            "List GetTelemetrySubscriptions/PushTelemetry (71/72) in ApiVersions so clients push "
            "their metrics (Kafka: only with a telemetry exporter plugin). Answered either way.",
        ),
        Property(
            "minibroker.features",
            "str",
            "",
            "Feature levels set at startup, comma-separated name=level (e.g. transaction.version=1 "
            "for the classic transaction protocol); persisted in the data directory, changeable "
            "with kafka-features.sh. Empty: the levels the data directory holds (a new one: "
            "transaction.version=2).",
            _valid_features,
            "name=level,... of a supported feature and level",
        ),
        # the test control plane (broker/control/, docs/control-plane.md)
        Property(
            "minibroker.control.port",
            "int",
            None,
            "Serve the test control plane (faults, crash points, clock, state) over HTTP on this "
            "port (0 picks a free one); off when unset. For tests only.",
            lambda v: 0 <= v <= 65535,
            "0..65535",
        ),
        Property(
            "minibroker.control.host",
            "str",
            "127.0.0.1",
            "Address the control plane binds (loopback unless told otherwise).",
        ),
        Property(
            "minibroker.control.token",
            "str",
            "",
            "Bearer token every control-plane request must carry; required when any listener "
            "authenticates (SASL or ssl.client.auth=required). Empty: no token.",
        ),
        Property(
            "minibroker.control.clock",
            "str",
            "system",
            "The broker's clock: system; manual (moves only when the control plane advances it); "
            "offset (wall time plus what the control plane has advanced). manual and offset need "
            "minibroker.control.port.",
            lambda v: v in ("system", "manual", "offset"),
            "system, manual or offset",
        ),
        Property(
            "minibroker.test.fault",
            "str",
            "",
            "Crash points armed at startup, comma separated (e.g. txn.after_prepare; "
            "docs/control-plane.md); leave empty.",
        ),
    ]
}


def _parse(prop: Property, raw: Any) -> Any:
    if raw is None or (isinstance(raw, str) and raw.strip() == "" and prop.type not in ("str", "list")):
        return None
    if prop.type == "str":
        return str(raw).strip()
    if prop.type == "list":
        return ",".join(item.strip() for item in str(raw).split(","))
    text = str(raw).strip()
    if prop.type == "int":
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{prop.name}: expected an integer, got {text!r}") from None
    if prop.type == "bool":
        low = text.lower()
        if low in ("true", "false"):
            return low == "true"
        raise ConfigError(f"{prop.name}: expected true or false, got {text!r}")
    raise AssertionError(prop.type)


def _checked(prop: Property, name: str, raw: Any) -> Any:
    """`raw` parsed as `prop` and checked against its rule; problems name `name`."""
    try:
        value = _parse(prop, raw)
    except ConfigError as exc:
        if prop.name == name:
            raise
        raise ConfigError(str(exc).replace(prop.name, name, 1)) from None
    if value is not None and prop.check is not None and not prop.check(value):
        raise ConfigError(f"{name}: invalid value {raw!r} (must be {prop.check_doc})")
    return value


# Where a value comes from, Kafka's precedence: per-broker dynamic, cluster-wide dynamic
# default (both set at runtime with AlterConfigs, see broker/dynamic_config.py), static.
DYNAMIC_BROKER, DYNAMIC_DEFAULT = "broker", "cluster"


#: Kafka's older names, read as their newer synonym. As in Kafka, the newer name wins when both
#: are set (log.dirs over log.dir), and broker.id must equal node.id.
SYNONYMS = {"broker.id": "node.id", "log.dir": "log.dirs"}


def _kafka_compat() -> ModuleType:
    """broker/kafka_compat.py, imported the first time a property that is not minibroker's is
    read: a configuration of minibroker's own properties starts without it and Kafka's ~1,000
    property names (~2 ms, ~100 KB)."""
    from minibroker.broker import kafka_compat  # noqa: PLC0415 - see above

    return kafka_compat


def unknown_property(name: str) -> str:
    """The problem text for a name neither minibroker nor Kafka knows, with the closest name."""
    from minibroker.broker.kafka_properties import KAFKA_BROKER_PROPERTIES  # noqa: PLC0415 - as _kafka_compat

    known = [*PROPERTIES, *KAFKA_BROKER_PROPERTIES, *SYNONYMS]
    return f"{name}: unknown property{_kafka_compat().did_you_mean(name, known)}"


class BrokerConfig:
    """Validated broker properties; read with config['log.segment.bytes']."""

    def __init__(self, values: dict[str, Any] | None = None):
        self._values: dict[str, Any] = {name: p.default for name, p in PROPERTIES.items()}
        self._explicit: set[str] = set()
        self._dynamic: dict[str, dict[str, Any]] = {DYNAMIC_BROKER: {}, DYNAMIC_DEFAULT: {}}
        self._kafka: dict[str, str] = {}  # Kafka properties minibroker does not implement: raw values
        self._synonyms: dict[str, Any] = {}  # broker.id / log.dir as given
        self._set_by_synonym: set[str] = set()
        if values:
            self.update(values)

    @staticmethod
    def parse(name: str, raw: Any) -> Any:
        prop = PROPERTIES.get(name) or listener_property(name)
        if prop is None:
            raise ConfigError(unknown_property(name))
        return _checked(prop, name, raw)

    def update(self, values: dict[str, Any], problems: list[str] | None = None) -> None:
        """Set every property of `values`. All problems are collected: raised together as one
        ConfigError, or appended to `problems` when a list is given (the caller raises)."""
        found: list[str] = [] if problems is None else problems
        for name, raw in values.items():
            try:
                self.set(name, raw)
            except ConfigError as exc:
                found.extend(exc.problems)
        if problems is None and found:
            raise ConfigError(*found)

    def set(self, name: str, raw: Any) -> None:
        if name in SYNONYMS:
            self._set_synonym(name, raw)
        elif name in PROPERTIES or listener_property(name) is not None:
            value = self.parse(name, raw)
            if name == "node.id":
                self._check_broker_id(self._synonyms.get("broker.id"), value)
            self._values[name] = value
            self._explicit.add(name)
            self._set_by_synonym.discard(name)
        elif _kafka_compat().kafka_knows(name):
            value = "" if raw is None else str(raw).strip()
            refusal = _kafka_compat().stricter_setting_refusal(name, value)
            if refusal is not None:
                raise ConfigError(refusal)
            self._kafka[name] = value
        else:
            raise ConfigError(unknown_property(name))

    def _set_synonym(self, name: str, raw: Any) -> None:
        target = SYNONYMS[name]
        value = _checked(PROPERTIES[target], name, raw)
        self._synonyms[name] = value
        if value is None:
            return
        if target not in self._explicit or target in self._set_by_synonym:
            self._values[target] = value
            self._explicit.add(target)
            self._set_by_synonym.add(target)
        elif name == "broker.id":
            self._check_broker_id(value, self._values[target])

    @staticmethod
    def _check_broker_id(broker_id: Any, node_id: Any) -> None:
        if broker_id is not None and broker_id != node_id:
            raise ConfigError(f"broker.id: {broker_id} differs from node.id {node_id} (they must be equal)")

    def static_value(self, name: str) -> tuple[Any, bool]:
        """(value, set explicitly) of a declared property, dynamic values aside (KeyError if
        minibroker does not declare it)."""
        return self._values[name], name in self._explicit

    def kafka_setting(self, name: str) -> str | None:
        """A Kafka property minibroker does not implement, as given (None when not given)."""
        return self._kafka.get(name)

    def controller_listener_names(self) -> frozenset[str]:
        """The listeners controller.listener.names names (upper-cased): a KRaft controller's,
        which minibroker neither binds nor advertises."""
        raw = self._kafka.get("controller.listener.names") or ""
        return frozenset(name.strip().upper() for name in raw.split(",") if name.strip())

    def ignored(self) -> tuple[dict[str, str], list[str]]:
        """The Kafka properties given that have no effect: cluster-only ones with the reason, and
        the others minibroker does not implement."""
        if not self._kafka:
            return {}, []
        reason_of = _kafka_compat().cluster_only_reason
        cluster = {name: reason for name in sorted(self._kafka) if (reason := reason_of(name))}
        return cluster, [name for name in sorted(self._kafka) if name not in cluster]

    def log_ignored(self, log: FilteringBoundLogger) -> None:
        """One line per kind of ignored Kafka property (at startup, once)."""
        cluster, other = self.ignored()
        if cluster:
            by_reason: dict[str, list[str]] = {}
            for name, reason in cluster.items():
                by_reason.setdefault(reason, []).append(name)
            log.info("Kafka cluster properties ignored: minibroker is a single node", reasons=by_reason)
        if other:
            log.warning("Kafka properties ignored: minibroker does not implement them", properties=other)

    def set_dynamic(self, level: str, values: dict[str, Any]) -> None:
        """Replace the dynamic values of one level (already validated with ``parse``)."""
        self._dynamic[level] = dict(values)

    def dynamic(self, level: str) -> dict[str, Any]:
        return dict(self._dynamic[level])

    def __getitem__(self, name: str) -> Any:
        for level in (DYNAMIC_BROKER, DYNAMIC_DEFAULT):
            if name in self._dynamic[level]:
                return self._dynamic[level][name]
        return self._values[name]

    def for_listener(self, listener: str, name: str) -> Any:
        """`listener.name.<listener>.<name>` if set, else the broker-wide `name` (Kafka's rule)."""
        return self._values.get(f"listener.name.{listener.lower()}.{name}", self._values.get(name))

    def is_default(self, name: str) -> bool:
        return self.source(name) == "default"

    def source(self, name: str) -> str:
        """ "broker" / "cluster" (dynamic), "static" (file or flags) or "default"."""
        for level in (DYNAMIC_BROKER, DYNAMIC_DEFAULT):
            if name in self._dynamic[level]:
                return level
        return "static" if name in self._explicit else "default"

    def items(self) -> list[tuple[str, Any]]:
        return [(name, self[name]) for name in self._values]

    # derived values -------------------------------------------------------------------------
    @property
    def segment_ms(self) -> int:
        roll_ms = self["log.roll.ms"]
        return roll_ms if roll_ms is not None else self["log.roll.hours"] * 3600 * 1000


def parse_listener_entry(entry: str, prop: str) -> tuple[str, str, int]:
    """`NAME://host:port` (NAME defaults to PLAINTEXT) -> (NAME upper-cased, host, port)."""
    name, sep, address = entry.strip().partition("://")
    if not sep:
        name, address = "PLAINTEXT", entry.strip()
    host, colon, port = address.rpartition(":")
    if not colon:
        raise ConfigError(f"{prop}: expected NAME://host:port, got {entry!r}")
    try:
        port_num = int(port)
    except ValueError:
        raise ConfigError(f"{prop}: invalid port {port!r} in {entry!r}") from None
    if not 0 <= port_num <= 65535:
        raise ConfigError(f"{prop}: port {port_num} out of range in {entry!r}")
    return name.strip().upper(), host.strip("[]"), port_num


def read_properties_file(path: str) -> dict[str, str]:
    """Java .properties subset: key=value or key: value, # and ! comments, blank lines."""
    values: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise ConfigError(f"--config {path}: {exc.strerror}") from None
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text[0] in "#!":
            continue
        for sep in ("=", ":"):
            if sep in text:
                key, _, value = text.partition(sep)
                values[key.strip()] = value.strip()
                break
        else:
            raise ConfigError(f"{path}:{number}: expected key=value, got {text!r}")
    return values
