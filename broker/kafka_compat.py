"""Apache Kafka broker properties that minibroker accepts without implementing them, so that a
Kafka `server.properties` starts minibroker as it starts Kafka.

Three kinds, decided once per name while the configuration is read (never on a request path):
- cluster-only: they configure what a single node does not have (a KRaft quorum, other brokers,
  replicas); each has a reason saying what it means for one node;
- not implemented: Kafka knows them (broker/kafka_properties.py, generated from Kafka's jars),
  minibroker does not act on them; except those that would make the broker stricter (TLS
  versions and ciphers, principal mapping, connection limits, ...), which are refused unless
  set to what minibroker does anyway (``stricter_setting_refusal``);
- unknown: neither Kafka's nor minibroker's; refused with the closest known names as a hint.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from minibroker.broker.kafka_properties import KAFKA_BROKER_PROPERTIES

_QUORUM = "no KRaft quorum: this one process is its own controller"
_METADATA = "no KRaft metadata log: the cluster metadata is kept in log.dirs"
_REGISTRATION = "no controller to register with or send heartbeats to"
_PEERS = "no other broker to talk to"
_REPLICAS = "one node holds the only replica of every partition"

_CLUSTER_ONLY = {
    "process.roles": "this one process is both broker and controller",
    "controller.listener.names": "controller listeners are not bound: no other node talks to a controller",
    "sasl.mechanism.controller.protocol": _QUORUM,
    "broker.heartbeat.interval.ms": _REGISTRATION,
    "broker.session.timeout.ms": _REGISTRATION,
    "initial.broker.registration.timeout.ms": _REGISTRATION,
    "controlled.shutdown.enable": "no other broker to hand partition leadership to on shutdown",
    "inter.broker.listener.name": _PEERS,
    "security.inter.broker.protocol": _PEERS,
    "sasl.mechanism.inter.broker.protocol": _PEERS,
    "broker.rack": "rack awareness needs several brokers",
    "min.insync.replicas": _REPLICAS,
    "num.replica.fetchers": _REPLICAS,
    "auto.leader.rebalance.enable": _REPLICAS,
}
_CLUSTER_ONLY_PREFIXES = (
    ("controller.", _QUORUM),
    ("metadata.", _METADATA),
    ("internal.metadata.", _METADATA),
    ("replica.", _REPLICAS),
    ("replication.quota.", _REPLICAS),
    ("leader.imbalance.", _REPLICAS),
    ("unclean.leader.election.", _REPLICAS),
)
_CLUSTER_ONLY_SUFFIXES = ((".replication.factor", _REPLICAS), (".min.isr", _REPLICAS))

# listener.name.<listener>.<property>: Kafka's per-listener overrides.
_PER_LISTENER = re.compile(r"^listener\.name\.[a-z0-9_]+\.(.+)$")


def cluster_only_reason(name: str) -> str | None:
    """Why a Kafka property means nothing on one node, or None if it is not cluster-only."""
    if name in _CLUSTER_ONLY:
        return _CLUSTER_ONLY[name]
    if name not in KAFKA_BROKER_PROPERTIES:
        return None
    for prefix, reason in _CLUSTER_ONLY_PREFIXES:
        if name.startswith(prefix):
            return reason
    for suffix, reason in _CLUSTER_ONLY_SUFFIXES:
        if name.endswith(suffix):
            return reason
    return None


# Kafka properties that make a broker stricter (which TLS versions and ciphers, which keys and
# trusted certificates, how principals are formed, who may authenticate how, how many
# connections) that minibroker does not implement: ignoring one would leave the broker less
# strict than asked, so a value is refused unless it asks for what minibroker does anyway. Each
# name maps to those values: Kafka's default where minibroker does the same (compared as a
# comma-separated set, case-insensitively), nothing where only an empty value is accepted.
# Per-listener (and per-mechanism) forms `listener.name.<l>.[<mechanism>.]<name>` count too.
_DEFAULT_PRINCIPAL_BUILDER = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
_STRICTER_UNIMPLEMENTED: dict[str, tuple[str, ...]] = {
    # TLS: Python's default server context offers TLS 1.2 and 1.3, as Kafka's defaults do
    "ssl.enabled.protocols": ("TLSv1.2,TLSv1.3",),
    "ssl.protocol": ("TLSv1.3", "TLS"),
    "ssl.cipher.suites": (),
    "ssl.principal.mapping.rules": ("DEFAULT",),
    "ssl.keystore.key": (),
    "ssl.keystore.certificate.chain": (),
    "ssl.truststore.certificates": (),
    "ssl.trustmanager.algorithm": ("PKIX",),
    "ssl.engine.factory.class": (),
    "ssl.provider": (),
    "security.providers": (),
    # authentication and principals
    "principal.builder.class": (_DEFAULT_PRINCIPAL_BUILDER,),
    "sasl.server.callback.handler.class": (),
    "connections.max.reauth.ms": ("0",),
    # connection limits (max.connections and max.connections.per.ip are implemented broker-wide)
    "max.connections.per.ip.overrides": (),
    "max.connection.creation.rate": ("2147483647",),
    "max.connections": ("2147483647",),  # reached here only per listener
    "max.connections.per.ip": ("2147483647",),  # likewise
}
_BROKER_WIDE_ONLY = frozenset({"max.connections", "max.connections.per.ip"})
# listener.name.<listener>.[<sasl mechanism>.]<property>
_PER_LISTENER_PARTS = re.compile(r"^listener\.name\.[a-z0-9_]+\.(?:([a-z0-9-]+)\.)?(.+)$")


def _as_set(value: str) -> frozenset[str]:
    return frozenset(item.strip().lower() for item in value.split(",") if item.strip())


def stricter_setting_refusal(name: str, value: str) -> str | None:
    """The problem text for a Kafka property (`name` already known to Kafka, see `kafka_knows`)
    that would make the broker stricter and that minibroker does not implement, set to a value
    other than what minibroker does anyway; None when it may be ignored."""
    base = name
    if base not in _STRICTER_UNIMPLEMENTED:
        match = _PER_LISTENER_PARTS.match(name)
        if match is None:
            return None
        base = match.group(2)
        if base not in _STRICTER_UNIMPLEMENTED and match.group(1):  # listener.name.l.<mech>.<prop>
            base = f"{match.group(1)}.{base}"
        if base not in _STRICTER_UNIMPLEMENTED:
            return None
    given = _as_set(value)
    accepted = _STRICTER_UNIMPLEMENTED[base]
    if not given or any(given == _as_set(a) for a in accepted):
        return None
    hint = f"; remove it or set it to {' or '.join(accepted)}" if accepted else "; remove it"
    what = f"{base} per listener" if base in _BROKER_WIDE_ONLY else base
    return (
        f"{name}: minibroker does not implement {what}, and ignoring it would make the broker "
        f"less strict than asked{hint}"
    )


def kafka_knows(name: str) -> bool:
    """Whether Kafka's broker accepts `name`: one of its properties, or one of them overridden
    per listener (`listener.name.<listener>.[<sasl mechanism>.]<property>`)."""
    if name in KAFKA_BROKER_PROPERTIES:
        return True
    match = _PER_LISTENER.match(name)
    if match is None:
        return False
    rest = match.group(1)
    return rest in KAFKA_BROKER_PROPERTIES or rest.partition(".")[2] in KAFKA_BROKER_PROPERTIES


def did_you_mean(name: str, known: Iterable[str], n: int = 1) -> str:
    """` (did you mean X?)` with the closest known name (up to `n` of them, closest first), or
    an empty string."""
    import difflib  # noqa: PLC0415 - only when a name is refused

    close = difflib.get_close_matches(name, list(known), n=n)
    return f" (did you mean {', '.join(close)}?)" if close else ""
