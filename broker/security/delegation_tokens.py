"""Delegation tokens (KIP-48) as Kafka 4.4 issues and checks them: CreateDelegationToken (38),
RenewDelegationToken (39), ExpireDelegationToken (40), DescribeDelegationToken (41) and the
SCRAM login with a token (`tokenauth=true`).

Kafka's rules (KafkaApis, DelegationTokenControlManager, DelegationTokenManager): token requests
are refused on PLAINTEXT, on SSL without a client certificate and from a connection that itself
logged in with a token (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); without
`delegation.token.secret.key` tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED). A token's
HMAC is HmacSHA512(secret key, token id); a client logs in with SCRAM as the token id, the
base64 HMAC as its password, and becomes the token's owner. Lifetimes come from
`delegation.token.max.lifetime.ms` and `delegation.token.expiry.time.ms`; expired tokens are
removed every `delegation.token.expiry.check.interval.ms`.

The tokens (never their HMACs, which the secret key recomputes, as Kafka's metadata records do)
are kept in `<data_dir>/security/delegation-tokens.json`, replaced atomically through the
broker's `Durability.write_file` before the answer and read at startup.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from minibroker.broker.security.sasl import ANONYMOUS
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.durable_files import atomic_write, read_json

if TYPE_CHECKING:
    from minibroker.broker.config import BrokerConfig
    from minibroker.broker.security.sasl import Session
    from minibroker.broker.security.scram_store import ScramCredential
    from minibroker.common.clock import Clock

LONG_MAX = 2**63 - 1
ERROR_TIMESTAMP = -1  # Kafka's DelegationTokenManager.ErrorTimestamp


class Token(NamedTuple):
    token_id: str
    owner: str  # principal "Type:name"
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    max_ms: int
    expiry_ms: int

    def owner_or_renewer(self, principal: str) -> bool:
        return principal == self.owner or principal in self.renewers


def split_principal(principal: str) -> tuple[str, str]:
    kind, _, name = principal.partition(":")
    return kind, name


def timestamp(ms: int) -> datetime.datetime:
    """A timestamp field of the token answers, -1 (Kafka's ErrorTimestamp) included: kio's
    fields are datetimes that cannot be null."""
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)


def _tokens_of(raw: Any) -> list[Token]:
    """The tokens of delegation-tokens.json (as json.loads gives it)."""
    return [
        Token(
            str(t["token_id"]),
            str(t["owner"]),
            str(t["requester"]),
            tuple(str(r) for r in t["renewers"]),
            int(t["issue_ms"]),
            int(t["max_ms"]),
            int(t["expiry_ms"]),
        )
        for t in raw
    ]


def _sum(now: int, duration: int) -> int:
    return LONG_MAX if now > LONG_MAX - duration else now + duration


class DelegationTokens:
    """The broker's tokens: issued, renewed, expired, described, and found for a SCRAM login."""

    def __init__(
        self,
        config: BrokerConfig,
        data_dir: str,
        clock: Clock,
        write: Callable[[str, bytes], None] = atomic_write,
    ) -> None:
        secret = config["delegation.token.secret.key"]
        self.secret: bytes | None = secret.encode() if secret else None
        self.max_lifetime_ms: int = config["delegation.token.max.lifetime.ms"]
        self.renew_ms: int = config["delegation.token.expiry.time.ms"]
        self.check_interval_ms: int = config["delegation.token.expiry.check.interval.ms"]
        self.clock = clock
        self.path = os.path.join(data_dir, "security", "delegation-tokens.json")
        self._write = write
        self.tokens: dict[str, Token] = {}
        self._by_hmac: dict[str, str] = {}  # base64 HMAC -> token id
        self._credentials: dict[tuple[str, str], ScramCredential] = {}  # (token id, mechanism)
        if os.path.exists(self.path):
            for token in self._load():
                self._put(token)

    @property
    def enabled(self) -> bool:
        return self.secret is not None

    def _load(self) -> list[Token]:
        return read_json(
            self.path,
            _tokens_of,
            "move it away (every delegation token is then forgotten and must be created again)",
        )

    def _save(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._write(self.path, json.dumps([t._asdict() for t in self.tokens.values()]).encode())

    def hmac(self, token_id: str) -> bytes:
        """Kafka's createHmac: HmacSHA512 of the token id under the secret key."""
        import hashlib  # noqa: PLC0415 - hashing only once tokens are used
        import hmac  # noqa: PLC0415

        assert self.secret is not None
        return hmac.new(self.secret, token_id.encode(), hashlib.sha512).digest()

    def _put(self, token: Token) -> None:
        self.tokens[token.token_id] = token
        if self.secret is not None:
            self._by_hmac[base64.b64encode(self.hmac(token.token_id)).decode()] = token.token_id

    def _remove(self, token_id: str) -> None:
        self.tokens.pop(token_id, None)
        self._by_hmac = {h: t for h, t in self._by_hmac.items() if t != token_id}
        for key in [k for k in self._credentials if k[0] == token_id]:
            del self._credentials[key]

    def _find(self, hmac_value: bytes) -> Token | None:
        token_id = self._by_hmac.get(base64.b64encode(hmac_value).decode())
        return self.tokens.get(token_id) if token_id is not None else None

    # --- the requests (the handler has checked the listener and the ACLs) ----------------------
    def create(
        self, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int
    ) -> tuple[ErrorCode, Token | None]:
        """Kafka's DelegationTokenControlManager.createDelegationToken."""
        if not self.enabled:
            return ErrorCode.delegation_token_auth_disabled, None
        if any(split_principal(r)[0] != "User" for r in renewers):
            return ErrorCode.invalid_principal_type, None
        now = self.clock.wall_ms()
        lifetime = self.max_lifetime_ms
        if max_lifetime_ms > 0:
            lifetime = min(lifetime, max_lifetime_ms)
        max_ms = _sum(now, lifetime)
        token = Token(
            str(uuid.uuid4()),
            owner,
            requester,
            tuple(renewers),
            now,
            max_ms,
            min(max_ms, _sum(now, self.renew_ms)),
        )
        self._put(token)
        self._save()
        return ErrorCode.none, token

    def renew(self, principal: str, hmac_value: bytes, renew_period_ms: int) -> tuple[ErrorCode, int]:
        """Kafka's renewDelegationToken: (error, new expiry timestamp)."""
        if not self.enabled:
            return ErrorCode.delegation_token_auth_disabled, ERROR_TIMESTAMP
        token = self._find(hmac_value)
        if token is None:
            return ErrorCode.delegation_token_not_found, ERROR_TIMESTAMP
        now = self.clock.wall_ms()
        if token.max_ms < now or token.expiry_ms < now:
            return ErrorCode.delegation_token_expired, ERROR_TIMESTAMP
        if not token.owner_or_renewer(principal):
            return ErrorCode.delegation_token_owner_mismatch, ERROR_TIMESTAMP
        period = self.renew_ms
        if renew_period_ms > 0:
            period = min(period, renew_period_ms)
        expiry = min(token.max_ms, now + period)
        self._put(token._replace(expiry_ms=expiry))
        self._save()
        return ErrorCode.none, expiry

    def expire(self, principal: str, hmac_value: bytes, expiry_period_ms: int) -> tuple[ErrorCode, int]:
        """Kafka's expireDelegationToken: (error, new expiry timestamp); a negative period
        removes the token at once."""
        if not self.enabled:
            return ErrorCode.delegation_token_auth_disabled, ERROR_TIMESTAMP
        token = self._find(hmac_value)
        if token is None:
            return ErrorCode.delegation_token_not_found, ERROR_TIMESTAMP
        if not token.owner_or_renewer(principal):
            return ErrorCode.delegation_token_owner_mismatch, ERROR_TIMESTAMP
        now = self.clock.wall_ms()
        if expiry_period_ms < 0:
            self._remove(token.token_id)
            self._save()
            return ErrorCode.none, now
        if token.max_ms < now or token.expiry_ms < now:
            return ErrorCode.delegation_token_expired, ERROR_TIMESTAMP
        expiry = min(token.max_ms, _sum(now, expiry_period_ms))
        self._put(token._replace(expiry_ms=expiry))
        self._save()
        return ErrorCode.none, expiry

    def describe(
        self,
        requester: str,
        owners: list[str] | None,
        may_describe_token: Callable[[str], bool],
        may_describe_owner: Callable[[str], bool],
    ) -> list[Token]:
        """Kafka's filterToken over every token: those of the requested owners (or renewers) the
        requester owns or renews, or may describe (DESCRIBE on the token, DESCRIBE_TOKENS on
        the owner)."""
        out = []
        for token in self.tokens.values():
            if owners is not None and not any(token.owner_or_renewer(o) for o in owners):
                continue
            if (
                token.owner_or_renewer(requester)
                or may_describe_token(token.token_id)
                or may_describe_owner(token.owner)
            ):
                out.append(token)
        return out

    def remove_expired(self) -> None:
        """The expiry duty (delegation.token.expiry.check.interval.ms)."""
        now = self.clock.wall_ms()
        expired = [t.token_id for t in self.tokens.values() if t.max_ms < now or t.expiry_ms < now]
        for token_id in expired:
            self._remove(token_id)
        if expired:
            self._save()

    # --- the SCRAM login with a token ---------------------------------------------------------
    def scram_login(self, token_id: str, mechanism: str, digest: str) -> tuple[str, ScramCredential] | None:
        """(the owner's name, the SCRAM credential of the token's HMAC) for `tokenauth=true`,
        None for an unknown token (Kafka derives the credential with the mechanism's minimum
        iterations)."""
        token = self.tokens.get(token_id)
        if token is None or self.secret is None:
            return None
        credential = self._credentials.get((token_id, mechanism))
        if credential is None:
            from minibroker.broker.security.scram import from_password  # noqa: PLC0415

            password = base64.b64encode(self.hmac(token_id)).decode()
            credential = self._credentials[(token_id, mechanism)] = from_password(digest, password)
        return split_principal(token.owner)[1], credential


def describe_entry(tokens: DelegationTokens, token: Token) -> dict[str, Any]:
    """One token as DescribeDelegationToken answers it."""
    owner_type, owner_name = split_principal(token.owner)
    requester_type, requester_name = split_principal(token.requester)
    return dict(
        principal_type=owner_type,
        principal_name=owner_name,
        token_requester_principal_type=requester_type,
        token_requester_principal_name=requester_name,
        issue_timestamp=token.issue_ms,  # plain int64 fields in this answer
        expiry_timestamp=token.expiry_ms,
        max_timestamp=token.max_ms,
        token_id=token.token_id,
        hmac=tokens.hmac(token.token_id),
        renewers=[dict(principal_type=k, principal_name=n) for k, n in map(split_principal, token.renewers)],
    )


def principal_of(session: Session | None) -> str:
    return session.principal if session is not None else ANONYMOUS


def expiry_answer(
    session: Session | None,
    change: Callable[[str, bytes, int], tuple[ErrorCode, int]],
    hmac_value: bytes,
    period_ms: int,
) -> dict[str, Any]:
    """The fields of a RenewDelegationToken or ExpireDelegationToken answer: `change`
    (DelegationTokens.renew or .expire) applied for the session's principal, or
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED where Kafka refuses token requests."""
    if requests_allowed(session):
        error, expiry = change(principal_of(session), hmac_value, period_ms)
    else:
        error, expiry = ErrorCode.delegation_token_request_not_allowed, ERROR_TIMESTAMP
    return dict(throttle_time_ms=0, error_code=error, expiry_timestamp=timestamp(expiry))


def requests_allowed(session: Session | None) -> bool:
    """Kafka's allowTokenRequests: not on PLAINTEXT, not over one-way SSL, not from a connection
    that logged in with a token."""
    if session is None or session.token_authenticated:
        return False
    protocol = session.listener.protocol
    return protocol != "PLAINTEXT" and not (protocol == "SSL" and session.principal == ANONYMOUS)
