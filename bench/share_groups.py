"""Share groups (KIP-932): consume throughput and broker CPU per record, minibroker against Apache
Kafka 4.4 in one run (`make bench` runs it after the consumer groups):

    python -m bench.share_groups [--brokers minibroker,kafka] [--members 1,3] [--records 100000]
                                 [--partitions 2] [--runs 3] [--out bench]

Each broker kind runs once (a fresh broker) and serves every point in turn: a new topic of
`--partitions` partitions holding `--records` records of 100 bytes (produced before the members
start, so the figures are consumption only), a new share group (share.auto.offset.reset=earliest
through IncrementalAlterConfigs on the GROUP resource) and N confluent-kafka ShareConsumers in one
child process, one thread each, in implicit acknowledgement mode (the records of a poll are
ACCEPTed with the next ShareFetch). A point ends when the broker has confirmed the ACCEPT of every
record (the acknowledgement commit callbacks). The figures: records per second from the first
record received to the last ACCEPT confirmed, and the broker's CPU (user + system of every thread,
/proc) from the subscriptions to the end, per record (joining is included; it is small next to
100,000 records). `--runs` repeats each point on the same broker (medians).

Both brokers run with the share-group heartbeat at 100 ms and assignment interval 0 (the members
get their partitions at once); minibroker also gets `minibroker.features=share.version=1` until
share groups are finalized. Before the points, one raw ShareGroupHeartbeat (join, then leave)
checks that the broker serves share groups; a broker that does not has its points skipped with the
reason printed and shown in the table.

Output: bench/share-groups.json and bench/share-groups.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench import group_probe
from bench.report import broker_columns_table, write_results

DEADLINE_S = 300.0
VALUE_BYTES = 100
HERE = Path(__file__).resolve().parent

#: the same on both brokers (Kafka's property names)
SHARE_CONFIG = {
    "group.share.min.heartbeat.interval.ms": 100,
    "group.share.heartbeat.interval.ms": 100,
    "group.share.assignment.interval.ms": 0,
    "share.coordinator.state.topic.num.partitions": 1,
}
#: minibroker's share groups until share.version 1 is its default
MINIBROKER_SHARE_CONFIG = {"minibroker.features": "share.version=1"}


# -- the members (child process) --------------------------------------------------------------


def run_members(
    bootstrap: str, topic: str, group: str, members: int, records: int, deadline_s: float
) -> None:
    """N share consumers of one group; prints {"consume_ms", "accepted", "per_member"} once every
    record's ACCEPT is confirmed (consume_ms null past the deadline), after closing them."""
    import threading  # noqa: PLC0415

    from confluent_kafka import ShareConsumer  # noqa: PLC0415 - the bench extra

    lock = threading.Lock()
    accepted: set[tuple[int, int]] = set()
    first: list[float] = []
    per_member = [0] * members
    done = threading.Event()

    def member(i: int) -> None:
        consumer = ShareConsumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"bench-{i}", "log_level": 0}
        )
        delivered: set[tuple[int, int]] = set()

        def committed(offsets, exc) -> None:
            if exc is not None:
                return
            with lock:
                for tp, offs in offsets.items():
                    accepted.update((tp.partition, o) for o in offs if (tp.partition, o) in delivered)
                if len(accepted) >= records:
                    done.set()

        consumer.set_acknowledgement_commit_callback(committed)
        consumer.subscribe([topic])
        while not done.is_set():
            batch = consumer.poll(0.1)
            got = [(m.partition(), m.offset()) for m in batch if not m.error()]
            if got:
                if not first:
                    first.append(time.perf_counter())
                delivered.update(got)
                per_member[i] += len(got)
        consumer.close()

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(members)]
    for t in threads:
        t.start()
    finished = done.wait(deadline_s)
    end = time.perf_counter()
    for t in threads:
        t.join(60)
    consume_ms = (end - first[0]) * 1000 if finished and first else None
    print(
        json.dumps({"consume_ms": consume_ms, "accepted": len(accepted), "per_member": per_member}),
        flush=True,
    )


# -- the broker side --------------------------------------------------------------------------


def share_unavailable(address: tuple[str, int], timeout_s: float = 60.0) -> str | None:
    """None when the broker serves ShareGroupHeartbeat (a join answered without error, then a
    leave); else why not."""
    from conformance.wire import Connection  # noqa: PLC0415 - kio encodes the requests

    conn = Connection(address)
    try:
        if not group_probe.advertises(conn, 76):
            return "the broker does not advertise ShareGroupHeartbeat (76) in ApiVersions"
        join = {
            "group_id": "bench-share-probe",
            "member_id": str(uuid.uuid4()),
            "member_epoch": 0,
            "rack_id": None,
            "subscribed_topic_names": ["bench-share-probe"],
        }
        deadline = time.monotonic() + timeout_s
        group_probe.find_coordinator(conn, join["group_id"], deadline)
        answer = group_probe.heartbeat(conn, 76, 1, join, deadline)
        if refused := group_probe.refusal("ShareGroupHeartbeat", answer):
            return refused
        conn.call(76, 1, {**join, "member_epoch": -1, "subscribed_topic_names": None})
        return None
    finally:
        conn.close()


def broker_config(kind: str) -> dict[str, object]:
    return {**SHARE_CONFIG, **(MINIBROKER_SHARE_CONFIG if kind == "minibroker" else {})}


def prepare(bootstrap: str, topic: str, group: str, partitions: int, records: int) -> None:
    """The topic with its records (round robin, acknowledged) and the group's start offset."""
    from confluent_kafka import Producer  # noqa: PLC0415

    from bench import workloads as w  # noqa: PLC0415
    from tests.support.share import set_group_configs  # noqa: PLC0415 - one way to set group configs

    w.create_topic(bootstrap, topic, partitions)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all", "log_level": 0})
    value = b"x" * VALUE_BYTES
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0, "records not acknowledged"
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})


def measure(bootstrap: str, pid: int, topic: str, members: int, partitions: int, records: int) -> dict:
    """One point: {"records_per_s", "cpu_us_per_record", "consume_ms"} or {"skipped": reason}."""
    from bench.targets import ROOT, cpu_seconds  # noqa: PLC0415

    group = f"bench-{topic}"
    prepare(bootstrap, topic, group, partitions, records)
    cpu0 = cpu_seconds(pid)
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.share_groups",
            "--child",
            bootstrap,
            topic,
            group,
            str(members),
            str(records),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S + 120,
    )
    cpu_s = cpu_seconds(pid) - cpu0
    answer = json.loads(child.stdout.strip().splitlines()[-1] if child.stdout.strip() else "{}")
    if answer.get("consume_ms") is None:
        return {
            "skipped": f"not every record accepted within {DEADLINE_S:.0f} s "
            f"({answer.get('accepted')} of {records}; {child.stderr.strip()[-200:]})"
        }
    return {
        "records_per_s": records / (answer["consume_ms"] / 1000),
        "cpu_us_per_record": cpu_s * 1e6 / records,
        "consume_ms": answer["consume_ms"],
        "per_member": answer["per_member"],
    }


def run_broker(
    kind: str, workdir: Path, members: list[int], partitions: int, records: int, runs: int
) -> dict:
    """Every point on one fresh broker of `kind`: members -> medians or a skip."""
    from bench.targets import TARGETS  # noqa: PLC0415

    broker = TARGETS[kind](workdir, broker_config(kind))
    out: dict[int, dict] = {}
    try:
        broker.start()
        host, port = broker.bootstrap.rsplit(":", 1)
        unavailable = share_unavailable((host, int(port)))
        if unavailable:
            print(f"{kind}: share groups skipped: {unavailable}", file=sys.stderr, flush=True)
        for n in members:
            if unavailable:
                out[n] = {"skipped": unavailable}
                continue
            figures = []
            for run in range(runs):
                print(f"{kind}: {n} share consumer(s), run {run + 1} ...", file=sys.stderr, flush=True)
                point = measure(broker.bootstrap, broker.pid, f"share-{n}-{run}", n, partitions, records)
                if "skipped" in point:
                    figures = [point]
                    break
                figures.append(point)
            if "skipped" in figures[0]:
                out[n] = figures[0]
            else:
                out[n] = {
                    key: statistics.median(f[key] for f in figures)
                    for key in ("records_per_s", "cpu_us_per_record", "consume_ms")
                } | {
                    "runs": [round(f["records_per_s"]) for f in figures],
                    "records_per_member": [f["per_member"] for f in figures],
                }
    finally:
        broker.stop(kill=True)
    return out


def markdown(results: dict) -> str:
    brokers = results["brokers"]
    head = ["share consumers"]
    for b in brokers:
        head += [f"{b}: records/s", f"{b}: broker CPU per record (µs)"]
    intro = (
        f"Share groups {results['date']}, {results['cpus']} CPUs, {results['records']:,} records of "
        f"{VALUE_BYTES} bytes on {results['partitions']} partitions, implicit acknowledgement, one broker "
        f"per column, median of {results['runs']} run(s) per cell."
    )
    return broker_columns_table(
        intro,
        head,
        results["rows"],
        brokers,
        lambda row: [str(row["members"])],
        lambda point: [f"{point['records_per_s']:,.0f}", f"{point['cpu_us_per_record']:,.1f}"],
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        run_members(argv[1], argv[2], argv[3], int(argv[4]), int(argv[5]), DEADLINE_S)
        return 0
    import os  # noqa: PLC0415

    from bench.targets import TARGETS, compile_sources  # noqa: PLC0415

    ap = argparse.ArgumentParser(prog="python -m bench.share_groups", description=__doc__.split("\n\n")[0])
    ap.add_argument("--brokers", default="minibroker,kafka", help="comma-separated: minibroker, kafka")
    ap.add_argument("--members", default="1,3", help="comma-separated numbers of share consumers")
    ap.add_argument("--records", type=int, default=100_000, help="records per point")
    ap.add_argument("--partitions", type=int, default=2, help="partitions of each point's topic")
    ap.add_argument("--runs", type=int, default=3, help="groups per point on the same broker (median)")
    ap.add_argument("--out", default=str(HERE), help="directory for share-groups.json/.md")
    args = ap.parse_args(argv)
    brokers = [b for b in args.brokers.split(",") if b]
    for b in brokers:
        if b not in TARGETS:
            ap.error(f"unknown broker {b!r}; choose from {', '.join(TARGETS)}")
    compile_sources()
    started = time.time()
    members = [int(m) for m in args.members.split(",") if m]
    by_broker = {}
    with tempfile.TemporaryDirectory(prefix="minibroker-bench-sg-") as tmp:
        for b in brokers:
            workdir = Path(tmp) / b
            workdir.mkdir()
            by_broker[b] = run_broker(b, workdir, members, args.partitions, args.records, args.runs)
    rows = [{"members": n, **{b: by_broker[b][n] for b in brokers}} for n in members]
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "cpus": os.cpu_count(),
        "brokers": brokers,
        "records": args.records,
        "partitions": args.partitions,
        "runs": args.runs,
        "rows": rows,
    }
    write_results(args.out, "share-groups", results, markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
