"""`make bench`: speed and memory of a real broker process driven by librdkafka.

Measures, against a fresh broker on loopback:
- startup: process start to the port file appearing (cold data dir, then with existing data);
- produce: records/s and broker CPU microseconds per record (from /proc utime+stime) for 100-byte
  and 1 KiB records, acks=all;
- consume: records/s and broker CPU per record reading everything back;
- broker resident memory (VmHWM) at the end.
Results print as one table and are written to bench/results.json. Budgets from the codec study
(<= 0.5 us CPU per 100 B record, <= 1.5 us per 1 KiB record) are shown beside the figures.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def start_broker(data_dir: str, extra_args: tuple = ()) -> tuple[subprocess.Popen, int, float]:
    port_file = os.path.join(data_dir, "port")
    if os.path.exists(port_file):
        os.unlink(port_file)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "broker", "--port", "0", "--port-file", port_file,
         "--data-dir", data_dir, "--log-level", "warning", *extra_args],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 15
    while not os.path.exists(port_file):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("broker did not start")
        time.sleep(0.005)
    return proc, int(Path(port_file).read_text()), time.perf_counter() - t0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def produce(bootstrap: str, topic: str, count: int, size: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.size": 1 << 20, "enable.idempotence": True})
    value = b"x" * size
    t0 = time.perf_counter()
    for i in range(count):
        while True:
            try:
                p.produce(topic, value, key=str(i % 64).encode())
                break
            except BufferError:
                p.poll(0.01)
    remaining = p.flush(60)
    if remaining:
        raise RuntimeError(f"{remaining} records not delivered")
    return time.perf_counter() - t0


def consume(bootstrap: str, topic: str, partitions: int, count: int) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800, "isolation.level": "read_uncommitted"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = 0
    t0 = time.perf_counter()
    deadline = time.monotonic() + 120
    while seen < count and time.monotonic() < deadline:
        for m in c.consume(10000, 1.0):
            if m.error() is None:
                seen += 1
    elapsed = time.perf_counter() - t0
    c.close()
    if seen < count:
        raise RuntimeError(f"consumed {seen} of {count}")
    return elapsed


def main() -> int:
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="minibroker-bench-") as data_dir:
        proc, port, startup = start_broker(data_dir)
        results["startup_cold_s"] = round(startup, 3)
        bootstrap = f"127.0.0.1:{port}"
        try:
            for size, count, budget in ((100, 200_000, 0.5), (1024, 50_000, 1.5)):
                topic = f"bench-{size}"
                from confluent_kafka.admin import AdminClient, NewTopic

                admin = AdminClient({"bootstrap.servers": bootstrap})
                admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(10)
                cpu0 = cpu_seconds(proc.pid)
                elapsed = produce(bootstrap, topic, count, size)
                cpu1 = cpu_seconds(proc.pid)
                results[f"produce_{size}B"] = {
                    "records": count, "records_per_s": round(count / elapsed),
                    "broker_cpu_us_per_record": round((cpu1 - cpu0) / count * 1e6, 3),
                    "budget_us_per_record": budget,
                }
                elapsed = consume(bootstrap, topic, 3, count)
                cpu2 = cpu_seconds(proc.pid)
                results[f"consume_{size}B"] = {
                    "records": count, "records_per_s": round(count / elapsed),
                    "broker_cpu_us_per_record": round((cpu2 - cpu1) / count * 1e6, 3),
                }
            results["broker_peak_rss_mb"] = round(peak_rss_mb(proc.pid), 1)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        proc, _, startup = start_broker(data_dir)
        results["startup_with_data_s"] = round(startup, 3)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    print(json.dumps(results, indent=2))
    (ROOT / "bench" / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
