"""`python -m bench.startup`: start to first Metadata and idle RSS of minibroker alone, several
fresh starts, medians (the quick loop for issue 14's startup work; `make bench` reports the same
two figures among the others).

Each start is timed from process spawn to the first Metadata answer over TCP (bench/targets.py
`Minibroker.start`), and the broker's own CPU seconds at that moment are read from /proc: on this
shared 2-core machine the CPU figure moves far less with load than the wall-clock one."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.targets import Minibroker, compile_sources, cpu_ns, status


def one_start(workdir: Path, idle_s: float) -> dict[str, float]:
    broker = Minibroker(workdir)
    try:
        startup_s = broker.start()
        cpu_s = cpu_ns(broker.pid) / 1e9
        time.sleep(idle_s)
        st = status(broker.pid)
    finally:
        broker.stop()
    return {"startup_ms": startup_s * 1000, "startup_cpu_ms": cpu_s * 1000, "idle_rss_mb": st["VmRSS"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--idle", type=float, default=1.0, help="seconds idle before reading VmRSS")
    args = ap.parse_args(argv)
    compile_sources()
    runs = []
    with tempfile.TemporaryDirectory(prefix="minibroker-startup-") as tmp:
        for i in range(args.runs):
            workdir = Path(tmp) / str(i)
            workdir.mkdir()
            runs.append(one_start(workdir, args.idle))
    medians = {k: round(statistics.median(r[k] for r in runs), 1) for k in runs[0]}
    spread = {k: [round(r[k], 1) for r in runs] for k in runs[0]}
    json.dump({"median": medians, "runs": spread}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
