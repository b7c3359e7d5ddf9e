"""Apache Kafka broker properties that minibroker accepts without implementing them, so that a
Kafka `server.properties` starts minibroker as it starts Kafka.

Three kinds, decided once per name while the configuration is read (never on a request path):
- cluster-only: they configure what a single node does not have (a KRaft quorum, other brokers,
  replicas); each has a reason saying what it means for one node;
- not implemented: Kafka knows them (broker/kafka_properties.py, generated from Kafka's jars),
  minibroker does not act on them;
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


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean X?)` with the closest known name, or an empty string."""
    import difflib  # noqa: PLC0415 - only when a configuration is refused

    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]}?)" if close else ""
