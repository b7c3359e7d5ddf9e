"""Request faults and observers of the control plane (docs/control-plane/faults.md) with real
clients over loopback: kafka-python, confluent-kafka (librdkafka) and raw requests."""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaConsumer
from kafka.protocol.consumer import FetchResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

import minibroker.testing
from minibroker.control import ControlError
from tests.support.clients import ck_produce, kp_consume, kp_produce
from tests.support.helpers import create_topic, make_messages, unique_name
from tests.support.wire import WireClient, build_batch, build_fetch_request, iter_batches, single_partition

NOT_LEADER_OR_FOLLOWER = 6


@pytest.fixture(scope="module")
def b():
    with minibroker.testing.broker(control=True) as broker:
        yield broker


@pytest.fixture(autouse=True)
def _clean_faults(b):
    yield
    b.faults.clear()


def _topic(b, partitions: int = 2) -> str:
    name = unique_name("faults")
    create_topic(b, name, partitions)
    return name


def _values(consumed: dict[int, list[tuple]]) -> list[bytes]:
    return [r[2] for recs in consumed.values() for r in recs]


def _same_records(consumed: dict[int, list[tuple]], messages) -> None:
    """Every produced record consumed exactly once."""
    got = sorted(repr((r[1], r[2])) for recs in consumed.values() for r in recs)
    assert got == sorted(repr((m.key, m.value)) for m in messages)


def _produce_two(client: WireClient, topic: str, version: int = 9):
    """One Produce request for partitions 0 and 1 of `topic`; {partition: error_code}."""
    T = ProduceRequest.TopicProduceData
    batch = build_batch([(None, b"v", [])])
    request = ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            T(name=topic, partition_data=[T.PartitionProduceData(index=p, records=batch) for p in (0, 1)])
        ],
    )
    response = client.request(request, ProduceResponse, version)
    (entry,) = [t for t in response.responses if t.name == topic]
    return {p.index: p.error_code for p in entry.partition_responses}, response


def _end_offset(client: WireClient, topic: str, partition: int) -> int:
    return client.list_offsets(topic, partition, -1).offset


def test_producer_retries_through_not_leader_and_every_record_lands_once(b):
    topic = _topic(b)
    fault = b.faults.add(api="Produce", topic=topic, partition=0, error="NOT_LEADER_OR_FOLLOWER", count=3)
    messages = make_messages(6, 1, "retry")
    kp_produce(
        b.bootstrap, topic, messages, retries=5, retry_backoff_ms=20, max_in_flight_requests_per_connection=1
    )
    assert fault.wait(3, timeout=10).count == 3
    consumed = kp_consume(b.bootstrap, topic, [0], expected=6, timeout=15)
    _same_records(consumed, messages)
    assert fault.matched >= 4  # the retries went through the matcher, the 4th was not faulted


def test_a_per_partition_error_leaves_the_other_partition_written(b):
    topic = _topic(b)
    b.faults.add(api="Produce", topic=topic, partition=0, error="NOT_LEADER_OR_FOLLOWER", count=1)
    with WireClient.to(b) as client:
        errors, _ = _produce_two(client, topic)
        assert errors == {0: NOT_LEADER_OR_FOLLOWER, 1: 0}
        assert (_end_offset(client, topic, 0), _end_offset(client, topic, 1)) == (0, 1)
        line = b.wait_for_log(rf"error NOT_LEADER_OR_FOLLOWER on {topic}-0\b.*fault fired")
        assert "Produce" in line and "warning" in line.lower()
        errors, _ = _produce_two(client, topic)  # the fault has fired its count
        assert errors == {0: 0, 1: 0}
        assert (_end_offset(client, topic, 0), _end_offset(client, topic, 1)) == (1, 2)


def test_librdkafka_producer_through_every_other_error_and_a_delay(b):
    topic = _topic(b, 1)
    erring = b.faults.add(api="Produce", topic=topic, error="NOT_LEADER_OR_FOLLOWER", every=2, count=3)
    slow = b.faults.add(api="Produce", topic=topic, delay_ms=200, count=2)
    messages = make_messages(20, 1, "ck")
    started = time.monotonic()
    acked = ck_produce(
        b.bootstrap,
        topic,
        messages,
        retries=10,
        **{"retry.backoff.ms": 20, "linger.ms": 0, "batch.num.messages": 4},
    )
    assert time.monotonic() - started >= 0.4
    assert len(acked) == 20
    assert slow.count == 2
    assert erring.count >= 1
    consumed = kp_consume(b.bootstrap, topic, [0], expected=20, timeout=15)
    _same_records(consumed, messages)


def test_consumer_survives_a_fetch_disconnect(b):
    topic = _topic(b, 1)
    messages = make_messages(3, 1, "fd")
    kp_produce(b.bootstrap, topic, messages)
    cut = b.faults.add(api="Fetch", topic=topic, disconnect="before", count=1)
    consumed = kp_consume(b.bootstrap, topic, [0], expected=3, timeout=20)
    _same_records(consumed, messages)
    assert cut.count == 1


def test_end_txn_delay_commits_later(b):
    from confluent_kafka import Producer

    topic = _topic(b, 1)
    tx = unique_name("tx")
    delay = b.faults.add(api="EndTxn", transactional_id=tx, delay_ms=1500, count=1)
    producer = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": tx, "linger.ms": 0})
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce(topic, value=b"committed", partition=0)
    producer.flush(10)
    started = time.monotonic()
    producer.commit_transaction(20)
    assert time.monotonic() - started >= 1.4
    assert delay.count == 1
    consumed = kp_consume(b.bootstrap, topic, [0], expected=1, timeout=15, isolation_level="read_committed")
    assert _values(consumed) == [b"committed"]


def test_throttle_time_is_answered_and_the_connection_muted(b):
    topic = _topic(b)
    b.faults.add(api="Produce", topic=topic, throttle_ms=800, count=1)
    with WireClient.to(b) as client:
        _errors, response = _produce_two(client, topic)
        assert response.throttle_time_ms == 800
        started = time.monotonic()
        client.metadata([topic])  # read only once the throttle has passed (KIP-219)
        assert time.monotonic() - started >= 0.6
        _errors, response = _produce_two(client, topic)
        assert response.throttle_time_ms == 0


def test_observe_and_wait_on_join_group(b):
    topic = _topic(b)
    group = unique_name("g")
    seen = b.faults.observe(api="JoinGroup", group_id=group)
    stop = threading.Event()
    consumers = [
        KafkaConsumer(topic, bootstrap_servers=b.bootstrap, group_id=group, request_timeout_ms=10_000)
        for _ in range(2)
    ]

    def poll() -> None:
        while not stop.is_set():
            for c in consumers:
                c.poll(timeout_ms=100)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        assert seen.wait(2, timeout=30).count >= 2
    finally:
        stop.set()
        poller.join(10)
        for c in consumers:
            c.close()
    info = seen.info()
    assert info["observe"] is True and info["matched"] >= info["fired"] >= 2
    with pytest.raises(ControlError) as timed_out:
        seen.wait(10_000, timeout=0.2)
    assert timed_out.value.status == 408


def _error_sequence(b, topic: str, n: int) -> list[int]:
    fault = b.faults.add(api="Produce", topic=topic, error="NOT_LEADER_OR_FOLLOWER", probability=0.5, seed=42)
    with WireClient.to(b) as client:
        batch = build_batch([(None, b"p", [])])
        sequence = [client.produce(topic, 0, batch).error_code for _ in range(n)]
    fault.remove()
    return sequence


def test_a_seeded_probability_repeats_its_sequence(b):
    topic = _topic(b, 1)
    first = _error_sequence(b, topic, 16)
    assert first == _error_sequence(b, topic, 16)
    assert 0 < first.count(NOT_LEADER_OR_FOLLOWER) < 16


def test_predicate_faults_one_client_id(b):
    topic = _topic(b, 1)
    asked: list[dict] = []

    def predicate(request: dict) -> bool:
        asked.append(request)
        return request["header"]["client_id"] == "bad-client"

    fault = b.faults.add(api="Produce", topic=topic, error="NOT_LEADER_OR_FOLLOWER", predicate=predicate)
    batch = build_batch([(None, b"x", [])])
    with WireClient.to(b, client_id="bad-client") as bad, WireClient.to(b, client_id="good-client") as good:
        assert bad.produce(topic, 0, batch).error_code == NOT_LEADER_OR_FOLLOWER
        assert good.produce(topic, 0, batch).error_code == 0
    assert fault.count == 1 and fault.matched == 2
    assert [r["topic_data"][0]["name"] for r in asked] == [topic, topic]
    assert asked[0]["topic_data"][0]["partition_data"][0]["records"]["size"] == len(batch)


def test_list_remove_and_clear(b):
    topic = _topic(b, 1)
    one = b.faults.add(api="Produce", topic=topic, error="NOT_LEADER_OR_FOLLOWER")
    two = b.faults.add(api="Metadata", error="UNKNOWN_SERVER_ERROR")
    assert {f["id"] for f in b.faults.list()} == {one.id, two.id}
    two.remove()
    assert [f["id"] for f in b.faults.list()] == [one.id]
    with pytest.raises(ControlError) as gone:
        two.info()
    assert gone.value.status == 404
    b.faults.clear()
    assert b.faults.list() == []
    with WireClient.to(b) as client:
        assert client.produce(topic, 0, build_batch([(None, b"ok", [])])).error_code == 0
    with pytest.raises(ControlError) as bad:
        b.faults.add(api="NoSuchApi", error=6)
    assert bad.value.status == 400


def test_http_routes_are_listed(b):
    paths = {r["path"] for r in b.control.routes()}
    assert any("faults" in p and "wait" in p for p in paths)
    assert any("asks" in p for p in paths)


def test_single_partition_helper_still_reads_untouched_answers(b):
    topic = _topic(b)
    with WireClient.to(b) as client:
        _errors, response = _produce_two(client, topic)
        assert single_partition(response.responses, topic, 1, "partition_responses").error_code == 0


def test_http_where_matcher_and_wait(b):
    topic = _topic(b, 1)
    rule = {
        "api": "Produce",
        "where": {"acks": 1, "topic_data.name": topic},
        "error": "NOT_LEADER_OR_FOLLOWER",
    }
    fault = b.control.post("/v1/faults", rule)
    assert fault["matched"] == 0 and fault["where"] == rule["where"]
    batch = build_batch([(None, b"w", [])])
    with WireClient.to(b) as client:
        assert client.produce(topic, 0, batch, acks=-1).error_code == 0  # acks differs
        assert client.produce(topic, 0, batch, acks=1).error_code == NOT_LEADER_OR_FOLLOWER
    waited = b.control.request(
        "GET", f"/v1/faults/{fault['id']}/wait", query={"n": 1, "timeout": 5}, timeout=5
    )
    assert (waited["matched"], waited["fired"]) == (1, 1)
    b.control.delete(f"/v1/faults/{fault['id']}")
    assert b.control.get("/v1/faults") == {"faults": []}


def test_fetch_error_on_one_partition_the_other_returns_its_records(b):
    topic = _topic(b)
    with WireClient.to(b) as client:
        _produce_two(client, topic)
        b.faults.add(api="Fetch", topic=topic, partition=0, error="NOT_LEADER_OR_FOLLOWER", throttle_ms=1)
        response = client.request(build_fetch_request(topic, [(0, 0), (1, 0)]), FetchResponse, 12)
    (entry,) = response.responses
    answers = {p.partition_index: p for p in entry.partitions}
    assert (answers[0].error_code, answers[0].high_watermark) == (NOT_LEADER_OR_FOLLOWER, -1)
    assert not answers[0].records
    assert (answers[1].error_code, answers[1].high_watermark) == (0, 1)
    assert [r.value for batch in iter_batches(answers[1].records) for r in batch] == [b"v"]
    assert response.throttle_time_ms == 1


def test_transactional_producer_retries_init_producer_id(b):
    from confluent_kafka import Producer

    tx = unique_name("tx")
    refused = b.faults.add(
        api="InitProducerId", transactional_id=tx, error="COORDINATOR_LOAD_IN_PROGRESS", count=2
    )
    producer = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": tx})
    producer.init_transactions(20)
    assert refused.count == 2 and refused.matched == 3


def test_an_incremental_fetch_gets_the_error_of_a_session_partition_it_does_not_name(b):
    """KIP-227: once the session holds both partitions, a Fetch naming none of them still reads
    them; a fault on partition 0 answers it there (the client then drops or retries it)."""
    topic = _topic(b)
    with WireClient.to(b) as client:
        _produce_two(client, topic)
        full = build_fetch_request(topic, [(0, 1), (1, 1)], max_wait_ms=0)
        full.session_epoch = 0  # open a session
        opened = client.request(full, FetchResponse, 12)
        assert opened.error_code == 0 and opened.session_id > 0
        fault = b.faults.add(api="Fetch", topic=topic, partition=0, error="NOT_LEADER_OR_FOLLOWER", count=1)
        incremental = build_fetch_request(topic, [], max_wait_ms=0)
        incremental.topics = []
        incremental.session_id, incremental.session_epoch = opened.session_id, 1
        response = client.request(incremental, FetchResponse, 12)
    fault.wait(1, timeout=10)
    assert response.error_code == 0
    answered = {(t.topic, p.partition_index): p.error_code for t in response.responses for p in t.partitions}
    assert answered == {(topic, 0): NOT_LEADER_OR_FOLLOWER}  # partition 1 unchanged: left out
