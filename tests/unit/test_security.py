"""Sans-I/O security pieces: SCRAM against RFC 7677's worked example, PLAIN, JAAS parsing, ACL
filters and the authorizer's rules (deny wins, implied DESCRIBE, prefixes, super users, the
no-ACL default), and connection limits (the request budget: tests/unit/test_limits.py)."""

from __future__ import annotations

import base64
import hashlib

import pytest
from minibroker.broker.limits import ConnectionLimits, idle_or_stalled, partition_limit_error
from minibroker.broker.security.acl_store import AclStore
from minibroker.broker.security.acls import AclBinding, AclFilter, InvalidAcl
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import PatternType as Pat
from minibroker.broker.security.acls import Permission as Perm
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.security.authorizer import Authorizer
from minibroker.broker.security.sasl import PlainServer, jaas_users
from minibroker.broker.security.scram import ScramServer, from_salted_password
from minibroker.broker.security.scram_store import AuthenticationFailed, ScramStore, parse_add_scram


def rfc7677_store(tmp_path) -> ScramStore:
    store = ScramStore(str(tmp_path))
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", salt, 4096)
    store.put("user", "SCRAM-SHA-256", from_salted_password("sha256", salt, salted, 4096))
    return store


def test_scram_sha256_matches_rfc7677_example(tmp_path):
    server = ScramServer(
        "SCRAM-SHA-256", rfc7677_store(tmp_path), server_nonce=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    first, done = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert (first, done) == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        False,
    )
    final, done = server.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert (final, done) == (b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", True)
    assert server.user == "user"


def test_scram_wrong_proof_unknown_user_and_persistence(tmp_path):
    store = rfc7677_store(tmp_path)
    server = ScramServer("SCRAM-SHA-256", store, server_nonce=lambda: "X")
    server.evaluate(b"n,,n=user,r=abc")
    with pytest.raises(AuthenticationFailed):
        server.evaluate(b"c=biws,r=abcX,p=" + base64.b64encode(b"\0" * 32))
    with pytest.raises(AuthenticationFailed):
        ScramServer("SCRAM-SHA-512", store).evaluate(b"n,,n=user,r=abc")  # no SHA-512 credential
    with pytest.raises(AuthenticationFailed):
        ScramServer("SCRAM-SHA-256", store).evaluate(b"p=tls-unique,,n=user,r=abc")  # channel binding
    with pytest.raises(AuthenticationFailed):
        ScramServer("SCRAM-SHA-256", store).evaluate(b"n,a=admin,n=user,r=abc")  # someone else's identity
    assert ScramServer("SCRAM-SHA-256", store).evaluate(b"n,a=user,n=user,r=abc")[1] is False
    store.save()
    again = ScramStore(str(tmp_path))
    assert again.get("user", "SCRAM-SHA-256") == store.get("user", "SCRAM-SHA-256")
    assert b"pencil" not in (tmp_path / "security" / "scram-credentials.json").read_bytes()


def test_add_scram_syntax():
    assert parse_add_scram(
        "SCRAM-SHA-256=[name=alice,password=a-secret];SCRAM-SHA-512=[name=bob,password=b]"
    ) == [("SCRAM-SHA-256", "alice", "a-secret"), ("SCRAM-SHA-512", "bob", "b")]
    with pytest.raises(ValueError):
        parse_add_scram("SCRAM-SHA-1=[name=a,password=b]")


def test_plain_and_jaas():
    users = jaas_users(
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a;b";'
    )
    assert users == {"admin": "admin-secret", "alice": "a;b"}
    assert PlainServer(users).evaluate(b"\0alice\0a;b") == (b"", True)
    for bad in (b"\0alice\0wrong", b"\0nobody\0x", b"bob\0alice\0a;b", b"alice"):
        with pytest.raises(AuthenticationFailed):
            PlainServer(users).evaluate(bad)


def acl(rt, name, op, perm=Perm.ALLOW, principal="User:alice", pattern=Pat.LITERAL, host="*"):
    return AclBinding(rt, name, pattern, principal, host, op, perm)


def test_authorizer_rules(tmp_path):
    store = AclStore(str(tmp_path))
    authz = Authorizer(store, "User:admin", allow_if_no_acl=False)
    store.add(
        [
            acl(Res.TOPIC, "orders-", Op.WRITE, pattern=Pat.PREFIXED),
            acl(Res.TOPIC, "orders-secret", Op.ALL, Perm.DENY),
            acl(Res.GROUP, "*", Op.READ, principal="User:*"),
            acl(Res.TOPIC, "local", Op.READ, host="10.0.0.1"),
        ]
    )
    ok = lambda op, rt, name, who="User:alice", host="127.0.0.1": authz.authorize(who, host, op, rt, name)  # noqa: E731
    assert ok(Op.WRITE, Res.TOPIC, "orders-eu")
    assert ok(Op.DESCRIBE, Res.TOPIC, "orders-eu")  # implied by WRITE
    assert not ok(Op.READ, Res.TOPIC, "orders-eu")
    assert not ok(Op.WRITE, Res.TOPIC, "orders-secret")  # DENY wins
    assert ok(Op.READ, Res.GROUP, "any-group", who="User:bob")  # wildcard principal and name
    assert not ok(Op.READ, Res.TOPIC, "local")  # wrong host
    assert ok(Op.READ, Res.TOPIC, "local", host="10.0.0.1")
    assert not ok(Op.READ, Res.TOPIC, "no-acls")  # allow.everyone.if.no.acl.found=false
    assert ok(Op.DELETE, Res.TOPIC, "orders-secret", who="User:admin")  # super user
    assert Authorizer(store, "", allow_if_no_acl=True).authorize("User:x", "h", Op.READ, Res.TOPIC, "no-acls")
    assert authz.authorize_any("User:alice", "h", Op.WRITE, Res.TOPIC)
    assert not authz.authorize_any("User:bob", "h", Op.WRITE, Res.TOPIC)
    ops = authz.authorized_operations("User:alice", "h", Res.TOPIC, "orders-eu")
    assert ops == (1 << Op.WRITE) | (1 << Op.DESCRIBE)
    assert len(AclStore(str(tmp_path)).acls) == 4  # persisted


def test_acl_filters_and_validation():
    prefixed = acl(Res.TOPIC, "orders-", Op.WRITE, pattern=Pat.PREFIXED)
    literal = acl(Res.TOPIC, "orders-eu", Op.READ)
    match = AclFilter(Res.TOPIC, "orders-eu", Pat.MATCH, None, None, Op.ANY, Perm.ANY)
    assert match.matches(prefixed) and match.matches(literal)
    exact = AclFilter(Res.ANY, "orders-eu", Pat.ANY, None, None, Op.ANY, Perm.ANY)
    assert exact.matches(literal) and not exact.matches(prefixed)
    for bad in (
        acl(Res.CLUSTER, "other", Op.ALTER),
        acl(Res.TOPIC, "t", Op.ANY),
        acl(Res.ANY, "t", Op.READ),
        acl(Res.TOPIC, "t", Op.READ, principal="alice"),
    ):
        with pytest.raises(InvalidAcl):
            bad.validate()


def test_connection_limits():
    limits = ConnectionLimits(max_total=3, max_per_ip=2)
    assert limits.admit("a") is None and limits.admit("a") is None
    assert "per.ip" in limits.admit("a")
    assert limits.admit("b") is None
    assert "max.connections" in limits.admit("c")
    limits.release("a")
    assert limits.admit("c") is None


def test_idle_and_stall_and_partition_limits():
    assert idle_or_stalled(10.0, 0.0, None, None, False, 5.0, 1.0).startswith("idle")
    assert idle_or_stalled(10.0, 0.0, None, None, True, 5.0, 1.0) is None  # a long poll is not idle
    assert idle_or_stalled(10.0, 9.0, None, None, False, 5.0, 1.0) is None
    assert idle_or_stalled(10.0, 9.9, 8.0, None, False, 5.0, 1.0).startswith("request not received")
    assert "not read its response" in idle_or_stalled(10.0, 9.9, None, 4.0, True, 5.0, 1.0)
    config = {"minibroker.max.partitions.per.request": 100, "minibroker.max.partitions": 150}
    assert partition_limit_error(config, 0, 100) is None
    assert "excessively large" in partition_limit_error(config, 0, 101)
    assert "minibroker.max.partitions=150" in partition_limit_error(config, 100, 60)
