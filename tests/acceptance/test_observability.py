"""Prometheus metrics endpoint (minibroker.metrics.port) and the request log, seen from outside:
scrape the endpoint over HTTP, read the broker's log."""

from __future__ import annotations

import json
import re
import time
import urllib.request

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from tests.support.helpers import create_topic, unique_name, wait_until
from tests.support.wire import WireClient


def _metrics_port(broker) -> int:
    line = broker.wait_for_log("metrics endpoint ready")
    return int(re.search(r'"port": (\d+)', line).group(1))


def scrape(broker) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted label items): value} from one GET /metrics."""
    url = f"http://127.0.0.1:{_metrics_port(broker)}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples, name: str, **labels) -> float:
    return samples[(name, tuple(sorted((k, str(v)) for k, v in labels.items())))]


def _txn_producer(broker, txn_id: str) -> KafkaProducer:
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        transactional_id=txn_id,
        request_timeout_ms=10_000,
        max_block_ms=10_000,
    )
    producer.init_transactions()
    return producer


def test_metrics_show_committed_aborted_ongoing_and_fenced_transactions(broker_factory):
    broker = broker_factory({"minibroker.metrics.port": 0})
    topic = unique_name("eos-metrics")
    create_topic(broker, topic, 1)
    producer = _txn_producer(broker, "metrics-txn")
    producer.begin_transaction()
    producer.send(topic, b"kept")
    producer.commit_transaction()
    producer.begin_transaction()
    producer.send(topic, b"dropped")
    producer.flush()
    producer.abort_transaction()
    producer.begin_transaction()
    producer.send(topic, b"open")
    producer.flush()  # in the log, transaction still open

    samples = scrape(broker)
    assert value(samples, "minibroker_transactions_committed_total") == 1
    assert value(samples, "minibroker_transactions_aborted_total") == 1
    assert value(samples, "minibroker_transactions_started_total") == 3
    assert value(samples, "minibroker_transactions_ongoing") == 1
    assert value(samples, "minibroker_transaction_oldest_age_seconds") >= 0
    # committed batch + its marker + aborted batch + its marker + the open batch: the open one
    # is above the LSO
    assert value(samples, "minibroker_partition_lso_lag_messages", topic=topic, partition=0) == 1
    assert value(samples, "minibroker_topic_produced_records_total", topic=topic) == 3
    assert value(samples, "minibroker_topic_produced_bytes_total", topic=topic) > 0
    assert value(samples, "minibroker_producer_ids_active") >= 1
    assert value(samples, "minibroker_log_segments", topic=topic, partition=0) == 1
    assert value(samples, "minibroker_log_size_bytes", topic=topic, partition=0) > 0
    assert value(samples, "minibroker_request_duration_seconds_count", api="EndTxn") == 2
    assert value(samples, "minibroker_startup_duration_seconds", phase="total") > 0

    # a second instance with the same transactional id fences the first and aborts its transaction
    successor = _txn_producer(broker, "metrics-txn")
    samples = scrape(broker)
    assert value(samples, "minibroker_producers_fenced_total") >= 1
    assert value(samples, "minibroker_transactions_aborted_total") == 2
    assert value(samples, "minibroker_transactions_ongoing") == 0
    assert value(samples, "minibroker_partition_lso_lag_messages", topic=topic, partition=0) == 0
    successor.close()
    producer.close(timeout=1)


def test_metrics_for_fetch_errors_and_groups(broker_factory):
    broker = broker_factory({"minibroker.metrics.port": 0, "group.initial.rebalance.delay.ms": 0})
    topic = unique_name("group-metrics")
    create_topic(broker, topic, 1)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(5):
        producer.send(topic, str(i).encode())
    producer.flush(10)
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id="metrics-group",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got = 0
        deadline = time.monotonic() + 15
        while got < 2 and time.monotonic() < deadline:
            got += sum(len(r) for r in consumer.poll(timeout_ms=200, max_records=2).values())
        consumer.commit({TopicPartition(topic, 0): __import__("kafka").OffsetAndMetadata(2, "", -1)})
    finally:
        consumer.close()
    with WireClient.to(broker) as client:
        _, part = client.fetch("no-such-topic", 0, 0, max_wait_ms=0)
        assert part.error_code == 3

    samples = scrape(broker)
    assert (
        value(
            samples, "minibroker_group_offset_lag_messages", group="metrics-group", topic=topic, partition=0
        )
        == 3
    )
    # assigned, not subscribed
    assert value(samples, "minibroker_group_members", group="metrics-group", type="classic") == 0
    assert value(samples, "minibroker_groups", type="classic", state="Empty") >= 1
    assert value(samples, "minibroker_topic_fetched_bytes_total", topic=topic) > 0
    assert (
        value(samples, "minibroker_request_errors_total", api="Fetch", error="UNKNOWN_TOPIC_OR_PARTITION")
        == 1
    )


def test_metrics_and_request_log_are_off_by_default(broker):
    with WireClient.to(broker) as client:
        assert client.api_versions(3).error_code == 0
    text = broker.log_text()
    assert "metrics endpoint ready" not in text
    assert '"event": "request"' not in text


def _request_lines(broker) -> list[dict]:
    out = []
    for line in broker.log_text().splitlines():
        if line.startswith("{") and '"event": "request"' in line:
            out.append(json.loads(line))
    return out


def test_request_log_switch_logs_one_line_per_request(broker_factory):
    broker = broker_factory({"minibroker.request.log.enable": True})
    with WireClient(broker.host, broker.port, client_id="request-log-test") as client:
        client.api_versions(3)
        client.metadata(["missing-topic"])
    # each line is written just after its response: wait for both
    wait_until(
        lambda: len([r for r in _request_lines(broker) if r["client_id"] == "request-log-test"]) >= 2,
        timeout=5,
        message="two request log lines",
    )
    lines = [r for r in _request_lines(broker) if r["client_id"] == "request-log-test"]
    assert [r["api"] for r in lines] == ["ApiVersions", "Metadata"]
    api_versions, metadata = lines
    assert api_versions["level"] == "info" and api_versions["api_version"] == 3
    assert isinstance(api_versions["correlation_id"], int) and api_versions["latency_ms"] >= 0
    assert re.fullmatch(r"127\.0\.0\.1:\d+", api_versions["connection"])
    assert "errors" not in api_versions
    assert metadata["errors"] == {"UNKNOWN_TOPIC_OR_PARTITION": 1}


def test_request_log_at_debug_level(broker_factory):
    broker = broker_factory(log_level="debug")
    with WireClient(broker.host, broker.port, client_id="debug-level") as client:
        client.api_versions(3)
    lines = wait_until(
        lambda: [r for r in _request_lines(broker) if r["client_id"] == "debug-level"] or None,
        timeout=5,
        message="request log line",
    )
    assert lines[0]["level"] == "debug" and lines[0]["api"] == "ApiVersions"
