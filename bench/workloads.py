"""What the benchmark asks of a broker, through librdkafka (confluent-kafka) only, so both brokers
see exactly the same client. Every function is bounded in time and raises if records go missing."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

DEADLINE_S = 180


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=60)[name].result(120)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # Kafka creates asynchronously: wait for the leaders
        meta = admin.list_topics(name, timeout=10).topics.get(name)
        if (
            meta is not None
            and meta.error is None
            and len(meta.partitions) == partitions
            and all(p.leader >= 0 for p in meta.partitions.values())
        ):
            return
        time.sleep(0.05)
    raise RuntimeError(f"topic {name} not ready")


def _producer(bootstrap: str, **extra) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.size": 1 << 20,
            **extra,
        }
    )


def _produce(p: Producer, topic: str, value: bytes, i: int, on_delivery=None) -> None:
    while True:
        try:
            p.produce(topic, value, key=str(i % 64).encode(), on_delivery=on_delivery)
            return
        except BufferError:
            p.poll(0.005)


def produce_idempotent(bootstrap: str, topic: str, count: int, size: int) -> float:
    """Seconds to produce and get acknowledged `count` records of `size` bytes."""
    p = _producer(bootstrap)
    value = b"x" * size
    t0 = time.perf_counter()
    for i in range(count):
        _produce(p, topic, value, i)
    if p.flush(DEADLINE_S):
        raise RuntimeError("records not delivered")
    return time.perf_counter() - t0


def produce_transactional(bootstrap: str, topic: str, count: int, size: int, per_txn: int) -> float:
    """Seconds to produce `count` records in transactions of `per_txn`, each committed."""
    p = _producer(bootstrap, **{"transactional.id": f"bench-{uuid.uuid4().hex[:8]}"})
    p.init_transactions(60)
    value = b"x" * size
    t0 = time.perf_counter()
    for start in range(0, count, per_txn):
        p.begin_transaction()
        for i in range(start, min(start + per_txn, count)):
            _produce(p, topic, value, i)
        p.commit_transaction(60)
    return time.perf_counter() - t0


def one_record_transactions(bootstrap: str, topic: str, seconds: float) -> tuple[int, float]:
    """(transactions, elapsed) of begin/produce one record/commit in a loop for `seconds`."""
    p = _producer(bootstrap, **{"transactional.id": f"bench-1-{uuid.uuid4().hex[:8]}", "linger.ms": 0})
    p.init_transactions(60)
    done = 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        p.begin_transaction()
        _produce(p, topic, b"x" * 100, done)
        p.commit_transaction(60)
        done += 1
    return done, time.perf_counter() - t0


def produce_latency(bootstrap: str, topic: str, rate: int, seconds: float) -> list[float]:
    """Acknowledgement latencies (ms) of 100 B idempotent records sent at a fixed `rate`."""
    p = _producer(bootstrap, **{"linger.ms": 0})
    latencies: list[float] = []

    def delivered(err, msg, sent=None):
        if err is not None:
            raise KafkaException(err)
        latencies.append((time.perf_counter() - sent) * 1000)

    _produce(p, topic, b"warm-up", 0)  # connections and the producer id first: not timed
    if p.flush(DEADLINE_S):
        raise RuntimeError("warm-up record not delivered")
    total = int(rate * seconds)
    t0 = time.perf_counter()
    for i in range(total):
        due = t0 + i / rate
        while (now := time.perf_counter()) < due:
            p.poll(min(due - now, 0.001))
        _produce(p, topic, b"x" * 100, i, lambda e, m, s=now: delivered(e, m, s))
        p.poll(0)
    if p.flush(DEADLINE_S):
        raise RuntimeError("records not delivered")
    return latencies


def consume(bootstrap: str, topic: str, partitions: int, count: int, isolation: str) -> float:
    """Seconds to read `count` records from the start of every partition."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "isolation.level": isolation,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = 0
    t0 = time.perf_counter()
    deadline = time.monotonic() + DEADLINE_S
    try:
        while seen < count and time.monotonic() < deadline:
            for m in c.consume(10000, 1.0):
                if m.error() is None:
                    seen += 1
        elapsed = time.perf_counter() - t0
    finally:
        c.close()
    if seen < count:
        raise RuntimeError(f"consumed {seen} of {count} from {topic}")
    return elapsed
