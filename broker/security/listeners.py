"""Listeners: which ports to bind, with which security protocol, and what to advertise on each.

`listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://0.0.0.0:9094` binds one socket per entry; the
name maps to a protocol through `listener.security.protocol.map`; `advertised.listeners` gives
the address clients of that listener are told to use (Metadata answers with the address of the
listener the client came in on, as Kafka does). TLS contexts come from PEM files.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

import structlog
from minibroker.broker.config import BrokerConfig, ConfigError, parse_listener_entry
from minibroker.broker.security.settings import SUPPORTED_MECHANISMS

log = structlog.get_logger("minibroker.broker.security")

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass
class Listener:
    """One listener and its own settings (Kafka's `listener.name.<name>.` overrides applied)."""

    name: str
    protocol: str
    host: str
    port: int
    # sasl.server.max.receive.size: the largest frame read before authentication (SASL only)
    sasl_max_receive_size: int
    ssl_context: ssl.SSLContext | None = None
    mechanisms: tuple[str, ...] = ()
    advertised_host: str = ""
    advertised_port: int = 0
    bound_port: int = 0

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")


def _split_entries(value: str, prop: str) -> list[tuple[str, str, int]]:
    entries = [parse_listener_entry(raw, prop) for raw in value.split(",") if raw.strip()]
    if not entries:
        raise ConfigError(f"{prop}: no listener given")
    return entries


def _protocol_map(value: str) -> dict[str, str]:
    mapping = {}
    for item in filter(None, (i.strip() for i in value.split(","))):
        name, sep, proto = item.partition(":")
        if not sep or proto.strip().upper() not in PROTOCOLS:
            raise ConfigError(
                f"listener.security.protocol.map: expected NAME:PROTOCOL with PROTOCOL one of "
                f"{', '.join(PROTOCOLS)}, got {item!r}"
            )
        mapping[name.strip().upper()] = proto.strip().upper()
    return mapping


def ssl_context(config: BrokerConfig, name: str) -> ssl.SSLContext:
    """A server TLS context from the listener's PEM keystore (chain + key) and truststore."""
    keystore = config.for_listener(name, "ssl.keystore.location")
    if not keystore:
        raise ConfigError(f"listener {name}: ssl.keystore.location is required for a TLS listener")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        ctx.load_cert_chain(keystore, password=config.for_listener(name, "ssl.key.password"))
        truststore = config.for_listener(name, "ssl.truststore.location")
        if truststore:
            ctx.load_verify_locations(cafile=truststore)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"listener {name}: cannot load TLS keystore/truststore: {exc}") from None
    client_auth = config.for_listener(name, "ssl.client.auth")
    ctx.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}[
        client_auth
    ]
    if client_auth != "none" and not config.for_listener(name, "ssl.truststore.location"):
        raise ConfigError(f"listener {name}: ssl.client.auth={client_auth} needs ssl.truststore.location")
    return ctx


def _mechanisms(config: BrokerConfig, name: str) -> tuple[str, ...]:
    raw = config.for_listener(name, "sasl.enabled.mechanisms") or ""
    mechs = tuple(m.strip().upper() for m in raw.split(",") if m.strip())
    unknown = [m for m in mechs if m not in SUPPORTED_MECHANISMS]
    if unknown or not mechs:
        raise ConfigError(
            f"listener {name}: sasl.enabled.mechanisms must list some of "
            f"{', '.join(SUPPORTED_MECHANISMS)}, got {raw!r}"
        )
    return mechs


def parse_listeners(config: BrokerConfig) -> list[Listener]:
    """Every configured listener, validated; TLS contexts built (raises ConfigError). Those that
    controller.listener.names names (a KRaft controller's, as in Kafka's stock server.properties)
    are neither bound nor advertised: on one node, nothing talks to a controller."""
    protocols = _protocol_map(config["listener.security.protocol.map"])
    controllers = config.controller_listener_names()
    listeners: list[Listener] = []
    for name, host, port in _split_entries(config["listeners"], "listeners"):
        if name in controllers:
            continue
        if name not in protocols:
            raise ConfigError(f"listeners: listener {name} has no entry in listener.security.protocol.map")
        if any(existing.name == name for existing in listeners):
            raise ConfigError(f"listeners: listener {name} is given twice")
        listener = Listener(
            name,
            protocols[name],
            host or "0.0.0.0",
            port,
            config.for_listener(name, "sasl.server.max.receive.size"),
        )
        if listener.uses_tls:
            listener.ssl_context = ssl_context(config, name)
        if listener.uses_sasl:
            listener.mechanisms = _mechanisms(config, name)
        listeners.append(listener)
    if not listeners:
        raise ConfigError(
            "listeners: every listener is a controller listener (controller.listener.names); "
            "clients need one that is not"
        )
    advertised = config["advertised.listeners"]
    if advertised:
        by_name = {lst.name: lst for lst in listeners}
        for name, host, port in _split_entries(advertised, "advertised.listeners"):
            if name in controllers:
                continue
            if name not in by_name:
                raise ConfigError(f"advertised.listeners: {name} is not one of the listeners")
            by_name[name].advertised_host, by_name[name].advertised_port = host, port
    return listeners


def finish_binding(listener: Listener, bound_port: int) -> None:
    """After binding: fill in the advertised address where advertised.listeners gave none."""
    listener.bound_port = bound_port
    if not listener.advertised_host:
        listener.advertised_host = (
            listener.host if listener.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        )
    if not listener.advertised_port:
        listener.advertised_port = bound_port


def tls_principal(ssl_object: ssl.SSLObject | None) -> str | None:
    """Kafka's default TLS principal: `User:` + the verified client certificate's subject as
    Java's X500Principal.getName() prints it (RFC 2253, escaped so that no two subjects share a
    name; see x500.py), or None when the client sent no certificate."""
    if ssl_object is None or not ssl_object.getpeercert():  # {} when no certificate was verified
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if der is None:
        return None
    # imported here: only a TLS client certificate needs the DER name parser (~1 ms, ~50 KB)
    from minibroker.broker.security.x500 import BadName, subject_name  # noqa: PLC0415

    try:
        return "User:" + subject_name(der)
    except BadName as exc:
        # OpenSSL accepted the certificate, so this is a parser gap: a name that cannot equal
        # any RFC 2253 string (which never starts with '#'), so it matches no ACL but User:*
        log.warning("cannot read the client certificate's subject", reason=str(exc))
        return "User:#" + der.hex()
