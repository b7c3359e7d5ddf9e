"""The order pipeline as a PySpark Structured Streaming application.

    spark-submit [--jars <connector jars> | --packages org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0] \
        pipelines/job.py --bootstrap-servers HOST:PORT --output DIR --dead-letter DIR --checkpoint DIR
    python -m minibroker.pipelines job ...          # the same, local[2] with the jars `make jvm` fetched

Three streaming queries read `order-events` with Spark's Kafka source (read_committed,
failOnDataLoss=true), each with its own checkpoint under --checkpoint:
  orders  valid orders -> Parquet partitioned by day (file sink: exactly once via its commit log)
  rejects invalid events with the reason -> dead-letter Parquet (file sink)
  totals  running per-customer totals (stateful aggregation) -> `customer-totals` through
          foreachBatch and a Kafka transaction per batch (pipelines/totals_sink.py)
"""

from __future__ import annotations

import argparse
import signal
import sys

from minibroker.pipelines import orders as rules
from minibroker.pipelines.totals_sink import TransactionalTotalsSink
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQueryListener
from pyspark.sql.types import LongType, StringType, StructField, StructType

EVENT_SCHEMA = StructType(
    [
        StructField("order_id", StringType()),
        StructField("customer_id", StringType()),
        StructField("amount_cents", LongType()),
        StructField("currency", StringType()),
        StructField("ts", LongType()),
        StructField("_corrupt", StringType()),
    ]
)

QUERY_NAMES = ("orders", "rejects", "totals")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m minibroker.pipelines job",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    p.add_argument("--input-topic", default="order-events")
    p.add_argument("--totals-topic", default="customer-totals")
    p.add_argument("--output", required=True, help="Parquet directory for valid orders")
    p.add_argument("--dead-letter", required=True, help="Parquet directory for rejected events")
    p.add_argument("--checkpoint", required=True, help="checkpoint root (one subdirectory per query)")
    p.add_argument(
        "--starting-offsets",
        default="earliest",
        help="earliest, latest or Spark's JSON form; used only by a new checkpoint",
    )
    p.add_argument("--max-offsets-per-trigger", type=int, default=None)
    p.add_argument("--trigger-seconds", type=float, default=1.0, help="processing-time trigger interval")
    p.add_argument(
        "--available-now",
        action="store_true",
        help="process what is committed now, then stop (instead of running until killed)",
    )
    p.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Kafka client property for every client, e.g. security.protocol=SSL",
    )
    p.add_argument(
        "--master", default=None, help="Spark master when not under spark-submit (default local[2])"
    )
    p.add_argument(
        "--shuffle-partitions",
        type=int,
        default=4,
        help="state partitions of the totals aggregation (fixed once checkpointed)",
    )
    p.add_argument(
        "--pause-in-batch",
        type=float,
        default=0.0,
        help="seconds to pause in each totals batch before and after its Kafka commit "
        "(widens the crash windows for tests and the demo)",
    )
    return p.parse_args(argv)


def kafka_options(opts) -> dict[str, str]:
    out = {}
    for item in opts.kafka_option:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--kafka-option {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


# ---------------------------------------------------------------------------- transformation
def rejection_reason(p: Column) -> Column:
    """The Spark SQL form of pipelines.orders.classify: null for a valid event."""
    return (
        F.when(p.isNull() | p["_corrupt"].isNotNull(), F.lit(rules.MALFORMED_JSON))
        .when(p["order_id"].isNull() | (p["order_id"] == ""), F.lit(rules.MISSING_ORDER_ID))
        .when(p["customer_id"].isNull() | (p["customer_id"] == ""), F.lit(rules.MISSING_CUSTOMER_ID))
        .when(p["amount_cents"].isNull(), F.lit(rules.BAD_AMOUNT))
        .when(p["amount_cents"] <= 0, F.lit(rules.NEGATIVE_AMOUNT))
        .when(
            p["currency"].isNull() | ~p["currency"].rlike(rules.CURRENCY.pattern), F.lit(rules.BAD_CURRENCY)
        )
        .when(p["ts"].isNull() | (p["ts"] < 0), F.lit(rules.BAD_TIMESTAMP))
    )


def classified(kafka_df: DataFrame) -> DataFrame:
    parsed = F.from_json(
        F.col("value").cast("string"),
        EVENT_SCHEMA,
        {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"},
    )
    return kafka_df.select("key", "value", "partition", "offset", "timestamp", parsed.alias("p")).withColumn(
        "reason", rejection_reason(F.col("p"))
    )


def valid_orders(events: DataFrame) -> DataFrame:
    return events.where(F.col("reason").isNull()).select(
        "p.order_id",
        "p.customer_id",
        "p.amount_cents",
        "p.currency",
        "p.ts",
        F.timestamp_millis("p.ts").alias("event_time"),
        F.date_format(F.timestamp_millis("p.ts"), "yyyy-MM-dd").alias("day"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
    )


def rejected_events(events: DataFrame) -> DataFrame:
    return events.where(F.col("reason").isNotNull()).select(
        F.col("key").cast("string").alias("key"),
        "value",
        "reason",
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    )


def customer_totals(valid: DataFrame) -> DataFrame:
    return valid.groupBy("customer_id").agg(
        F.sum("amount_cents").alias("total_cents"), F.count(F.lit(1)).alias("orders")
    )


# ---------------------------------------------------------------------------- queries
def read_orders(spark: SparkSession, opts) -> DataFrame:
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", opts.bootstrap_servers)
        .option("subscribe", opts.input_topic)
        .option("kafka.isolation.level", "read_committed")
        .option("failOnDataLoss", "true")
        .option("startingOffsets", opts.starting_offsets)
    )
    if opts.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", opts.max_offsets_per_trigger)
    for key, value in kafka_options(opts).items():
        reader = reader.option(f"kafka.{key}", value)
    return reader.load()


def start_queries(spark: SparkSession, opts, sink: TransactionalTotalsSink) -> list:
    """Start the three queries; returns them (StreamingQuery objects)."""

    def with_trigger(writer):
        if opts.available_now:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime=f"{int(opts.trigger_seconds * 1000)} milliseconds")

    checkpoint = opts.checkpoint.rstrip("/")
    events = classified(read_orders(spark, opts))
    orders_q = with_trigger(
        valid_orders(events)
        .writeStream.format("parquet")
        .partitionBy("day")
        .option("path", opts.output)
        .option("checkpointLocation", f"{checkpoint}/orders")
        .queryName("orders")
    ).start()
    events = classified(read_orders(spark, opts))
    rejects_q = with_trigger(
        rejected_events(events)
        .writeStream.format("parquet")
        .option("path", opts.dead_letter)
        .option("checkpointLocation", f"{checkpoint}/rejects")
        .queryName("rejects")
    ).start()
    events = classified(read_orders(spark, opts))
    totals_q = with_trigger(
        customer_totals(valid_orders(events))
        .writeStream.outputMode("update")
        .foreachBatch(sink)
        .option("checkpointLocation", f"{checkpoint}/totals")
        .queryName("totals")
    ).start()
    return [orders_q, rejects_q, totals_q]


def session(opts=None, app_name: str = "minibroker-orders") -> SparkSession:
    """The SparkSession: the one spark-submit configured, else local with the cached connector."""
    builder = SparkSession.builder.appName(app_name)
    already = SparkSession.getActiveSession()
    if already is None and not _under_spark_submit():
        from minibroker.pipelines.jars import spark_kafka_jars

        builder = (
            builder.master((opts and opts.master) or "local[2]")
            .config("spark.jars", ",".join(spark_kafka_jars()))
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
        )
    spark = builder.getOrCreate()
    spark.conf.set("spark.sql.shuffle.partitions", str(getattr(opts, "shuffle_partitions", 4)))
    spark.conf.set("spark.sql.session.timeZone", "UTC")  # the `day` partitions are UTC days
    return spark


def _under_spark_submit() -> bool:
    import os

    return "PYSPARK_GATEWAY_PORT" in os.environ


class ProgressPrinter(StreamingQueryListener):
    """One line per finished micro-batch: `progress <query> batch <id>: <rows> rows in <ms> ms`."""

    def __init__(self, log):
        self.log = log

    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        p = event.progress
        self.log(
            f"progress {p.name} batch {p.batchId}: {p.numInputRows} rows in "
            f"{p.durationMs.get('triggerExecution', 0)} ms"
        )

    def onQueryIdle(self, event):
        pass

    def onQueryTerminated(self, event):
        pass


def run(spark: SparkSession, opts, log=print) -> None:
    """Run until every query stops (available-now) or one fails; raises on failure."""
    sink = TransactionalTotalsSink(
        opts.bootstrap_servers,
        opts.totals_topic,
        kafka_options=kafka_options(opts),
        pause_in_batch=opts.pause_in_batch,
        log=log,
    )
    queries = start_queries(spark, opts, sink)
    try:
        if opts.available_now:
            for q in queries:
                q.awaitTermination()
        else:
            spark.streams.awaitAnyTermination()
            for q in queries:
                if q.exception() is not None:
                    raise q.exception()
    finally:
        for q in queries:
            if q.isActive:
                q.stop()
        sink.close()


def _stop_on_sigterm(signum, frame):
    raise SystemExit(0)  # unwinds run(), which stops the queries between batches' work


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    spark = session(opts)
    spark.sparkContext.setLogLevel("WARN")

    def log(message: str) -> None:
        print(message, flush=True)

    listener = ProgressPrinter(log)
    spark.streams.addListener(listener)

    try:
        run(spark, opts, log)
    except Exception as exc:  # noqa: BLE001 - a failed query ends the application with its reason
        print(f"pipeline failed: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        try:
            shutdown(spark, listener)
        except Exception as exc:  # noqa: BLE001 - a dead JVM must not hide the run's own outcome
            print(f"spark shutdown: {exc}", file=sys.stderr, flush=True)
    return 0


def shutdown(spark: SparkSession, listener: StreamingQueryListener | None = None) -> None:
    """Stop in the order that keeps the JVM from calling back into a Python that has gone: every
    query, then the Python listener, then the session, all while the py4j callback server still
    runs. Left to the interpreter's exit, the JVM's listener bus delivered the last events to a
    closed callback server and logged `ERROR StreamingQueryListenerBus ... Connection refused`."""
    for query in spark.streams.active:
        query.stop()
    if listener is not None:
        spark.streams.removeListener(listener)
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
