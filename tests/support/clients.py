"""Produce and consume test records with the three real clients.

Producers return the (partition, offset) each record was acknowledged at; consumers use manual
assignment (no consumer group) from the earliest offset and return, per partition, the records as
(offset, key, value, headers, timestamp) tuples in the order received.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from tests.support.helpers import Msg, normalize_headers

CLIENT_TIMEOUT_MS = 10_000


def _codec(codec: str):
    return None if codec == "none" else codec


# ------------------------------------------------------------------------------ kafka-python
def kp_produce(
    bootstrap: str, topic: str, messages: list[Msg], codec: str = "none", **extra
) -> list[tuple[int, int]]:
    from kafka import KafkaProducer

    cfg = dict(
        bootstrap_servers=bootstrap,
        compression_type=_codec(codec),
        linger_ms=5,
        acks="all",
        enable_idempotence=False,
        retries=0,
        request_timeout_ms=CLIENT_TIMEOUT_MS,
        max_block_ms=CLIENT_TIMEOUT_MS,
        client_id="acceptance-kp-producer",
    )
    cfg.update(extra)
    producer = KafkaProducer(**cfg)
    try:
        futures = [
            producer.send(
                topic,
                key=m.key,
                value=m.value,
                headers=list(m.headers),
                partition=m.partition,
                timestamp_ms=m.timestamp,
            )
            for m in messages
        ]
        producer.flush(timeout=30)
        out = []
        for f in futures:
            md = f.get(timeout=30)
            out.append((md.partition, md.offset))
        return out
    finally:
        producer.close(timeout=5)


def kp_consumer(bootstrap: str, **extra):
    from kafka import KafkaConsumer

    cfg = dict(
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        request_timeout_ms=CLIENT_TIMEOUT_MS,
        client_id="acceptance-kp-consumer",
    )
    cfg.update(extra)
    return KafkaConsumer(**cfg)


def kp_consume(
    bootstrap: str, topic: str, partitions: list[int], expected: int, timeout: float = 30.0, **extra
) -> dict[int, list[tuple]]:
    from kafka import TopicPartition

    consumer = kp_consumer(bootstrap, **extra)
    try:
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        out: dict[int, list[tuple]] = {p: [] for p in partitions}
        got = 0
        deadline = time.monotonic() + timeout
        while got < expected and time.monotonic() < deadline:
            for tp, recs in consumer.poll(timeout_ms=300, max_records=2000).items():
                for r in recs:
                    out[tp.partition].append(
                        (r.offset, r.key, r.value, normalize_headers(r.headers), r.timestamp)
                    )
                    got += 1
        # one more short poll: nothing beyond what was produced may show up
        for tp, recs in consumer.poll(timeout_ms=200).items():
            for r in recs:
                out[tp.partition].append(
                    (r.offset, r.key, r.value, normalize_headers(r.headers), r.timestamp)
                )
        return out
    finally:
        consumer.close()


# ------------------------------------------------------------------------------ confluent-kafka
def ck_produce(
    bootstrap: str, topic: str, messages: list[Msg], codec: str = "none", **extra
) -> list[tuple[int, int]]:
    from confluent_kafka import Producer

    cfg = {
        "bootstrap.servers": bootstrap,
        "compression.type": codec,
        "linger.ms": 5,
        "acks": "all",
        "retries": 0,
        "message.timeout.ms": 30000,
        "socket.timeout.ms": CLIENT_TIMEOUT_MS,
        "client.id": "acceptance-ck-producer",
    }
    cfg.update(extra)
    producer = Producer(cfg)
    results: list = [None] * len(messages)
    errors: list = []

    def make_cb(i):
        def cb(err, msg):
            if err is not None:
                errors.append((i, err))
            else:
                results[i] = (msg.partition(), msg.offset())

        return cb

    for i, m in enumerate(messages):
        while True:
            try:
                producer.produce(
                    topic,
                    value=m.value,
                    key=m.key,
                    partition=m.partition,
                    headers=list(m.headers),
                    timestamp=m.timestamp,
                    on_delivery=make_cb(i),
                )
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} records still undelivered after 30s"
    assert not errors, f"{len(errors)} delivery errors, first: {errors[0]}"
    assert all(r is not None for r in results)
    return results


def ck_consumer(bootstrap: str, **extra):
    from confluent_kafka import Consumer

    cfg = {
        "bootstrap.servers": bootstrap,
        "group.id": f"acceptance-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
        "socket.timeout.ms": CLIENT_TIMEOUT_MS,
        "client.id": "acceptance-ck-consumer",
    }
    # NB: isolation.level is left at librdkafka's default, read_committed, on purpose.
    cfg.update(extra)
    return Consumer(cfg)


def ck_consume(
    bootstrap: str, topic: str, partitions: list[int], expected: int, timeout: float = 30.0, **extra
) -> dict[int, list[tuple]]:
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    consumer = ck_consumer(bootstrap, **extra)
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        out: dict[int, list[tuple]] = {p: [] for p in partitions}
        got = 0
        deadline = time.monotonic() + timeout

        def take(msgs):
            nonlocal got
            for m in msgs:
                assert m.error() is None, f"consumer error: {m.error()}"
                out[m.partition()].append(
                    (m.offset(), m.key(), m.value(), normalize_headers(m.headers()), m.timestamp()[1])
                )
                got += 1

        while got < expected and time.monotonic() < deadline:
            take(consumer.consume(num_messages=2000, timeout=0.3))
        take(consumer.consume(num_messages=2000, timeout=0.2))
        return out
    finally:
        consumer.close()


# ------------------------------------------------------------------------------ aiokafka
async def aio_produce(
    bootstrap: str, topic: str, messages: list[Msg], codec: str = "none", **extra
) -> list[tuple[int, int]]:
    from aiokafka import AIOKafkaProducer

    cfg = dict(
        bootstrap_servers=bootstrap,
        compression_type=_codec(codec),
        linger_ms=5,
        acks="all",
        enable_idempotence=False,
        request_timeout_ms=CLIENT_TIMEOUT_MS,
        client_id="acceptance-aio-producer",
    )
    cfg.update(extra)
    producer = AIOKafkaProducer(**cfg)
    await producer.start()
    try:
        futures = []
        for m in messages:
            futures.append(
                await producer.send(
                    topic,
                    value=m.value,
                    key=m.key,
                    partition=m.partition,
                    timestamp_ms=m.timestamp,
                    headers=list(m.headers),
                )
            )
        await asyncio.wait_for(producer.flush(), 30)
        metas = await asyncio.wait_for(asyncio.gather(*futures), 30)
        return [(md.partition, md.offset) for md in metas]
    finally:
        await producer.stop()


def aio_consumer(bootstrap: str, **extra):
    from aiokafka import AIOKafkaConsumer

    cfg = dict(
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        request_timeout_ms=CLIENT_TIMEOUT_MS,
        client_id="acceptance-aio-consumer",
    )
    cfg.update(extra)
    return AIOKafkaConsumer(**cfg)


async def aio_consume(
    bootstrap: str, topic: str, partitions: list[int], expected: int, timeout: float = 30.0, **extra
) -> dict[int, list[tuple]]:
    from aiokafka import TopicPartition

    consumer = aio_consumer(bootstrap, **extra)
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        out: dict[int, list[tuple]] = {p: [] for p in partitions}
        got = 0
        deadline = time.monotonic() + timeout

        def take(batches):
            nonlocal got
            for tp, recs in batches.items():
                for r in recs:
                    out[tp.partition].append(
                        (r.offset, r.key, r.value, normalize_headers(r.headers), r.timestamp)
                    )
                    got += 1

        while got < expected and time.monotonic() < deadline:
            take(await consumer.getmany(timeout_ms=300, max_records=2000))
        take(await consumer.getmany(timeout_ms=200))
        return out
    finally:
        await consumer.stop()


def compare_partitions(consumed: dict[int, list[tuple]], expected: dict[int, list[tuple]]) -> None:
    """Exact per-partition comparison with a readable first difference."""
    assert sorted(consumed) == sorted(expected) or all(
        not consumed.get(p) for p in set(consumed) - set(expected)
    )
    for p in sorted(expected):
        got, want = consumed.get(p, []), expected[p]
        if got != want:
            first = next(
                (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                min(len(got), len(want)),
            )
            raise AssertionError(
                f"partition {p}: consumed {len(got)} records, expected {len(want)}; first difference at "
                f"index {first}: got {got[first] if first < len(got) else None!r}, "
                f"want {want[first] if first < len(want) else None!r}"
            )
