"""Client quotas (issue 23): DescribeClientQuotas / AlterClientQuotas through Apache Kafka's own
kafka-configs.sh (Java Admin 4.3) and on the wire, kept across a SIGKILL, and producer_byte_rate /
consumer_byte_rate enforced as Kafka does: the throttle time in the answer, and the connection
not read again before it has passed (KIP-219)."""

from __future__ import annotations

import shutil
import time

import pytest
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kafka.protocol.consumer import FetchResponse as _FetchResponse
from kafka.protocol.producer import ProduceResponse as _ProduceResponse

from tests.acceptance.test_kafka_cli import kafka_tool  # noqa: F401 - the fixture
from tests.support.helpers import create_topic, unique_name, wait_until
from tests.support.wire import WireClient, build_batch, build_fetch_request, build_produce_request

pytestmark = pytest.mark.timeout(240)

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)")


def alter(client: WireClient, entries: list[tuple[dict, dict]], validate_only: bool = False):
    """entries: ({type: name or None}, {key: value or None (remove)})."""
    req = AlterClientQuotasRequest(
        entries=list(
            AlterClientQuotasRequest.EntryData(
                entity=list(
                    AlterClientQuotasRequest.EntryData.EntityData(entity_type=t, entity_name=n)
                    for t, n in entity.items()
                ),
                ops=list(
                    AlterClientQuotasRequest.EntryData.OpData(
                        key=k, value=0.0 if v is None else float(v), remove=v is None
                    )
                    for k, v in ops.items()
                ),
            )
            for entity, ops in entries
        ),
        validate_only=validate_only,
    )
    resp = client.request(req, AlterClientQuotasResponse, 1)
    return [(e.error_code, {d.entity_type: d.entity_name for d in e.entity}) for e in resp.entries]


def describe(client: WireClient, components: list[tuple[str, int, str | None]], strict: bool = False):
    req = DescribeClientQuotasRequest(
        components=list(
            DescribeClientQuotasRequest.ComponentData(entity_type=t, match_type=m, match=v)
            for t, m, v in components
        ),
        strict=strict,
    )
    resp = client.request(req, DescribeClientQuotasResponse, 1)
    if resp.entries is None:
        return resp.error_code
    found = [
        (tuple(sorted((d.entity_type, d.entity_name) for d in e.entity)), {v.key: v.value for v in e.values})
        for e in resp.entries
    ]
    return sorted(found, key=repr)


@needs_java
def test_kafka_configs_alters_and_describes_quotas_kept_across_a_kill(kafka_tool, broker_factory):  # noqa: F811
    broker = broker_factory()
    tool = ("kafka.admin.ConfigCommand", "--bootstrap-server", broker.bootstrap)
    kafka_tool(
        *tool,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--add-config",
        "producer_byte_rate=1024,consumer_byte_rate=2048",
    )
    kafka_tool(
        *tool,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-default",
        "--add-config",
        "request_percentage=50",
    )
    kafka_tool(
        *tool,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--entity-type",
        "clients",
        "--entity-name",
        "app-1",
        "--add-config",
        "controller_mutation_rate=5.5",
    )
    kafka_tool(
        *tool,
        "--alter",
        "--entity-type",
        "ips",
        "--entity-name",
        "127.0.0.1",
        "--add-config",
        "connection_creation_rate=10",
    )
    broker.restart(kill=True)  # SIGKILL: what was acknowledged is on disk
    tool = ("kafka.admin.ConfigCommand", "--bootstrap-server", broker.bootstrap)
    users = kafka_tool(*tool, "--describe", "--entity-type", "users", "--entity-name", "alice")
    assert (
        "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0"
        in users
    )
    clients = kafka_tool(*tool, "--describe", "--entity-type", "clients", "--entity-default")
    assert "Quota configs for the default client-id are request_percentage=50.0" in clients
    both = kafka_tool(
        *tool, "--describe", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients"
    )
    assert (
        "Quota configs for user-principal 'alice', client-id 'app-1' are controller_mutation_rate=5.5" in both
    )
    ips = kafka_tool(*tool, "--describe", "--entity-type", "ips")
    assert "Quota configs for ip '127.0.0.1' are connection_creation_rate=10.0" in ips
    kafka_tool(
        *tool,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--delete-config",
        "producer_byte_rate",
    )
    users = kafka_tool(*tool, "--describe", "--entity-type", "users", "--entity-name", "alice")
    assert "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0" in users
    assert "producer_byte_rate" not in users


def test_entity_rules_validate_only_and_matching(broker_factory):
    broker = broker_factory()
    with WireClient.to(broker) as c:
        assert alter(c, [({"user": "bob"}, {"producer_byte_rate": 100})], validate_only=True) == [
            (0, {"user": "bob"})
        ]
        assert describe(c, []) == []  # validate_only stores nothing
        bad = alter(
            c,
            [
                ({}, {"producer_byte_rate": 1}),  # empty entity
                ({"user": ""}, {"producer_byte_rate": 1}),  # empty name
                ({"group": "g"}, {"producer_byte_rate": 1}),  # unknown type
                ({"ip": "127.0.0.1", "user": "u"}, {"connection_creation_rate": 1}),  # ip with user
                ({"user": "u1"}, {"connection_creation_rate": 1}),  # ip key on a user
                ({"user": "u2"}, {"producer_byte_rate": 0}),  # not > 0
                ({"user": "u3"}, {"producer_byte_rate": 1.5}),  # fractional LONG
                ({"ip": "127.0.0.2"}, {"connection_creation_rate": 2**31}),  # too large for an INT
                ({"user": "u4"}, {"no_such_key": 1}),
            ],
        )
        assert [code for code, _ in bad] == [42] * 9  # INVALID_REQUEST
        assert describe(c, []) == []
        ok = alter(
            c,
            [
                ({"user": "bob"}, {"producer_byte_rate": 100, "request_percentage": 12.5}),
                ({"user": None}, {"consumer_byte_rate": 7}),
                ({"user": "bob", "client-id": "c1"}, {"consumer_byte_rate": 9}),
                ({"client-id": None}, {"producer_byte_rate": 3}),
                ({"user": "carol"}, {"producer_byte_rate": None}),  # removing nothing is no error
            ],
        )
        assert [code for code, _ in ok] == [0] * 5
        bob = ((("user", "bob"),), {"producer_byte_rate": 100.0, "request_percentage": 12.5})
        bob_c1 = ((("client-id", "c1"), ("user", "bob")), {"consumer_byte_rate": 9.0})
        default_user = ((("user", None),), {"consumer_byte_rate": 7.0})
        default_client = ((("client-id", None),), {"producer_byte_rate": 3.0})
        assert describe(c, [("user", 0, "bob")]) == sorted([bob, bob_c1], key=repr)
        assert describe(c, [("user", 0, "bob")], strict=True) == [bob]
        assert describe(c, [("user", 1, None)]) == [default_user]
        assert describe(c, [("user", 2, None)]) == sorted([bob, bob_c1, default_user], key=repr)
        assert describe(c, [("client-id", 2, None)], strict=True) == [default_client]
        assert describe(c, [], strict=True) == []
        assert describe(c, [("user", 0, None)]) == 42  # exact match without a name
        assert describe(c, [("user", 2, None), ("user", 1, None)]) == 42  # a type twice
        assert describe(c, [("ip", 2, None), ("user", 2, None)]) == 42
        assert describe(c, [("group", 2, None)]) == 35  # UNSUPPORTED_VERSION, as Kafka
        # a repeated entity: Kafka answers "duplicate entity" for it
        dup = alter(
            c, [({"user": "dan"}, {"producer_byte_rate": 1}), ({"user": "dan"}, {"producer_byte_rate": 2})]
        )
        assert dup == [(42, {"user": "dan"})]


def _produce_frame_size_bytes() -> bytes:
    return build_batch([(None, b"x" * 20_000, [])])


def test_producer_byte_rate_throttles_and_mutes_the_connection(broker_factory):
    """Two 1-second samples (quota.window.num=2): a 20 kB produce against 10 kB/s is twice the
    rate over the 1 s window Kafka assumes, so the throttle is about (20 - 10) / 10 * 1000 ms."""
    broker = broker_factory({"quota.window.num": 2})
    topic = unique_name("quota")
    create_topic(broker, topic, 1)
    batch = _produce_frame_size_bytes()
    with WireClient.to(broker) as admin:
        assert alter(admin, [({"client-id": "slow"}, {"producer_byte_rate": 10_000})]) == [
            (0, {"client-id": "slow"})
        ]
    with WireClient.to(broker, client_id="fast") as fast:  # another client id: no quota applies
        resp = fast.request(_produce_request(topic, batch), _ProduceResponse, 9)
        assert resp.throttle_time_ms == 0
    with WireClient.to(broker, client_id="slow") as slow:
        resp = slow.request(_produce_request(topic, batch), _ProduceResponse, 9)
        throttle = resp.throttle_time_ms
        assert resp.responses[0].partition_responses[0].error_code == 0
        # rate = size / 1 s (the window is at least one sample when only one was recorded)
        assert 1000 <= throttle <= 1200, throttle
        started = time.monotonic()
        slow.api_versions()
        waited = (time.monotonic() - started) * 1000
        assert throttle - 100 <= waited <= throttle + 2000, (throttle, waited)


def _produce_request(topic: str, batch: bytes):
    return build_produce_request(topic, 0, batch, acks=-1, timeout_ms=5000)


def test_consumer_byte_rate_caps_and_throttles_fetches(broker_factory):
    """consumer_byte_rate 5000 B/s over two 1-second samples: an answer is capped at one window's
    bytes (one 3 kB batch of two), the second 3 kB answer goes over the rate and is answered
    with no partitions and the throttle time (its bytes not counted), the connection muted."""
    broker = broker_factory({"quota.window.num": 2})
    topic = unique_name("quota-fetch")
    create_topic(broker, topic, 1)
    with WireClient.to(broker) as c:
        for i in range(2):
            c.produce(topic, 0, build_batch([(None, bytes([i]) * 3000, [])]))
        assert alter(c, [({"user": None}, {"consumer_byte_rate": 5_000})]) == [(0, {"user": None})]
    with WireClient.to(broker, client_id="reader") as r:
        resp = r.request(_fetch_request(topic, 0), _FetchResponse, 12)
        assert resp.throttle_time_ms == 0
        [partition] = resp.responses[0].partitions
        size = len(partition.records)
        assert 3000 < size < 3300  # one batch: the cap is 5000 bytes
        resp = r.request(_fetch_request(topic, 1), _FetchResponse, 12)
        throttle = resp.throttle_time_ms
        # two answers of ~size + 100 bytes of framing in the 1 s window against 5000 B/s
        expected = (2 * (size + 100) - 5000) / 5000 * 1000
        assert expected - 150 <= throttle <= expected + 150, (throttle, expected)
        assert not resp.responses  # Kafka's throttled answer: no partitions
        started = time.monotonic()
        resp = r.request(_fetch_request(topic, 1), _FetchResponse, 12)
        waited = (time.monotonic() - started) * 1000
        assert waited >= throttle - 50, (waited, throttle)


def _fetch_request(topic: str, offset: int):
    return build_fetch_request(
        topic,
        0,
        offset,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        partition_max_bytes=1 << 20,
        isolation_level=0,
    )


def test_librdkafka_producer_is_told_its_throttle(broker_factory):
    """A real client: librdkafka reports the broker's throttle time through throttle_cb."""
    from confluent_kafka import Producer

    broker = broker_factory({"quota.window.num": 2})
    topic = unique_name("quota-rdk")
    create_topic(broker, topic, 1)
    with WireClient.to(broker) as admin:
        assert alter(admin, [({"client-id": "rdk"}, {"producer_byte_rate": 10_000})]) == [
            (0, {"client-id": "rdk"})
        ]
    throttles: list[float] = []
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": "rdk",
            "linger.ms": 0,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    producer.produce(topic, b"x" * 20_000, partition=0)
    assert producer.flush(10) == 0
    wait_until(lambda: producer.poll(0.1) >= 0 and throttles, timeout=10, message="a throttle event")
    # about 20 kB over the 1 s window against 10 kB/s: about 1 s
    assert 0.9 <= throttles[0] <= 1.3, throttles
