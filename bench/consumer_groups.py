"""Consumer groups, classic against consumer protocol (KIP-848), minibroker against Apache Kafka
4.4 in one run (`make bench` runs it after the main table):

    python -m bench.consumer_groups [--brokers minibroker,kafka] [--members 1,10,100]
                                    [--protocols classic,consumer] [--runs 3] [--out bench]

Each broker kind runs once (a fresh broker: Kafka's start takes up to half a minute here) and serves
every point in turn: a new 100-partition topic and a group of N librdkafka (confluent-kafka)
consumers created in one child process and subscribed at once. The figures are the time from
the subscriptions to a stable group (every partition held exactly once across the members, as
their assignment callbacks tell, and every member holding some) and the broker CPU (user +
system of every broker thread, /proc) over that time. Then the members close (leaving the group)
before the next point starts, so no old group's work overlaps a measurement; `--runs` repeats
each point (medians). Single runs vary by up to a factor of ten for classic groups of 10+ members
(how many join before the first generation forms decides the number of rebalance rounds).

The members learn of a change from their next heartbeat, so both protocols heartbeat every 100 ms:
the classic members set `heartbeat.interval.ms=100` (`session.timeout.ms=30000`), the consumer
members set nothing (KIP-848 moves those settings to the broker) and both brokers run with
`group.consumer.heartbeat.interval.ms=100` (and its minimum). Everything else is the brokers'
defaults (`group.consumer.assignment.interval.ms` 1 s, the `uniform` assignor) plus the bench's
shared configuration (bench/targets.SHARED_CONFIG: `group.initial.rebalance.delay.ms=0`).

Before the consumer-protocol points, one raw ConsumerGroupHeartbeat (join, then leave) checks
that the broker serves KIP-848 groups; minibroker gets `minibroker.features=group.version=1`.
A broker that does not (no API 68 in ApiVersions, or an error such as UNSUPPORTED_VERSION) has
its consumer-protocol points skipped with the reason printed and shown in the table.

Output: bench/consumer-groups.json and bench/consumer-groups.md (the table docs/benchmarks.md
shows). About 2 minutes with both brokers and three runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import group_probe
from bench.report import broker_columns_table, write_results

PARTITIONS = 100
DEADLINE_S = 60.0
HERE = Path(__file__).resolve().parent

#: the consumer protocol's heartbeat on the broker, like the classic members' own setting
CONSUMER_PROTOCOL_CONFIG = {
    "group.consumer.heartbeat.interval.ms": 100,
    "group.consumer.min.heartbeat.interval.ms": 100,
}
#: minibroker's KIP-848 keys until group.version 1 is its default
MINIBROKER_CONSUMER_CONFIG = {"minibroker.features": "group.version=1"}
CLASSIC_MEMBER_CONFIG = {"heartbeat.interval.ms": 100, "session.timeout.ms": 30000}


# -- the members (child process) --------------------------------------------------------------


def run_members(
    bootstrap: str, topic: str, members: int, partitions: int, protocol: str, deadline_s: float
) -> None:
    """N consumers of one group subscribed at once; prints {"stable_ms": ..., "sizes": [...]}
    (stable_ms null past the deadline), then closes them when stdin closes."""
    from confluent_kafka import Consumer  # noqa: PLC0415 - the bench extra

    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{topic}",
        "group.protocol": protocol,
        "enable.auto.commit": False,
        "log_level": 0,
        **(CLASSIC_MEMBER_CONFIG if protocol == "classic" else {}),
    }
    owned: list[set[int]] = [set() for _ in range(members)]

    def callbacks(i: int):
        def on_assign(_consumer, parts) -> None:
            owned[i].update(p.partition for p in parts)

        def on_revoke(_consumer, parts) -> None:
            owned[i].difference_update(p.partition for p in parts)

        return {"on_assign": on_assign, "on_revoke": on_revoke, "on_lost": on_revoke}

    consumers = [Consumer(conf) for _ in range(members)]
    t0 = time.perf_counter()
    for i, c in enumerate(consumers):
        c.subscribe([topic], **callbacks(i))
    deadline = time.monotonic() + deadline_s
    stable_ms = None
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0)  # serves the rebalance callbacks
        sizes = [len(o) for o in owned]
        if min(sizes) > 0 and sum(sizes) == partitions and len(set().union(*owned)) == partitions:
            stable_ms = (time.perf_counter() - t0) * 1000
            break
        time.sleep(0.005)
    print(json.dumps({"stable_ms": stable_ms, "sizes": [len(o) for o in owned]}), flush=True)
    sys.stdin.read()  # the parent has measured: leave the group
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda c: c.close(), consumers))


# -- the broker side --------------------------------------------------------------------------


def kip848_unavailable(address: tuple[str, int], timeout_s: float = 60.0) -> str | None:
    """None when the broker serves ConsumerGroupHeartbeat (a join answered without error, then a
    leave); else why not."""
    from conformance.wire import Connection  # noqa: PLC0415 - kio encodes the requests

    conn = Connection(address)
    try:
        if not group_probe.advertises(conn, 68):
            return "the broker does not advertise ConsumerGroupHeartbeat (68) in ApiVersions"
        deadline = time.monotonic() + timeout_s
        group_probe.find_coordinator(conn, "bench-probe", deadline)
        join = {
            "group_id": "bench-probe",
            "member_id": "",
            "member_epoch": 0,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout": 30000,
            "subscribed_topic_names": ["bench-probe"],
            "server_assignor": None,
            "topic_partitions": [],
        }
        answer = group_probe.heartbeat(conn, 68, 0, join, deadline)
        if refused := group_probe.refusal("ConsumerGroupHeartbeat", answer):
            return refused
        leave = {**join, "member_id": answer["member_id"], "member_epoch": -1, "subscribed_topic_names": None}
        conn.call(68, 0, leave)
        return None
    finally:
        conn.close()


def broker_config(kind: str, protocols: list[str]) -> dict[str, object]:
    config: dict[str, object] = {}
    if "consumer" in protocols:
        config.update(CONSUMER_PROTOCOL_CONFIG)
        if kind == "minibroker":
            config.update(MINIBROKER_CONSUMER_CONFIG)
    return config


def measure(bootstrap: str, pid: int, topic: str, protocol: str, members: int) -> dict:
    """One point: {"stable_ms", "cpu_ms"} or {"skipped": reason}. The members have left the
    group when it returns."""
    from bench import workloads as w  # noqa: PLC0415
    from bench.targets import ROOT, cpu_seconds  # noqa: PLC0415

    w.create_topic(bootstrap, topic, PARTITIONS)
    cpu0 = cpu_seconds(pid)
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.consumer_groups", "--child", bootstrap, topic, str(members), protocol],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        answer = json.loads(child.stdout.readline() or "{}")
        cpu_ms = (cpu_seconds(pid) - cpu0) * 1000
        child.stdin.close()
        child.wait(60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
    if answer.get("stable_ms") is None:
        return {"skipped": f"not stable within {DEADLINE_S:.0f} s (member sizes {answer.get('sizes')})"}
    return {"stable_ms": answer["stable_ms"], "cpu_ms": cpu_ms}


def run_broker(
    kind: str, workdir: Path, points: list[tuple[int, str]], runs: int
) -> dict[tuple[int, str], dict]:
    """Every point on one fresh broker of `kind`: (members, protocol) -> medians or a skip."""
    from bench.targets import TARGETS  # noqa: PLC0415

    broker = TARGETS[kind](workdir, broker_config(kind, [p for _, p in points]))
    out: dict[tuple[int, str], dict] = {}
    try:
        broker.start()
        unavailable = None
        if any(p == "consumer" for _, p in points):
            host, port = broker.bootstrap.rsplit(":", 1)
            unavailable = kip848_unavailable((host, int(port)))
            if unavailable:
                print(f"{kind}: consumer protocol skipped: {unavailable}", file=sys.stderr, flush=True)
        for members, protocol in points:
            if protocol == "consumer" and unavailable:
                out[members, protocol] = {"skipped": unavailable}
                continue
            figures = []
            for run in range(runs):
                print(
                    f"{kind}: {members} member(s), {protocol} protocol, run {run + 1} ...",
                    file=sys.stderr,
                    flush=True,
                )
                point = measure(
                    broker.bootstrap, broker.pid, f"{protocol}-{members}-{run}", protocol, members
                )
                if "skipped" in point:
                    figures = [point]
                    break
                figures.append(point)
            if "skipped" in figures[0]:
                out[members, protocol] = figures[0]
            else:
                out[members, protocol] = {
                    key: statistics.median(f[key] for f in figures) for key in ("stable_ms", "cpu_ms")
                } | {"runs": [f["stable_ms"] for f in figures]}
    finally:
        broker.stop(kill=True)
    return out


def markdown(results: dict) -> str:
    brokers = results["brokers"]
    head = ["group members", "protocol"]
    for b in brokers:
        head += [f"{b}: time to a stable group (ms)", f"{b}: broker CPU (ms)"]
    intro = (
        f"Consumer groups {results['date']}, {results['cpus']} CPUs, a {PARTITIONS}-partition topic, "
        f"one broker per column, median of {results['runs']} group(s) per cell."
    )
    return broker_columns_table(
        intro,
        head,
        results["rows"],
        brokers,
        lambda row: [f"{row['members']:,}", row["protocol"]],
        lambda point: [f"{point['stable_ms']:,.0f}", f"{point['cpu_ms']:,.0f}"],
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        run_members(argv[1], argv[2], int(argv[3]), PARTITIONS, argv[4], DEADLINE_S)
        return 0
    import os  # noqa: PLC0415

    from bench.targets import TARGETS, compile_sources  # noqa: PLC0415

    ap = argparse.ArgumentParser(prog="python -m bench.consumer_groups", description=__doc__.split("\n\n")[0])
    ap.add_argument("--brokers", default="minibroker,kafka", help="comma-separated: minibroker, kafka")
    ap.add_argument("--members", default="1,10,100", help="comma-separated group sizes")
    ap.add_argument("--protocols", default="classic,consumer", help="comma-separated: classic, consumer")
    ap.add_argument("--runs", type=int, default=3, help="groups per point on the same broker (median)")
    ap.add_argument("--out", default=str(HERE), help="directory for consumer-groups.json/.md")
    args = ap.parse_args(argv)
    brokers = [b for b in args.brokers.split(",") if b]
    protocols = [p for p in args.protocols.split(",") if p]
    for b in brokers:
        if b not in TARGETS:
            ap.error(f"unknown broker {b!r}; choose from {', '.join(TARGETS)}")
    for p in protocols:
        if p not in ("classic", "consumer"):
            ap.error(f"unknown protocol {p!r}; choose from classic, consumer")
    compile_sources()
    started = time.time()
    points = [(int(m), p) for m in args.members.split(",") if m for p in protocols]
    by_broker = {}
    with tempfile.TemporaryDirectory(prefix="minibroker-bench-cg-") as tmp:
        for b in brokers:
            workdir = Path(tmp) / b
            workdir.mkdir()
            by_broker[b] = run_broker(b, workdir, points, args.runs)
    rows = [{"members": n, "protocol": p, **{b: by_broker[b][n, p] for b in brokers}} for n, p in points]
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "cpus": os.cpu_count(),
        "brokers": brokers,
        "runs": args.runs,
        "rows": rows,
    }
    write_results(args.out, "consumer-groups", results, markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
