"""`make demo`: the whole pipeline on a fresh broker, with the Spark driver killed and restarted.

Starts minibroker on a free port with a temporary data directory; writes ~100k orders with the
generator while the Spark job runs as a streaming query (local[2]); SIGKILLs the driver (python and
its JVM) in the middle of a micro-batch - once with a totals transaction open, once after it
committed but before Spark recorded the batch - and restarts it from the checkpoint each time;
when the generator is done, stops the query, drains what is left with an availableNow run,
verifies, prints a summary. Every process it starts is stopped at the end."""

from __future__ import annotations

import argparse
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from minibroker.pipelines.driver import DriverProcess
from minibroker.pipelines.generator import GeneratorConfig, OrderGenerator

KILL_POINTS = (r"totals batch (\d+): transaction open", r"totals batch (\d+): committed")
IDLE_SECONDS = 30


def say(message: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {message}", flush=True)


class Broker:
    def __init__(self, workdir: Path):
        self.data_dir = workdir / "broker-data"
        port_file = workdir / "broker.port"
        self.log = open(workdir / "broker.log", "wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "minibroker",
                "--port",
                "0",
                "--data-dir",
                str(self.data_dir),
                "--port-file",
                str(port_file),
                "--log-level",
                "warning",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the broker did not start; see {workdir / 'broker.log'}")
            time.sleep(0.05)
        self.bootstrap = f"127.0.0.1:{int(port_file.read_text())}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def main(argv: list[str] | None = None) -> int:  # noqa: C901 - the demo script, step by step
    p = argparse.ArgumentParser(
        prog="python -m minibroker.pipelines demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--orders", type=int, default=100_000)
    p.add_argument("--rate", type=float, default=2000.0, help="generator events/s")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = p.parse_args(argv)

    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="minibroker-demo-"))
    say(f"work directory {workdir}")
    broker = driver = generator = None
    ok = False
    try:
        broker = Broker(workdir)
        say(f"broker ready at {broker.bootstrap}")
        job_args = [
            "--bootstrap-servers",
            broker.bootstrap,
            "--output",
            str(workdir / "orders"),
            "--dead-letter",
            str(workdir / "dead-letter"),
            "--checkpoint",
            str(workdir / "checkpoint"),
        ]
        streaming = job_args + [
            "--max-offsets-per-trigger",
            "6000",
            "--trigger-seconds",
            "1",
            "--pause-in-batch",
            "1",
        ]

        generator = OrderGenerator(
            GeneratorConfig(
                bootstrap=broker.bootstrap,
                orders=a.orders,
                rate=a.rate,
                txn_size=50,
                abort_ratio=0.1,
                malformed_ratio=0.02,
            )
        )
        gen_done = threading.Event()
        gen_error: list[BaseException] = []

        def run_generator():
            try:
                generator.run()
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                gen_error.append(exc)
            finally:
                gen_done.set()

        generator.ensure_topic()
        threading.Thread(target=run_generator, daemon=True).start()
        say(f"generator started: {a.orders} orders at {a.rate:.0f}/s, 3 transactional producers")

        lines: queue.Queue[str] = queue.Queue()
        last_batch = [-1]
        orders_rows = [0]  # rows the orders query has processed (replays after a kill count again)

        def on_line(line: str) -> None:
            m = re.match(r"totals batch (\d+)", line)
            if m:
                last_batch[0] = int(m.group(1))
            m = re.match(r"progress orders batch \d+: (\d+) rows", line)
            if m:
                orders_rows[0] += int(m.group(1))
            lines.put(line)

        kills = 0
        killed_batch = -1
        driver = DriverProcess(streaming, workdir / "driver.log", on_line)
        say("spark driver started (streaming, local[2])")
        next_report = time.monotonic()
        last_line_at = time.monotonic()
        # run until the generator is done and both kills happened; after the generator is done,
        # a driver that stays quiet for IDLE_SECONDS has nothing left to do
        done_since_restart = 0  # batches the current driver finished
        while not (
            gen_done.is_set()
            and (
                (kills == len(KILL_POINTS) and done_since_restart > 0)
                or time.monotonic() - last_line_at > IDLE_SECONDS
            )
        ):
            if gen_error:
                raise gen_error[0]
            if driver.proc.poll() is not None:
                raise RuntimeError(
                    f"the spark driver exited with {driver.proc.returncode}; see {workdir / 'driver.log'}"
                )
            try:
                line = lines.get(timeout=0.5)
                last_line_at = time.monotonic()
            except queue.Empty:
                line = ""
            if re.match(r"totals batch \d+: (committed|already committed)", line):
                done_since_restart += 1
            m = re.match(KILL_POINTS[kills], line) if kills < len(KILL_POINTS) else None
            if m and int(m.group(1)) >= 1 and int(m.group(1)) > killed_batch:
                killed_batch = int(m.group(1))
                what = (
                    "with its totals transaction open"
                    if kills == 0
                    else "after its Kafka commit, before Spark's"
                )
                say(f"SIGKILL spark driver in micro-batch {killed_batch} ({what})")
                driver.close()
                kills += 1
                driver = DriverProcess(streaming, workdir / "driver.log", on_line)
                done_since_restart = 0
                say(f"spark driver restarted from the checkpoint (kill {kills})")
            if time.monotonic() >= next_report:
                r = generator.report
                say(
                    f"generator: {r.committed_events:,} committed, {r.aborted_events:,} aborted events | "
                    f"spark: {orders_rows[0]:,} rows through the orders query, totals batch "
                    f"{last_batch[0]} | "
                    f"kills survived: {kills}"
                )
                next_report = time.monotonic() + 5
        if gen_error:
            raise gen_error[0]
        say("generator done; stopping the streaming query and draining the rest")
        driver.signal(signal.SIGTERM)
        driver.wait(120)
        driver.close()
        driver = DriverProcess(job_args + ["--available-now"], workdir / "driver.log", on_line)
        if driver.wait(600) != 0:
            raise RuntimeError(f"the draining run failed; see {workdir / 'driver.log'}")
        driver.close()
        driver = None

        say("verifying")
        from minibroker.pipelines.job import session
        from minibroker.pipelines.verifier import VerificationFailed, verify

        spark = session(app_name="minibroker-demo-verifier")
        spark.sparkContext.setLogLevel("ERROR")
        r = generator.report
        try:
            summary = verify(
                spark,
                broker.bootstrap,
                str(workdir / "orders"),
                str(workdir / "dead-letter"),
                expect_committed=r.committed_events,
            )
        except VerificationFailed as exc:
            say(f"MISMATCH: {exc}")
            return 1
        finally:
            spark.stop()
        wall = time.monotonic() - started
        print("\n==== minibroker demo summary ====")
        print(f"orders committed        {r.committed_events:>9,}  ({r.committed_txns} transactions)")
        print(f"orders aborted          {r.aborted_events:>9,}  ({r.aborted_txns} transactions)")
        print(
            f"zombie fenced           {'yes' if r.zombie_fenced else 'NO':>9}  ({r.fenced_events} events "
            f"refused, {r.fenced_error})"
        )
        print(
            f"rejected (dead letter)  {summary['dead_letter_rows']:>9,}  (expected "
            f"{summary['rejected_events']:,})"
        )
        print(
            f"rows in Parquet         {summary['parquet_rows']:>9,}  (expected {summary['valid_orders']:,})"
        )
        print(
            f"customer totals matched {summary['customers_matched']:>9,}  ({summary['totals_records']:,} "
            "records, no batch twice)"
        )
        print(f"driver kills survived   {kills:>9}")
        print(f"wall time               {wall:>8.0f}s")
        ok = True
        return 0
    finally:
        if generator is not None:
            generator.stop()
        if driver is not None:
            driver.close()
        if broker is not None:
            broker.stop()
        if ok and not a.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            say(f"kept {workdir}")


if __name__ == "__main__":
    sys.exit(main())
