"""`make bench`: minibroker and Apache Kafka side by side, same librdkafka clients.

    python -m bench [--brokers minibroker,kafka] [--runs 3] [--scale 1.0] [--clients 2] [--curves data,groups]

Every run starts a fresh broker (new data directory), waits for its first Metadata answer, and
drives the same workloads in the same order; each figure is the median over the runs. The
throughput workloads (produce, transactional produce, consume) run in `--clients` processes
started together, each with its own producer or consumer, because one Python librdkafka client
saturates first; one-record transactions and latency keep one producer. Broker
CPU comes from /proc (user + system of every thread of the broker process), which stays
meaningful on a loaded machine where wall-clock throughput does not. Output: bench/results.json,
bench/results.md (the table docs/benchmarks.md shows) and, with --curves, PNG plots (bench/curves.py).
With minibroker among the brokers, the table is followed by the cost of the test control plane
when off (bench/control_off.py: the same Produce load with it off and on, alternating rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import workloads as w
from bench.report import FIGURES, markdown
from bench.targets import ROOT, TARGETS, compile_sources, cpu_seconds, start_broker, status

__all__ = ["main", "ROOT", "start_broker"]  # ROOT and start_broker: used by bench/growth.py

HERE = Path(__file__).resolve().parent


def one_run(target_cls, scale: float, workdir: Path, clients: int) -> dict[str, float]:
    """All figures of one fresh broker; `clients` processes drive each throughput workload (the
    broker CPU of a workload includes its clients' connecting, a few ms)."""
    broker = target_cls(workdir)
    out: dict[str, float] = {}
    try:
        out["startup_ms"] = broker.start() * 1000
        time.sleep(1.0)
        st = status(broker.pid)
        out["idle_rss_mb"], out["threads"] = st["VmRSS"], st["Threads"]
        boot, pid = broker.bootstrap, broker.pid

        def measured(name: str, fn, records: int = 0, transactions: int = 0):
            cpu0 = cpu_seconds(pid)
            result = fn()
            cpu = cpu_seconds(pid) - cpu0
            if records:
                out[f"{name}_cpu_us_per_record"] = cpu / records * 1e6
            if transactions:
                out[f"{name}_cpu_ms_per_txn"] = cpu / transactions * 1e3
            return result

        n100, n1k = int(300_000 * scale), int(100_000 * scale)
        nt100, nt1k = int(200_000 * scale) // 1000 * 1000, int(50_000 * scale) // 1000 * 1000
        for topic in ("idem-100", "idem-1k", "txn-100", "txn-1k", "one-txn", "latency"):
            w.create_topic(boot, topic, 3)
        secs = measured(
            "produce_100", lambda: w.produce_idempotent(boot, "idem-100", n100, 100, clients), records=n100
        )
        out["produce_100_per_s"] = n100 / secs
        secs = measured(
            "produce_1k", lambda: w.produce_idempotent(boot, "idem-1k", n1k, 1024, clients), records=n1k
        )
        out["produce_1k_per_s"] = n1k / secs
        secs = measured(
            "txn_100",
            lambda: w.produce_transactional(boot, "txn-100", nt100, 100, 1000, clients),
            records=nt100,
            transactions=nt100 // 1000,
        )
        out["txn_100_per_s"] = nt100 / secs
        secs = measured(
            "txn_1k", lambda: w.produce_transactional(boot, "txn-1k", nt1k, 1024, 1000, clients), records=nt1k
        )
        out["txn_1k_per_s"] = nt1k / secs
        cpu0 = cpu_seconds(pid)
        txns, secs = w.one_record_transactions(boot, "one-txn", max(2.0, 5.0 * scale))
        out["one_txn_per_s"] = txns / secs
        out["one_txn_cpu_ms_per_txn"] = (cpu_seconds(pid) - cpu0) / txns * 1e3
        java_transactions(out, measured, boot, scale)
        lat = sorted(w.produce_latency(boot, "latency", 1000, max(2.0, 5.0 * scale)))
        out["latency_p50_ms"] = lat[len(lat) // 2]
        out["latency_p99_ms"] = lat[int(len(lat) * 0.99)]
        secs = measured(
            "consume_100",
            lambda: w.consume(boot, "idem-100", 3, n100, "read_uncommitted", clients),
            records=n100,
        )
        out["consume_100_per_s"] = n100 / secs
        secs = measured(
            "consume_txn",
            lambda: w.consume(boot, "txn-100", 3, nt100, "read_committed", clients),
            records=nt100,
        )
        out["consume_txn_per_s"] = nt100 / secs
        out["rss_after_load_mb"] = status(pid)["VmRSS"]
    finally:
        broker.stop()
    return out


def java_transactions(out: dict[str, float], measured, boot: str, scale: float) -> None:
    """Transactional produce from a Java 4.4 producer on each transaction path: V2 (KIP-890,
    the default of Kafka 4.x clusters and clients) and then V1 (the classic flow, after
    downgrading `transaction.version` to 1 on the broker). Skipped, with a note, without the
    jars of `make jvm`."""
    from minibroker.pipelines.jars import JarsMissing  # noqa: PLC0415

    big, one = max(2, int(100 * scale)), max(20, int(1000 * scale))
    try:
        for version in (2, 1):
            topic = f"java-txn-v{version}"
            w.create_topic(boot, topic, 3)
            secs = measured(
                f"java_txn_v{version}",
                lambda t=topic, v=version: w.java_transactions(boot, t, big, 1000, 100, v),
                transactions=big,
            )
            out[f"java_txn_v{version}_per_s"] = big * 1000 / secs
            secs = measured(
                f"java_one_txn_v{version}",
                lambda t=topic, v=version: w.java_transactions(boot, t, one, 1, 100, v),
                transactions=one,
            )
            out[f"java_one_txn_v{version}_per_s"] = one / secs
    except JarsMissing as e:
        print(f"skipping the Java transaction workloads: {e}", file=sys.stderr)


def _at_least(low, kind):
    """An argparse type: `kind` of the argument, refused below `low` (below 0.02 the scale
    leaves a workload without one whole transaction of 1000)."""

    def parse(text: str):
        value = kind(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}")
        return value

    return parse


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["history"]:  # make bench BENCH_ARGS="history [--transactions N ...]"
        from bench.history import main as history_main  # noqa: PLC0415

        return history_main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--brokers", default="minibroker,kafka", help="comma-separated: minibroker, kafka (default both)"
    )
    ap.add_argument("--runs", type=int, default=3, help="fresh brokers per broker kind (median)")
    ap.add_argument(
        "--scale", type=_at_least(0.02, float), default=1.0, help="multiply record counts (at least 0.02)"
    )
    ap.add_argument(
        "--clients",
        type=_at_least(1, int),
        default=2,
        help="client processes per throughput workload (default 2: one Python librdkafka client "
        "saturates near 300-600k records/s here, below what the broker takes)",
    )
    ap.add_argument(
        "--curves",
        default="",
        help="comma-separated scale curves: partitions, connections, producers, data, groups",
    )
    ap.add_argument("--out", default=str(HERE), help="directory for results.json/.md and plots")
    args = ap.parse_args(argv)
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    for b in brokers:
        if b not in TARGETS:
            ap.error(f"unknown broker {b!r}; choose from {', '.join(TARGETS)}")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    compile_sources()
    started = time.time()
    load_before = os.getloadavg()
    values: dict[str, dict[str, list[float]]] = {b: {} for b in brokers}
    with tempfile.TemporaryDirectory(prefix="minibroker-bench-") as tmp:
        for run in range(args.runs):
            for b in brokers:  # interleaved: load changes hit every broker alike
                print(f"run {run + 1}/{args.runs}: {b} ...", file=sys.stderr, flush=True)
                workdir = Path(tmp) / f"{b}-{run}"
                workdir.mkdir()
                for key, value in one_run(TARGETS[b], args.scale, workdir, args.clients).items():
                    values[b].setdefault(key, []).append(value)
        medians = {b: {k: statistics.median(v) for k, v in figs.items()} for b, figs in values.items()}
        control_plane = None
        if "minibroker" in brokers:  # the test control plane off costs nothing (bench/control_off.py)
            from bench.control_off import measure  # noqa: PLC0415

            print("control plane off against on ...", file=sys.stderr, flush=True)
            control_plane = measure()
        results = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
            "machine": {
                "platform": platform.platform(),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "loadavg_before": load_before,
                "loadavg_after": os.getloadavg(),
            },
            "runs": args.runs,
            "scale": args.scale,
            "clients": args.clients,
            "median": medians,
            "values": values,
            "curves": {},
            "control_plane": control_plane,
            "figures": {key: label for key, label, _ in FIGURES},
        }
        write(out_dir, results)  # the table is kept even if a curve fails
        for curve in [c.strip() for c in args.curves.split(",") if c.strip()]:
            from bench.curves import CURVES  # noqa: PLC0415 - matplotlib only when plotting

            print(f"curve: {curve} ...", file=sys.stderr, flush=True)
            results["curves"][curve] = CURVES[curve](Path(tmp) / f"curve-{curve}", out_dir)
            write(out_dir, results)
    print(markdown(results))
    return 0


def write(out_dir: Path, results: dict) -> None:
    (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out_dir / "results.md").write_text(markdown(results))


if __name__ == "__main__":
    raise SystemExit(main())
