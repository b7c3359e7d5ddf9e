"""Broker CPU per Fetch request on the read path alone, without a client library's variance.

    python -m bench.fetch_path [--partitions 8] [--requests 2000] [--rounds 7] [--version 12]
                               [--sessions]

One fresh broker with one topic of ``--partitions`` partitions, each holding one 16 KB batch.
This process sends pipelined Fetch requests (5 in flight, max_wait 0) of every partition from
offset 0, so each answer carries every batch (file slices, sendfile), and reads the answers.
v13+ address the topic by id; with ``--sessions`` (v7+) the first request opens a KIP-227 fetch
session and the others are incremental with no partitions (each answer is then empty: nothing
changed). The broker's CPU comes from /proc/PID/task/*/schedstat; each round's figure is CPU /
requests and the median of the rounds is printed, after a warm-up round.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import uuid

from minibroker.protocol.records import build_batch

from bench.produce_path import _answer, _round_trip, broker_with_topic, decoded_answer
from bench.targets import cpu_ns
from conformance.wire import encode_request

_IN_FLIGHT = 5
_INT32 = struct.Struct(">i")


def _topic_id(s: socket.socket) -> uuid.UUID:
    md = decoded_answer(s, 3, 12, encode_request(3, 12, 3, dict(topics=[dict(name="t")])))
    return uuid.UUID(md["topics"][0]["topic_id"])


def _fetch(
    version: int, correlation: int, tid: uuid.UUID, partitions: int, session: tuple[int, int]
) -> bytes:
    session_id, epoch = session
    parts = [
        dict(
            partition=p,
            fetch_offset=0,
            partition_max_bytes=1 << 20,
            current_leader_epoch=-1,
            log_start_offset=-1,
        )
        for p in range(partitions)
    ]
    fields = dict(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=50 << 20,
        isolation_level=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=[dict(topic="t", topic_id=tid, partitions=parts)] if epoch <= 0 else [],
        forgotten_topics_data=[],
        rack_id="",
    )
    request = encode_request(1, version, correlation, fields)
    return _INT32.pack(len(request)) + request


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fetch_path", description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--requests", type=int, default=2000, help="requests per round")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--version", type=int, default=12)
    ap.add_argument("--sessions", action="store_true", help="one fetch session, incremental fetches")
    args = ap.parse_args(argv)
    with broker_with_topic("t", args.partitions) as (proc, s):
        batch = build_batch([(b"k%d" % i, b"x" * 160, [], 1_700_000_000_000 + i) for i in range(100)])
        data = [dict(index=p, records=batch) for p in range(args.partitions)]
        fields = dict(
            transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[dict(name="t", partition_data=data)]
        )
        _round_trip(s, encode_request(0, 9, 2, fields))
        tid = _topic_id(s)
        session = (0, -1)
        if args.sessions:
            s.sendall(_fetch(args.version, 4, tid, args.partitions, (0, 0)))
            body = _answer(s)
            offset = 4 + (1 if args.version >= 12 else 0) + 6  # correlation id, header tags, throttle, error
            session = (_INT32.unpack_from(body, offset)[0], 1)
        correlation = 10
        per_request = []
        for round_no in range(args.rounds + 1):
            frames = []
            for _ in range(args.requests):
                correlation += 1
                frames.append(_fetch(args.version, correlation, tid, args.partitions, session))
                if args.sessions:
                    session = (session[0], session[1] + 1)
            cpu0 = cpu_ns(proc.pid)
            waiting = 0
            for frame in frames:
                s.sendall(frame)
                waiting += 1
                if waiting >= _IN_FLIGHT:
                    _answer(s)
                    waiting -= 1
            while waiting:
                _answer(s)
                waiting -= 1
            if round_no:  # round 0 warms up
                per_request.append((cpu_ns(proc.pid) - cpu0) / args.requests / 1000)
    print("broker CPU per Fetch (us), by round:", " ".join(f"{x:.1f}" for x in per_request))
    mode = "incremental session" if args.sessions else "sessionless"
    print(
        f"median {statistics.median(per_request):.1f} us/request; Fetch v{args.version}, "
        f"{args.partitions} partitions, {mode}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
