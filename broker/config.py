"""Broker configuration under Apache Kafka's own property names.

Every property the broker understands is declared once in PROPERTIES with its type and default,
so the README's configuration reference, validation and defaults cannot drift apart. Sources, in
increasing precedence: defaults, a Kafka-style properties file (--config), command-line flags
(--host/--port/--data-dir), then --set key=value overrides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

LONG_MAX = 2**63 - 1


class ConfigError(ValueError):
    """A property is unknown or has an invalid value; the message names the property."""


@dataclass(frozen=True)
class Property:
    name: str
    type: str  # int | bool | str | list
    default: Any
    doc: str
    check: Callable[[Any], bool] | None = None
    check_doc: str = ""


def _positive(v) -> bool:
    return v > 0


def _non_negative(v) -> bool:
    return v >= 0


PROPERTIES: dict[str, Property] = {
    p.name: p
    for p in [
        # listeners and identity
        Property("listeners", "str", "PLAINTEXT://127.0.0.1:9092", "Address to bind, Kafka listener syntax (one PLAINTEXT listener)."),
        Property("advertised.listeners", "str", None, "Address given to clients in Metadata; defaults to the bound listener."),
        Property("node.id", "int", 1, "This broker's id.", _non_negative, ">= 0"),
        Property("log.dirs", "str", "./data", "Data directory (one directory)."),
        # topics
        Property("num.partitions", "int", 1, "Partitions of auto-created topics.", _positive, "> 0"),
        Property("default.replication.factor", "int", 1, "Accepted for compatibility; there is one replica.", lambda v: v in (1, -1), "1"),
        Property("auto.create.topics.enable", "bool", True, "Create a topic on first Metadata/Produce that names it."),
        Property("delete.topic.enable", "bool", True, "Allow DeleteTopics."),
        # log
        Property("log.segment.bytes", "int", 1073741824, "Roll a segment at this size.", lambda v: v >= 14, ">= 14"),
        Property("log.roll.ms", "int", None, "Roll a segment after this age (overrides log.roll.hours).", _positive, "> 0"),
        Property("log.roll.hours", "int", 168, "Roll a segment after this age.", _positive, "> 0"),
        Property("log.index.interval.bytes", "int", 4096, "Bytes between offset-index entries.", _non_negative, ">= 0"),
        Property("log.message.timestamp.type", "str", "CreateTime", "CreateTime or LogAppendTime.", lambda v: v in ("CreateTime", "LogAppendTime"), "CreateTime|LogAppendTime"),
        Property("message.max.bytes", "int", 1048588, "Largest record batch accepted.", _positive, "> 0"),
        Property("log.flush.interval.messages", "int", LONG_MAX, "fsync a partition after this many appended messages.", _positive, "> 0"),
        Property("log.flush.interval.ms", "int", None, "fsync a partition whose oldest unflushed data is this old.", _non_negative, ">= 0"),
        Property("log.flush.scheduler.interval.ms", "int", LONG_MAX, "How often the flusher checks log.flush.interval.ms.", _positive, "> 0"),
        Property("log.retention.ms", "int", None, "Accepted and reported; time-based deletion is not implemented.", None),
        Property("log.retention.hours", "int", 168, "Accepted and reported; time-based deletion is not implemented.", None),
        Property("log.retention.bytes", "int", -1, "Accepted and reported; size-based deletion is not implemented.", None),
        # network
        Property("socket.request.max.bytes", "int", 104857600, "Largest request frame; larger ones close the connection.", _positive, "> 0"),
        Property("connections.max.idle.ms", "int", 600000, "Accepted; idle connections are not closed.", _positive, "> 0"),
        # idempotence and transactions
        Property("producer.id.expiration.ms", "int", 86400000, "Forget an idle producer's sequence state after this long.", _positive, "> 0"),
        Property("producer.id.expiration.check.interval.ms", "int", 600000, "How often idle producer state is expired.", _positive, "> 0"),
        Property("transaction.max.timeout.ms", "int", 900000, "Largest transaction.timeout.ms a producer may ask for.", _positive, "> 0"),
        Property("transactional.id.expiration.ms", "int", 604800000, "Expire a transactional id idle this long.", _positive, "> 0"),
        Property("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10000, "How often timed-out transactions are aborted.", _positive, "> 0"),
        Property("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3600000, "How often expired transactional ids are removed.", _positive, "> 0"),
        Property("transaction.state.log.num.partitions", "int", 1, "Partitions of __transaction_state (Kafka: 50).", _positive, "> 0"),
        # groups
        Property("offsets.topic.num.partitions", "int", 1, "Partitions of __consumer_offsets (Kafka: 50).", _positive, "> 0"),
        Property("offsets.retention.minutes", "int", 10080, "Accepted and reported; offsets of empty groups are kept.", _positive, "> 0"),
        Property("group.initial.rebalance.delay.ms", "int", 3000, "Wait this long for more members before the first rebalance of an empty group.", _non_negative, ">= 0"),
        Property("group.min.session.timeout.ms", "int", 6000, "Smallest session.timeout.ms a member may ask for.", _positive, "> 0"),
        Property("group.max.session.timeout.ms", "int", 1800000, "Largest session.timeout.ms a member may ask for.", _positive, "> 0"),
        Property("group.max.size", "int", 2147483647, "Most members in one group.", _positive, "> 0"),
        # observability (minibroker's own; Kafka has no equivalent property)
        Property("minibroker.request.log.enable", "bool", False, "Log one line per request at info level (always on at debug level)."),
        Property("minibroker.metrics.port", "int", None, "Serve Prometheus metrics over HTTP on this port (0 picks a free one); off when unset.", lambda v: 0 <= v <= 65535, "0..65535"),
        Property("minibroker.metrics.host", "str", "127.0.0.1", "Address the metrics endpoint binds."),
        # testing only
        Property("minibroker.test.fault", "str", "", "Test-only fault hook (e.g. crash-after-prepare-commit); leave empty."),
    ]
}


def _parse(prop: Property, raw: Any) -> Any:
    if raw is None or (isinstance(raw, str) and raw.strip() == "" and prop.type != "str"):
        return None
    if prop.type == "str":
        return str(raw).strip()
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


class BrokerConfig:
    """Validated broker properties; read with config['log.segment.bytes']."""

    def __init__(self, values: dict[str, Any] | None = None):
        self._values: dict[str, Any] = {name: p.default for name, p in PROPERTIES.items()}
        self._explicit: set[str] = set()
        for name, raw in (values or {}).items():
            self.set(name, raw)

    def set(self, name: str, raw: Any) -> None:
        prop = PROPERTIES.get(name)
        if prop is None:
            raise ConfigError(f"{name}: unknown property")
        value = _parse(prop, raw)
        if value is not None and prop.check is not None and not prop.check(value):
            raise ConfigError(f"{name}: invalid value {raw!r} (must be {prop.check_doc})")
        self._values[name] = value
        self._explicit.add(name)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def is_default(self, name: str) -> bool:
        return name not in self._explicit

    def items(self):
        return self._values.items()

    # derived values -------------------------------------------------------------------------
    @property
    def listener(self) -> tuple[str, int]:
        return parse_listener(self["listeners"], "listeners")

    @property
    def segment_ms(self) -> int:
        roll_ms = self["log.roll.ms"]
        return roll_ms if roll_ms is not None else self["log.roll.hours"] * 3600 * 1000


def parse_listener(value: str, name: str) -> tuple[str, int]:
    first = value.split(",")[0].strip()
    if "://" in first:
        proto, _, first = first.partition("://")
        if proto.upper() != "PLAINTEXT":
            raise ConfigError(f"{name}: only PLAINTEXT listeners are supported, got {proto}")
    host, sep, port = first.rpartition(":")
    if not sep:
        raise ConfigError(f"{name}: expected host:port, got {value!r}")
    try:
        port_num = int(port)
    except ValueError:
        raise ConfigError(f"{name}: invalid port {port!r}") from None
    if not 0 <= port_num <= 65535:
        raise ConfigError(f"{name}: port {port_num} out of range")
    return host.strip("[]") or "0.0.0.0", port_num


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
