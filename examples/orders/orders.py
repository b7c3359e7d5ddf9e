"""Application code under test: publish orders atomically, read back what was committed."""

from __future__ import annotations

import json
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def publish_orders(
    bootstrap_servers: str,
    topic: str,
    orders: list[dict],
    *,
    transactional_id: str,
    fail_after: int | None = None,
) -> None:
    """Send all orders in one transaction; with `fail_after`, abort after that many (a crash
    stand-in) so none of them become visible to read_committed consumers."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap_servers,
        transactional_id=transactional_id,
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for n, order in enumerate(orders):
            if fail_after is not None and n == fail_after:
                producer.flush()
                producer.abort_transaction()
                return
            # bytes in, bytes out (kafka-python 3 deprecates plain functions as serializers)
            producer.send(topic, key=order["id"].encode(), value=json.dumps(order).encode())
        producer.commit_transaction()
    finally:
        producer.close()


def committed_orders(
    bootstrap_servers: str, topic: str, *, expected: int, timeout_s: float = 15.0
) -> list[dict]:
    """Orders a read_committed consumer sees (waits for `expected` of them, then one more poll)."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap_servers,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        group_id=None,
        fetch_max_wait_ms=100,
    )
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or {0})]
        consumer.assign(partitions)
        seen: list[dict] = []
        deadline = time.monotonic() + timeout_s
        while len(seen) < expected and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                seen += [json.loads(r.value) for r in records]
        for records in consumer.poll(timeout_ms=300).values():  # nothing more may show up
            seen += [json.loads(r.value) for r in records]
        return seen
    finally:
        consumer.close()
