"""`Security` is built once from the configuration (raising ConfigError on a bad setting) and
hangs off the Broker as `broker.security`; handlers reach it through RequestContext helpers.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog
from minibroker.broker.config import BrokerConfig, ConfigError
from minibroker.broker.security.acl_store import AclStore
from minibroker.broker.security.authorizer import Authorizer, all_operations
from minibroker.broker.security.delegation_tokens import DelegationTokens
from minibroker.broker.security.listeners import parse_listeners
from minibroker.broker.security.sasl import ANONYMOUS, SaslMechanisms
from minibroker.broker.security.scram_store import BY_NAME, ScramStore, parse_add_scram
from minibroker.common.clock import SYSTEM_CLOCK, Clock
from minibroker.storage.durable_files import atomic_write

if TYPE_CHECKING:
    from minibroker.broker.security.sasl import Session

log = structlog.get_logger("minibroker.broker.security")


class Security:
    def __init__(
        self,
        config: BrokerConfig,
        data_dir: str,
        write: Callable[[str, bytes], None] = atomic_write,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``write``: how the stores replace their files on a request (the broker's
        ``Durability.write_file``); ``clock``: the delegation tokens' timestamps."""
        self.listeners = parse_listeners(config)
        self.scram = ScramStore(data_dir, write)
        self._scram_to_save = False
        self._bootstrap_scram(config["minibroker.scram.credentials"])
        self.tokens = DelegationTokens(config, data_dir, clock, write)
        self.mechanisms = SaslMechanisms(config, self.scram, self.listeners, self.tokens)
        self.authorizer = (
            Authorizer(
                AclStore(data_dir, write), config["super.users"], config["allow.everyone.if.no.acl.found"]
            )
            if config["authorizer.class.name"]
            else None
        )

    @property
    def authenticates(self) -> bool:
        """Does any listener authenticate its clients (SASL, or TLS with a required client
        certificate)? The control plane then needs a token (broker/control/__init__.py)."""
        return any(
            lst.uses_sasl
            or (lst.ssl_context is not None and lst.ssl_context.verify_mode == ssl.CERT_REQUIRED)
            for lst in self.listeners
        )

    def _bootstrap_scram(self, value: str) -> None:
        try:
            users = parse_add_scram(value)
        except ValueError as exc:
            raise ConfigError(f"minibroker.scram.credentials: {exc}") from None
        if users:
            # hashing is imported only for this (broker/security/scram_store.py says why)
            from minibroker.broker.security.scram import from_password  # noqa: PLC0415
        for mechanism, user, password in users:
            self.scram.put(user, mechanism, from_password(BY_NAME[mechanism][1], password))
        if users:
            self._scram_to_save = True  # persist() writes it, once the broker's ports are bound
            log.info("SCRAM credentials configured", users=sorted({u for _, u, _ in users}))

    def persist(self) -> None:
        """Write what the configuration put into the stores (the SCRAM users of
        minibroker.scram.credentials). Broker.start calls it after binding the listeners, so a
        start whose port is taken writes nothing but the data directory's .lock."""
        if self._scram_to_save:
            self.scram.save(atomic_write)  # at startup: on this thread, before serving
            self._scram_to_save = False

    # --- authorization (handlers call these through RequestContext) ---------------------------
    def allowed(self, session: Session | None, operation: int, resource_type: int, name: str) -> bool:
        if self.authorizer is None:
            return True
        principal, host = (session.principal, session.client_host) if session else (ANONYMOUS, "")
        return self.authorizer.authorize(principal, host, operation, resource_type, name)

    def allowed_any(self, session: Session | None, operation: int, resource_type: int) -> bool:
        if self.authorizer is None:
            return True
        principal, host = (session.principal, session.client_host) if session else (ANONYMOUS, "")
        return self.authorizer.authorize_any(principal, host, operation, resource_type)

    def authorized_operations(self, session: Session | None, resource_type: int, name: str) -> int:
        if self.authorizer is None:
            return all_operations(resource_type)
        principal, host = (session.principal, session.client_host) if session else (ANONYMOUS, "")
        return self.authorizer.authorized_operations(principal, host, resource_type, name)
