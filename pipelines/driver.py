"""The Spark job (`python -m minibroker.pipelines job ...`) as a child process that can be crashed.

It runs in its own process group, so SIGKILL takes the python driver and its JVM at once, as a
crashed machine would. Its stdout lines are appended to a log file and handed to `on_line`
(from a reader thread); stderr (Spark's logging) goes to the log file only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path


class DriverProcess:
    def __init__(self, args: list[str], log_path: Path, on_line=lambda line: None, cwd: Path | None = None):
        self.output: list[str] = []
        self._log = open(log_path, "a")
        self._log.write(f"\n===== driver: {' '.join(args)}\n")
        self._log.flush()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "minibroker.pipelines", "job", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._reader = threading.Thread(target=self._read, args=(on_line,), daemon=True)
        self._reader.start()

    def _read(self, on_line) -> None:
        assert self.proc.stdout is not None  # started with stdout=PIPE
        for line in self.proc.stdout:
            self.output.append(line)
            self._log.write(line)
            self._log.flush()
            on_line(line.rstrip("\n"))

    def signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.proc.wait(30)
        self._reader.join(10)

    def wait(self, timeout: float) -> int:
        """The exit code; a driver still running after `timeout` is killed (TimeoutError)."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise TimeoutError(f"the spark driver did not finish within {timeout}s") from None
        self._reader.join(10)
        return rc

    def close(self) -> None:
        """Kill the driver if it still runs; close the log."""
        if self.proc.poll() is None:
            self.kill()
        self._log.close()
