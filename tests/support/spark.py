"""Spark for tests: one in-process SparkSession (local[2]) per pytest process, and the pipeline's
driver as a subprocess that can be SIGKILLed (python and its JVM together) and restarted."""

from __future__ import annotations

import queue
import re
import time
from pathlib import Path

from minibroker.pipelines.driver import DriverProcess

from tests.support.broker import REPO_ROOT


def spark_session():
    from minibroker.pipelines.job import parse_args, session

    opts = parse_args(
        ["--output", "-", "--dead-letter", "-", "--checkpoint", "-", "--shuffle-partitions", "2"]
    )
    spark = session(opts, app_name="minibroker-tests")
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def pipeline_args(bootstrap: str, workdir: Path) -> list[str]:
    return [
        "--bootstrap-servers",
        bootstrap,
        "--output",
        str(workdir / "orders"),
        "--dead-letter",
        str(workdir / "dead-letter"),
        "--checkpoint",
        str(workdir / "checkpoint"),
        "--shuffle-partitions",
        "2",
    ]


class Driver(DriverProcess):
    """The job subprocess, with a wait for a line of its output."""

    def __init__(self, args: list[str], log_path: Path):
        self.lines: queue.Queue[str] = queue.Queue()
        super().__init__(args, log_path, on_line=self.lines.put, cwd=REPO_ROOT)

    def wait_for_line(self, pattern: str, timeout: float) -> re.Match:
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (self.proc.poll() is not None and self.lines.empty()):
                raise AssertionError(
                    f"driver printed no line matching {pattern!r} within {timeout}s "
                    f"(exit code {self.proc.poll()})"
                )
            try:
                line = self.lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            m = rx.search(line)
            if m:
                return m
