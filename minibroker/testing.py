"""Start a real minibroker for a test, from any framework.

    with minibroker.testing.broker() as b:            # test profile, temporary data dir
        producer = KafkaProducer(bootstrap_servers=b.bootstrap_servers)

    async with minibroker.testing.async_broker(num_partitions=3) as b:
        ...

    with minibroker.testing.broker(telemetry=True) as b:   # clients push KIP-714 metrics
        ...  # run a producer with a client.id, then:
        pushed = b.wait_for_client_metrics("my-producer", "org.apache.kafka.producer.record.send")

The broker runs as a subprocess started exactly as a user would start it (`python -m minibroker
--port 0 --port-file ...`): the port file appears, written atomically, once the broker is ready,
so there is no port race and no polling of the socket. Keyword arguments are Kafka property
names with dots written as underscores (`num_partitions=3` is `num.partitions=3`); a dict of
dotted names works too. If the broker does not start, BrokerStartError carries its log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, Any

from minibroker.control.client import ControlClient, ControlParts

START_TIMEOUT = 30.0  # generous: a loaded CI runner may take seconds to import Python packages
STOP_TIMEOUT = 15.0

#: Where the broker's stdout+stderr go, inside its data directory.
LOG_NAME = "broker-output.log"
PORT_FILE_NAME = "broker.port"


#: What the broker's exit codes mean (`minibroker --help`).
EXIT_CODES = {0: "stopped cleanly", 1: "cannot start or cannot go on", 2: "bad configuration"}


class BrokerStartError(AssertionError):
    """The broker exited or never became ready. The message leads with the broker's own error
    line (`invalid configuration: ...`, `cannot start: ...`) and ends with its log tail."""


def broker_problems(log_text: str) -> list[str]:
    """The broker's error lines in `log_text` as `event: problem`, from JSON or console logs."""
    found = []
    for line in log_text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or entry.get("level") not in ("error", "critical"):
                continue
            details = [str(entry[k]) for k in ("problem", "reason", "error") if entry.get(k)]
            found.append(": ".join([str(entry.get("event", "error")), *details]))
        elif (m := _CONSOLE_ERROR.search(line)) is not None:
            event, rest = m.group(1).strip(), m.group(2).strip()
            problem = _CONSOLE_PROBLEM.search(rest)
            if problem is not None:
                found.append(f"{event}: {next(g for g in problem.groups() if g is not None)}")
            else:
                found.append(f"{event} {rest}".strip())
    return found


_CONSOLE_ERROR = re.compile(r"\[(?:error|critical)\s*\]\s+(\S.*?)(?:\s{2,}|$)(.*)")
_CONSOLE_PROBLEM = re.compile(r"""\bproblem=(?:"(.*?)"|'(.*?)'|(\S+))""")


def properties(config: dict[str, object] | None = None, **kwargs: object) -> dict[str, object]:
    """Merge a dict of dotted property names with keyword arguments (underscores for dots)."""
    merged: dict[str, object] = dict(config or {})
    merged.update({key.replace("_", "."): value for key, value in kwargs.items()})
    return merged


class BrokerProcess(ControlParts):
    """One broker process bound to one data directory; may be stopped, killed and restarted on
    that directory (tests of recovery do exactly that)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        overrides: dict[str, object] | None = None,
        *,
        host: str = "127.0.0.1",
        profile: str = "default",
        log_level: str = "info",
        log_format: str = "json",
        extra_args: list[str] | None = None,
    ):
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.overrides: dict[str, object] = dict(overrides or {})
        self.host = host
        self.profile = profile
        self.log_level = log_level
        self.log_format = log_format
        self.extra_args = list(extra_args or [])
        self.port: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.data_dir / LOG_NAME
        # Outside the data directory, and this object's own: a second broker started on a directory
        # that is in use (refused by the data-dir lock) must not delete the running one's port file.
        self.port_file = Path(tempfile.gettempdir()) / f"minibroker-{uuid.uuid4().hex}.{PORT_FILE_NAME}"
        self.starts = 0
        self._start_offset = 0  # the log offset of the latest start
        self._metrics_port: int | None = None
        self._control_port: int | None = None
        self._control: ControlClient | None = None
        self._log_handle: IO[bytes] | None = None

    # ------------------------------------------------------------------ addresses
    @property
    def bootstrap_servers(self) -> str:
        """`host:port`, what every Kafka client's bootstrap setting takes."""
        if self.port is None:
            raise RuntimeError("broker not started")
        return f"{self.host}:{self.port}"

    bootstrap = bootstrap_servers

    @property
    def address(self) -> tuple[str, int]:
        if self.port is None:
            raise RuntimeError("broker not started")
        return self.host, self.port

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "minibroker",
            "--host",
            self.host,
            "--port",
            "0",
            "--data-dir",
            str(self.data_dir),
            "--port-file",
            str(self.port_file),
            "--profile",
            self.profile,
            "--log-level",
            self.log_level,
            "--log-format",
            self.log_format,
        ]
        for key, value in self.overrides.items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            cmd += ["--set", f"{key}={value}"]
        return cmd + self.extra_args

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout: float = START_TIMEOUT) -> BrokerProcess:
        """Start and wait until the broker is ready (its port file exists)."""
        if self.running:
            raise RuntimeError("broker already running")
        if self.port_file.exists():
            self.port_file.unlink()
        self._close_log()
        start_offset = self._start_offset = self.log_size()
        self._metrics_port = None
        self._control_port = None
        log_handle = self._log_handle = open(self.log_path, "ab")
        log_handle.write(
            f"\n===== minibroker.testing: start #{self.starts + 1}: {' '.join(self.command())}\n".encode()
        )
        log_handle.flush()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            self.command(),
            stdout=self._log_handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
        self.starts += 1
        deadline = time.monotonic() + timeout
        while (text := self._read_port_file()) is None:
            rc = self.proc.poll()
            if rc is not None:
                self._close_log()
                raise BrokerStartError(self._start_failure(f"exited with code {rc}", rc, start_offset))
            if time.monotonic() > deadline:
                self._terminate_hard()
                raise BrokerStartError(
                    self._start_failure(f"did not become ready within {timeout}s", None, start_offset)
                )
            time.sleep(0.01)
        if not re.fullmatch(r"\d+\n", text):
            raise BrokerStartError(f"port file content {text!r} is not digits and a newline")
        self.port = int(text)
        return self

    def _start_failure(self, what: str, rc: int | None, since: int) -> str:
        """The broker's own error first, then what happened, then the log tail."""
        problems = broker_problems(self.log_since(since))
        meaning = f" ({EXIT_CODES[rc]})" if rc in EXIT_CODES else ""
        lead = f"minibroker did not start: {problems[-1]}\n" if problems else ""
        return f"{lead}the broker {what}{meaning} during startup\n{self.log_tail()}"

    def _read_port_file(self) -> str | None:
        try:
            return self.port_file.read_text()  # written atomically: complete when present
        except FileNotFoundError:
            return None

    def stop(self, timeout: float = STOP_TIMEOUT, sig: int = signal.SIGTERM) -> int:
        """Clean stop via SIGTERM (or SIGINT); raises unless the broker exits 0 in time."""
        if self.proc is None:
            raise RuntimeError("broker never started")
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._terminate_hard()
                raise AssertionError(
                    f"broker did not exit within {timeout}s of {signal.Signals(sig).name}\n{self.log_tail()}"
                ) from None
        rc = self.proc.returncode
        self._close_log()
        if rc != 0:
            raise AssertionError(
                f"broker exit code {rc} after {signal.Signals(sig).name} (expected 0)\n{self.log_tail()}"
            )
        return rc

    def kill(self) -> None:
        """SIGKILL: no chance to flush or write a clean-shutdown marker (simulates a crash)."""
        if self.proc is None:
            raise RuntimeError("broker never started")
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(STOP_TIMEOUT)
        self._close_log()

    def restart(self, *, kill: bool = False, overrides: dict[str, object] | None = None) -> BrokerProcess:
        """Stop (or kill) and start again on the same data directory; the port may change."""
        if kill:
            self.kill()
        elif self.running:
            self.stop()
        if overrides:
            self.overrides.update(overrides)
        return self.start()

    def cleanup(self) -> int | None:
        """Teardown that never raises: SIGTERM a running broker and return its exit code (None
        if it was not running; -9 if it had to be killed)."""
        rc = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self._terminate_hard()
                rc = -9
        self._close_log()
        self.port_file.unlink(missing_ok=True)
        return rc

    def _terminate_hard(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)

    def _close_log(self) -> None:
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None

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
                raise AssertionError(
                    f"no broker log line matching {pattern!r} within {timeout}s\n{self.log_tail()}"
                )
            time.sleep(0.05)

    # ------------------------------------------------------------------ the control plane
    @property
    def control_port(self) -> int:
        """The control plane's HTTP port (the broker needs `minibroker.control.port`, 0 for any)."""
        if self._control_port is None:
            if self.overrides.get("minibroker.control.port") is None:
                raise RuntimeError("the control plane is off: start the broker with control=True")
            line = self.wait_for_log(r"control endpoint ready", since=self._start_offset)
            found = re.search(r'"port": (\d+)|port=(\d+)', line)
            if found is None:
                raise AssertionError(f"no port in the control endpoint's log line: {line}")
            self._control_port = int(found.group(1) or found.group(2))
        return self._control_port

    @property
    def control(self) -> ControlClient:
        """The control plane's client (docs/control-plane.md); follows the broker's restarts."""
        port = self.control_port
        if self._control is None or self._control.base != f"http://{self.host}:{port}":
            token = self.overrides.get("minibroker.control.token")
            self._control = ControlClient(f"{self.host}:{port}", str(token) if token else None)
        return self._control

    def wait_crashed(self, timeout: float = 30.0) -> int:
        """Wait until the broker process has died (a crash point reached); its exit code."""
        if self.proc is None:
            raise RuntimeError("broker never started")
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"broker still running {timeout}s later: no armed crash point was reached\n{self.log_tail()}"
            ) from None
        self._close_log()
        return rc

    # ------------------------------------------------------------------ client telemetry (KIP-714)
    @property
    def metrics_port(self) -> int:
        """The metrics endpoint's port (the broker needs `minibroker.metrics.port`, 0 for any)."""
        if self._metrics_port is None:
            line = self.wait_for_log(r"metrics endpoint ready", since=self._start_offset)
            found = re.search(r'"port": (\d+)|port=(\d+)', line)
            if found is None:
                raise AssertionError(f"no port in the metrics endpoint's log line: {line}")
            self._metrics_port = int(found.group(1) or found.group(2))
        return self._metrics_port

    def client_telemetry(self) -> list[dict[str, Any]]:
        """Every live client instance the broker knows through KIP-714 (GetTelemetrySubscriptions,
        PushTelemetry) with what it pushed (each metric's latest point; delta counters added up):
        `client_id`, `client_instance_id`, `client_software_name`/`_version`, `pushes`, and
        `metrics`, a list of
        {"name", "value", "attributes", "kind", "monotonic"} (one per data point). Start the broker
        with `telemetry=True` so that clients push."""
        import urllib.request

        url = f"http://{self.host}:{self.metrics_port}/telemetry"
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - our loopback endpoint
            return list(json.loads(response.read()))

    def client_metrics(
        self, client_id: str | None = None, instance_id: str | None = None
    ) -> dict[str, float]:
        """The pushed value of each metric of the client (by client id or instance id; a counter
        is its running total): {metric name: value}; a metric with several data points (per
        topic, per node...) gives their sum."""
        out: dict[str, float] = {}
        for inst in self.client_telemetry():
            if (client_id is None or inst.get("client_id") == client_id) and (
                instance_id is None or inst["client_instance_id"] == instance_id
            ):
                for point in inst["metrics"]:
                    out[point["name"]] = out.get(point["name"], 0.0) + point["value"]
        return out

    def wait_for_client_metrics(
        self,
        client_id: str | None,
        prefix: str = "",
        *,
        instance_id: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, float]:
        """`client_metrics` once the client has pushed a metric whose name starts with `prefix`."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.client_metrics(client_id, instance_id)
            if any(name.startswith(prefix) for name in found):
                return found
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"client {client_id or instance_id!r} pushed no metric starting with {prefix!r} within "
                    f"{timeout}s; it pushed: {sorted(found)}; the broker knows the clients "
                    f"{[(i.get('client_id'), i['client_instance_id']) for i in self.client_telemetry()]}"
                )
            time.sleep(0.1)

    def __repr__(self) -> str:
        return f"BrokerProcess({self.data_dir}, port={self.port}, running={self.running})"


@contextlib.contextmanager
def broker(
    config: dict[str, object] | None = None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    profile: str = "test",
    log_level: str = "info",
    start_timeout: float = START_TIMEOUT,
    telemetry: bool = False,
    control: bool = False,
    clock: str | None = None,
    **props: object,
) -> Iterator[BrokerProcess]:
    """A running broker for the duration of the `with` block, then a clean SIGTERM stop.

    `control=True`: the test control plane is on (any port): `b.faults`, `b.crash_at`,
    `b.clock`, `b.state` (docs/control-plane.md). `clock="manual"` (or "offset") gives the broker a
    clock that moves only when `b.clock.advance(seconds)` says so (and turns the control plane on).

    `telemetry=True`: ApiVersions lists the KIP-714 APIs, so clients push their metrics, and the
    metrics endpoint is on (any port), so `client_metrics()` can read them back.

    Without `data_dir` the data lives in a temporary directory removed afterwards. Raises
    BrokerStartError (with the broker's log) if it does not start, AssertionError if it does not
    stop cleanly.
    """
    owned = data_dir is None
    path = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="minibroker-"))
    merged = properties(config, **props)
    if telemetry:
        merged.setdefault("minibroker.telemetry.advertise", True)
        merged.setdefault("minibroker.metrics.port", 0)
    if control or clock not in (None, "system"):
        merged.setdefault("minibroker.control.port", 0)
    if clock is not None:
        merged["minibroker.control.clock"] = clock
    proc = BrokerProcess(path, merged, profile=profile, log_level=log_level)
    try:
        proc.start(start_timeout)
        yield proc
        if proc.running:  # the body may have stopped or killed it on purpose
            proc.stop()
    finally:
        proc.cleanup()
        if owned:
            shutil.rmtree(path, ignore_errors=True)


@contextlib.asynccontextmanager
async def async_broker(
    config: dict[str, object] | None = None, **kwargs: Any
) -> AsyncIterator[BrokerProcess]:
    """`broker()` for asyncio code: start and stop run in a worker thread so the event loop
    (and the test's own clients on it) keep running meanwhile."""
    manager = broker(config, **kwargs)
    proc = await asyncio.to_thread(manager.__enter__)
    try:
        yield proc
    except BaseException:
        if not await asyncio.to_thread(manager.__exit__, *sys.exc_info()):
            raise
    else:
        await asyncio.to_thread(manager.__exit__, None, None, None)
