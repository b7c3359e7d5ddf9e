"""GROUP config resources (ConfigResource type 32, KIP-848): per-group overrides of the group
coordinator's settings, set through IncrementalAlterConfigs/AlterConfigs and listed by
DescribeConfigs as Kafka 4.4's `GroupConfig` defines them (every name of its CONFIG_DEF, the
defaults, the broker property each falls back to, the validation and its messages).

A config may exist for a group that does not (Kafka keeps them in its metadata log, apart from
the groups). The group coordinators read a group's explicit settings through `group_config`
(coordinator.collaborators.GroupConfigSource), clamped into the broker's current
`group.consumer.*` / `group.share.*` ranges as Kafka's `GroupConfig.evaluate` does; the
share-partitions read a share group's effective settings (its overrides, else the broker's
`group.share.*` properties) through `share_partition_config`, as Kafka's ShareGroupConfigProvider.

The overrides live in `<data_dir>/group-configs.json` (replaced atomically, fsynced, through the
broker's durability path, like features.json): {"groups": {group id: {name: value text}}}.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import structlog
from minibroker.broker import config_descriptions as describe
from minibroker.broker.dynamic_config import APPEND, DELETE, SET, SUBTRACT, AlterOp, _apply_ops
from minibroker.broker.security.checks import ConfigResource
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.share_types import SharePartitionConfig
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.durable_files import atomic_write
from minibroker.storage.errors import KafkaStorageError

__all__ = ["GROUP", "GROUP_CONFIGS", "GroupConfigs", "GroupConfigDef", "parse_duration_ms"]

log = structlog.get_logger("minibroker.broker.group_configs")

FILE_NAME = "group-configs.json"
GROUP = 32  # ConfigResource.Type.GROUP
GROUP_CONFIG = 8  # DescribeConfigsResponse ConfigSource GROUP_CONFIG
_INT_MAX = 2**31 - 1


class GroupConfigDef(NamedTuple):
    """One name of Kafka's GroupConfig.CONFIG_DEF."""

    type: int  # config_descriptions BOOLEAN/STRING/INT/LONG/LIST
    default: str  # the built-in default, as DescribeConfigs shows it
    at_least: int | None  # ConfigDef Range.atLeast
    broker_name: str | None  # ALL_GROUP_CONFIG_SYNONYMS: the broker property it falls back to
    doc: str
    internal: bool = False  # defineInternal: listed only when set
    one_of: tuple[str, ...] = ()  # ValidString.in


_I, _B, _S, _L, _LONG = describe.INT, describe.BOOLEAN, describe.STRING, describe.LIST, describe.LONG

#: Kafka 4.4's GroupConfig.CONFIG_DEF, in its order.
GROUP_CONFIGS: Mapping[str, GroupConfigDef] = {
    "consumer.session.timeout.ms": GroupConfigDef(
        _I,
        "45000",
        1,
        "group.consumer.session.timeout.ms",
        "The timeout to detect client failures when using the consumer group protocol.",
    ),
    "consumer.heartbeat.interval.ms": GroupConfigDef(
        _I,
        "5000",
        1,
        "group.consumer.heartbeat.interval.ms",
        "The heartbeat interval given to the members of a consumer group.",
    ),
    "consumer.assignment.interval.ms": GroupConfigDef(
        _I,
        "1000",
        0,
        "group.consumer.assignment.interval.ms",
        "The interval between assignment updates for a consumer group.",
    ),
    "consumer.assignor.offload.enable": GroupConfigDef(
        _B,
        "true",
        None,
        "group.consumer.assignor.offload.enable",
        "Whether to offload consumer group assignment to a group coordinator background thread.",
        internal=True,
    ),
    "share.session.timeout.ms": GroupConfigDef(
        _I,
        "45000",
        1,
        "group.share.session.timeout.ms",
        "The timeout to detect client failures when using the share group protocol.",
    ),
    "share.heartbeat.interval.ms": GroupConfigDef(
        _I,
        "5000",
        1,
        "group.share.heartbeat.interval.ms",
        "The heartbeat interval given to the members of a share group.",
    ),
    "share.record.lock.duration.ms": GroupConfigDef(
        _I,
        "30000",
        1000,
        "group.share.record.lock.duration.ms",
        "The record acquisition lock duration in milliseconds for share groups.",
    ),
    "share.delivery.count.limit": GroupConfigDef(
        _I,
        "5",
        2,
        "group.share.delivery.count.limit",
        "The maximum number of delivery attempts for a record delivered to a share group.",
    ),
    "share.partition.max.record.locks": GroupConfigDef(
        _I,
        "2000",
        100,
        "group.share.partition.max.record.locks",
        "Share-group record lock limit per share-partition.",
    ),
    "share.auto.offset.reset": GroupConfigDef(
        _S,
        "latest",
        None,
        None,
        "The strategy to initialize the share-partition start offset: earliest, latest or "
        "by_duration:<duration> (ISO8601).",
    ),
    "share.isolation.level": GroupConfigDef(
        _S,
        "read_uncommitted",
        None,
        None,
        "Controls how to read records written transactionally.",
        one_of=("read_committed", "read_uncommitted"),
    ),
    "share.renew.acknowledge.enable": GroupConfigDef(
        _B, "true", None, None, "Whether the renew acknowledge type is enabled for the share group."
    ),
    "share.assignment.interval.ms": GroupConfigDef(
        _I,
        "1000",
        0,
        "group.share.assignment.interval.ms",
        "The interval between assignment updates for a share group.",
    ),
    "share.assignor.offload.enable": GroupConfigDef(
        _B,
        "true",
        None,
        "group.share.assignor.offload.enable",
        "Whether to offload share group assignment to a group coordinator background thread.",
        internal=True,
    ),
    "streams.session.timeout.ms": GroupConfigDef(
        _I,
        "45000",
        1,
        "group.streams.session.timeout.ms",
        "The timeout to detect client failures when using the streams group protocol.",
    ),
    "streams.heartbeat.interval.ms": GroupConfigDef(
        _I, "5000", 1, "group.streams.heartbeat.interval.ms", "The heartbeat interval given to the members."
    ),
    "streams.num.standby.replicas": GroupConfigDef(
        _I, "0", 0, "group.streams.num.standby.replicas", "The number of standby replicas for each task."
    ),
    "streams.initial.rebalance.delay.ms": GroupConfigDef(
        _I,
        "3000",
        0,
        "group.streams.initial.rebalance.delay.ms",
        "The amount of time the group coordinator will wait for more streams clients to join a "
        "new group before performing the first rebalance.",
    ),
    "streams.assignment.interval.ms": GroupConfigDef(
        _I,
        "1000",
        0,
        "group.streams.assignment.interval.ms",
        "The interval between assignment updates for a streams group.",
    ),
    "streams.assignor.offload.enable": GroupConfigDef(
        _B,
        "true",
        None,
        "group.streams.assignor.offload.enable",
        "Whether to offload streams group assignment to a group coordinator background thread.",
        internal=True,
    ),
    "streams.task.offset.interval.ms": GroupConfigDef(
        _I,
        "60000",
        1,
        "group.streams.task.offset.interval.ms",
        "The interval in which the warmup task changelog offsets on a client are updated on the broker.",
        internal=True,
    ),
    "streams.num.warmup.replicas": GroupConfigDef(
        _I,
        "2",
        0,
        "group.streams.num.warmup.replicas",
        "The maximum number of warmup task replicas.",
        internal=True,
    ),
    "streams.rack.aware.assignment.tags": GroupConfigDef(
        _L,
        "",
        None,
        "group.streams.rack.aware.assignment.tags",
        "List of client tag keys used to distribute standby replicas across Kafka Streams instances.",
    ),
    "streams.acceptable.recovery.lag": GroupConfigDef(
        _LONG,
        "10000",
        0,
        "group.streams.acceptable.recovery.lag",
        "The maximum acceptable lag (number of offsets to catch up) for a client to be considered "
        "caught-up enough to receive an active task assignment.",
        internal=True,
    ),
    "streams.assignor.name": GroupConfigDef(
        _S,
        "sticky",  # Kafka: the first of group.streams.assignors
        None,
        "group.streams.assignors",
        "The task assignor to use for this streams group, selected by short name from the "
        "assignors registered via the broker configuration group.streams.assignors.",
    ),
    "errors.deadletterqueue.topic.name": GroupConfigDef(
        _S,
        "",
        None,
        None,
        "The name of the topic to be used as the dead-letter queue (DLQ) topic for this share group.",
    ),
    "errors.deadletterqueue.copy.record.enable": GroupConfigDef(
        _B,
        "false",
        None,
        None,
        "When writing onto the dead-letter queue topic, whether to copy the original record onto "
        "the DLQ topic, or just write a record containing the context information headers.",
    ),
}

#: group config -> the GroupSettings fields of its (default, min, max): the broker's
#: group.consumer.* / group.share.* properties (GroupCoordinatorConfig, ShareGroupConfig)
_BROKER_BOUNDED: Mapping[str, tuple[str, str, str]] = {
    f"{kind}.{name}": (
        f"{kind}_{field}",
        f"{kind}_min_{field}",
        f"{kind}_max_{field}",
    )
    for kind, names in (
        ("consumer", ("session.timeout.ms", "heartbeat.interval.ms", "assignment.interval.ms")),
        (
            "share",
            (
                "session.timeout.ms",
                "heartbeat.interval.ms",
                "assignment.interval.ms",
                "record.lock.duration.ms",
                "delivery.count.limit",
                "partition.max.record.locks",
            ),
        ),
    )
    for name in names
    for field in (name.replace(".", "_"),)
}

#: Kafka 4.4's fixed ranges of the streams settings (their broker properties' defaults:
#: minibroker serves no streams groups): name -> (min, max)
_FIXED_RANGES: Mapping[str, tuple[int, int]] = {
    "streams.heartbeat.interval.ms": (5000, 15000),
    "streams.session.timeout.ms": (45000, 60000),
    "streams.num.standby.replicas": (0, 2),
    "streams.assignment.interval.ms": (0, 15000),
    "streams.task.offset.interval.ms": (15000, _INT_MAX),
    "streams.num.warmup.replicas": (0, 20),
}
_STREAMS_ASSIGNORS = ("sticky",)


def _error(message: str, code: ErrorCode = ErrorCode.invalid_config) -> KafkaStorageError:
    return KafkaStorageError(code, message)


def _parse(name: str, text: str | None) -> Any:
    """ConfigDef.parse of one value: its typed value, or INVALID_CONFIG with Kafka's message."""
    spec = GROUP_CONFIGS[name]
    if text is None:
        if spec.type == _L or spec.type == _S:
            return None
        raise _error(f"Invalid value null for configuration {name}: entry must be non null")
    raw = text.strip()
    if spec.type in (_I, _LONG):
        try:
            value: Any = int(raw)
        except ValueError:
            kind = "INT" if spec.type == _I else "LONG"
            raise _error(
                f"Invalid value {text} for configuration {name}: Not a number of type {kind}"
            ) from None
        if spec.type == _I and not -(2**31) <= value <= _INT_MAX:
            raise _error(f"Invalid value {text} for configuration {name}: Not a number of type INT")
        if spec.at_least is not None and value < spec.at_least:
            raise _error(
                f"Invalid value {value} for configuration {name}: Value must be at least {spec.at_least}"
            )
        return value
    if spec.type == _B:
        if raw.lower() not in ("true", "false"):
            raise _error(
                f"Invalid value {text} for configuration {name}: Expected value to be either true or false"
            )
        return raw.lower() == "true"
    if spec.type == _L:
        return [item.strip() for item in raw.split(",") if item.strip()] if raw else []
    if spec.one_of and raw not in spec.one_of:
        raise _error(
            f"Invalid value {text} for configuration {name}: String must be one of: {', '.join(spec.one_of)}"
        )
    if name == "share.auto.offset.reset" and not _valid_share_reset(raw):
        raise _error(
            f"Invalid value {raw} for configuration {name}: Invalid value `{raw}` for configuration "
            f"{name}. The value must be either 'earliest', 'latest' or of the format "
            "'by_duration:<PnDTnHnMn.nS>'."
        )
    return raw


def _valid_share_reset(value: str) -> bool:
    """Kafka's ShareGroupAutoOffsetResetStrategy.fromString accepts it: earliest, latest or
    by_duration:<a non-negative ISO-8601 duration>, case-sensitive (AutoOffsetResetStrategy)."""
    if value in ("earliest", "latest"):
        return True
    if not value.startswith("by_duration:"):
        return False
    duration = parse_duration_ms(value[len("by_duration:") :])
    return duration is not None and duration >= 0


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
    r"(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int | None:
    """Java's Duration.parse (PnDTnHnMn.nS, each part signed, seconds with up to 9 decimals) in
    milliseconds (truncated towards zero); None if `text` is not one."""
    m = _DURATION.fullmatch(text)
    if m is None:
        return None
    sign, days, time, hours, minutes, seconds, fraction = m.groups()
    if days is None and hours is None and minutes is None and seconds is None:
        return None  # "P", "PT": at least one part (Java: DateTimeParseException)
    if time is not None and hours is None and minutes is None and seconds is None:
        return None  # "P1DT": a T needs a time part
    nanos = ((int(days or 0) * 24 + int(hours or 0)) * 60 + int(minutes or 0)) * 60 * 10**9
    nanos += int(seconds or 0) * 10**9
    if fraction:
        part = int(fraction.ljust(9, "0"))
        nanos += -part if seconds.startswith("-") else part
    nanos = -nanos if sign == "-" else nanos
    return nanos // 10**6 if nanos >= 0 else -(-nanos // 10**6)


class GroupConfigs:
    """The GROUP config overrides of every group id that has some (implements
    coordinator.collaborators.GroupConfigSource)."""

    def __init__(
        self, data_dir: str, settings: GroupSettings, write: Callable[[str, bytes], None] = atomic_write
    ) -> None:
        """``settings``: the broker's group coordinator settings (the ranges and the values a
        group without an override gets); ``write``: how the file is replaced (the broker's
        ``Durability.write_file``)."""
        self.path = os.path.join(data_dir, FILE_NAME)
        self.settings = settings
        self._write = write
        self.groups: dict[str, dict[str, str]] = self._read()

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            with open(self.path, "rb") as f:
                data = json.loads(f.read().decode("utf-8"))
            return {
                str(group): {
                    str(k): str(v)
                    for k, v in configs.items()
                    if k in GROUP_CONFIGS and self._readable(group, k, v)
                }
                for group, configs in data["groups"].items()
            }
        except FileNotFoundError:
            return {}
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            log.warning(
                "group config file is damaged; groups use the broker's settings",
                path=self.path,
                error=str(exc),
            )
            return {}

    def _readable(self, group: str, name: str, value: object) -> bool:
        """Whether a stored value is one this broker accepts (an older minibroker was more
        lenient with share.auto.offset.reset); one it refuses is left out, with a warning."""
        try:
            _parse(name, str(value))
        except KafkaStorageError as exc:
            log.warning("group config ignored: invalid value", group=group, config=name, error=exc.message)
            return False
        return True

    def _save(self) -> None:
        data = {"groups": {g: c for g, c in sorted(self.groups.items()) if c}}
        self._write(self.path, json.dumps(data, indent=1, sort_keys=True).encode())

    # --- GroupConfigSource ------------------------------------------------------------------------
    def group_config(self, group_id: str) -> Mapping[str, Any]:
        """The group's explicit configs, typed; the consumer.* and share.* ones clamped into the
        broker's current ranges (Kafka's GroupConfig.evaluate: the broker's bounds may have moved
        since)."""
        out: dict[str, Any] = {}
        for name, text in self.groups.get(group_id, {}).items():
            value = _parse(name, text)
            bounds = self._range(name) if name in _BROKER_BOUNDED else None
            if bounds is not None:
                value = min(max(value, bounds[0]), bounds[1])
            out[name] = value
        return out

    def share_partition_config(self, group_id: str) -> SharePartitionConfig:
        """A share group's effective share-partition settings: its overrides (clamped as
        `group_config`), else the broker's group.share.* properties, else Kafka's defaults
        (ShareGroupConfigProvider)."""
        given = self.group_config(group_id) if group_id in self.groups else {}
        s = self.settings
        return SharePartitionConfig(
            record_lock_duration_ms=given.get(
                "share.record.lock.duration.ms", s.share_record_lock_duration_ms
            ),
            delivery_count_limit=given.get("share.delivery.count.limit", s.share_delivery_count_limit),
            max_record_locks=given.get(
                "share.partition.max.record.locks", s.share_partition_max_record_locks
            ),
            read_committed=given.get("share.isolation.level") == "read_committed",
            renew_enabled=given.get("share.renew.acknowledge.enable", True),
            auto_offset_reset=given.get(
                "share.auto.offset.reset", GROUP_CONFIGS["share.auto.offset.reset"].default
            ),
        )

    # --- what the broker falls back to -----------------------------------------------------------
    def _range(self, name: str) -> tuple[int, int] | None:
        if name in _BROKER_BOUNDED:
            _, low, high = _BROKER_BOUNDED[name]
            return getattr(self.settings, low), getattr(self.settings, high)
        return _FIXED_RANGES.get(name)

    def broker_default(self, name: str) -> str:
        """The value a group without an override gets (the broker's property, else Kafka's)."""
        if name in _BROKER_BOUNDED:
            return str(getattr(self.settings, _BROKER_BOUNDED[name][0]))
        return GROUP_CONFIGS[name].default

    # --- IncrementalAlterConfigs / AlterConfigs --------------------------------------------------
    def validate(self, configs: Mapping[str, str | None]) -> dict[str, Any]:
        """Kafka's GroupConfig.validate of a group's whole new set; the typed values.
        Raises KafkaStorageError (INVALID_CONFIG) with Kafka's message."""
        for name in configs:
            if name not in GROUP_CONFIGS:
                raise _error(f"Unknown group config name: {name}")
        tags = configs.get("streams.rack.aware.assignment.tags")
        if tags is not None and tags.strip():
            items = [t.strip() for t in tags.strip().split(",")]
            if len(set(items)) != len(items):
                raise _error("streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
        parsed = {name: _parse(name, text) for name, text in configs.items()}
        self._check_ranges(parsed)
        assignor = parsed.get("streams.assignor.name")
        if "streams.assignor.name" in parsed and assignor not in _STREAMS_ASSIGNORS:
            raise _error(
                f"streams.assignor.name '{assignor}' is not a registered task assignor. "
                f"Registered assignors are: [{', '.join(_STREAMS_ASSIGNORS)}]."
            )
        for kind in ("consumer", "share", "streams"):
            session, heartbeat = f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms"
            if session in parsed or heartbeat in parsed:
                effective_session = parsed.get(session, int(self.broker_default(session)))
                effective_heartbeat = parsed.get(heartbeat, int(self.broker_default(heartbeat)))
                if effective_session <= effective_heartbeat:
                    raise _error(f"{session} must be greater than {heartbeat}")
        dlq = parsed.get("errors.deadletterqueue.topic.name")
        if dlq and dlq.startswith("__"):
            raise _error("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
        return parsed

    def _check_ranges(self, parsed: Mapping[str, Any]) -> None:
        """GroupConfig.validateValues' ranges, in its order."""
        for name in _RANGE_ORDER:
            bounds = self._range(name)
            if name not in parsed or bounds is None:
                continue
            low, high = bounds
            value = parsed[name]
            if name in _MAX_ONLY:
                if value > high:
                    raise _error(f"{name} must be less than or equal to {high}")
            elif name in _MIN_ONLY:
                if value < low:
                    raise _error(f"{name} must be greater than or equal to {low}")
            elif not low <= value <= high:
                raise _error(f"{name} must be in the range {low} to {high} inclusive.")

    def alter(self, group_id: str, ops: Iterable[AlterOp], *, incremental: bool, validate_only: bool) -> None:
        """Apply [(name, op, value)] to the group's overrides (AlterConfigs: replace them all).
        Raises KafkaStorageError with Kafka's error and message."""
        ops = list(ops)
        names = [name for name, _, _ in ops]
        if len(set(names)) != len(names):
            raise _error(
                f"Error due to duplicate config keys: {sorted({n for n in names if names.count(n) > 1})}",
                ErrorCode.invalid_request,
            )
        if not group_id:
            raise _error("Group name can't be empty.", ErrorCode.invalid_request)
        for name, op, _value in ops:
            if op in (APPEND, SUBTRACT) and name in GROUP_CONFIGS and GROUP_CONFIGS[name].type != _L:
                verb = "append" if op == APPEND else "subtract"
                raise _error(f"Config value {verb} is not allowed for config key: {name}")
            if op not in (SET, DELETE, APPEND, SUBTRACT):
                raise _error(f"Unknown alter config operation {op}", ErrorCode.invalid_request)
        current = self.groups.get(group_id, {}) if incremental else {}
        new = _apply_ops(
            current, ops, {n for n, d in GROUP_CONFIGS.items() if d.type == _L}, self._in_force(group_id)
        )
        for name, value in new.items():
            if value is None and name in GROUP_CONFIGS and GROUP_CONFIGS[name].type not in (_L, _S):
                raise _error(f"Invalid value null for configuration {name}: entry must be non null")
        texts = {name: value for name, value in new.items() if value is not None}
        self.validate(texts)
        if validate_only:
            return
        if texts:
            self.groups[group_id] = dict(texts)
        else:
            self.groups.pop(group_id, None)
        self._save()
        log.info("group configs changed", group=group_id, configs=texts)

    def alter_result(
        self, resource: ConfigResource, ops: list[AlterOp], *, incremental: bool, validate_only: bool
    ) -> dict[str, Any]:
        """The per-resource answer of (Incremental)AlterConfigs for a GROUP resource."""
        out: dict[str, Any] = dict(
            error_code=ErrorCode.none,
            error_message=None,
            resource_type=resource.resource_type,
            resource_name=resource.resource_name,
        )
        try:
            self.alter(resource.resource_name, ops, incremental=incremental, validate_only=validate_only)
        except KafkaStorageError as exc:
            out.update(error_code=exc.error_code, error_message=exc.message)
        return out

    def _in_force(self, group_id: str) -> Callable[[str], str | None]:
        def value(name: str) -> str | None:
            given = self.groups.get(group_id, {})
            if name in given:
                return given[name]
            return self.broker_default(name) if name in GROUP_CONFIGS else None

        return value

    # --- DescribeConfigs ---------------------------------------------------------------------------
    def describe(
        self,
        group_id: str,
        *,
        synonyms: bool,
        documentation: bool,
        broker_levels: Callable[[str], list[dict[str, Any]]],
    ) -> list[dict[str, Any]]:
        """DescribeConfigs' entries for the group: every non-internal config (and the internal
        ones it sets), its value in force, where it comes from (GROUP_CONFIG, else the broker
        property it falls back to, `broker_levels(name)`: static then default), as Kafka's
        ConfigHelper.createGroupConfigEntry. Raises KafkaStorageError for an empty name."""
        if not group_id:
            raise _error("Group name must not be empty", ErrorCode.invalid_request)
        given = self.groups.get(group_id, {})
        out = []
        for name, spec in GROUP_CONFIGS.items():
            if spec.internal and name not in given:
                continue
            levels: list[dict[str, Any]]
            if spec.broker_name is not None:
                levels = broker_levels(spec.broker_name) or [
                    dict(
                        name=spec.broker_name, value=self.broker_default(name), source=describe.DEFAULT_CONFIG
                    )
                ]
            else:
                levels = [dict(name=name, value=spec.default, source=describe.DEFAULT_CONFIG)]
            if name in given:
                value = _text(spec.type, _parse(name, given[name]))
                levels = [dict(name=name, value=value, source=GROUP_CONFIG), *levels]
            else:
                value = levels[0]["value"] if spec.broker_name is not None else spec.default
            out.append(
                dict(
                    name=name,
                    value=value,
                    read_only=False,
                    is_sensitive=False,
                    config_source=levels[0]["source"],
                    config_type=spec.type,
                    synonyms=levels if synonyms else [],
                    documentation=spec.doc if documentation else None,
                )
            )
        return out


def _text(kind: int, value: Any) -> str:
    """ConfigDef.convertToString."""
    if kind == _B:
        return "true" if value else "false"
    if kind == _L:
        return ",".join(value or [])
    return "" if value is None else str(value)


# GroupConfig.validateValues' order, and the checks that only bound one side
_RANGE_ORDER = (
    "consumer.heartbeat.interval.ms",
    "consumer.session.timeout.ms",
    "consumer.assignment.interval.ms",
    "share.heartbeat.interval.ms",
    "share.session.timeout.ms",
    "share.record.lock.duration.ms",
    "share.delivery.count.limit",
    "share.partition.max.record.locks",
    "share.assignment.interval.ms",
    "streams.heartbeat.interval.ms",
    "streams.session.timeout.ms",
    "streams.num.standby.replicas",
    "streams.assignment.interval.ms",
    "streams.task.offset.interval.ms",
    "streams.num.warmup.replicas",
)
_MAX_ONLY = frozenset({"streams.num.standby.replicas", "streams.num.warmup.replicas"})
_MIN_ONLY = frozenset({"streams.task.offset.interval.ms"})
