"""Spark 4.2's own Kafka source and sink against minibroker (one local[2] SparkSession).

Transactions are written with confluent-kafka; Spark reads with read_committed and
failOnDataLoss=true as the pipeline does."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.clients import kp_consume
from tests.support.helpers import create_topic, unique_name, wait_until
from tests.support.spark import spark_session

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def spark():
    return spark_session()


def txn_producer(bootstrap: str) -> Producer:
    p = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": unique_name("spark-src"), "linger.ms": 5}
    )
    p.init_transactions(30)
    return p


def write_txn(
    producer: Producer,
    topic: str,
    values: list[str],
    commit: bool = True,
    partition: int | None = None,
    timestamps: list[int] | None = None,
) -> None:
    producer.begin_transaction()
    for i, v in enumerate(values):
        kw = {} if partition is None else {"partition": partition}
        if timestamps:
            kw["timestamp"] = timestamps[i]
        producer.produce(topic, key=v.encode(), value=v.encode(), **kw)
    producer.flush(30)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


def kafka_stream(spark, broker, topic: str, **options):
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("kafka.isolation.level", "read_committed")
        .option("failOnDataLoss", "true")
        .option("startingOffsets", "earliest")
    )
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load().selectExpr("CAST(value AS STRING) AS value", "partition", "offset")


def run_available_now(spark, df, workdir) -> list[str]:
    """One availableNow run into a Parquet file sink (restartable from its checkpoint, unlike the
    memory sink); returns every value the sink holds."""
    q = (
        df.writeStream.format("parquet")
        .option("path", str(workdir / "out"))
        .option("checkpointLocation", str(workdir / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        q.awaitTermination(120)
        assert not q.isActive, "availableNow query did not finish within 120 s"
        if q.exception() is not None:
            raise q.exception()
    finally:
        if q.isActive:
            q.stop()
    return [r.value for r in spark.read.parquet(str(workdir / "out")).collect()]


def test_aborted_transactions_and_markers_do_not_trip_fail_on_data_loss(spark, shared_broker, tmp_path):
    topic = unique_name("spark-aborts")
    create_topic(shared_broker, topic, partitions=3)
    producer = txn_producer(shared_broker.bootstrap)
    committed = []
    for t in range(12):
        values = [f"{t}-{i}" for i in range(20)]
        commit = t % 3 != 2  # the log ends in an aborted transaction and its markers
        write_txn(producer, topic, values, commit=commit)
        committed += values if commit else []
    values = run_available_now(spark, kafka_stream(spark, shared_broker, topic), tmp_path)
    assert sorted(values) == sorted(committed)


def test_topic_recreated_under_checkpoint_trips_fail_on_data_loss(spark, shared_broker, tmp_path):
    topic = unique_name("spark-recreated")
    create_topic(shared_broker, topic, partitions=1)
    producer = txn_producer(shared_broker.bootstrap)
    write_txn(producer, topic, [f"v{i}" for i in range(40)])
    assert len(run_available_now(spark, kafka_stream(spark, shared_broker, topic), tmp_path)) == 40

    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    admin.delete_topics([topic])[topic].result(30)
    wait_until(lambda: topic not in admin.list_topics(timeout=10).topics, 30, message=f"{topic} deleted")
    create_topic(shared_broker, topic, partitions=1)
    write_txn(txn_producer(shared_broker.bootstrap), topic, ["after-1", "after-2"])
    with pytest.raises(Exception, match=r"(?s)(data may have been (lost|missed)|some data may have been)"):
        run_available_now(spark, kafka_stream(spark, shared_broker, topic), tmp_path)


def test_delete_records_under_checkpoint_fails_or_skips_by_fail_on_data_loss(spark, shared_broker, tmp_path):
    """Records deleted past a query's checkpoint: failOnDataLoss=true stops the next micro-batch
    with Spark's data-loss error; the same checkpoint with false continues from the new log start."""
    topic = unique_name("spark-delrec")
    create_topic(shared_broker, topic, partitions=1)
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap})
    for i in range(40):
        producer.produce(topic, value=f"v{i}".encode(), partition=0)
    producer.flush(30)
    assert len(run_available_now(spark, kafka_stream(spark, shared_broker, topic), tmp_path)) == 40

    for i in range(40, 60):
        producer.produce(topic, value=f"v{i}".encode(), partition=0)
    producer.flush(30)
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    deleted = admin.delete_records([TopicPartition(topic, 0, 50)])
    assert next(iter(deleted.values())).result(30).low_watermark == 50

    with pytest.raises(Exception, match=r"(?s)(data may have been (lost|missed)|some data may have been)"):
        run_available_now(spark, kafka_stream(spark, shared_broker, topic), tmp_path)
    values = run_available_now(
        spark, kafka_stream(spark, shared_broker, topic, failOnDataLoss="false"), tmp_path
    )
    assert sorted(values, key=lambda v: int(v[1:])) == [f"v{i}" for i in range(40)] + [
        f"v{i}" for i in range(50, 60)
    ]


def test_open_transaction_holds_query_at_last_stable_offset(spark, shared_broker, tmp_path):
    topic = unique_name("spark-lso")
    create_topic(shared_broker, topic, partitions=1)
    first, second = txn_producer(shared_broker.bootstrap), txn_producer(shared_broker.bootstrap)
    write_txn(first, topic, [f"a{i}" for i in range(10)])
    second.begin_transaction()  # open, its records in the log
    for i in range(5):
        second.produce(topic, value=f"open{i}".encode())
    second.flush(30)
    write_txn(first, topic, [f"b{i}" for i in range(7)])  # committed, but above the LSO
    q = (
        kafka_stream(spark, shared_broker, topic)
        .writeStream.format("memory")
        .queryName("lso")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        q.processAllAvailable()
        assert sorted(r.value for r in spark.table("lso").collect()) == sorted(f"a{i}" for i in range(10))
        q.processAllAvailable()  # asks the source again: still held at the open transaction
        assert spark.table("lso").count() == 10
        second.commit_transaction(30)
        wait_until(lambda: spark.table("lso").count() == 22, 60, message="the next trigger after the commit")
        got = sorted(r.value for r in spark.table("lso").collect())
        assert got == sorted(
            [f"a{i}" for i in range(10)] + [f"open{i}" for i in range(5)] + [f"b{i}" for i in range(7)]
        )
        assert q.exception() is None
    finally:
        q.stop()


def test_starting_timestamp_and_starting_offsets_json(spark, shared_broker):
    topic = unique_name("spark-start")
    create_topic(shared_broker, topic, partitions=2)
    base = 1_700_000_000_000
    producer = txn_producer(shared_broker.bootstrap)
    for p in (0, 1):
        values = [f"p{p}-{i}" for i in range(10)]
        write_txn(producer, topic, values, partition=p, timestamps=[base + i * 1000 for i in range(10)])

    def batch(**options):
        reader = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", shared_broker.bootstrap)
            .option("subscribe", topic)
            .option("kafka.isolation.level", "read_committed")
            .option("failOnDataLoss", "true")
        )
        for k, v in options.items():
            reader = reader.option(k, v)
        return sorted(r.value for r in reader.load().selectExpr("CAST(value AS STRING) AS value").collect())

    assert batch(startingTimestamp=str(base + 6500)) == sorted(
        f"p{p}-{i}" for p in (0, 1) for i in range(7, 10)
    )
    assert batch(
        startingOffsets=f'{{"{topic}":{{"0":4,"1":-2}}}}', endingOffsets=f'{{"{topic}":{{"0":-1,"1":3}}}}'
    ) == sorted([f"p0-{i}" for i in range(4, 10)] + [f"p1-{i}" for i in range(3)])
    # streaming too: startingOffsets JSON, availableNow
    q = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", shared_broker.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", f'{{"{topic}":{{"0":8,"1":9}}}}')
        .load()
        .selectExpr("CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName("start_json")
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(120)
    assert sorted(r.value for r in spark.table("start_json").collect()) == ["p0-8", "p0-9", "p1-9"]


def test_spark_kafka_sink_writes(spark, shared_broker):
    topic = unique_name("spark-sink")
    create_topic(shared_broker, topic, partitions=3)
    df = spark.range(0, 500).selectExpr(
        "CAST(id AS STRING) AS key", "CONCAT('v', CAST(id AS STRING)) AS value"
    )
    (
        df.write.format("kafka")
        .option("kafka.bootstrap.servers", shared_broker.bootstrap)
        .option("topic", topic)
        .save()
    )
    got = kp_consume(shared_broker.bootstrap, topic, [0, 1, 2], expected=500)
    values = sorted(r[2].decode() for recs in got.values() for r in recs)
    assert values == sorted(f"v{i}" for i in range(500))
