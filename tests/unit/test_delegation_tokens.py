"""broker/security/delegation_tokens.py without a broker: Kafka's lifetimes, owner and renewer
rules, the HMAC, persistence, the expiry duty, and a SCRAM login with a token."""

from __future__ import annotations

import base64
import hashlib
import hmac

from minibroker.broker.config import BrokerConfig
from minibroker.broker.security.delegation_tokens import DelegationTokens
from minibroker.broker.security.scram import ScramServer
from minibroker.broker.security.scram_store import ScramStore
from minibroker.common.clock import ManualClock
from minibroker.protocol.errors import ErrorCode

DAY, WEEK = 86_400_000, 604_800_000


def _tokens(tmp_path, clock, secret="s3cret"):
    config = BrokerConfig({"delegation.token.secret.key": secret} if secret else {})
    return DelegationTokens(config, str(tmp_path), clock)


def test_lifetimes_owner_and_renewers(tmp_path):
    clock = ManualClock(wall_ms=1_000_000)
    tokens = _tokens(tmp_path, clock)
    error, token = tokens.create("User:alice", "User:alice", ["User:bob"], -1)
    assert error == ErrorCode.none and token is not None
    assert (token.issue_ms, token.expiry_ms, token.max_ms) == (1_000_000, 1_000_000 + DAY, 1_000_000 + WEEK)
    mac = tokens.hmac(token.token_id)
    assert mac == hmac.new(b"s3cret", token.token_id.encode(), hashlib.sha512).digest()
    assert tokens.create("User:a", "User:a", ["Group:g"], -1)[0] == ErrorCode.invalid_principal_type
    assert tokens.create("User:a", "User:a", [], 1000)[1].max_ms == 1_000_000 + 1000

    assert tokens.renew("User:carol", mac, 5000) == (ErrorCode.delegation_token_owner_mismatch, -1)
    assert tokens.renew("User:bob", b"nope", 5000) == (ErrorCode.delegation_token_not_found, -1)
    clock.advance(10)
    assert tokens.renew("User:bob", mac, 5000) == (ErrorCode.none, 1_000_010 + 5000)
    clock.advance(6000)
    assert tokens.renew("User:alice", mac, 5000) == (ErrorCode.delegation_token_expired, -1)
    assert tokens.expire("User:alice", mac, 1000) == (ErrorCode.delegation_token_expired, -1)
    assert tokens.expire("User:alice", mac, -1) == (ErrorCode.none, clock.wall_ms())
    assert tokens.renew("User:alice", mac, 5000) == (ErrorCode.delegation_token_not_found, -1)


def test_describe_filters_as_kafka(tmp_path):
    tokens = _tokens(tmp_path, ManualClock(wall_ms=5))
    _, mine = tokens.create("User:alice", "User:alice", ["User:bob"], -1)
    _, other = tokens.create("User:carol", "User:admin", [], -1)

    def no(_):
        return False

    assert tokens.describe("User:alice", None, no, no) == [mine]
    assert tokens.describe("User:bob", None, no, no) == [mine]  # a renewer sees it
    assert tokens.describe("User:bob", ["User:carol"], no, no) == []
    assert tokens.describe("User:x", None, no, lambda owner: owner == "User:carol") == [other]
    assert tokens.describe("User:x", None, lambda token_id: token_id == mine.token_id, no) == [mine]


def test_kept_across_a_restart_and_swept_when_expired(tmp_path):
    clock = ManualClock(wall_ms=0)
    tokens = _tokens(tmp_path, clock)
    _, token = tokens.create("User:alice", "User:alice", [], 1000)
    again = _tokens(tmp_path, clock)
    assert again.tokens == {token.token_id: token}
    assert again.hmac(token.token_id) == tokens.hmac(token.token_id)
    clock.advance(1001)
    again.remove_expired()
    assert again.tokens == {} and _tokens(tmp_path, clock).tokens == {}


def test_disabled_without_a_secret(tmp_path):
    tokens = _tokens(tmp_path, ManualClock(), secret=None)
    assert not tokens.enabled
    assert tokens.create("User:a", "User:a", [], -1) == (ErrorCode.delegation_token_auth_disabled, None)
    assert tokens.renew("User:a", b"x", 1)[0] == ErrorCode.delegation_token_auth_disabled


def test_scram_login_with_a_token_becomes_its_owner(tmp_path):
    tokens = _tokens(tmp_path, ManualClock(wall_ms=0))
    _, token = tokens.create("User:alice", "User:alice", [], -1)
    password = base64.b64encode(tokens.hmac(token.token_id)).decode()
    server = ScramServer("SCRAM-SHA-256", ScramStore(str(tmp_path)), tokens=tokens)
    client_first_bare = f"n={token.token_id},r=clientnonce,tokenauth=true"
    server_first = server.evaluate(f"n,,{client_first_bare}".encode())[0].decode()
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    without_proof = f"c={base64.b64encode(b'n,,').decode()},r={attrs['r']}"
    auth = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth, "sha256").digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    _, finished = server.evaluate(f"{without_proof},p={proof}".encode())
    assert finished and server.user == "alice" and server.token_authenticated
    # an unknown token id fails like a wrong password
    unknown = ScramServer("SCRAM-SHA-256", ScramStore(str(tmp_path)), tokens=tokens)
    try:
        unknown.evaluate(b"n,,n=nope,r=abc,tokenauth=true")
    except Exception as exc:  # noqa: BLE001 - AuthenticationFailed
        assert "invalid credentials" in str(exc)
    else:
        raise AssertionError("an unknown token logged in")
