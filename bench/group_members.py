"""A consumer group of N librdkafka members in a child process (python -m bench.group_members
BOOTSTRAP N PARTITIONS DEADLINE_S): subscribes them all at once and prints one JSON line,
{"stable_ms": ..., "sizes": [...]}, when every member holds its assignment and together they cover
every partition (stable_ms null if that does not happen before the deadline). The parent kills
the process afterwards: closing a hundred members (each a LeaveGroup and a rebalance) would take
longer than the measurement, and killed members cost the broker nothing once it stops."""

from __future__ import annotations

import json
import sys
import time

from confluent_kafka import Consumer


def main(bootstrap: str, members: int, partitions: int, deadline_s: float) -> None:
    # a short heartbeat so the figure shows the broker's work, not the client's timer (members
    # learn of a rebalance from their next heartbeat: 3 s by default)
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": "bench-group",
        "heartbeat.interval.ms": 100,
        "session.timeout.ms": 30000,
        "log_level": 0,
    }
    consumers = [Consumer(conf) for _ in range(members)]
    t0 = time.perf_counter()
    for c in consumers:
        c.subscribe(["members"])
    deadline = time.monotonic() + deadline_s
    stable_ms = None
    sizes: list[int] = []
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0)  # serves the rebalance callbacks
        sizes = [len(c.assignment()) for c in consumers]
        if min(sizes) > 0 and sum(sizes) == partitions:
            stable_ms = (time.perf_counter() - t0) * 1000
            break
        time.sleep(0.005)
    print(json.dumps({"stable_ms": stable_ms, "sizes": sizes}), flush=True)
    sys.stdin.read()  # wait to be killed


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
