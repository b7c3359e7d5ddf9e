"""SCRAM credentials (RFC 5802) and their store; the exchange is in broker/security/scram.py.

Only what RFC 5802 calls StoredKey and ServerKey are kept, with the salt and iteration count
(as Kafka does): the password and the salted password are never stored. The store is one JSON
file in the data directory, replaced atomically on every change. This module hashes nothing, so
that a broker's start (which loads the store) does not import hashlib/hmac/secrets: scram.py,
which does, is imported when a SCRAM exchange starts or a credential is made.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from typing import Any, NamedTuple

from minibroker.storage.durable_files import atomic_write, read_json

# AlterUserScramCredentials mechanism codes -> (SASL name, hashlib name)
MECHANISMS = {1: ("SCRAM-SHA-256", "sha256"), 2: ("SCRAM-SHA-512", "sha512")}
BY_NAME = {name: (code, digest) for code, (name, digest) in MECHANISMS.items()}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384  # Kafka's ScramMechanism bounds


class AuthenticationFailed(Exception):
    """Wrong or unknown credentials, or a malformed exchange; the message is safe to send."""


class ScramCredential(NamedTuple):
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_json(self) -> dict[str, str | int]:
        def enc(b: bytes) -> str:
            return base64.b64encode(b).decode()

        return dict(
            salt=enc(self.salt),
            stored_key=enc(self.stored_key),
            server_key=enc(self.server_key),
            iterations=self.iterations,
        )

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ScramCredential:  # as json.loads gives it
        dec = base64.b64decode
        return cls(dec(d["salt"]), dec(d["stored_key"]), dec(d["server_key"]), int(d["iterations"]))


def _users_of(raw: Any) -> dict[str, dict[str, ScramCredential]]:
    """The users of scram-credentials.json (as json.loads gives it). binascii.Error (bad
    base64) is a ValueError; TypeError/KeyError: a credential that is not an object of salt,
    stored_key, server_key and iterations."""
    if not isinstance(raw, dict) or not all(isinstance(m, dict) for m in raw.values()):
        raise ValueError("not a JSON object of users and their mechanisms")
    users = {u: {m: ScramCredential.from_json(c) for m, c in mechs.items()} for u, mechs in raw.items()}
    for mechs in users.values():
        unknown = set(mechs) - set(BY_NAME)
        if unknown:
            raise ValueError(f"unknown mechanism {sorted(unknown)[0]!r}")
    return users


class ScramStore:
    """user -> mechanism name -> credential, persisted in `<data_dir>/security/scram-credentials.json`."""

    def __init__(self, data_dir: str, write: Callable[[str, bytes], None] = atomic_write) -> None:
        """``write``: how the file is replaced (the broker's ``Durability.write_file``: off the
        event loop, the answer waits for it)."""
        self.path = os.path.join(data_dir, "security", "scram-credentials.json")
        self._write = write
        self.users: dict[str, dict[str, ScramCredential]] = {}
        if os.path.exists(self.path):
            self.users = self._load()

    def _load(self) -> dict[str, dict[str, ScramCredential]]:
        return read_json(
            self.path,
            _users_of,
            "move it away and set the SCRAM users' passwords again (kafka-configs.sh --alter "
            "--entity-type users --entity-name USER --add-config 'SCRAM-SHA-256=[password=...]', "
            "or the minibroker.scram.credentials property); until then SCRAM logins fail",
        )

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.users.get(user, {}).get(mechanism)

    def put(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        self.users.setdefault(user, {})[mechanism] = credential

    def delete(self, user: str, mechanism: str) -> bool:
        mechs = self.users.get(user)
        if not mechs or mechanism not in mechs:
            return False
        del mechs[mechanism]
        if not mechs:
            del self.users[user]
        return True

    def save(self, write: Callable[[str, bytes], None] | None = None) -> None:
        """Replace the file with the users now (``write``: instead of the store's own)."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        (write or self._write)(
            self.path,
            json.dumps(
                {u: {m: c.to_json() for m, c in mechs.items()} for u, mechs in self.users.items()}
            ).encode(),
        )


def parse_add_scram(value: str) -> list[tuple[str, str, str]]:
    """`SCRAM-SHA-256=[name=alice,password=secret];...` -> [(mechanism, user, password)]."""
    out = []
    for item in filter(None, (i.strip() for i in value.split(";"))):
        mech, sep, body = item.partition("=")
        mech = mech.strip().upper()
        if not sep or mech not in BY_NAME or not (body.startswith("[") and body.endswith("]")):
            raise ValueError(
                f"expected SCRAM-SHA-256=[name=U,password=P] or SCRAM-SHA-512=[...], got {item!r}"
            )
        fields = dict(kv.split("=", 1) for kv in body[1:-1].split(",") if "=" in kv)
        if not fields.get("name") or "password" not in fields:
            raise ValueError(f"{item!r}: name and password are required")
        out.append((mech, fields["name"].strip('"'), fields["password"].strip('"')))
    return out
