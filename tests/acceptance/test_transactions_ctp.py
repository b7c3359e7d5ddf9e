"""Issue 4, scenario 3: consume-transform-produce (Kafka's testSendOffsetsWithGroupMetadata and
the TransactionalMessageCopier of the system tests), with kafka-python and confluent-kafka.

A group member consumes an input topic, writes one transformed record per input record and
sends its consumed positions with send_offsets_to_transaction (KIP-447 group metadata, so
TxnOffsetCommit v3 carries generation and member id); transactions are aborted at random, and
after an abort the consumer rewinds to the committed offsets. The output must hold exactly one
result per input for read_committed, and the group's committed offsets must be the input's end.
"""

from __future__ import annotations

import random
import time

import pytest

from tests.acceptance.test_transactions_helpers import (
    WAIT,
    ck_consumer,
    ck_producer,
    committed,
    kp_consumer,
    kp_producer,
    offsets,
    uid,
    uncommitted,
)
from tests.conftest import BrokerFactory
from tests.support.helpers import create_topic

pytestmark = pytest.mark.timeout(120)

N = 40
PARTS = 2
OVERRIDES = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}


@pytest.fixture(scope="module")
def ctp_broker(request, tmp_path_factory):
    factory = BrokerFactory(tmp_path_factory.mktemp("ctp"))
    b = factory(OVERRIDES)
    yield b
    factory.teardown(request.session.testsfailed > 0)


def _seed(broker, topic):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for i in range(N):
        p.send(topic, f"in-{i}".encode(), partition=i % PARTS)
    p.flush(WAIT)
    p.close(timeout=2)


def _copy_kafka_python(broker, src, dst, group, txn_id, rng):
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    consumer = kp_consumer(
        broker,
        "read_committed",
        group_id=group,
        max_poll_records=7,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    producer = kp_producer(broker, txn_id)
    producer.init_transactions()
    consumer.subscribe([src])
    done = aborts = 0
    first = True
    deadline = time.monotonic() + 60
    try:
        while done < N:
            assert time.monotonic() < deadline, f"copied {done} of {N}"
            batch = consumer.poll(timeout_ms=200)
            records = [(tp, m) for tp, msgs in batch.items() for m in msgs]
            if not records:
                continue
            producer.begin_transaction()
            positions = {}
            for tp, m in records:
                producer.send(dst, b"out-" + m.value, partition=tp.partition)
                positions[tp] = max(positions.get(tp, 0), m.offset + 1)
            producer.send_offsets_to_transaction(
                {tp: OffsetAndMetadata(off, "", -1) for tp, off in positions.items()},
                consumer.group_metadata(),
            )
            if first or rng.random() < 0.3:
                first = False
                # kafka-python drops records not yet sent at abort, as librdkafka does: flush so
                # the aborted attempt really reaches the log (checked below: there but invisible)
                producer.flush(timeout=10)
                producer.abort_transaction()
                aborts += 1
                for tp in consumer.assignment():
                    c = consumer.committed(tp)
                    if c is None:
                        consumer.seek_to_beginning(tp)
                    else:
                        consumer.seek(tp, c)
            else:
                producer.commit_transaction()
                done += len(records)
        committed_offsets = {
            tp.partition: consumer.committed(tp) for tp in (TopicPartition(src, p) for p in range(PARTS))
        }
    finally:
        consumer.close()
        producer.close(timeout=2)
    return aborts, committed_offsets


def _copy_confluent(broker, src, dst, group, txn_id, rng):
    from confluent_kafka import TopicPartition

    consumer = ck_consumer(
        broker, "read_committed", group=group, **{"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
    )
    producer = ck_producer(broker, txn_id)
    producer.init_transactions(WAIT)
    consumer.subscribe([src])
    done = aborts = 0
    first = True
    deadline = time.monotonic() + 60
    try:
        while done < N:
            assert time.monotonic() < deadline, f"copied {done} of {N}"
            msgs = [m for m in consumer.consume(num_messages=7, timeout=0.2) if not m.error()]
            if not msgs:
                continue
            producer.begin_transaction()
            positions = {}
            for m in msgs:
                producer.produce(dst, b"out-" + m.value(), partition=m.partition())
                positions[m.partition()] = max(positions.get(m.partition(), 0), m.offset() + 1)
            producer.send_offsets_to_transaction(
                [TopicPartition(src, p, off) for p, off in positions.items()],
                consumer.consumer_group_metadata(),
                WAIT,
            )
            if first or rng.random() < 0.3:
                first = False
                # librdkafka purges records still queued at abort; flush so the aborted attempt
                # really reaches the log (the test checks it is there but invisible).
                producer.flush(WAIT)
                producer.abort_transaction(WAIT)
                aborts += 1
                for tp in consumer.committed(consumer.assignment(), timeout=WAIT):
                    consumer.seek(TopicPartition(src, tp.partition, max(tp.offset, 0)))
            else:
                producer.commit_transaction(WAIT)
                done += len(msgs)
        got = consumer.committed([TopicPartition(src, p) for p in range(PARTS)], timeout=WAIT)
        committed_offsets = {tp.partition: tp.offset for tp in got}
    finally:
        consumer.close()
        producer.flush(0)
    return aborts, committed_offsets


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_consume_transform_produce_exactly_once(ctp_broker, client):
    src, dst = uid("ctp-in"), uid("ctp-out")
    create_topic(ctp_broker, src, PARTS)
    create_topic(ctp_broker, dst, PARTS)
    _seed(ctp_broker, src)
    copy = _copy_kafka_python if client == "kafka-python" else _copy_confluent
    aborts, committed_offsets = copy(ctp_broker, src, dst, uid("copier"), uid("copier-tx"), random.Random(4))
    assert aborts >= 1

    outputs = [v for p in range(PARTS) for v in committed(ctp_broker, dst, p)]
    assert sorted(outputs) == sorted(f"out-in-{i}".encode() for i in range(N))
    # the aborted attempts are in the log, invisible to read_committed
    everything = [v for p in range(PARTS) for v in uncommitted(ctp_broker, dst, p)]
    assert len(everything) > len(outputs)
    for p in range(PARTS):
        hw, lso, _ = offsets(ctp_broker, dst, p)
        assert hw == lso
        # per input partition, the outputs keep the input's order
        vals = committed(ctp_broker, dst, p)
        assert vals == [f"out-in-{i}".encode() for i in range(p, N, PARTS)]
    assert committed_offsets == {p: N // PARTS for p in range(PARTS)}
