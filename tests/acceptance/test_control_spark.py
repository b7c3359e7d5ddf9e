"""A Spark Structured Streaming query survives a broker crash in the middle of a micro-batch
(docs/control-plane.md, recipe "A Spark query survives a broker crash mid-batch").

The order pipeline (pipelines/job.py: Spark's Kafka source read_committed, Parquet file sinks, and
per-customer totals written to Kafka by foreachBatch in one transaction per batch) runs as a
driver subprocess over committed input; the broker dies while a totals batch is being written and
comes back on the same data directory and port. The query finishes on its own and the output is
exact: every committed valid order once in Parquet, every rejected event once in the dead letter,
every totals batch once in Kafka (pipelines/verifier.py)."""

from __future__ import annotations

import re

import pytest

from tests.acceptance.test_spark_pipeline import check, generate
from tests.support.spark import Driver, pipeline_args, spark_session

pytestmark = pytest.mark.timeout(600)


def serves(broker, method: str, path: str) -> bool:
    return any(r["method"] == method and re.match(r["path"], path) for r in broker.control.routes())


def test_spark_query_survives_a_broker_crash_mid_batch(broker_factory, tmp_path):
    broker = broker_factory({"minibroker.control.port": 0})
    broker.extra_args = ["--port", str(broker.port)]  # back on the address the clients know
    report = generate(broker.bootstrap, 600, seed=24)
    args = pipeline_args(broker.bootstrap, tmp_path) + [
        "--available-now",
        "--max-offsets-per-trigger",
        "200",
    ]
    log = tmp_path / "driver.log"
    # TODO(issue 24, after the crash points are merged): the fallback below goes; the crash point
    # is the recipe's way. Until then the broker is SIGKILLed while a totals transaction is open.
    crash_point = serves(broker, "POST", "/v1/crash")
    if crash_point:
        # the next Produce append is the totals sink's first batch (the input is all written):
        # the broker dies after appending it, before answering
        broker.crash_at("produce.after_append")
    else:
        args += ["--pause-in-batch", "1"]
    driver = Driver(args, log)
    try:
        if crash_point:
            assert broker.wait_crashed(timeout=240) == -9
        else:
            driver.wait_for_line(r"totals batch \d+: transaction open", timeout=240)
            broker.kill()
        broker.restart()
        assert driver.wait(240) == 0, f"the query did not survive the crash; see {log}"
    finally:
        driver.close()
    assert any("totals batch" in line and "committed" in line for line in driver.output)
    check(spark_session(), broker.bootstrap, tmp_path, report.committed_events)
