"""Scale curves: each point a measurement on a fresh minibroker, tabulated and plotted (PNG).

partitions: 10, 1,000 and 10,000 partitions in topics of at most 5,000 (Kafka refuses a
CreateTopics that would write more than 10,000 metadata records); Metadata latency for them
(median of 5 raw round trips), RSS, and the start to the first Metadata answer after a clean stop and after a
SIGKILL (recovery).

connections: 10, 1,000 and 5,000 open client connections, each having had one Metadata answer;
RSS, broker CPU while they sit idle for 2 s, and Metadata latency on one more connection.

producers: 1, 100 and 1,000 idempotent producers (InitProducerId, then one batch each, spread
over a 10-partition topic, over one connection); RSS, broker CPU per producer, and the start
after a clean stop (producer-state snapshots read back).

data: 100 MB, 1 GB and 10 GB of 1 KB records in a 3-partition topic (DATA_POINTS_MB); the start
after a SIGKILL right after the load (recovery), the start after a clean stop, RSS after it, and
Fetch latency at the start, middle and end of the log (median of raw round trips).

groups: consumer groups of 1, 10 and 100 librdkafka consumers subscribing at once to a
100-partition topic; seconds until every member holds its assignment, and the broker CPU and RSS
that took."""

from __future__ import annotations

import socket
import statistics
import struct
import time
from pathlib import Path

from bench import workloads as w
from bench.targets import Minibroker, cpu_seconds, metadata_answered, recv_exactly, status

MAX_PER_TOPIC = 5000


def metadata_seconds(address: tuple[str, int], topics: list[str]) -> float:
    """One Metadata v1 request for `topics` on a fresh connection, answer read completely."""
    frame = _metadata_frame(topics)
    with socket.create_connection(address, timeout=60) as s:
        t0 = time.perf_counter()
        s.sendall(frame)
        size = struct.unpack(">i", recv_exactly(s, 4))[0]
        recv_exactly(s, size)
        return time.perf_counter() - t0


def partitions_curve(workdir: Path, out_dir: Path, points=(10, 1000, 10000)) -> dict:
    rows = []
    for n in points:
        broker = Minibroker(workdir / f"p{n}")
        try:
            broker.start()
            topics = []
            for i, start in enumerate(range(0, n, MAX_PER_TOPIC)):
                topics.append(f"wide-{i}")
                w.create_topic(broker.bootstrap, topics[-1], min(MAX_PER_TOPIC, n - start))
            address = ("127.0.0.1", broker.port)
            latency = statistics.median(metadata_seconds(address, topics) for _ in range(5))
            rss = status(broker.pid)["VmRSS"]
            broker.stop()
            clean = broker.start()
            broker.stop(kill=True)
            killed = broker.start()
            rows.append([n, latency * 1000, rss, clean * 1000, killed * 1000])
        finally:
            broker.stop()
    columns = [
        "partitions",
        "Metadata for those topics (ms)",
        "RSS (MB)",
        "start after clean stop (ms)",
        "start after SIGKILL (ms)",
    ]
    plot = _plot(out_dir / "curve-partitions.png", "partitions", columns, rows)
    return {"broker": "minibroker", "columns": columns, "rows": rows, "plot": plot}


def connections_curve(workdir: Path, out_dir: Path, points=(10, 1000, 5000)) -> dict:
    import resource  # noqa: PLC0415

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, max(points) + 200)), hard))
    rows = []
    for n in points:
        broker = Minibroker(workdir / f"c{n}")
        conns: list[socket.socket] = []
        try:
            broker.start()
            address = ("127.0.0.1", broker.port)
            for _ in range(n):
                s = socket.create_connection(address, timeout=60)
                s.sendall(_metadata_frame([]))
                conns.append(s)
            for s in conns:  # every connection answered once
                recv_exactly(s, struct.unpack(">i", recv_exactly(s, 4))[0])
            cpu0 = cpu_seconds(broker.pid)
            time.sleep(2)
            idle_cpu_ms = (cpu_seconds(broker.pid) - cpu0) * 1000 / 2
            assert metadata_answered(address)
            latency = statistics.median(metadata_seconds(address, []) for _ in range(5))
            rows.append([n, status(broker.pid)["VmRSS"], idle_cpu_ms, latency * 1000])
        finally:
            for s in conns:
                s.close()
            broker.stop()
    columns = ["connections", "RSS (MB)", "idle broker CPU (ms per s)", "Metadata latency (ms)"]
    plot = _plot(out_dir / "curve-connections.png", "connections", columns, rows)
    return {"broker": "minibroker", "columns": columns, "rows": rows, "plot": plot}


def producers_curve(workdir: Path, out_dir: Path, points=(1, 100, 1000)) -> dict:
    from minibroker.protocol.records import build_batch  # noqa: PLC0415

    from conformance.wire import Connection  # noqa: PLC0415 - kio encodes the requests

    rows = []
    for n in points:
        broker = Minibroker(workdir / f"prod{n}")
        try:
            broker.start()
            w.create_topic(broker.bootstrap, "producers", 10)
            conn = Connection(("127.0.0.1", broker.port), timeout=60)
            cpu0 = cpu_seconds(broker.pid)
            for i in range(n):
                init = conn.call(
                    22,
                    4,
                    {
                        "transactional_id": None,
                        "transaction_timeout_ms": 60000,
                        "producer_id": -1,
                        "producer_epoch": -1,
                    },
                )
                batch = build_batch(
                    [(b"k", b"v" * 100)],
                    producer_id=init["producer_id"],
                    producer_epoch=init["producer_epoch"],
                    base_sequence=0,
                )
                answer = conn.call(
                    0,
                    9,
                    {
                        "transactional_id": None,
                        "acks": -1,
                        "timeout_ms": 30000,
                        "topic_data": [
                            {"name": "producers", "partition_data": [{"index": i % 10, "records": batch}]}
                        ],
                    },
                )
                error = answer["responses"][0]["partition_responses"][0]["error_code"]
                if error:
                    raise RuntimeError(f"producer {i}: Produce error {error}")
            cpu_ms = (cpu_seconds(broker.pid) - cpu0) * 1000 / n
            conn.close()
            rss = status(broker.pid)["VmRSS"]
            broker.stop()
            restart = broker.start()
            rows.append([n, rss, cpu_ms, restart * 1000])
        finally:
            broker.stop()
    columns = [
        "idempotent producers",
        "RSS (MB)",
        "broker CPU per producer (ms)",
        "start after clean stop (ms)",
    ]
    plot = _plot(out_dir / "curve-producers.png", "producers", columns, rows)
    return {"broker": "minibroker", "columns": columns, "rows": rows, "plot": plot}


DATA_POINTS_MB = (100, 1000, 10000)


def data_curve(workdir: Path, out_dir: Path, points=DATA_POINTS_MB) -> dict:
    rows = []
    for mb in points:
        broker = Minibroker(workdir / f"d{mb}")
        try:
            broker.start()
            w.create_topic(broker.bootstrap, "data", 3)
            # ~1 MB per 1000 records; one client, given 10 s per 100 MB (10 GB: about 17 minutes)
            w.produce_idempotent(broker.bootstrap, "data", mb * 1000, 1024, deadline_s=max(180.0, mb / 10))
            broker.stop(kill=True)  # right after the load: what recovery has to read again
            killed = broker.start()
            broker.stop()
            clean = broker.start()
            rss = status(broker.pid)["VmRSS"]
            end = _log_end_offset(broker.bootstrap, "data", 0)
            address = ("127.0.0.1", broker.port)
            fetch_ms = [
                statistics.median(fetch_seconds(address, "data", 0, offset) for _ in range(5)) * 1000
                for offset in (0, end // 2, max(0, end - 100))
            ]
            rows.append([mb, killed * 1000, clean * 1000, rss, *fetch_ms])
        finally:
            broker.stop()
    columns = [
        "data on disk (MB)",
        "start after SIGKILL (ms)",
        "start after clean stop (ms)",
        "RSS after start (MB)",
        "Fetch 1 MB at the start (ms)",
        "Fetch at the middle (ms)",
        "Fetch at the end (ms)",
    ]
    plot = _plot(out_dir / "curve-data.png", "data on disk", columns, rows)
    return {"broker": "minibroker", "columns": columns, "rows": rows, "plot": plot}


def _log_end_offset(bootstrap: str, topic: str, partition: int) -> int:
    from confluent_kafka import Consumer, TopicPartition  # noqa: PLC0415

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-offsets", "log_level": 0})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1]
    finally:
        c.close()


def fetch_seconds(address: tuple[str, int], topic: str, partition: int, offset: int) -> float:
    """One Fetch v4 (up to 1 MB from `offset`) on a fresh connection, answer read completely."""
    name = topic.encode()
    body = (
        struct.pack(">hhih", 1, 4, 9, 5)
        + b"bench"
        + struct.pack(">iiiibi", -1, 0, 1, 1 << 20, 0, 1)
        + struct.pack(">h", len(name))
        + name
        + struct.pack(">iiqi", 1, partition, offset, 1 << 20)
    )
    with socket.create_connection(address, timeout=60) as s:
        t0 = time.perf_counter()
        s.sendall(struct.pack(">i", len(body)) + body)
        recv_exactly(s, struct.unpack(">i", recv_exactly(s, 4))[0])
        return time.perf_counter() - t0


GROUP_DEADLINE_S = 120


def groups_curve(workdir: Path, out_dir: Path, points=(1, 10, 100)) -> dict:
    import json  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from bench.targets import ROOT  # noqa: PLC0415

    partitions = 100
    rows = []
    for n in points:
        broker = Minibroker(workdir / f"g{n}")
        members = None
        try:
            broker.start()
            w.create_topic(broker.bootstrap, "members", partitions)
            cpu0 = cpu_seconds(broker.pid)
            members = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bench.group_members",
                    broker.bootstrap,
                    str(n),
                    str(partitions),
                    str(GROUP_DEADLINE_S),
                ],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            answer = json.loads(members.stdout.readline() or "{}")
            cpu_ms = (cpu_seconds(broker.pid) - cpu0) * 1000
            stable = answer.get("stable_ms")
            rows.append([n, float("nan") if stable is None else stable, cpu_ms, status(broker.pid)["VmRSS"]])
        finally:
            if members is not None:
                members.kill()
                members.wait(30)
            broker.stop(kill=True)  # the killed members' group state is of no further use
    columns = ["group members", "time to a stable group (ms)", "broker CPU for it (ms)", "RSS (MB)"]
    plot = _plot(out_dir / "curve-groups.png", "consumer group size", columns, rows)
    return {"broker": "minibroker", "columns": columns, "rows": rows, "plot": plot}


def _metadata_frame(topics: list[str]) -> bytes:
    body = struct.pack(">hhih", 3, 1, 7, 5) + b"bench" + struct.pack(">i", len(topics))
    for topic in topics:
        body += struct.pack(">h", len(topic)) + topic.encode()
    return struct.pack(">i", len(body)) + body


def _plot(path: Path, name: str, columns: list[str], rows: list[list]) -> str | None:
    try:
        import matplotlib  # noqa: PLC0415 - optional, only for the PNG

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
        import matplotlib.ticker  # noqa: PLC0415
    except ImportError:
        return None
    xs = [r[0] for r in rows]
    fig, axes = plt.subplots(1, len(columns) - 1, figsize=(4 * (len(columns) - 1), 3.4))
    for i, ax in enumerate(axes, start=1):
        ys = [r[i] for r in rows]
        ax.plot(xs, ys, marker="o")
        ax.set_xscale("log")
        if min(ys) > 0:
            ax.set_yscale("log")  # log-log: slope 1 is linear growth, flat is constant
            low, high = min(ys), max(ys)
            if high < 10 * low:  # at least a decade shown, or noise on a flat line looks steep
                middle = (low * high) ** 0.5
                ax.set_ylim(middle / 10**0.5, middle * 10**0.5)
            ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel(columns[0])
        ax.set_title(columns[i], fontsize=9)
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"minibroker scale curve: {name}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path.name


CURVES = {
    "partitions": partitions_curve,
    "connections": connections_curve,
    "producers": producers_curve,
    "data": data_curve,
    "groups": groups_curve,
}
