"""minibroker.testing (the context-manager API users start brokers with), the test profile, and a
prompt SIGTERM with a long-poll Fetch parked."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

import minibroker.testing
from tests.support.helpers import create_topic, unique_name
from tests.support.wire import FetchResponse, WireClient, build_fetch_request


def _roundtrip(bootstrap: str, topic: str) -> list[bytes]:
    producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10_000, max_block_ms=10_000)
    producer.send(topic, b"hello", partition=0).get(timeout=10)
    producer.close(timeout=5)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        group_id=None,
        fetch_max_wait_ms=100,
        request_timeout_ms=10_000,
    )
    try:
        consumer.assign([TopicPartition(topic, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 15
        while not values and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=300).values():
                values += [r.value for r in records]
        return values
    finally:
        consumer.close()


def _broker_config(bootstrap: str, name: str) -> str:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        response = admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, "1", [name])], config_filter="all"
        )
        # kafka-python's parsed form: {'broker': {'1': {name: {'value': ...}}}}
        return response["broker"]["1"][name]["value"]
    finally:
        admin.close()


def test_context_manager_starts_serves_and_stops():
    with minibroker.testing.broker(num_partitions=2) as b:
        host, port = b.address
        assert b.bootstrap_servers == f"{host}:{port}"
        assert _roundtrip(b.bootstrap_servers, "cm-topic") == [b"hello"]
        assert _broker_config(b.bootstrap_servers, "num.partitions") == "2"
        # the test profile is on by default: no 3 s initial rebalance delay
        assert _broker_config(b.bootstrap_servers, "group.initial.rebalance.delay.ms") == "0"
        data_dir = b.data_dir
    assert not b.running, "the broker outlived its with-block"
    assert b.proc.returncode == 0
    assert not data_dir.exists(), "the temporary data directory was not removed"


def test_kafka_defaults_without_the_test_profile(tmp_path):
    with minibroker.testing.broker(
        {"group.initial.rebalance.delay.ms": 250}, profile="default", data_dir=tmp_path / "d"
    ) as b:
        assert _broker_config(b.bootstrap_servers, "group.initial.rebalance.delay.ms") == "250"
        assert _broker_config(b.bootstrap_servers, "log.segment.bytes") == "1073741824"
    assert (tmp_path / "d" / ".kafka_cleanshutdown").exists(), "a caller's data dir is kept, stopped cleanly"


def test_start_failure_raises_with_the_broker_log():
    with pytest.raises(minibroker.testing.BrokerStartError) as info:
        with minibroker.testing.broker(no_such_property=1):
            pytest.fail("the body must not run when the broker cannot start")
    message = str(info.value)
    # the broker's own reason leads, not the command line or the log tail
    first, second = message.splitlines()[:2]
    assert first.startswith("minibroker did not start: invalid configuration: "), message
    assert "no.such.property" in first, message
    assert second == "the broker exited with code 2 (bad configuration) during startup", message
    assert "----- broker log tail" in message


def test_start_failure_of_a_damaged_data_dir_leads_with_the_reason(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "meta.properties").write_bytes(b"\xff\xfe not properties \x00")
    with pytest.raises(minibroker.testing.BrokerStartError) as info:
        with minibroker.testing.broker(data_dir=tmp_path / "d"):
            pytest.fail("the body must not run when the broker cannot start")
    message = str(info.value)
    first, second = message.splitlines()[:2]
    assert first.startswith("minibroker did not start: "), message
    assert "meta.properties" in first, message
    assert "exited with code 1 (cannot start or cannot go on)" in second, message


async def test_async_variant_with_aiokafka():
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async with minibroker.testing.async_broker() as b:
        producer = AIOKafkaProducer(bootstrap_servers=b.bootstrap_servers)
        await producer.start()
        try:
            await producer.send_and_wait("async-topic", b"from asyncio")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            "async-topic", bootstrap_servers=b.bootstrap_servers, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            record = await asyncio.wait_for(consumer.getone(), 15)
        finally:
            await consumer.stop()
        assert record.value == b"from asyncio"
    assert b.proc.returncode == 0


def test_sigterm_answers_a_parked_long_poll_fetch_and_exits_promptly(broker):
    topic = unique_name("parked")
    create_topic(broker, topic, 1)
    with WireClient.to(broker, timeout=30) as client:
        assert client.api_versions(3).error_code == 0
        corr = client.send_request(build_fetch_request(topic, 0, 0, max_wait_ms=30_000, min_bytes=1), 12)
        # The broker gives no outside sign that a fetch is parked; a generous pause lets it read
        # the frame. If it had not, SIGTERM would close the idle connection and the response
        # assertion below fails rather than passing vacuously.
        time.sleep(0.5)
        started = time.monotonic()
        broker.proc.send_signal(signal.SIGTERM)
        response = client.recv_response(FetchResponse, 12, corr, timeout=10)
        answered_s = time.monotonic() - started
        broker.proc.wait(10)
        stopped_s = time.monotonic() - started
    assert response.error_code == 0
    # bounds far below max_wait (30 s) that a loaded CI machine still meets; the speed is a bench figure
    assert answered_s < 10.0, f"parked fetch answered {answered_s:.2f}s after SIGTERM (max_wait was 30 s)"
    assert broker.proc.returncode == 0
    assert stopped_s < 10.0, f"broker took {stopped_s:.2f}s to stop with a parked fetch"


def test_sigterm_with_a_polling_consumer_attached_stops_promptly(broker):
    import threading

    topic = unique_name("polled")
    create_topic(broker, topic, 1)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=None,
        fetch_max_wait_ms=30_000,
        request_timeout_ms=40_000,
        auto_offset_reset="earliest",
        reconnect_backoff_ms=1000,
        reconnect_backoff_max_ms=1000,
    )
    consumer.assign([TopicPartition(topic, 0)])
    polls = 0
    stopping = threading.Event()

    def poll_forever() -> None:
        nonlocal polls
        while not stopping.is_set():
            consumer.poll(timeout_ms=200)
            polls += 1

    poller = threading.Thread(target=poll_forever, daemon=True)
    poller.start()
    try:
        deadline = time.monotonic() + 10
        while polls < 3 and time.monotonic() < deadline:  # it has connected and is long-polling
            time.sleep(0.05)
        assert polls >= 3
        started = time.monotonic()
        broker.proc.send_signal(signal.SIGTERM)
        broker.proc.wait(10)
        elapsed = time.monotonic() - started
    finally:
        stopping.set()
        poller.join(10)
        consumer.close()
    assert broker.proc.returncode == 0
    assert elapsed < 10.0, (
        f"broker took {elapsed:.2f}s to stop with a consumer long-polling (fetch.max.wait 30 s)"
    )
