"""`python -m bench.growth`: how the internal topics and startup time grow with history (issue
13). Runs N one-record transactions (librdkafka transactional producer) and N offset commits on
one group, stops the broker cleanly, then measures the on-disk size of __transaction_state and
__consumer_offsets, startup after the clean stop and startup after a SIGKILL. Then measures one
compaction pass over a keyed topic (cleaner throughput, MB of log per second).

    python -m bench.growth [--count 20000] [--no-cleaner] [--cleaner-mb 50]

``--no-cleaner`` (log.cleaner.enable=false) gives the figures without compaction, for
comparison. Results go to bench/growth-results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import time
from datetime import datetime
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.__main__ import ROOT, start_broker


def dir_bytes(data_dir: str, name: str) -> int:
    path = Path(data_dir) / f"{name}-0"
    return sum(f.stat().st_size for f in path.glob("*.log")) if path.exists() else 0


def wait_settled(data_dir: str, seconds: float = 4.0, limit: float = 120.0) -> None:
    """Until the internal topics' sizes stop changing (the cleaner caught up)."""
    last, stable_since, deadline = None, time.monotonic(), time.monotonic() + limit
    while time.monotonic() < deadline:
        now = (dir_bytes(data_dir, "__transaction_state"), dir_bytes(data_dir, "__consumer_offsets"))
        if now != last:
            last, stable_since = now, time.monotonic()
        elif time.monotonic() - stable_since >= seconds:
            return
        time.sleep(0.2)


def history(bootstrap: str, count: int) -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("growth", 1, 1)])["growth"].result(10)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "growth-txn", "linger.ms": 0})
    p.init_transactions(10)
    t0 = time.perf_counter()
    for _ in range(count):
        p.begin_transaction()
        p.produce("growth", b"x", partition=0)
        p.commit_transaction(10)
    txn_s = time.perf_counter() - t0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "growth-group", "enable.auto.commit": False})
    t0 = time.perf_counter()
    for i in range(count):
        c.commit(offsets=[TopicPartition("growth", 0, i + 1)], asynchronous=False)
    commit_s = time.perf_counter() - t0
    c.close()
    return {"txns_per_s": round(count / txn_s), "commits_per_s": round(count / commit_s)}


def cleaner_throughput(data_dir: str, args: tuple, megabytes: int) -> dict:
    proc, port, _ = start_broker(data_dir, (*args, "--set", "log.cleaner.enable=false"))
    bootstrap = f"127.0.0.1:{port}"
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics(
            [
                NewTopic(
                    "cleaner-bench", 1, 1, config={"cleanup.policy": "compact", "segment.bytes": str(8 << 20)}
                )
            ]
        )["cleaner-bench"].result(10)
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20})
        value = b"v" * 200
        for i in range(megabytes * (1 << 20) // 230):
            while True:
                try:
                    p.produce("cleaner-bench", value, key=b"%d" % (i % 50_000), partition=0)
                    break
                except BufferError:
                    p.poll(0.01)
        p.flush(120)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    # restart with the cleaner on; while its first pass runs, probe produce latency on another
    # topic, then probe again once it is done (p99 with and without the cleaner running)
    log_path = os.path.join(data_dir, "cleaner-bench.log")
    proc, port, _ = start_broker(data_dir, ("--set", "log.cleaner.backoff.ms=1000", *args), log_path)
    try:
        bootstrap = f"127.0.0.1:{port}"
        probe = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": 1})
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("probe", 1, 1)])["probe"].result(10)
        for _ in range(50):  # warm up
            _probe_once(probe)
        samples = []  # (wall clock, latency ms)
        event, deadline = None, time.monotonic() + 600
        while event is None and time.monotonic() < deadline:
            for _ in range(50):
                samples.append((time.time(), _probe_once(probe)))
            event = _pass_event(log_path)
        if event is None:
            raise RuntimeError("no cleaner pass seen")
        for _ in range(1000):
            samples.append((time.time(), _probe_once(probe)))
        end = datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()
        begin = end - event["ms"] / 1000
        during = [lat for t, lat in samples if begin <= t <= end]
        without = [lat for t, lat in samples if t > end]
        mb = event["bytes_read"] / (1 << 20)
        # pass_s includes starting the worker process on the first pass; mb_per_s is the
        # clean itself (the worker's own time), as Kafka's cleaner reports its throughput
        return {
            "log_mb": round(mb, 1),
            "pass_s": round(event["ms"] / 1000, 2),
            "worker_s": round(event["worker_ms"] / 1000, 2),
            "mb_per_s": round(mb / (event["worker_ms"] / 1000), 1),
            # per CPU second of the worker: what the cleaner costs, whatever else the
            # (shared, 2-core) machine runs; the worker is niced, so wall time is not
            "worker_cpu_s": round(event["worker_cpu_ms"] / 1000, 2),
            "mb_per_cpu_s": round(mb / (event["worker_cpu_ms"] / 1000), 1),
            "produce_p99_ms_during_pass": _p99(during),
            "produce_p99_ms_without": _p99(without),
            "samples_during": len(during),
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def _pass_event(log_path: str) -> dict | None:
    for line in Path(log_path).read_text().splitlines():
        if '"cleaned log"' in line and '"cleaner-bench"' in line:
            return json.loads(line)
    return None


def _probe_once(producer) -> float:
    t0 = time.perf_counter()
    producer.produce("probe", b"p", partition=0)
    producer.flush(10)
    return (time.perf_counter() - t0) * 1000


def _p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2) if ordered else -1.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=20_000)
    ap.add_argument("--no-cleaner", action="store_true")
    ap.add_argument("--cleaner-mb", type=int, default=50)
    opts = ap.parse_args()
    args = (
        ("--set", "log.cleaner.enable=false") if opts.no_cleaner else ("--set", "log.cleaner.backoff.ms=1000")
    )
    results: dict[str, object] = {"count": opts.count, "cleaner": not opts.no_cleaner}
    with tempfile.TemporaryDirectory(prefix="minibroker-growth-") as data_dir:
        proc, port, startup = start_broker(data_dir, args)
        results["startup_empty_s"] = round(startup, 3)
        try:
            results.update(history(f"127.0.0.1:{port}", opts.count))
            if not opts.no_cleaner:
                wait_settled(data_dir)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        results["transaction_state_mb"] = round(dir_bytes(data_dir, "__transaction_state") / 1e6, 2)
        results["consumer_offsets_mb"] = round(dir_bytes(data_dir, "__consumer_offsets") / 1e6, 2)
        proc, _, startup = start_broker(data_dir, args)
        results["startup_after_clean_stop_s"] = round(startup, 3)
        proc.kill()
        proc.wait(30)
        proc, _, startup = start_broker(data_dir, args)
        results["startup_after_sigkill_s"] = round(startup, 3)
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    if not opts.no_cleaner and opts.cleaner_mb:
        with tempfile.TemporaryDirectory(prefix="minibroker-cleaner-") as data_dir:
            results["cleaner_pass"] = cleaner_throughput(data_dir, (), opts.cleaner_mb)
    print(json.dumps(results, indent=2))
    name = "growth-results-no-cleaner.json" if opts.no_cleaner else "growth-results.json"
    (ROOT / "bench" / name).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
