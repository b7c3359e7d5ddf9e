"""Checks the pipeline's outputs against its committed input.

The expected result is derived from `order-events` as a read_committed consumer sees it, with the
Python rules of pipelines/orders.py; then:
  Parquet      every committed valid order exactly once (by Kafka partition/offset), same fields
  dead letter  every committed invalid event exactly once, with the same reason
  totals       per customer, the last `customer-totals` record equals the sum and count of its
               valid orders; no (customer, batch id) twice (a replayed batch written again)
The first difference raises VerificationFailed naming it. Parquet is read with Spark, which
honours the file sink's commit log (files of a killed, uncommitted batch are not results)."""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from minibroker.pipelines.orders import Order, classify

READ_TIMEOUT = 120.0


class VerificationFailed(AssertionError):
    pass


@dataclass
class Expected:
    valid: dict[tuple[int, int], Order]
    rejected: dict[tuple[int, int], str]
    totals: dict[str, tuple[int, int]]  # customer -> (total cents, orders)
    committed_events: int


def read_topic(bootstrap: str, topic: str, kafka_options: dict | None = None) -> list[tuple[Any, ...]]:
    """Every record a read_committed consumer sees, as (partition, offset, key, value), up to the
    end of each partition (its last stable offset)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "minibroker-verifier",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            **(kafka_options or {}),
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return []
        partitions = sorted(metadata.partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        pending = set(partitions)
        out = []
        deadline = time.monotonic() + READ_TIMEOUT
        while pending:
            if time.monotonic() > deadline:
                raise VerificationFailed(
                    f"could not read {topic} to its end within {READ_TIMEOUT}s "
                    f"(partitions {sorted(pending)} not at their end)"
                )
            for m in consumer.consume(num_messages=5000, timeout=0.5):
                error = m.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(m.partition())
                        continue
                    raise VerificationFailed(f"reading {topic}: {error}")
                out.append((m.partition(), m.offset(), m.key(), m.value()))
        return out
    finally:
        consumer.close()


def expected_from(events) -> Expected:
    valid, rejected = {}, {}
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for partition, offset, _key, value in events:
        outcome = classify(value)
        if isinstance(outcome, Order):
            valid[(partition, offset)] = outcome
            totals[outcome.customer_id][0] += outcome.amount_cents
            totals[outcome.customer_id][1] += 1
        else:
            rejected[(partition, offset)] = outcome
    return Expected(valid, rejected, {c: (t[0], t[1]) for c, t in totals.items()}, len(events))


def _read_parquet(spark, path: str, columns: list[str]) -> list:
    if not os.path.isdir(os.path.join(path, "_spark_metadata")):
        return []
    return spark.read.parquet(path).select(*columns).collect()


def _first(items):
    return sorted(items)[0]


def check_orders(spark, output: str, expected: Expected) -> int:
    rows = _read_parquet(
        spark,
        output,
        [
            "kafka_partition",
            "kafka_offset",
            "order_id",
            "customer_id",
            "amount_cents",
            "currency",
            "ts",
            "day",
        ],
    )
    seen: dict[tuple[int, int], Any] = {}  # pyspark Rows
    for r in rows:
        pos = (r["kafka_partition"], r["kafka_offset"])
        if pos in seen:
            raise VerificationFailed(
                f"Parquet has order {r['order_id']} (partition {pos[0]} offset {pos[1]}) twice"
            )
        seen[pos] = r
    missing = expected.valid.keys() - seen.keys()
    if missing:
        pos = _first(missing)
        raise VerificationFailed(
            f"{len(missing)} committed valid orders missing from Parquet, first: "
            f"{expected.valid[pos].order_id} (partition {pos[0]} offset {pos[1]})"
        )
    extra = seen.keys() - expected.valid.keys()
    if extra:
        pos = _first(extra)
        raise VerificationFailed(
            f"{len(extra)} Parquet rows are not committed valid orders, first: "
            f"{seen[pos]['order_id']} (partition {pos[0]} offset {pos[1]})"
        )
    for pos in sorted(seen):
        r, o = seen[pos], expected.valid[pos]
        got = (r["order_id"], r["customer_id"], r["amount_cents"], r["currency"], r["ts"], str(r["day"]))
        want = (o.order_id, o.customer_id, o.amount_cents, o.currency, o.ts, o.day)
        if got != want:
            raise VerificationFailed(
                f"Parquet row at partition {pos[0]} offset {pos[1]} is {got}, expected {want}"
            )
    return len(rows)


def check_dead_letter(spark, dead_letter: str, expected: Expected) -> int:
    rows = _read_parquet(spark, dead_letter, ["kafka_partition", "kafka_offset", "reason"])
    seen: dict[tuple[int, int], str] = {}
    for r in rows:
        pos = (r["kafka_partition"], r["kafka_offset"])
        if pos in seen:
            raise VerificationFailed(f"dead letter has partition {pos[0]} offset {pos[1]} twice")
        seen[pos] = r["reason"]
    if seen != expected.rejected:
        missing = expected.rejected.keys() - seen.keys()
        extra = seen.keys() - expected.rejected.keys()
        if missing:
            pos = _first(missing)
            raise VerificationFailed(
                f"{len(missing)} rejected events missing from the dead letter, first: "
                f"partition {pos[0]} offset {pos[1]} ({expected.rejected[pos]})"
            )
        if extra:
            pos = _first(extra)
            raise VerificationFailed(
                f"{len(extra)} dead-letter rows are not rejected committed events, first: "
                f"partition {pos[0]} offset {pos[1]} ({seen[pos]})"
            )
        pos = _first(p for p in seen if seen[p] != expected.rejected[p])
        raise VerificationFailed(
            f"dead letter gives reason {seen[pos]!r} for partition {pos[0]} offset {pos[1]}, "
            f"expected {expected.rejected[pos]!r}"
        )
    return len(rows)


def check_totals(records, expected: Expected) -> int:
    last: dict[str, tuple[tuple[int, int], dict]] = {}
    batches: set[tuple[str, int]] = set()
    for partition, offset, key, value in records:
        doc = json.loads(value)
        customer = doc["customer_id"]
        if key is None or key.decode() != customer:
            raise VerificationFailed(
                f"customer-totals record at {partition}/{offset} has key {key!r} for {customer}"
            )
        if (customer, doc["batch_id"]) in batches:
            raise VerificationFailed(
                f"customer-totals has batch {doc['batch_id']} for {customer} twice "
                "(a replayed batch was written again)"
            )
        batches.add((customer, doc["batch_id"]))
        if customer not in last or last[customer][0] < (partition, offset):
            last[customer] = ((partition, offset), doc)
    for customer in sorted(expected.totals.keys() | last.keys()):
        want = expected.totals.get(customer)
        got = last.get(customer)
        got_pair = (got[1]["total_cents"], got[1]["orders"]) if got else None
        if got_pair != want:
            raise VerificationFailed(
                f"customer {customer}: customer-totals says (total_cents, orders) = "
                f"{got_pair}, expected {want}"
            )
    return len(expected.totals)


def verify(
    spark,
    bootstrap: str,
    output: str,
    dead_letter: str,
    input_topic: str = "order-events",
    totals_topic: str = "customer-totals",
    expect_committed: int | None = None,
    kafka_options: dict | None = None,
) -> dict:
    events = read_topic(bootstrap, input_topic, kafka_options)
    zombies = [k for _, _, k, _ in events if k is not None and k.startswith(b"zombie")]
    if zombies:
        raise VerificationFailed(f"a fenced producer's event is committed: {zombies[0]!r}")
    if expect_committed is not None and len(events) != expect_committed:
        raise VerificationFailed(
            f"{input_topic} has {len(events)} committed events, the generator committed {expect_committed}"
        )
    expected = expected_from(events)
    parquet_rows = check_orders(spark, output, expected)
    dead_letter_rows = check_dead_letter(spark, dead_letter, expected)
    totals_records = read_topic(bootstrap, totals_topic, kafka_options)
    customers = check_totals(totals_records, expected)
    return {
        "committed_events": expected.committed_events,
        "valid_orders": len(expected.valid),
        "rejected_events": len(expected.rejected),
        "parquet_rows": parquet_rows,
        "dead_letter_rows": dead_letter_rows,
        "customers_matched": customers,
        "totals_records": len(totals_records),
    }
