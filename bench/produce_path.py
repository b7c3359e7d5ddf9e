"""Broker CPU per record on the Produce path alone, without a client library's variance.

    python -m bench.produce_path [--records 1000] [--batches 300] [--rounds 7] [--partitions 1]

One fresh broker; this process writes pipelined Produce v9 requests (5 in flight, acks=-1), each
with one idempotent batch per partition of ``--records`` records (100 B values, keys of one or two
bytes, as bench/workloads.py sends), and reads the answers. The broker's CPU comes from
/proc/PID/task/*/schedstat (nanoseconds, every thread), user and system time from /proc/PID/stat;
each round's figure is CPU / records, and the median of the rounds is printed. A warm-up round
first pays the one-time costs (the Produce handler's imports). This is the
micro-benchmark of the validator and append path (storage/log_validator.py,
storage/_record_walk.c); `make bench` gives the side-by-side figures with librdkafka.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import statistics
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator

from crc32c import crc32c
from minibroker.protocol.records import build_batch

from bench.targets import TICK, cpu_ns, recv_exactly, start_broker, user_system_ticks
from conformance.wire import decode_kio, encode_request, response_body

_IN_FLIGHT = 5
_INT32 = struct.Struct(">i")


def _answer(s: socket.socket) -> bytes:
    return recv_exactly(s, _INT32.unpack(recv_exactly(s, 4))[0])


def decoded_answer(s: socket.socket, api_key: int, version: int, request: bytes) -> dict:
    """Send one encoded request; its answer decoded by kio, as plain values (conformance.wire)."""
    return decode_kio(api_key, version, response_body(api_key, version, _round_trip(s, request)))


def error_codes(answer) -> set[int]:
    """Every non-zero error code in a decoded answer (top-level and per partition)."""
    if isinstance(answer, list):
        return set().union(*(error_codes(item) for item in answer))
    if not isinstance(answer, dict):
        return set()
    found = {v for k, v in answer.items() if k.endswith("error_code") and v}
    return found.union(*(error_codes(v) for k, v in answer.items() if not k.endswith("error_code")))


def _round_trip(s: socket.socket, request: bytes) -> bytes:
    s.sendall(_INT32.pack(len(request)) + request)
    return _answer(s)


def produce_request(
    correlation: int,
    batch: bytearray,
    sequence: int,
    topic: str,
    partitions: int,
    transactional_id: str | None = None,
) -> bytes:
    """A Produce v9 request (acks=-1) with `batch`, for each of the topic's first `partitions`
    partitions. `batch` is changed in place: `sequence` becomes its baseSequence, now its
    timestamps, and its CRC is recomputed."""
    now = int(time.time() * 1000)
    struct.pack_into(">i", batch, 53, sequence)  # baseSequence
    struct.pack_into(">qq", batch, 27, now, now)  # baseTimestamp, maxTimestamp
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    data = [dict(index=p, records=bytes(batch)) for p in range(partitions)]
    fields = dict(
        transactional_id=transactional_id,
        acks=-1,
        timeout_ms=30000,
        topic_data=[dict(name=topic, partition_data=data)],
    )
    return encode_request(0, 9, correlation, fields)


class ProduceLoad:
    """Frames of Produce requests for one idempotent producer, sequences continuing."""

    def __init__(self, s: socket.socket, records: int, partitions: int) -> None:
        self.s, self.records, self.partitions = s, records, partitions
        self.correlation = 100
        self.sequence = 0
        self.producer_id, self.epoch = self._init_producer_id()
        keys = [str(i % 64).encode() for i in range(records)]
        self.template = bytearray(
            build_batch(
                [(k, b"x" * 100) for k in keys],
                producer_id=self.producer_id,
                producer_epoch=self.epoch,
                base_sequence=0,
            )
        )

    def _init_producer_id(self) -> tuple[int, int]:
        fields = dict(transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
        answer = decoded_answer(self.s, 22, 4, encode_request(22, 4, 2, fields))
        if answer["error_code"]:
            raise RuntimeError(f"InitProducerId failed with error {answer['error_code']}")
        return answer["producer_id"], answer["producer_epoch"]

    def frames(self, count: int) -> list[bytes]:
        out = []
        for _ in range(count):
            self.correlation += 1
            request = produce_request(self.correlation, self.template, self.sequence, "t", self.partitions)
            self.sequence += self.records
            out.append(_INT32.pack(len(request)) + request)
        return out

    def send(self, frames: list[bytes]) -> None:
        """Send with at most _IN_FLIGHT requests unanswered; raise on an error answer."""
        waiting = 0
        last = b""
        for frame in frames:
            self.s.sendall(frame)
            waiting += 1
            if waiting >= _IN_FLIGHT:
                last = _answer(self.s)
                waiting -= 1
        while waiting:
            last = _answer(self.s)
            waiting -= 1
        # Produce v9: correlation id, header tags, topics (1), name "t", partitions (n), index, error
        error = struct.unpack_from(">h", last, 13)[0]
        if error:
            raise RuntimeError(f"Produce answered error {error}")


@contextlib.contextmanager
def broker_with_topic(
    topic: str, partitions: int, extra_args: tuple[str, ...] = ()
) -> Iterator[tuple[subprocess.Popen, socket.socket]]:
    """A fresh broker on a temporary directory with `topic` created, and one TCP_NODELAY
    connection to it; the broker (started with `extra_args`) is stopped on the way out."""
    with tempfile.TemporaryDirectory(prefix="bench-path-") as data_dir:
        proc, port, _ = start_broker(data_dir, extra_args)
        try:
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                spec = dict(
                    name=topic, num_partitions=partitions, replication_factor=1, assignments=[], configs=[]
                )
                _round_trip(
                    s, encode_request(19, 4, 1, dict(topics=[spec], timeout_ms=10000, validate_only=False))
                )
                yield proc, s
        finally:
            proc.terminate()
            proc.wait(30)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.produce_path", description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1000, help="records per batch")
    ap.add_argument("--batches", type=int, default=300, help="requests per round")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--partitions", type=int, default=1, help="batches (partitions) per request")
    args = ap.parse_args(argv)
    with broker_with_topic("t", args.partitions) as (proc, s):
        load = ProduceLoad(s, args.records, args.partitions)
        load.send(load.frames(20))  # warm-up: one-time costs
        per_record, user, system = [], [], []
        records = args.batches * args.records * args.partitions
        for _ in range(args.rounds):
            frames = load.frames(args.batches)
            cpu0, (user0, sys0) = cpu_ns(proc.pid), user_system_ticks(proc.pid)
            load.send(frames)
            cpu1, (user1, sys1) = cpu_ns(proc.pid), user_system_ticks(proc.pid)
            per_record.append((cpu1 - cpu0) / records / 1000)
            user.append((user1 - user0) / TICK / records * 1e6)
            system.append((sys1 - sys0) / TICK / records * 1e6)
    print("broker CPU per record (us), by round:", " ".join(f"{x:.3f}" for x in per_record))
    print(
        f"median {statistics.median(per_record):.3f} us/record "
        f"(user {statistics.median(user):.2f}, system {statistics.median(system):.2f}); "
        f"{args.records} records x {args.partitions} partitions per request"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
