"""The brokers under test: one fresh process per run, timed from launch to the first Metadata
answer that lists a broker, plus what /proc says about the process (CPU seconds, RSS, threads).

minibroker runs as `python -m minibroker`; Apache Kafka through conformance/reference_kafka.py (the
same launcher the conformance suite uses). Both get the configuration in SHARED_CONFIG."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from conformance.ports import free_low_port

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")

#: the same on both brokers, as in the conformance suite (Kafka's defaults are 50 partitions)
SHARED_CONFIG = {
    "offsets.topic.num.partitions": 1,
    "transaction.state.log.num.partitions": 1,
    "group.initial.rebalance.delay.ms": 0,
}

# Metadata v1 for no topics: the smallest request both brokers answer with their broker list.
_METADATA_V1 = struct.pack(">hhih", 3, 1, 1, 5) + b"bench" + struct.pack(">i", 0)
_METADATA_FRAME = struct.pack(">i", len(_METADATA_V1)) + _METADATA_V1


def metadata_answered(address: tuple[str, int]) -> bool:
    """One Metadata round trip; True when the answer lists at least one broker."""
    try:
        with socket.create_connection(address, timeout=2) as s:
            s.sendall(_METADATA_FRAME)
            head = recv_exactly(s, 4)
            body = recv_exactly(s, struct.unpack(">i", head)[0])
    except (OSError, struct.error):
        return False
    return len(body) >= 8 and struct.unpack_from(">i", body, 4)[0] > 0


def recv_exactly(s: socket.socket, n: int) -> bytes:
    """``n`` bytes from ``s``; OSError if the broker closes the connection first."""
    parts, got = [], 0
    while got < n:
        chunk = s.recv(min(n - got, 1 << 20))
        if not chunk:
            raise OSError("connection closed")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def wait_for_metadata(address, proc: subprocess.Popen, launched_at: float, timeout: float) -> float:
    """Seconds from `launched_at` (perf_counter) to the first Metadata answer, polling every ms."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode} during startup")
        if metadata_answered(address):
            return time.perf_counter() - launched_at
        time.sleep(0.001)
    raise RuntimeError(f"broker at {address} did not answer Metadata within {timeout}s")


def start_broker(
    data_dir: str, extra_args: tuple = (), log_path: str | None = None
) -> tuple[subprocess.Popen, int, float]:
    """A minibroker on `data_dir` with --port 0: (process, port, seconds until its port file
    appeared). For scripts that keep one data directory across restarts (bench/growth.py).
    With `log_path`, its log goes there as JSON at info level (for scripts that read events)."""
    port_file = os.path.join(data_dir, "port")
    if os.path.exists(port_file):
        os.unlink(port_file)
    logging = ("--log-format", "json") if log_path else ("--log-level", "warning")
    out = open(log_path, "wb") if log_path else subprocess.DEVNULL  # closed below: the child keeps its own
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "minibroker",
                "--port",
                "0",
                "--port-file",
                port_file,
                "--data-dir",
                data_dir,
                *logging,
                *extra_args,
            ],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    finally:
        if log_path:
            out.close()  # the child has its own descriptor
    deadline = time.monotonic() + 60
    while not os.path.exists(port_file):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("broker did not start")
        time.sleep(0.005)
    return proc, int(Path(port_file).read_text()), time.perf_counter() - t0


def user_system_ticks(pid: int) -> tuple[int, int]:
    """User and system CPU of the whole process in clock ticks (/proc/PID/stat: every thread,
    the JVM's GC and I/O threads too, ended ones included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def cpu_seconds(pid: int) -> float:
    """User + system CPU of the whole process (see user_system_ticks)."""
    return sum(user_system_ticks(pid)) / TICK


def cpu_ns(pid: int) -> int:
    """CPU time of every live thread, in ns (/proc/PID/task/*/schedstat; /proc/PID/stat counts
    in 10 ms ticks, too coarse for a start of ~100 ms or one pass of requests)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):  # a thread that ended meanwhile
            continue
    return total


def status(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM in MB, and the thread count."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
        elif key == "Threads":
            out[key] = int(value)
    return out


def compile_sources() -> None:
    """Write the .pyc files an installed package has, so startup is timed as users see it (an
    editable checkout under PYTHONDONTWRITEBYTECODE=1 compiles every module at every start)."""
    import compileall  # noqa: PLC0415

    for package in ("minibroker", "broker", "coordinator", "protocol", "storage"):
        compileall.compile_dir(str(ROOT / package), quiet=1)


class Minibroker:
    name = "minibroker"
    log_level = "warning"

    def __init__(self, workdir: Path, config: dict | None = None):
        self.workdir = Path(workdir)
        self.config = {**SHARED_CONFIG, **(config or {})}
        self.port = free_low_port()
        self.proc: subprocess.Popen | None = None
        self.startup_s = 0.0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def start(self, timeout: float = 120.0) -> float:
        data = self.workdir / "minibroker-data"
        data.mkdir(parents=True, exist_ok=True)
        sets = [arg for k, v in self.config.items() for arg in ("--set", f"{k}={v}")]
        self._log = open(self.workdir / "minibroker.log", "ab")
        launched = time.perf_counter()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "minibroker",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--data-dir",
                str(data),
                "--log-level",
                self.log_level,
                "--log-format",
                "json",
                *sets,
            ],
            cwd=ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self.startup_s = wait_for_metadata(("127.0.0.1", self.port), self.proc, launched, timeout)
        return self.startup_s

    def stop(self, *, kill: bool = False) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if getattr(self, "_log", None):
            self._log.close()


class Kafka:
    name = "kafka"

    def __init__(self, workdir: Path, config: dict | None = None):
        from conformance.reference_kafka import ReferenceKafka  # noqa: PLC0415 - needs java only here

        self.ref = ReferenceKafka(Path(workdir), {**SHARED_CONFIG, **(config or {})})
        self.startup_s = 0.0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ref.port}"

    @property
    def pid(self) -> int:
        return self.ref.proc.pid

    def start(self, timeout: float = 300.0) -> float:
        self.ref.start(wait=False)
        self.startup_s = wait_for_metadata(self.ref.address, self.ref.proc, self.ref.launched_at, timeout)
        return self.startup_s

    def stop(self, *, kill: bool = False) -> None:
        if kill and self.ref.proc is not None and self.ref.proc.poll() is None:
            self.ref.proc.kill()
            self.ref.proc.wait(30)
        self.ref.stop()
        shutil.rmtree(self.ref.workdir / "kafka-data", ignore_errors=True)


TARGETS = {"minibroker": Minibroker, "kafka": Kafka}
