"""SASL on a connection: the PLAIN mechanism, JAAS user lists, and the per-connection state
machine that decides which requests may be answered before authentication (sans I/O).

Kafka's rule: on a SASL listener nothing but ApiVersions, SaslHandshake and then
SaslAuthenticate is served until authentication succeeds; anything else closes the connection.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from minibroker.broker.config import ConfigError
from minibroker.broker.security.scram_store import BY_NAME as SCRAM_MECHANISMS
from minibroker.broker.security.scram_store import AuthenticationFailed, ScramStore

if TYPE_CHECKING:
    from minibroker.broker.config import BrokerConfig
    from minibroker.broker.security.delegation_tokens import DelegationTokens
    from minibroker.broker.security.listeners import Listener
    from minibroker.broker.security.scram import ScramServer

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
ANONYMOUS = "User:ANONYMOUS"

_JAAS_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def jaas_users(jaas: str) -> dict[str, str]:
    """PlainLoginModule's `user_<name>="<password>"` options -> {name: password}."""
    users = {}
    for key, quoted, bare in _JAAS_OPTION.findall(jaas or ""):
        if key.startswith("user_"):
            users[key[5:]] = quoted if quoted or not bare else bare
    return users


class PlainServer:
    """RFC 4616: one message `authzid NUL authcid NUL password`."""

    token_authenticated = False  # PLAIN never logs in with a delegation token

    def __init__(self, users: dict[str, str]) -> None:
        self.users = users
        self.user: str | None = None

    def evaluate(self, data: bytes) -> tuple[bytes, bool]:
        parts = data.split(b"\0")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        if not user or not password:
            raise AuthenticationFailed("Authentication failed: username or password not specified")
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        import hmac  # noqa: PLC0415 - at the first PLAIN login, not at every broker's start

        expected = self.users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self.user = user
        return b"", True


class SaslMechanisms:
    """Builds the server side of each mechanism a listener offers."""

    def __init__(
        self,
        config: BrokerConfig,
        scram_store: ScramStore,
        listeners: list[Listener],
        tokens: DelegationTokens | None = None,
    ) -> None:
        self.scram_store = scram_store
        self.tokens = tokens  # SCRAM logins with a delegation token (tokenauth=true)
        self.plain_users: dict[str, dict[str, str]] = {}
        for lst in listeners:
            if "PLAIN" in lst.mechanisms:
                jaas = config.for_listener(lst.name, "plain.sasl.jaas.config")
                if not jaas:
                    raise ConfigError(
                        f"listener {lst.name} offers PLAIN but listener.name.{lst.name.lower()}"
                        ".plain.sasl.jaas.config is not set"
                    )
                self.plain_users[lst.name] = jaas_users(jaas)

    def server(self, listener_name: str, mechanism: str) -> PlainServer | ScramServer:
        if mechanism == "PLAIN":
            return PlainServer(self.plain_users.get(listener_name, {}))
        if mechanism in SCRAM_MECHANISMS:
            from minibroker.broker.security.scram import ScramServer  # noqa: PLC0415 - hashing, lazily

            return ScramServer(mechanism, self.scram_store, tokens=self.tokens)
        raise AssertionError(mechanism)


class Session:
    """Who is on a connection and how far its authentication got."""

    def __init__(self, listener: Listener, client_host: str, principal: str = ANONYMOUS) -> None:
        self.listener = listener
        self.client_host = client_host
        self.principal = principal
        self.authenticated = not listener.uses_sasl
        self.mechanism_server: PlainServer | ScramServer | None = None  # set by SaslHandshake
        self.raw_tokens = False  # SaslHandshake v0: the tokens follow as bare length-prefixed frames
        self.token_authenticated = False  # logged in with a delegation token (SCRAM tokenauth=true)
        self.close_reason: str | None = None  # set when Kafka answers and then closes the connection
        # the close is a failed authentication: answered after connection.failed.authentication.delay.ms
        self.failed_authentication = False
        # KIP-511 (name, version) from ApiVersions v3+: what CLIENT_METRICS `match` tests
        self.client_software: tuple[str, str] | None = None

    def fail_authentication(self, reason: str) -> None:
        """Kafka answers a failed authentication after a delay, then closes the connection."""
        self.close_reason = reason
        self.failed_authentication = True

    def refusal(self, api_key: int) -> str | None:
        """Why this request may not be served now (the connection is then closed), or None."""
        if self.authenticated or api_key == API_VERSIONS:
            return None
        if api_key == SASL_HANDSHAKE and self.mechanism_server is None:
            return None
        if api_key == SASL_AUTHENTICATE and self.mechanism_server is not None:
            return None
        return (
            f"api key {api_key} received before SASL authentication completed "
            f"on listener {self.listener.name}"
        )

    def evaluate_raw_token(self, token: bytes) -> bytes:
        """One SASL token after a SaslHandshake v0 (no Kafka header); returns the server's token.
        Raises AuthenticationFailed (Kafka then closes the connection without an answer)."""
        server = self.mechanism_server
        if server is None:  # refusal() lets SaslAuthenticate through only after a handshake
            raise AuthenticationFailed("SaslAuthenticate before SaslHandshake")
        challenge, finished = server.evaluate(token)
        if finished:
            self.logged_in(server)
        return challenge

    def logged_in(self, server: PlainServer | ScramServer) -> None:
        """The mechanism finished: the connection is the user's (a token's owner's)."""
        self.principal = f"User:{server.user}"
        self.token_authenticated = server.token_authenticated
        self.authenticated = True
