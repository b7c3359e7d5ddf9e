"""Delegation tokens (issue 23) with Apache Kafka's own kafka-delegation-tokens.sh (Java Admin
4.3) over SASL_PLAINTEXT/SCRAM: create (with a renewer), describe, a client logging in with the
token (SCRAM `tokenauth=true`) as the token's owner, a wrong HMAC refused, the token kept across
a SIGKILL, renew and expire; and the refusals Kafka gives on PLAINTEXT and without a secret key."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conformance.reference_kafka import tools_jars
from tests.support.security import listener_ports

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)"),
]

USER, PASSWORD = "alice", "alice-secret"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def _broker(broker_factory, secret: str | None = "token-signing-secret"):
    overrides = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "minibroker.scram.credentials": f"SCRAM-SHA-256=[name={USER},password={PASSWORD}]",
    }
    if secret is not None:
        overrides["delegation.token.secret.key"] = secret
    broker = broker_factory(overrides)
    broker.ports = listener_ports(broker)
    return broker


def _config(tmp_path, name: str, user: str, password: str, token: bool = False) -> str:
    path = tmp_path / f"{name}.properties"
    extra = " tokenauth=true" if token else ""
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=SCRAM-SHA-256\n"
        f'sasl.jaas.config={SCRAM} required username="{user}" password="{password}"{extra};\n'
    )
    return str(path)


def _tool(main_class: str, *args: str, ok: bool = True) -> str:
    done = subprocess.run(
        ["java", "-Xmx256m", "-cp", f"{tools_jars()}/*", main_class, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if ok:
        assert done.returncode == 0, f"{main_class} {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    else:
        assert done.returncode != 0, f"{main_class} {' '.join(args)} succeeded:\n{done.stdout}"
    return done.stdout + done.stderr


TOKENS = "org.apache.kafka.tools.DelegationTokenCommand"
TOPICS = "org.apache.kafka.tools.TopicCommand"


def test_token_created_over_sasl_logs_a_client_in(broker_factory, tmp_path):
    broker = _broker(broker_factory)
    bootstrap = f"127.0.0.1:{broker.ports['SASL_PLAINTEXT']}"
    alice = _config(tmp_path, "alice", USER, PASSWORD)
    created = _tool(
        TOKENS,
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        alice,
        "--create",
        "--max-life-time-period",
        "-1",
        "--renewer-principal",
        "User:bob",
    )
    token_id = re.search(r"Created delegation token with tokenId : (\S+)", created).group(1)
    row = re.search(rf"^{re.escape(token_id)}\s+(\S+)\s+User:alice\s+User:alice\s+\[?User:bob", created, re.M)
    assert row, created
    hmac = row.group(1)

    # a client logged in with the token is alice: it may create and list topics
    as_token = _config(tmp_path, "token", token_id, hmac, token=True)
    _tool(
        TOPICS,
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        as_token,
        "--create",
        "--topic",
        "by-token",
    )
    assert "by-token" in _tool(
        TOPICS, "--bootstrap-server", bootstrap, "--command-config", as_token, "--list"
    )
    # Kafka refuses token requests from a connection authenticated by a token
    refused = _tool(
        TOKENS, "--bootstrap-server", bootstrap, "--command-config", as_token, "--describe", ok=False
    )
    assert "DelegationTokenDisabledException" in refused or "not allowed" in refused.lower(), refused
    # a wrong HMAC does not log in
    wrong = _config(tmp_path, "wrong", token_id, "AAAA" + hmac[4:], token=True)
    failed = _tool(TOPICS, "--bootstrap-server", bootstrap, "--command-config", wrong, "--list", ok=False)
    assert "SaslAuthenticationException" in failed or "Authentication failed" in failed, failed

    broker.restart(kill=True)  # SIGKILL: the token was acknowledged, so it is on disk
    broker.ports = listener_ports(broker)
    bootstrap = f"127.0.0.1:{broker.ports['SASL_PLAINTEXT']}"
    described = _tool(
        TOKENS,
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        alice,
        "--describe",
        "--owner-principal",
        "User:alice",
    )
    assert token_id in described and hmac in described and "Total number of tokens : 1" in described
    assert "by-token" in _tool(
        TOPICS, "--bootstrap-server", bootstrap, "--command-config", as_token, "--list"
    )

    renewed = _tool(
        TOKENS,
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        alice,
        "--renew",
        "--hmac",
        hmac,
        "--renew-time-period",
        "60000",
    )
    assert "Completed renew operation" in renewed
    expired = _tool(
        TOKENS,
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        alice,
        "--expire",
        "--hmac",
        hmac,
        "--expiry-time-period",
        "-1",
    )
    assert "Completed expire operation" in expired
    assert "Total number of tokens : 0" in _tool(
        TOKENS,
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        alice,
        "--describe",
        "--owner-principal",
        "User:bob",
    )
    _tool(TOPICS, "--bootstrap-server", bootstrap, "--command-config", as_token, "--list", ok=False)


def test_plaintext_and_no_secret_refusals(broker_factory, tmp_path):
    broker = _broker(broker_factory, secret=None)
    plaintext = f"127.0.0.1:{broker.ports['PLAINTEXT']}"
    # DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, which the Admin client reports as this exception
    plain = tmp_path / "plain.properties"
    plain.write_text("security.protocol=PLAINTEXT\n")
    refused = _tool(
        TOKENS, "--bootstrap-server", plaintext, "--command-config", str(plain), "--describe", ok=False
    )
    assert "UnsupportedByAuthenticationException" in refused, refused
    sasl = f"127.0.0.1:{broker.ports['SASL_PLAINTEXT']}"
    alice = _config(tmp_path, "alice", USER, PASSWORD)
    disabled = _tool(TOKENS, "--bootstrap-server", sasl, "--command-config", alice, "--describe", ok=False)
    assert "DelegationTokenDisabledException" in disabled, disabled
