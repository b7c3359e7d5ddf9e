"""Issue 23, KIP-714 client telemetry against a minibroker process: GetTelemetrySubscriptions (71)
and PushTelemetry (72) answered as Kafka 4.4 answers them, CLIENT_METRICS subscriptions
(IncrementalAlterConfigs / DescribeConfigs / ListConfigResources, kept across a restart), and real
clients (librdkafka; Java in test_java_clients.py) whose pushed metrics a test reads back
through minibroker.testing."""

from __future__ import annotations

import base64
import gzip
import shutil
import uuid

import pytest

from conformance.wire import CLOSED, Connection
from tests.acceptance.test_kafka_cli import kafka_tool  # noqa: F401 - the fixture
from tests.support.helpers import create_topic, unique_name

pytestmark = pytest.mark.timeout(120)

GET_SUBSCRIPTIONS, PUSH, API_VERSIONS = 71, 72, 18
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, LIST_CONFIG_RESOURCES = 32, 44, 74
CLIENT_METRICS = 16
NONE, INVALID_REQUEST, INVALID_CONFIG = 0, 42, 40
THROTTLING_QUOTA_EXCEEDED, UNKNOWN_SUBSCRIPTION_ID, TELEMETRY_TOO_LARGE = 89, 117, 118
INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE = 87, 76


def _code(value) -> int:
    return int(value)


def alter_subscription(conn: Connection, name: str, configs: dict[str, str | None], op: int = 0):
    answer = conn.call(
        INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": CLIENT_METRICS,
                    "resource_name": name,
                    "configs": [{"name": k, "config_operation": op, "value": v} for k, v in configs.items()],
                }
            ],
            "validate_only": False,
        },
    )
    return answer["responses"][0]


def otlp_payload(name: str, value: float) -> bytes:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

    data = MetricsData()
    metric = data.resource_metrics.add().scope_metrics.add().metrics.add()
    metric.name = name
    point = metric.gauge.data_points.add()
    point.as_double = value
    point.attributes.append(KeyValue(key="topic", value=AnyValue(string_value="t")))
    return data.SerializeToString()


def test_default_broker_answers_an_unadvertised_get_subscriptions(broker):
    """Kafka 4.4 without a telemetry exporter: 71/72 are not in ApiVersions, yet a raw key-71
    request gets error 0, an instance id, no metrics and a 300 s interval (connection kept)."""
    conn = Connection(broker.address)
    keys = {
        k["api_key"]
        for k in conn.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})[
            "api_keys"
        ]
    }
    assert 71 not in keys and 72 not in keys and 74 in keys
    answer = conn.call(GET_SUBSCRIPTIONS, 0, {"client_instance_id": uuid.UUID(int=0)})
    assert answer != CLOSED
    assert _code(answer["error_code"]) == NONE
    assert answer["client_instance_id"] not in (None, str(uuid.UUID(int=0)))
    assert answer["requested_metrics"] == []
    assert answer["push_interval"] == 300000
    assert answer["delta_temporality"] is True
    assert list(answer["accepted_compression_types"]) == [4, 3, 1, 2]
    assert answer["telemetry_max_bytes"] == 1048576
    # asked again at once: the push interval has not passed
    again = conn.call(GET_SUBSCRIPTIONS, 0, {"client_instance_id": uuid.UUID(answer["client_instance_id"])})
    assert _code(again["error_code"]) == THROTTLING_QUOTA_EXCEEDED
    conn.close()


def test_subscription_matching_push_checks_and_read_back(broker_factory):
    broker = broker_factory({"minibroker.telemetry.advertise": True, "minibroker.metrics.port": 0})
    conn = Connection(broker.address)
    keys = {
        k["api_key"]
        for k in conn.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})[
            "api_keys"
        ]
    }
    assert {71, 72} <= keys
    # validation as Kafka's ClientMetricsConfigs
    assert _code(alter_subscription(conn, "bad", {"interval.ms": "50"})["error_code"]) == INVALID_REQUEST
    assert _code(alter_subscription(conn, "bad", {"nope": "1"})["error_code"]) == INVALID_REQUEST
    assert (
        _code(alter_subscription(conn, "bad", {"match": "client_color=red"})["error_code"]) == INVALID_CONFIG
    )
    assert _code(alter_subscription(conn, "bad", {"interval.ms": "x"})["error_code"]) == INVALID_CONFIG
    ok = alter_subscription(
        conn,
        "sub-a",
        {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000", "match": "client_id=tel-.*"},
    )
    assert _code(ok["error_code"]) == NONE
    described = conn.call(
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": CLIENT_METRICS, "resource_name": "sub-a", "configuration_keys": None}
            ]
        },
    )["results"][0]
    values = {c["name"]: (c["value"], c["config_source"]) for c in described["configs"]}
    assert values == {
        "metrics": ("org.apache.kafka.producer.", 7),
        "interval.ms": ("1000", 7),
        "match": ("client_id=tel-.*", 7),
    }
    listed = conn.call(LIST_CONFIG_RESOURCES, 1, {"resource_types": [CLIENT_METRICS]})["config_resources"]
    assert [(r["resource_name"], r["resource_type"]) for r in listed] == [("sub-a", CLIENT_METRICS)]

    # a client that does not match gets the defaults; one that matches gets the subscription
    other = Connection(broker.address)
    plain = other.call(GET_SUBSCRIPTIONS, 0, {"client_instance_id": None}, client_id="someone")
    assert plain["requested_metrics"] == [] and plain["push_interval"] == 300000
    client = Connection(broker.address)
    sub = client.call(GET_SUBSCRIPTIONS, 0, {"client_instance_id": None}, client_id="tel-1")
    assert _code(sub["error_code"]) == NONE
    assert sub["requested_metrics"] == ["org.apache.kafka.producer."]
    assert sub["push_interval"] == 1000
    instance = uuid.UUID(sub["client_instance_id"])

    def push(subscription_id, payload, compression=0, terminating=False):
        return _code(
            client.call(
                PUSH,
                0,
                {
                    "client_instance_id": instance,
                    "subscription_id": subscription_id,
                    "terminating": terminating,
                    "compression_type": compression,
                    "metrics": payload,
                },
                client_id="tel-1",
            )["error_code"]
        )

    payload = otlp_payload("org.apache.kafka.producer.record.send.rate", 12.5)
    assert push(sub["subscription_id"] + 1, payload) == UNKNOWN_SUBSCRIPTION_ID
    # the first push after a Get is accepted, the next within the interval is throttled
    sub = client.call(GET_SUBSCRIPTIONS, 0, {"client_instance_id": instance}, client_id="tel-1")
    assert _code(sub["error_code"]) == THROTTLING_QUOTA_EXCEEDED
    # a subscription change re-evaluates the instance: a new subscription id
    assert _code(alter_subscription(conn, "sub-a", {"interval.ms": "200"})["error_code"]) == NONE
    import time

    deadline = time.monotonic() + 5
    while True:
        sub = client.call(GET_SUBSCRIPTIONS, 0, {"client_instance_id": instance}, client_id="tel-1")
        if _code(sub["error_code"]) == NONE or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert _code(sub["error_code"]) == NONE and sub["push_interval"] == 200
    assert push(sub["subscription_id"], gzip.compress(payload), compression=1) == NONE
    assert push(sub["subscription_id"], payload) == THROTTLING_QUOTA_EXCEEDED
    metrics = broker.wait_for_client_metrics("tel-1", "org.apache.kafka.producer.record.send.rate")
    assert metrics["org.apache.kafka.producer.record.send.rate"] == 12.5
    assert [i["client_instance_id"] for i in broker.client_telemetry() if i["client_id"] == "tel-1"] == [
        str(instance)
    ]
    time.sleep(0.25)  # the push interval (200 ms) must pass: Kafka throttles earlier pushes
    assert push(sub["subscription_id"], b"not otlp at all \xff") == INVALID_RECORD
    time.sleep(0.25)
    assert push(sub["subscription_id"], payload, compression=9) == UNSUPPORTED_COMPRESSION_TYPE
    time.sleep(0.25)
    assert push(sub["subscription_id"], b"x" * 1048577) == TELEMETRY_TOO_LARGE
    # a terminating push is accepted at once; nothing after it
    assert push(sub["subscription_id"], payload, terminating=True) == NONE
    assert push(sub["subscription_id"], payload, terminating=True) == INVALID_REQUEST

    # the Prometheus endpoint shows what was pushed
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    assert "minibroker_client_org_apache_kafka_producer_record_send_rate{" in text
    assert 'client_id="tel-1"' in text

    # subscriptions survive a restart; deleting every config removes one
    broker.restart()
    conn = Connection(broker.address)
    listed = conn.call(LIST_CONFIG_RESOURCES, 0, {})["config_resources"]
    assert [r["resource_name"] for r in listed] == ["sub-a"]
    assert (
        _code(
            alter_subscription(conn, "sub-a", {"metrics": None, "interval.ms": None, "match": None}, op=1)[
                "error_code"
            ]
        )
        == NONE
    )
    assert conn.call(LIST_CONFIG_RESOURCES, 0, {})["config_resources"] == []


def test_librdkafka_producer_pushes_metrics_a_test_reads_back(broker_factory):
    """confluent-kafka (librdkafka 2.16) with its default enable.metrics.push: it asks for its
    subscription, pushes OTLP metrics, and the test reads its retries and send counts back."""
    from confluent_kafka import Producer

    broker = broker_factory({"minibroker.telemetry.advertise": True, "minibroker.metrics.port": 0})
    conn = Connection(broker.address)
    assert (
        _code(alter_subscription(conn, "all", {"metrics": "*", "interval.ms": "500"})["error_code"]) == NONE
    )
    topic = unique_name("tel-rdk")
    create_topic(broker, topic, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "rdk-telemetry", "linger.ms": 5})
    try:
        for i in range(50):
            producer.produce(topic, f"v{i}".encode())
        assert producer.flush(10) == 0
        metrics = broker.wait_for_client_metrics("rdk-telemetry", "org.apache.kafka.producer.", timeout=30)
        producer.poll(0)
    finally:
        producer.flush(5)
    assert any(name.startswith("org.apache.kafka.producer.") for name in metrics), metrics
    [inst] = [i for i in broker.client_telemetry() if i["client_id"] == "rdk-telemetry"]
    assert inst["client_software_name"] == "confluent-kafka-python"
    assert inst["pushes"] >= 1


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)")
def test_kafka_client_metrics_sh_create_describe_list_delete(broker, kafka_tool):  # noqa: F811
    """Apache Kafka's kafka-client-metrics.sh (ClientMetricsCommand) against minibroker."""
    main = "org.apache.kafka.tools.ClientMetricsCommand"
    server = ["--bootstrap-server", broker.bootstrap]
    out = kafka_tool(
        main,
        *server,
        "--alter",
        "--name",
        "cli-sub",
        "--metrics",
        "org.apache.kafka.producer.,org.apache.kafka.consumer.",
        "--interval",
        "2000",
        "--match",
        "client_software_name=apache-kafka-java",
    )
    assert "cli-sub" in out
    described = kafka_tool(main, *server, "--describe", "--name", "cli-sub")
    assert "interval.ms=2000" in described
    assert "org.apache.kafka.producer.,org.apache.kafka.consumer." in described
    assert "client_software_name=apache-kafka-java" in described
    assert "cli-sub" in kafka_tool(main, *server, "--list")
    kafka_tool(main, *server, "--delete", "--name", "cli-sub")
    assert "cli-sub" not in kafka_tool(main, *server, "--list")


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)")
def test_java_producer_pushes_metrics_a_test_reads_back(broker_factory):
    """Java kafka-clients 4.4 (jvm/clients/.../TelemetryCheck.java): clientInstanceId() works and
    the producer's pushed metrics (record send totals, retries) are read back by instance id."""
    import subprocess

    from minibroker.pipelines.jars import kafka_clients_classpath

    broker = broker_factory({"minibroker.telemetry.advertise": True, "minibroker.metrics.port": 0})
    conn = Connection(broker.address)
    subscribed = alter_subscription(
        conn, "java", {"metrics": "org.apache.kafka.producer.", "interval.ms": "500"}
    )
    assert _code(subscribed["error_code"]) == NONE
    topic = unique_name("tel-java")
    create_topic(broker, topic, 1)
    proc = subprocess.run(
        [
            "java",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            kafka_clients_classpath("4.4.0"),
            "minibroker.TelemetryCheck",
            broker.bootstrap,
            topic,
            "java-telemetry",
            "20",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, f"TelemetryCheck failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    result = dict(item.split("=", 1) for item in proc.stdout.strip().splitlines()[-1].split()[1:])
    # Kafka prints a Uuid in URL-safe base64
    instance = str(uuid.UUID(bytes=base64.urlsafe_b64decode(result["instance"] + "==")))
    metrics = broker.wait_for_client_metrics(
        "java-telemetry", "org.apache.kafka.producer.", instance_id=instance, timeout=20
    )
    assert metrics.get("org.apache.kafka.producer.record.send.total", 0) >= 1, sorted(metrics)
    assert "org.apache.kafka.producer.record.retry.total" in metrics, sorted(metrics)
    [inst] = [i for i in broker.client_telemetry() if i["client_instance_id"] == instance]
    assert inst["client_software_name"] == "apache-kafka-java"
    assert inst["pushes"] >= 1
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    assert "minibroker_client_org_apache_kafka_producer_record_send_total{" in text
    assert 'client_software_name="apache-kafka-java"' in text
