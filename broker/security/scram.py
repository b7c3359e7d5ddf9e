"""SCRAM-SHA-256/512 (RFC 5802, RFC 7677): deriving credentials and the server side of the
exchange. The credentials and their store are in broker/security/scram_store.py.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING

from minibroker.broker.security.scram_store import (
    BY_NAME,
    MIN_ITERATIONS,
    AuthenticationFailed,
    ScramCredential,
    ScramStore,
)

if TYPE_CHECKING:
    from minibroker.broker.security.delegation_tokens import DelegationTokens


def _hmac(digest: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, digest).digest()


def from_salted_password(
    digest: str, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    client_key = _hmac(digest, salted_password, b"Client Key")
    return ScramCredential(
        salt,
        hashlib.new(digest, client_key).digest(),
        _hmac(digest, salted_password, b"Server Key"),
        iterations,
    )


def from_password(digest: str, password: str, iterations: int = MIN_ITERATIONS) -> ScramCredential:
    salt = secrets.token_bytes(24)
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    return from_salted_password(digest, salt, salted, iterations)


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise AuthenticationFailed(f"malformed SCRAM message attribute {part!r}")
        out.setdefault(key, value)
    return out


def _unescape_user(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One server-side SCRAM exchange: client-first -> server-first, client-final -> server-final."""

    def __init__(
        self,
        mechanism: str,
        store: ScramStore,
        server_nonce: Callable[[], str] = lambda: secrets.token_urlsafe(18),
        tokens: DelegationTokens | None = None,
    ) -> None:
        self.mechanism = mechanism
        self.tokens = tokens  # for a login with a delegation token (the tokenauth=true extension)
        self.token_authenticated = False
        self._server_nonce = server_nonce  # tests pass RFC 7677's fixed nonce
        self.digest = BY_NAME[mechanism][1]
        self.store = store
        self.user: str | None = None
        self._step = 0
        self._nonce = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._gs2_header = ""
        self._credential: ScramCredential | None = None

    def _fail(self) -> AuthenticationFailed:
        return AuthenticationFailed(
            "Authentication failed during authentication due to invalid credentials with SASL "
            f"mechanism {self.mechanism}"
        )

    def evaluate(self, data: bytes) -> tuple[bytes, bool]:
        """Feed one client message; returns (server message, finished). Raises AuthenticationFailed."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed("SCRAM message is not UTF-8") from None
        self._step += 1
        if self._step == 1:
            return self._client_first(text), False
        if self._step == 2:
            return self._client_final(text), True
        raise AuthenticationFailed("unexpected SCRAM message after the exchange finished")

    def _client_first(self, text: str) -> bytes:
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise AuthenticationFailed(
                "channel binding is not supported; expected a 'n,,' or 'y,,' SCRAM header"
            )
        self._gs2_header = f"{parts[0]},{parts[1]},"
        self._client_first_bare = parts[2]
        # extensions (RFC 5802 allows none; Kafka's follow the nonce: tokenauth=true)
        fields = parts[2].split(",")
        extensions = dict(f.split("=", 1) for f in fields if len(f.partition("=")[0]) > 1 and "=" in f)
        attrs = _attributes(",".join(f for f in fields if len(f.partition("=")[0]) <= 1))
        if "n" not in attrs or "r" not in attrs:
            raise AuthenticationFailed("SCRAM client-first message lacks n= or r=")
        self.user = _unescape_user(attrs["n"])
        if parts[1] and parts[1] != f"a={attrs['n']}":
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        if extensions.get("tokenauth", "").lower() == "true":
            login = self.tokens.scram_login(self.user, self.mechanism, self.digest) if self.tokens else None
            if login is None:  # Kafka: "Token Authentication failed: Invalid tokenId"
                raise self._fail()
            self.user, self._credential = login  # the connection becomes the token's owner
            self.token_authenticated = True
        else:
            self._credential = self.store.get(self.user, self.mechanism)
        if self._credential is None:
            raise self._fail()
        self._nonce = attrs["r"] + self._server_nonce()
        self._server_first = (
            f"r={self._nonce},s={base64.b64encode(self._credential.salt).decode()},"
            f"i={self._credential.iterations}"
        )
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise AuthenticationFailed("SCRAM client-final message lacks p=")
        attrs = _attributes(without_proof)
        try:
            channel = base64.b64decode(attrs.get("c", ""), validate=True).decode()
            proof = base64.b64decode(proof_b64, validate=True)
        except (ValueError, UnicodeDecodeError):
            raise AuthenticationFailed("malformed SCRAM client-final message") from None
        if channel != self._gs2_header or attrs.get("r") != self._nonce:
            raise AuthenticationFailed("SCRAM nonce or channel binding mismatch")
        cred = self._credential
        if cred is None:  # no client-first message was accepted before this one
            raise self._fail()
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self.digest, cred.stored_key, auth_message)
        if len(proof) != len(signature):
            raise self._fail()
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.digest, client_key).digest(), cred.stored_key):
            raise self._fail()
        verifier = _hmac(self.digest, cred.server_key, auth_message)
        return f"v={base64.b64encode(verifier).decode()}".encode()
