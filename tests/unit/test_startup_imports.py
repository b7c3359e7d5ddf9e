"""What a broker's start imports (issue 14: start time and idle memory are mostly imports).

A real broker process is started as the `minibroker` console script starts it
(`minibroker.__main__.main`), answers one ApiVersions and one Metadata over TCP, is stopped with
SIGTERM and reports the modules it had loaded. Nothing here is timed: the check is which modules
were loaded, which does not depend on the machine's speed or load. Modules a feature needs are
imported when the feature is configured (metrics) or first used (a handler module at its API's
first request, SCRAM hashing at the first SCRAM exchange, the cleaner's process pool at the first
compaction pass).

ssl is not in the list: asyncio and uvloop import it whatever the listeners are.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: runs the broker's entry point and writes sys.modules (loaded ones) to argv[1] at exit
_DRIVER = """
import atexit, sys
out = sys.argv[1]
def dump():
    with open(out, "w") as f:
        f.write("\\n".join(sorted(n for n, m in sys.modules.items() if m is not None)))
atexit.register(dump)
from minibroker.__main__ import main
sys.argv = ["minibroker", *sys.argv[2:]]
raise SystemExit(main())
"""

NEVER_AT_START = {
    "hypothesis": "kio's optional strategies: ~100 ms and 5 MB (minibroker/__main__.py)",
    "importlib.metadata": "crc32c's package __init__ (protocol/crc.py loads the extension alone)",
    "prometheus_client": "metrics are off unless minibroker.metrics.port is set",
    "minibroker.broker.metrics": "metrics are off unless minibroker.metrics.port is set",
    "multiprocessing": "the cleaner's process pool starts at the first compaction pass",
    "concurrent.futures.process": "the cleaner's process pool starts at the first compaction pass",
    "hashlib": "SCRAM hashing is imported at the first SCRAM exchange or configured credential",
    "hmac": "SCRAM/PLAIN checks are imported at the first login",
    "secrets": "SCRAM nonces and salts are made at the first exchange or credential",
    "minibroker.broker.security.scram": "SCRAM's exchange is imported at its first use",
    "encodings.idna": "the listener host goes to uvloop as ASCII bytes (broker/server.py)",
    "minibroker.broker.dump": "`minibroker dump` only",
    "minibroker.pipelines": "the Spark pipeline is a client application",
    "pyspark": "the Spark pipeline is a client application",
    "kafka": "a client library, for tests and tools",
    "aiokafka": "a client library, for tests and tools",
}

#: the two APIs the broker is asked below; every other handler module stays unloaded
ASKED = {"api_versions", "metadata"}


def _request(api_key: int, version: int, body: bytes = b"") -> bytes:
    header = struct.pack(">hhih", api_key, version, 7, 4) + b"test"
    frame = header + body
    return struct.pack(">i", len(frame)) + frame


def _round_trip(port: int, frame: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(frame)
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            assert chunk, "the broker closed the connection"
            head += chunk
        size = struct.unpack(">i", head)[0]
        body = b""
        while len(body) < size:
            chunk = s.recv(size - len(body))
            assert chunk, "the broker closed the connection"
            body += chunk
    return body


def loaded_modules(tmp_path: Path, *extra_args: str) -> set[str]:
    port_file, out = tmp_path / "port", tmp_path / "modules.txt"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(out), "--port", "0", "--port-file", str(port_file)]
        + ["--data-dir", str(tmp_path / "data"), "--log-level", "warning", *extra_args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the broker did not start within 60 s"
            time.sleep(0.02)
        port = int(port_file.read_text())
        _round_trip(port, _request(18, 0))  # ApiVersions v0: what a client sends first
        metadata = _round_trip(port, _request(3, 1, struct.pack(">i", 0)))  # v1, no topics
        assert struct.unpack_from(">i", metadata, 4)[0] == 1  # one broker listed
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    return set(out.read_text().split())


def test_start_and_first_metadata_import_only_what_they_use(tmp_path):
    modules = loaded_modules(tmp_path)
    loaded = {name: why for name, why in NEVER_AT_START.items() if name in modules}
    assert not loaded, f"imported at start without being configured or used: {loaded}"
    handlers = {m.rsplit(".", 1)[1] for m in modules if m.startswith("minibroker.broker.handlers.")}
    assert handlers == ASKED
    assert "minibroker.broker.state" in modules  # the broker really started


def test_a_configured_feature_is_imported_at_start(tmp_path):
    """The other side of the list above: configured, metrics load at start (and a missing
    prometheus_client fails the start, not the first scrape)."""
    modules = loaded_modules(tmp_path, "--set", "minibroker.metrics.port=0")
    assert {"prometheus_client", "minibroker.broker.metrics"} <= modules
