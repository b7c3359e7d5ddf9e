"""Java kafka-clients (3.9.2 and 4.4.0) against a secured broker: SASL_PLAINTEXT with PLAIN and
SCRAM-SHA-512, SSL with a client certificate from PEM stores (`ssl.keystore.type=PEM`), wrong
credentials refused with SaslAuthenticationException, and the authorizer's denials surfacing as
TopicAuthorizationException and TransactionalIdAuthorizationException.

The checks are jvm/clients/src/main/java/minibroker/SecurityCheck.java, compiled by `make jvm`;
each one gets its client settings as a properties file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from minibroker.pipelines.jars import KAFKA_CLIENT_VERSIONS, kafka_clients_classpath

from tests.support.broker import BrokerFactory
from tests.support.helpers import unique_name
from tests.support.security import KEY_PASSWORD, listener_ports, make_certs, plain_jaas

JAVA_TIMEOUT = 90
USERS = {"admin": "admin-secret", "alice": "alice-secret"}
SCRAM_USER, SCRAM_PASSWORD = "scram512", "pw512"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    certs = make_certs(tmp_path_factory.mktemp("certs"))
    # a Java PEM keystore is one file: the certificate chain followed by the private key
    certs.client_store = certs.client_cert.parent / "client-store.pem"
    certs.client_store.write_bytes(certs.client_cert.read_bytes() + certs.client_key.read_bytes())
    return certs


@pytest.fixture(scope="module")
def secured(request, tmp_path_factory, certs):
    """One broker with SASL_PLAINTEXT and SSL (client certificates required) and an authorizer:
    admin, the SCRAM user and the certificate's principal are super users, alice has no ACLs."""
    factory = BrokerFactory(tmp_path_factory.mktemp("java-secure"))
    b = factory(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.keystore.location": certs.server,
            "ssl.key.password": KEY_PASSWORD,
            "ssl.truststore.location": certs.ca,
            "ssl.client.auth": "required",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
            "minibroker.scram.credentials": f"SCRAM-SHA-512=[name={SCRAM_USER},password={SCRAM_PASSWORD}]",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": f"User:admin;User:{SCRAM_USER};User:{certs.client_dn}",
        }
    )
    b.ports = listener_ports(b)
    yield b
    factory.teardown(request.session.testsfailed > 0)


@pytest.fixture(params=KAFKA_CLIENT_VERSIONS, ids=lambda v: f"kafka-clients-{v}")
def client_version(request) -> str:
    return request.param


def sasl_properties(broker, mechanism: str, user: str, password: str) -> dict:
    module = (
        "org.apache.kafka.common.security.plain.PlainLoginModule"
        if mechanism == "PLAIN"
        else "org.apache.kafka.common.security.scram.ScramLoginModule"
    )
    return {
        "bootstrap.servers": f"127.0.0.1:{broker.ports['SASL_PLAINTEXT']}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'{module} required username="{user}" password="{password}";',
    }


def ssl_properties(broker, certs) -> dict:
    return {
        "bootstrap.servers": f"127.0.0.1:{broker.ports['SSL']}",
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs.ca),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs.client_store),
    }


def create_topic(broker) -> str:
    topic = unique_name("java-sec")
    admin = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{broker.ports['SASL_PLAINTEXT']}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": USERS["admin"],
        }
    )
    for fut in admin.create_topics([NewTopic(topic, 1)]).values():
        fut.result(20)
    return topic


def run_check(version: str, tmp_path: Path, properties: dict, *args: str) -> dict[str, str]:
    props_file = tmp_path / "client.properties"
    # backslashes are escapes in a properties file; none of these values needs one
    props_file.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    command = [
        "java",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        kafka_clients_classpath(version),
        "minibroker.SecurityCheck",
        str(props_file),
        *args,
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=JAVA_TIMEOUT)
    assert proc.returncode == 0, (
        f"SecurityCheck {args} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}"
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no RESULT line in:\n{proc.stdout}"
    return dict(item.split("=", 1) for item in lines[-1].split()[1:])


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "mechanism,user,password",
    [("PLAIN", "admin", USERS["admin"]), ("SCRAM-SHA-512", SCRAM_USER, SCRAM_PASSWORD)],
)
def test_sasl_produce_and_consume(secured, client_version, tmp_path, mechanism, user, password):
    result = run_check(
        client_version,
        tmp_path,
        sasl_properties(secured, mechanism, user, password),
        "roundtrip",
        create_topic(secured),
    )
    assert result == {"produced": "10", "consumed": "10"}


@pytest.mark.timeout(120)
def test_ssl_client_certificate_from_pem_stores(secured, certs, client_version, tmp_path):
    result = run_check(
        client_version, tmp_path, ssl_properties(secured, certs), "roundtrip", create_topic(secured)
    )
    assert result == {"produced": "10", "consumed": "10"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mechanism,user", [("PLAIN", "admin"), ("SCRAM-SHA-512", SCRAM_USER)])
def test_wrong_password_is_a_sasl_authentication_exception(
    secured, client_version, tmp_path, mechanism, user
):
    result = run_check(
        client_version, tmp_path, sasl_properties(secured, mechanism, user, "wrong"), "refused", "any-topic"
    )
    assert result == {"admin": "SaslAuthenticationException", "send": "SaslAuthenticationException"}


@pytest.mark.timeout(120)
def test_authorizer_denials(secured, client_version, tmp_path):
    """alice authenticates but has no ACLs (allow.everyone.if.no.acl.found=false)."""
    result = run_check(
        client_version,
        tmp_path,
        sasl_properties(secured, "PLAIN", "alice", USERS["alice"]),
        "denied",
        create_topic(secured),
        unique_name("alice-txn"),
    )
    assert result == {"send": "TopicAuthorizationException", "init": "TransactionalIdAuthorizationException"}
