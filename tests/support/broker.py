"""A minibroker subprocess for tests: start on a free port, stop, kill, restart on the same data.

The broker is started exactly the way a user would start it (`python -m broker ...`), on
127.0.0.1 with `--port 0 --port-file`, so tests exercise the real CLI contract.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

START_TIMEOUT = 10.0
STOP_TIMEOUT = 15.0

#: Where the broker's stdout+stderr go, inside its data directory.
LOG_NAME = "broker-test-output.log"
PORT_FILE_NAME = "broker-test.port"


class BrokerStartError(AssertionError):
    pass


class BrokerProcess:
    """One broker process bound to one data directory; may be restarted on that directory."""

    def __init__(
        self,
        data_dir: str | os.PathLike,
        overrides: dict[str, object] | None = None,
        *,
        host: str = "127.0.0.1",
        log_level: str = "info",
        log_format: str = "json",
        extra_args: list[str] | None = None,
    ):
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.overrides: dict[str, object] = dict(overrides or {})
        self.host = host
        self.log_level = log_level
        self.log_format = log_format
        self.extra_args = list(extra_args or [])
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir / LOG_NAME
        self.port_file = self.data_dir / PORT_FILE_NAME
        self.starts = 0
        self._log_handle = None

    # ------------------------------------------------------------------ properties
    @property
    def bootstrap(self) -> str:
        assert self.port is not None, "broker not started"
        return f"{self.host}:{self.port}"

    @property
    def address(self) -> tuple[str, int]:
        assert self.port is not None, "broker not started"
        return self.host, self.port

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        cmd = [
            sys.executable, "-m", "broker",
            "--host", self.host,
            "--port", "0",
            "--data-dir", str(self.data_dir),
            "--port-file", str(self.port_file),
            "--log-level", self.log_level,
            "--log-format", self.log_format,
        ]
        for key, value in self.overrides.items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            cmd += ["--set", f"{key}={value}"]
        return cmd + self.extra_args

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout: float = START_TIMEOUT) -> "BrokerProcess":
        assert not self.running, "broker already running"
        if self.port_file.exists():
            self.port_file.unlink()
        self._close_log()
        self._log_handle = open(self.log_path, "ab")
        self._log_handle.write(f"\n===== test harness: start #{self.starts + 1}: {' '.join(self.command())}\n".encode())
        self._log_handle.flush()
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            self.command(),
            cwd=str(REPO_ROOT),
            stdout=self._log_handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
        self.starts += 1
        deadline = time.monotonic() + timeout
        while True:
            rc = self.proc.poll()
            if rc is not None:
                raise BrokerStartError(
                    f"broker exited with code {rc} during startup\n{self.log_tail()}"
                )
            text = self._read_port_file()
            if text is not None:
                break
            if time.monotonic() > deadline:
                self._terminate_hard()
                raise BrokerStartError(
                    f"broker did not write its port file within {timeout}s\n{self.log_tail()}"
                )
            time.sleep(0.02)
        assert re.fullmatch(r"\d+\n", text), f"port file content {text!r} is not digits + newline"
        self.port = int(text)
        assert 0 < self.port < 65536
        return self

    def _read_port_file(self) -> str | None:
        try:
            text = self.port_file.read_text()
        except FileNotFoundError:
            return None
        # the file is written atomically (temp + rename): content is complete when present
        return text

    def stop(self, timeout: float = STOP_TIMEOUT, sig: int = signal.SIGTERM) -> int:
        """Clean stop via SIGTERM (or SIGINT); asserts exit code 0."""
        assert self.proc is not None, "broker never started"
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._terminate_hard()
                raise AssertionError(
                    f"broker did not exit within {timeout}s of {signal.Signals(sig).name}\n{self.log_tail()}"
                )
        rc = self.proc.returncode
        self._close_log()
        assert rc == 0, f"broker exit code {rc} after {signal.Signals(sig).name} (expected 0)\n{self.log_tail()}"
        return rc

    def kill(self) -> None:
        """SIGKILL: no chance to flush or write a clean-shutdown marker."""
        assert self.proc is not None, "broker never started"
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(STOP_TIMEOUT)
        self._close_log()

    def restart(self, *, kill: bool = False, overrides: dict[str, object] | None = None) -> "BrokerProcess":
        if kill:
            self.kill()
        elif self.running:
            self.stop()
        if overrides:
            self.overrides.update(overrides)
        return self.start()

    def _terminate_hard(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def _close_log(self) -> None:
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None

    def cleanup(self) -> int | None:
        """Teardown for fixtures: SIGTERM a running broker and return its exit code (None if it
        was not running; -9 if it had to be killed). Does not assert."""
        rc = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self._terminate_hard()
                rc = -9
        self._close_log()
        return rc

    # ------------------------------------------------------------------ logs
    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except FileNotFoundError:
            return 0

    def log_since(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        text = self.log_text().splitlines()[-lines:]
        return f"----- broker log tail ({self.log_path}) -----\n" + "\n".join(text)

    def wait_for_log(self, pattern: str, since: int = 0, timeout: float = 5.0) -> str:
        """Wait until a line matching regex `pattern` appears after byte offset `since`."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            for line in self.log_since(since).splitlines():
                if rx.search(line):
                    return line
            if time.monotonic() > deadline:
                raise AssertionError(f"no broker log line matching {pattern!r} within {timeout}s\n{self.log_tail()}")
            time.sleep(0.05)

    def __repr__(self) -> str:
        return f"BrokerProcess({self.data_dir}, port={self.port}, running={self.running})"


class BrokerFactory:
    """Starts brokers for one test (or module) and tears all of them down."""

    def __init__(self, base_dir):
        self.base_dir = base_dir
        self.brokers: list[BrokerProcess] = []

    def __call__(self, overrides: dict | None = None, *, data_dir=None, start: bool = True, **kw) -> BrokerProcess:
        if data_dir is None:
            data_dir = self.base_dir / f"data{len(self.brokers)}"
        b = BrokerProcess(data_dir, overrides, **kw)
        self.brokers.append(b)
        if start:
            b.start()
        return b

    def teardown(self, dump_logs: bool) -> None:
        """Stop every broker; if the test passed, a broker that does not exit 0 on SIGTERM
        makes the teardown fail (a clean stop is part of the contract)."""
        bad = []
        for b in self.brokers:
            rc = b.cleanup()
            if rc not in (None, 0):
                bad.append((b, rc))
            if dump_logs or rc not in (None, 0):
                print(b.log_tail(80), file=sys.stderr)
        if bad and not dump_logs:
            raise AssertionError("broker did not stop cleanly on SIGTERM: "
                                 + ", ".join(f"{b.data_dir} exit {rc}" for b, rc in bad))
