"""Listeners, TLS and SASL against real clients: several listeners at once, each advertising
itself; PLAIN and SCRAM with kafka-python and librdkafka, over plaintext and TLS; client
certificates; SCRAM credentials managed through AlterUserScramCredentials and kept across a
restart; wrong credentials and requests before authentication close the connection."""

from __future__ import annotations

import asyncio
import struct
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from cryptography import x509
from cryptography.x509.oid import NameOID
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError as KPError
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from tests.support.broker import REPO_ROOT
from tests.support.helpers import wait_until
from tests.support.security import KEY_PASSWORD, issue_client_cert, listener_ports, make_certs, plain_jaas
from tests.support.wire import ConnectionClosed, WireClient, encode_uvarint, request_header

pytestmark = pytest.mark.timeout(90)

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
SASL_AUTHENTICATION_FAILED = 58


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def security_overrides(certs, client_auth: str = "none") -> dict:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.keystore.location": certs.server,
        "ssl.key.password": KEY_PASSWORD,
        "ssl.truststore.location": certs.ca,
        "ssl.client.auth": client_auth,
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(USERS),
        "minibroker.scram.credentials": "SCRAM-SHA-256=[name=scram256,password=pw256];"
        "SCRAM-SHA-512=[name=scram512,password=pw512]",
    }


@pytest.fixture(scope="module")
def secure_broker(request, tmp_path_factory, certs):
    from tests.support.broker import BrokerFactory

    factory = BrokerFactory(tmp_path_factory.mktemp("secure"))
    b = factory(security_overrides(certs))
    b.ports = listener_ports(b)
    yield b
    factory.teardown(request.session.testsfailed > 0)


def ck_conf(broker, listener: str, certs, **extra) -> dict:
    conf = {"bootstrap.servers": f"127.0.0.1:{broker.ports[listener]}", "security.protocol": listener}
    if "SSL" in listener:
        conf["ssl.ca.location"] = str(certs.ca)
    conf.update(extra)
    return conf


def ck_roundtrip(conf: dict, topic: str, n: int = 5) -> list[bytes]:
    producer = Producer({**conf, "acks": "all"})
    for i in range(n):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(20) == 0
    consumer = Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    try:
        while len(got) < n:
            msg = consumer.poll(20)
            assert msg is not None, f"timed out after {len(got)} messages"
            assert msg.error() is None, msg.error()
            got.append(msg.value())
    finally:
        consumer.close()
    return got


def test_every_listener_advertises_itself(secure_broker, certs):
    """Metadata over each listener names that listener's port (Kafka answers per listener)."""
    ports = secure_broker.ports
    assert set(ports) == {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}
    assert len(set(ports.values())) == 4
    with WireClient("127.0.0.1", ports["PLAINTEXT"]) as c:
        resp = c.request(MetadataRequest[9](topics=[], allow_auto_topic_creation=False), MetadataResponse, 9)
        assert [(b[1], b[2]) for b in resp.brokers] == [("127.0.0.1", ports["PLAINTEXT"])]
    admin = AdminClient(
        ck_conf(
            secure_broker,
            "SASL_SSL",
            certs,
            **{"sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-secret"},
        )
    )
    md = admin.list_topics(timeout=15)
    assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", ports["SASL_SSL"])]


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize(
    "mechanism,user,password",
    [
        ("PLAIN", "alice", "alice-secret"),
        ("SCRAM-SHA-256", "scram256", "pw256"),
        ("SCRAM-SHA-512", "scram512", "pw512"),
    ],
)
def test_librdkafka_sasl(secure_broker, certs, listener, mechanism, user, password):
    conf = ck_conf(
        secure_broker,
        listener,
        certs,
        **{"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password},
    )
    topic = f"ck-{mechanism.lower()}-{listener.lower()}"
    assert ck_roundtrip(conf, topic) == [f"m{i}".encode() for i in range(5)]


@pytest.mark.parametrize(
    "mechanism,user,password",
    [
        ("PLAIN", "alice", "alice-secret"),
        ("SCRAM-SHA-256", "scram256", "pw256"),
        ("SCRAM-SHA-512", "scram512", "pw512"),
    ],
)
def test_kafka_python_sasl_ssl(secure_broker, certs, mechanism, user, password):
    conf = dict(
        bootstrap_servers=f"127.0.0.1:{secure_broker.ports['SASL_SSL']}",
        security_protocol="SASL_SSL",
        ssl_cafile=str(certs.ca),
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
    )
    topic = f"kp-{mechanism.lower()}"
    producer = KafkaProducer(**conf, acks="all")
    for i in range(3):
        producer.send(topic, f"v{i}".encode()).get(timeout=20)
    producer.close()
    consumer = KafkaConsumer(topic, **conf, auto_offset_reset="earliest", consumer_timeout_ms=15000)
    try:
        values = []
        for message in consumer:  # stops after consumer_timeout_ms without a message
            values.append(message.value)
            if len(values) == 3:
                break
        assert values == [b"v0", b"v1", b"v2"]
    finally:
        consumer.close()


def test_wrong_password_fails_for_both_clients(secure_broker, certs):
    since = secure_broker.log_size()
    conf = ck_conf(
        secure_broker,
        "SASL_PLAINTEXT",
        certs,
        **{"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "scram256", "sasl.password": "wrong"},
    )
    producer = Producer(conf)
    with pytest.raises(KafkaException) as err:
        producer.list_topics(timeout=5)
    assert (
        "Authentication" in str(err.value) or "_TRANSPORT" in str(err.value) or "timed out" in str(err.value)
    )
    secure_broker.wait_for_log("authentication failed", since)
    del producer  # librdkafka would keep retrying (and logging) until the handle is freed
    with pytest.raises(KPError):
        KafkaAdminClient(
            bootstrap_servers=f"127.0.0.1:{secure_broker.ports['SASL_PLAINTEXT']}",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password="nope",
            request_timeout_ms=5000,
            bootstrap_timeout_ms=5000,
        ).close()


def _sasl_handshake(client: WireClient, mechanism: str) -> bytes:
    raw = mechanism.encode()
    client.send_frame(request_header(17, 1, 1) + struct.pack(">h", len(raw)) + raw)
    return client.recv_frame()


def test_wire_wrong_credentials_answer_58_and_close(secure_broker):
    with WireClient("127.0.0.1", secure_broker.ports["SASL_PLAINTEXT"]) as c:
        resp = _sasl_handshake(c, "PLAIN")
        assert struct.unpack(">ih", resp[:6]) == (1, 0)
        token = b"\0alice\0wrong"
        # SaslAuthenticate v2 (flexible): compact bytes
        c.send_frame(request_header(36, 2, 2, flexible=True) + encode_uvarint(len(token) + 1) + token + b"\0")
        resp = c.recv_frame()
        assert struct.unpack(">i", resp[:4]) == (2,)
        assert struct.unpack(">h", resp[5:7]) == (SASL_AUTHENTICATION_FAILED,)
        c.wait_closed()


def test_wire_request_before_authentication_closes(secure_broker):
    since = secure_broker.log_size()
    with WireClient("127.0.0.1", secure_broker.ports["SASL_PLAINTEXT"]) as c:
        c.api_versions()  # allowed before authentication
        c.send_frame(
            request_header(3, 9, 5, flexible=True) + b"\x01\x00\x00\x00\x00"
        )  # Metadata v9, no topics
        c.wait_closed()
    secure_broker.wait_for_log("api key 3 received before SASL authentication", since)


_METADATA_V9 = request_header(3, 9, 5, flexible=True) + b"\x01\x00\x00\x00\x00"  # no topics


@pytest.mark.parametrize("after_handshake", [False, True])
def test_wire_request_before_authentication_is_closed_after_the_delay(secure_broker, after_handshake):
    """Kafka's IllegalSaslStateException is a failed authentication: the close waits
    connection.failed.authentication.delay.ms (100 ms), as after a wrong password."""
    with WireClient("127.0.0.1", secure_broker.ports["SASL_PLAINTEXT"]) as c:
        if after_handshake:
            assert struct.unpack(">ih", _sasl_handshake(c, "PLAIN")[:6]) == (1, 0)
        started = time.monotonic()
        c.send_frame(_METADATA_V9)
        assert c.wait_closed() == b""
        took = time.monotonic() - started
    assert took >= 0.095, f"closed {took * 1000:.0f} ms after the request"


def test_connections_closed_after_the_delay_count_against_max_connections(broker_factory, certs):
    """A flood of refused requests cannot pile up delayed closes beyond max.connections: a
    connection waiting out its delay keeps its place, and gives it back once closed."""
    b = broker_factory(
        {**security_overrides(certs), "max.connections": 2, "connection.failed.authentication.delay.ms": 1500}
    )
    port = listener_ports(b)["SASL_PLAINTEXT"]
    refused = [WireClient("127.0.0.1", port) for _ in range(2)]
    try:
        for c in refused:
            c.api_versions()  # admitted and served
            c.send_frame(_METADATA_V9)
        with WireClient("127.0.0.1", port) as third:  # both places are taken while they wait
            assert third.wait_closed(1.0) == b""
        started = time.monotonic()
        for c in refused:
            c.wait_closed(5)
        assert time.monotonic() - started > 0.5  # they were still waiting out the delay

        def admitted() -> bool:
            try:
                with WireClient("127.0.0.1", port) as c:
                    c.api_versions()
                return True
            except (ConnectionClosed, OSError):
                return False

        wait_until(admitted, 5, message="a place frees once a delayed close is done")
    finally:
        for c in refused:
            c.close()
    b.wait_for_log("max.connections=2 reached")


def test_wire_unknown_mechanism_is_refused_and_closed(secure_broker):
    with WireClient("127.0.0.1", secure_broker.ports["SASL_PLAINTEXT"]) as c:
        resp = _sasl_handshake(c, "GSSAPI")
        assert struct.unpack(">ih", resp[:6]) == (1, 33)  # UNSUPPORTED_SASL_MECHANISM
        c.wait_closed()


def test_scram_credentials_altered_by_admin_and_kept_across_restart(broker_factory, certs):
    b = broker_factory(security_overrides(certs))
    b.ports = listener_ports(b)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{b.ports['PLAINTEXT']}"})
    upsert = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"carol-secret"
    )
    for fut in admin.alter_user_scram_credentials([upsert]).values():
        fut.result(15)
    described = admin.describe_user_scram_credentials(["carol"])["carol"].result(15)
    info = described.scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in info] == [(ScramMechanism.SCRAM_SHA_512, 8192)]
    stored = (b.data_dir / "security" / "scram-credentials.json").read_text()
    assert "carol-secret" not in stored and "carol" in stored
    b.restart()
    b.ports = listener_ports(b)
    conf = ck_conf(
        b,
        "SASL_PLAINTEXT",
        certs,
        **{"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "carol", "sasl.password": "carol-secret"},
    )
    assert ck_roundtrip(conf, "carol-topic", 2) == [b"m0", b"m1"]


def test_tls_client_certificate_required(broker_factory, certs):
    b = broker_factory(security_overrides(certs, client_auth="required"))
    b.ports = listener_ports(b)
    with_cert = ck_conf(
        b,
        "SSL",
        certs,
        **{"ssl.certificate.location": str(certs.client_cert), "ssl.key.location": str(certs.client_key)},
    )
    assert ck_roundtrip(with_cert, "tls-topic", 2) == [b"m0", b"m1"]
    without = Producer(ck_conf(b, "SSL", certs))
    with pytest.raises(KafkaException):
        without.list_topics(timeout=4)
    # kafka-python with a client certificate
    producer = KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{b.ports['SSL']}",
        security_protocol="SSL",
        ssl_cafile=str(certs.ca),
        ssl_certfile=str(certs.client_cert),
        ssl_keyfile=str(certs.client_key),
    )
    producer.send("tls-topic", b"kp").get(timeout=20)
    producer.close()


def test_sasl_handshake_on_a_plaintext_listener_is_illegal_state(secure_broker):
    with WireClient("127.0.0.1", secure_broker.ports["PLAINTEXT"]) as c:
        resp = _sasl_handshake(c, "PLAIN")
        assert struct.unpack(">ih", resp[:6]) == (1, 34)  # ILLEGAL_SASL_STATE, connection kept
        c.api_versions()


def test_tls_client_certificate_is_the_principal_for_acls(broker_factory, certs):
    overrides = {
        **security_overrides(certs, client_auth="required"),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
    }
    b = broker_factory(overrides)
    b.ports = listener_ports(b)
    admin = AdminClient(
        ck_conf(
            b,
            "SASL_PLAINTEXT",
            certs,
            **{"sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-secret"},
        )
    )
    for fut in admin.create_topics([NewTopic("cert-ok", 1), NewTopic("cert-no", 1)]).values():
        fut.result(15)
    grant = AclBinding(
        ResourceType.TOPIC,
        "cert-ok",
        ResourcePatternType.LITERAL,
        f"User:{certs.client_dn}",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    for fut in admin.create_acls([grant]).values():
        fut.result(15)
    conf = ck_conf(
        b,
        "SSL",
        certs,
        **{
            "ssl.certificate.location": str(certs.client_cert),
            "ssl.key.location": str(certs.client_key),
            "message.timeout.ms": 8000,
        },
    )
    results = {}
    producer = Producer(conf)
    for topic in ("cert-ok", "cert-no"):
        producer.produce(topic, b"v", on_delivery=lambda err, msg, t=topic: results.__setitem__(t, err))
    producer.flush(15)
    assert results["cert-ok"] is None
    assert results["cert-no"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_crafted_certificate_subject_does_not_get_another_principals_acls(broker_factory, certs):
    """Issue 21: a certificate whose CN is `alice+O=example` was given the ACLs of the two-valued
    RDN `User:CN=alice+O=example`. Kafka (X500Principal.getName()) names it
    `User:CN=alice\\+O\\=example`; each certificate gets exactly its own grants."""
    genuine = issue_client_cert(
        certs,
        x509.Name(
            [
                x509.RelativeDistinguishedName(
                    [
                        x509.NameAttribute(NameOID.COMMON_NAME, "alice"),
                        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "example"),
                    ]
                )
            ]
        ),
        "genuine",
    )
    crafted = issue_client_cert(
        certs, x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice+O=example")]), "crafted"
    )
    b = broker_factory(
        {
            **security_overrides(certs, client_auth="required"),
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin",
        }
    )
    b.ports = listener_ports(b)
    admin = AdminClient(
        ck_conf(
            b,
            "SASL_PLAINTEXT",
            certs,
            **{"sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-secret"},
        )
    )
    for fut in admin.create_topics([NewTopic("genuine-only", 1), NewTopic("crafted-only", 1)]).values():
        fut.result(15)
    grants = [
        AclBinding(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            principal,
            "*",
            AclOperation.WRITE,
            AclPermissionType.ALLOW,
        )
        for topic, principal in (
            ("genuine-only", "User:CN=alice+O=example"),
            ("crafted-only", "User:CN=alice\\+O\\=example"),
        )
    ]
    for fut in admin.create_acls(grants).values():
        fut.result(15)

    def produce_as(cert) -> dict:
        conf = ck_conf(
            b,
            "SSL",
            certs,
            **{
                "ssl.certificate.location": str(cert.cert),
                "ssl.key.location": str(cert.key),
                "message.timeout.ms": 8000,
            },
        )
        results: dict = {}
        producer = Producer(conf)
        for topic in ("genuine-only", "crafted-only"):
            producer.produce(topic, b"v", on_delivery=lambda err, msg, t=topic: results.__setitem__(t, err))
        assert producer.flush(15) == 0
        return {t: None if err is None else err.code() for t, err in results.items()}

    assert produce_as(crafted) == {
        "genuine-only": KafkaError.TOPIC_AUTHORIZATION_FAILED,
        "crafted-only": None,
    }
    assert produce_as(genuine) == {
        "genuine-only": None,
        "crafted-only": KafkaError.TOPIC_AUTHORIZATION_FAILED,
    }


@pytest.mark.parametrize(
    "settings,named",
    [
        (["listeners=PLAINTEXT://127.0.0.1:0,FOO://127.0.0.1:0"], "FOO"),
        (["listeners=SSL://127.0.0.1:0"], "ssl.keystore.location"),
        (["listeners=SASL_PLAINTEXT://127.0.0.1:0"], "plain.sasl.jaas.config"),
        (
            ["listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=GSSAPI"],
            "sasl.enabled.mechanisms",
        ),
        (["minibroker.scram.credentials=SCRAM-SHA-1=[name=a,password=b]"], "minibroker.scram.credentials"),
        (["authorizer.class.name=com.example.MyAuthorizer"], "authorizer.class.name"),
        (["listener.name.plaintext.ssl.client.auth=sometimes"], "listener.name.plaintext.ssl.client.auth"),
    ],
    ids=[
        "unmapped-listener",
        "tls-without-keystore",
        "plain-without-jaas",
        "gssapi",
        "bad-scram",
        "authorizer",
        "per-listener-value",
    ],
)
def test_bad_security_settings_stop_startup(tmp_path, settings, named):
    args = [a for s in settings for a in ("--set", s)]
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "minibroker",
            "--data-dir",
            str(tmp_path / "data"),
            "--port-file",
            str(tmp_path / "port"),
            *args,
        ],
        cwd=str(REPO_ROOT),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert named in res.stdout + res.stderr
    assert not (tmp_path / "port").exists()


@pytest.mark.parametrize(
    "mechanism,user,password", [("PLAIN", "alice", "alice-secret"), ("SCRAM-SHA-256", "scram256", "pw256")]
)
async def test_aiokafka_sasl_ssl(secure_broker, certs, mechanism, user, password):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context

    conf = dict(
        bootstrap_servers=f"127.0.0.1:{secure_broker.ports['SASL_SSL']}",
        security_protocol="SASL_SSL",
        ssl_context=create_ssl_context(cafile=str(certs.ca)),
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
    )
    topic = f"aio-{mechanism.lower()}"
    producer = AIOKafkaProducer(**conf, acks="all")
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"aio")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, **conf, auto_offset_reset="earliest")
    await consumer.start()
    try:
        msg = await asyncio.wait_for(consumer.getone(), 20)
        assert msg.value == b"aio"
    finally:
        await consumer.stop()


def test_sasl_handshake_v0_then_bare_tokens(secure_broker):
    """Before Kafka 1.0 the SASL tokens followed SaslHandshake v0 without a Kafka header."""
    with WireClient("127.0.0.1", secure_broker.ports["SASL_PLAINTEXT"]) as c:
        raw = b"PLAIN"
        c.send_frame(request_header(17, 0, 7) + struct.pack(">h", len(raw)) + raw)
        assert struct.unpack(">ih", c.recv_frame()[:6]) == (7, 0)
        c.send_frame(b"\0alice\0alice-secret")
        assert c.recv_frame() == b""  # PLAIN's empty server token
        assert c.metadata([], version=9).brokers  # other requests are served now
    with WireClient("127.0.0.1", secure_broker.ports["SASL_PLAINTEXT"]) as c:
        c.send_frame(request_header(17, 0, 7) + struct.pack(">h", len(raw)) + raw)
        c.recv_frame()
        c.send_frame(b"\0alice\0wrong")
        assert c.wait_closed() == b""
