"""The configuration properties of listeners, TLS, SASL, ACLs and resource limits.

They live here rather than in broker/config.py so that file stays one table of the core
properties; broker/config.py splices this list into its table. Kafka's names and defaults
unless docs/configuration.md says why not (names starting with `minibroker.` have no Kafka equivalent).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

INT_MAX = 2**31 - 1


class Property(NamedTuple):
    name: str
    type: str  # int | bool | str
    default: Any
    doc: str
    check: Callable[[Any], bool] | None = None
    check_doc: str = ""


def _positive(v: int) -> bool:
    return v > 0


def _one_of(*values: str) -> Callable[[Any], bool]:
    return lambda v: v in values


DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
AUTHORIZER_CLASSES = (
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
)

SECURITY_AND_LIMIT_PROPERTIES = [
    # listeners, TLS, SASL
    Property(
        "listener.security.protocol.map",
        "str",
        DEFAULT_PROTOCOL_MAP,
        "Listener name to security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).",
    ),
    Property(
        "sasl.enabled.mechanisms",
        "str",
        ",".join(SUPPORTED_MECHANISMS),
        "SASL mechanisms offered on SASL listeners (Kafka: GSSAPI, which is not offered).",
    ),
    Property(
        "minibroker.scram.credentials",
        "str",
        "",
        "SCRAM users created at startup, kafka-storage --add-scram syntax: "
        "SCRAM-SHA-256=[name=alice,password=secret];...",
    ),
    Property(
        "ssl.keystore.location",
        "str",
        None,
        "PEM file with the listener's certificate chain and private key.",
    ),
    Property("ssl.keystore.type", "str", "PEM", "Only PEM (Kafka: JKS).", _one_of("PEM"), "PEM"),
    Property("ssl.key.password", "str", None, "Password of an encrypted private key in the keystore."),
    Property(
        "ssl.keystore.password",
        "str",
        None,
        "Accepted for compatibility; PEM keystores use ssl.key.password.",
    ),
    Property(
        "ssl.truststore.location",
        "str",
        None,
        "PEM file with the CA certificates trusted for client certificates.",
    ),
    Property("ssl.truststore.type", "str", "PEM", "Only PEM (Kafka: JKS).", _one_of("PEM"), "PEM"),
    Property(
        "ssl.truststore.password",
        "str",
        None,
        "Accepted for compatibility; PEM truststores have no password.",
    ),
    Property(
        "ssl.client.auth",
        "str",
        "none",
        "Ask TLS clients for a certificate: none, requested or required.",
        _one_of("none", "requested", "required"),
        "none|requested|required",
    ),
    Property(
        "sasl.server.max.receive.size",
        "int",
        524288,
        "Largest frame read from a client on a SASL listener before it has authenticated; a larger "
        "one fails the authentication and closes the connection.",
        _positive,
        "> 0",
    ),
    Property(
        "connection.failed.authentication.delay.ms",
        "int",
        100,
        "A failed authentication is answered (and its connection closed) this long after it failed, "
        "which slows password guessing; 0 answers at once.",
        lambda v: v >= 0,
        ">= 0",
    ),
    Property(
        "minibroker.ssl.handshake.timeout.ms",
        "int",
        10000,
        "Close a TLS connection whose handshake is not done in this time (it counts against "
        "max.connections from the moment it is accepted).",
        _positive,
        "> 0",
    ),
    # authorization
    Property(
        "authorizer.class.name",
        "str",
        "",
        "Empty: no authorization. " + " or ".join(AUTHORIZER_CLASSES) + ": ACLs are enforced.",
        _one_of("", *AUTHORIZER_CLASSES),
        "empty or " + "|".join(AUTHORIZER_CLASSES),
    ),
    Property(
        "super.users", "str", "", "Principals allowed everything, separated by ';' (User:admin;User:CN=ops)."
    ),
    Property(
        "allow.everyone.if.no.acl.found",
        "bool",
        False,
        "Allow an operation on a resource that has no ACL at all.",
    ),
    # limits
    Property(
        "max.connections",
        "int",
        INT_MAX,
        "Most open client connections; more are closed at once.",
        _positive,
        "> 0",
    ),
    Property(
        "max.connections.per.ip",
        "int",
        INT_MAX,
        "Most open connections from one IP address; more are closed at once.",
        _positive,
        "> 0",
    ),
    Property(
        "minibroker.request.receive.timeout.ms",
        "int",
        60000,
        "Close a connection that started a request frame and did not finish sending it in this time.",
        _positive,
        "> 0",
    ),
    Property(
        "fetch.max.bytes",
        "int",
        57671680,
        "Most record bytes in one Fetch response, whatever the client asks.",
        lambda v: v >= 1024,
        ">= 1024",
    ),
    Property(
        "queued.max.requests",
        "int",
        500,
        "Most complete requests being served at once across all connections; others wait unread "
        "(a frame still arriving takes no slot).",
        _positive,
        "> 0",
    ),
    Property(
        "queued.max.request.bytes",
        "int",
        209715200,
        "Most request bytes held in memory at once, counted as they arrive, not as a frame announces "
        "them (Kafka: -1, unbounded); -1 for no bound.",
        lambda v: v == -1 or v > 0,
        "-1 or > 0",
    ),
    Property(
        "minibroker.max.partitions.per.request",
        "int",
        10000,
        "CreateTopics/CreatePartitions/auto-creation creating more partitions in one request are refused "
        "(Kafka's fixed batch limit).",
        _positive,
        "> 0",
    ),
    Property(
        "minibroker.max.open.segment.files",
        "int",
        1000,
        "Most open .log files of inactive segments (at most a quarter of the open-files limit); older "
        "segments open on read and close least recently used first. Active segments are always open.",
        _positive,
        "> 0",
    ),
    Property(
        "minibroker.max.partitions",
        "int",
        100000,
        "Most partitions on the broker; creations beyond it are refused.",
        _positive,
        "> 0",
    ),
    # delegation tokens (broker/security/delegation_tokens.py)
    Property(
        "delegation.token.secret.key",
        "str",
        None,
        "Secret that signs delegation tokens (HmacSHA512); unset: tokens are disabled.",
    ),
    Property(
        "delegation.token.max.lifetime.ms",
        "int",
        604800000,
        "Longest a delegation token may live, renewals included.",
        _positive,
        ">= 1",
    ),
    Property(
        "delegation.token.expiry.time.ms",
        "int",
        86400000,
        "How long a delegation token lives after its creation or renewal.",
        _positive,
        ">= 1",
    ),
    Property(
        "delegation.token.expiry.check.interval.ms",
        "int",
        3600000,
        "How often expired delegation tokens are removed.",
        _positive,
        ">= 1",
    ),
    # client quotas (broker/quotas.py)
    Property(
        "quota.window.num",
        "int",
        11,
        "Samples kept for client quota rates (producer_byte_rate, consumer_byte_rate).",
        _positive,
        ">= 1",
    ),
    Property(
        "quota.window.size.seconds",
        "int",
        1,
        "Time span of each client quota sample.",
        _positive,
        ">= 1",
    ),
]

# Properties that may be set per listener as listener.name.<listener>.<property> (Kafka's rule).
_PER_LISTENER = {p.name: p for p in SECURITY_AND_LIMIT_PROPERTIES if p.name.startswith(("ssl.", "sasl."))}
_LISTENER_PREFIX = re.compile(r"^listener\.name\.([a-z0-9_]+)\.(.+)$")
_JAAS = re.compile(r"^(plain|scram-sha-256|scram-sha-512)\.sasl\.jaas\.config$")


def listener_property(name: str) -> Property | None:
    """The Property behind `listener.name.<listener>.<property>`, or None if that is not one."""
    match = _LISTENER_PREFIX.match(name)
    if not match:
        return None
    base = _PER_LISTENER.get(match.group(2))
    if base is not None:
        return Property(name, base.type, base.default, base.doc, base.check, base.check_doc)
    if _JAAS.match(match.group(2)):
        return Property(name, "str", None, "JAAS login module configuration of this listener and mechanism.")
    return None


def is_sensitive(name: str) -> bool:
    """Passwords, credentials and JAAS configs are never sent back (DescribeConfigs gives null)."""
    return name.endswith((".password", "sasl.jaas.config")) or name in (
        "minibroker.scram.credentials",
        "delegation.token.secret.key",
    )
