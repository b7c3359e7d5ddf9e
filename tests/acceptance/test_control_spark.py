"""A Spark Structured Streaming query survives a broker crash in the middle of its micro-batches
(docs/control-plane.md, recipe "A Spark query survives a broker crash mid-batch").

The query reads a topic with Spark's Kafka source (read_committed, failOnDataLoss=true) and writes
every record to another topic with Spark's Kafka sink, whose producer is idempotent (kafka-clients'
default): a write the broker appended but never acknowledged is retried with the same sequence
number after the restart and recognised as a duplicate. The broker dies while the batches are
being written and comes back on the same data directory and port; the query finishes on its own
and the output topic holds every input record exactly once.

The order pipeline's transactional totals sink (pipelines/totals_sink.py, librdkafka) is not the
subject here: after a broker restart its send_offsets_to_transaction (no timeout) never sent the
TxnOffsetCommit and waited forever, which matches confluentinc/librdkafka#5511 (a group
coordinator cached before the crash)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support.helpers import create_topic, unique_name, wait_until
from tests.support.spark import spark_session

pytestmark = pytest.mark.timeout(420)

RECORDS = 3000
PER_BATCH = 100  # maxOffsetsPerTrigger: about 30 micro-batches


def written(bootstrap: str, topic: str) -> int:
    """The output topic's high watermark (what the sink has written so far)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("hwm")})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


def read_all(bootstrap: str, topic: str, count: int) -> list[str]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique_name("check"),
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out: list[str] = []
        while True:
            msg = c.poll(10)
            assert msg is not None, f"nothing for 10 s after {len(out)} of {count} records"
            if msg.error():  # the end of the partition
                return out
            out.append(msg.value().decode())
    finally:
        c.close()


def test_spark_query_survives_a_broker_crash_mid_batch(broker_factory, tmp_path):
    broker = broker_factory({"minibroker.control.port": 0})
    broker.extra_args = ["--port", str(broker.port)]  # back on the address the Spark clients know
    source, sink = unique_name("spark-in"), unique_name("spark-out")
    create_topic(broker, source, partitions=1)
    create_topic(broker, sink, partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(RECORDS):
        producer.produce(source, value=f"r-{i}")
    assert producer.flush(30) == 0

    spark = spark_session()
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", source)
        .option("kafka.isolation.level", "read_committed")
        .option("failOnDataLoss", "true")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", PER_BATCH)
        .load()
        .selectExpr("value")
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        started = wait_until(lambda: written(broker.bootstrap, sink), 120, message="a first batch written")
        # the sink's next append: the broker dies after writing it, before answering
        broker.crash_at("produce.after_append", key=f"{sink}-0")
        assert broker.wait_crashed(timeout=120) == -9
        assert started < RECORDS, "the query had written everything before the crash"
        broker.restart()
        query.awaitTermination(240)
        assert not query.isActive, "the query did not finish within 240 s of the restart"
        assert query.exception() is None, query.exception()
    finally:
        if query.isActive:
            query.stop()
    out = read_all(broker.bootstrap, sink, RECORDS)
    assert len(out) == len(set(out)), f"{len(out) - len(set(out))} records written twice"
    assert sorted(out) == sorted(f"r-{i}" for i in range(RECORDS))
