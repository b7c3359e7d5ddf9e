"""Spark for tests: one in-process SparkSession (local[2]) per pytest process, and the pipeline's
driver as a subprocess that can be SIGKILLed (python and its JVM together) and restarted."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.support.broker import REPO_ROOT


def spark_session():
    from pipelines.job import parse_args, session

    opts = parse_args(["--output", "-", "--dead-letter", "-", "--checkpoint", "-", "--shuffle-partitions", "2"])
    spark = session(opts, app_name="minibroker-tests")
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def pipeline_args(bootstrap: str, workdir: Path) -> list[str]:
    return ["--bootstrap-servers", bootstrap, "--output", str(workdir / "orders"),
            "--dead-letter", str(workdir / "dead-letter"), "--checkpoint", str(workdir / "checkpoint"),
            "--shuffle-partitions", "2"]


class DriverProcess:
    """`python -m pipelines job ...` in its own process group; its stdout lines are collected."""

    def __init__(self, args: list[str], log_path: Path):
        self.log_path = log_path
        self._log = open(log_path, "a")
        self._log.write(f"\n===== driver: {' '.join(args)}\n")
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        self.proc = subprocess.Popen([sys.executable, "-m", "pipelines", "job", *args], cwd=REPO_ROOT,
                                     stdout=subprocess.PIPE, stderr=self._log, text=True,
                                     start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.output.append(line)
            self._log.write(line)
            self._log.flush()
            self.lines.put(line)

    def wait_for_line(self, pattern: str, timeout: float) -> re.Match:
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (self.proc.poll() is not None and self.lines.empty()):
                raise AssertionError(f"driver printed no line matching {pattern!r} within {timeout}s "
                                     f"(exit code {self.proc.poll()}); see {self.log_path}")
            try:
                line = self.lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            m = rx.search(line)
            if m:
                return m

    def kill(self) -> None:
        """SIGKILL the driver and its JVM at once, as a crashed machine would."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)
        self._reader.join(10)

    def wait(self, timeout: float) -> int:
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"driver did not finish within {timeout}s; see {self.log_path}")
        self._reader.join(10)
        return rc

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        self._log.close()
