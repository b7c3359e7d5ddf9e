"""The order pipeline (pipelines/) end to end on minibroker: generator, PySpark job, verifier.

Exactly once is checked by the verifier against the committed input: every committed valid order
once in Parquet, every rejected event once in the dead letter, per-customer totals equal to the
cent with no batch written twice."""

from __future__ import annotations

import pytest
from minibroker.pipelines.generator import GeneratorConfig, OrderGenerator
from minibroker.pipelines.job import parse_args, run
from minibroker.pipelines.verifier import verify

from tests.support.spark import Driver, pipeline_args, spark_session

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def spark():
    return spark_session()


def generate(bootstrap: str, orders: int, seed: int, **extra):
    config = GeneratorConfig(
        bootstrap=bootstrap,
        orders=orders,
        producers=3,
        txn_size=25,
        abort_ratio=0.2,
        malformed_ratio=0.05,
        customers=20,
        seed=seed,
        **extra,
    )
    report = OrderGenerator(config).run()
    assert report.committed_txns and report.aborted_txns and report.committed_malformed
    return report


def check(spark, bootstrap: str, workdir, expect_committed: int) -> dict:
    summary = verify(
        spark,
        bootstrap,
        str(workdir / "orders"),
        str(workdir / "dead-letter"),
        expect_committed=expect_committed,
    )
    assert summary["parquet_rows"] == summary["valid_orders"] > 0
    assert summary["dead_letter_rows"] == summary["rejected_events"] > 0
    return summary


def test_end_to_end_then_restart_from_checkpoint_with_new_data(spark, broker, tmp_path):
    first = generate(broker.bootstrap, 1200, seed=1)
    assert first.zombie_fenced, "the second producer instance did not fence the first"
    opts = parse_args(pipeline_args(broker.bootstrap, tmp_path) + ["--available-now"])
    run(spark, opts, log=lambda m: None)
    summary = check(spark, broker.bootstrap, tmp_path, first.committed_events)
    assert summary["committed_events"] == first.committed_events

    second = generate(broker.bootstrap, 600, seed=2, fence=False)
    run(spark, opts, log=lambda m: None)
    summary = check(spark, broker.bootstrap, tmp_path, first.committed_events + second.committed_events)
    assert summary["valid_orders"] == first.committed_valid + second.committed_valid


def test_driver_sigkill_mid_batch_then_restart(broker, tmp_path):
    """Kill the driver (python and JVM) twice: while a totals transaction is open, and after it
    committed but before Spark recorded the batch. The restarted driver fences the dead one's
    producer (its open transaction is aborted) and skips the replayed batch that did commit."""
    report = generate(broker.bootstrap, 1200, seed=3)
    args = pipeline_args(broker.bootstrap, tmp_path) + [
        "--max-offsets-per-trigger",
        "300",
        "--trigger-seconds",
        "0.2",
        "--pause-in-batch",
        "2",
    ]
    log = tmp_path / "driver.log"

    driver = Driver(args, log)
    try:
        driver.wait_for_line(r"totals batch [1-9]\d*: transaction open", timeout=120)
        driver.kill()
    finally:
        driver.close()

    driver = Driver(args, log)
    try:
        batch = int(driver.wait_for_line(r"totals batch (\d+): committed", timeout=120).group(1))
        driver.kill()
    finally:
        driver.close()

    driver = Driver(pipeline_args(broker.bootstrap, tmp_path) + ["--available-now"], log)
    try:
        assert driver.wait(180) == 0, f"restarted driver failed; see {log}"
    finally:
        driver.close()
    assert any(f"totals batch {batch}: already committed" in line for line in driver.output), (
        f"the replayed batch {batch} was not skipped:\n{''.join(driver.output)}"
    )
    # a clean run ends without Spark's listener bus calling back into a Python that has gone
    clean_run = log.read_text().rsplit("===== driver:", 1)[1]
    errors = [line for line in clean_run.splitlines() if " ERROR " in line or "Connection refused" in line]
    assert errors == [], "\n".join(errors[:20])

    from tests.support.spark import spark_session as session

    check(session(), broker.bootstrap, tmp_path, report.committed_events)


def test_spark_sql_rules_agree_with_the_python_rules(spark):
    """The job's Spark SQL validation gives the same outcome as pipelines.orders.classify."""
    from minibroker.pipelines.job import classified

    from tests.unit.test_pipeline_rules import CASES

    rows = [(None, event, 0, i, None) for i, (event, _) in enumerate(CASES)]
    df = spark.createDataFrame(
        rows, "key binary, value binary, partition int, offset long, timestamp timestamp"
    )
    got = {r["offset"]: r["reason"] for r in classified(df).collect()}
    assert got == {i: reason for i, (_, reason) in enumerate(CASES)}
