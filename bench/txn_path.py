"""Commits per second and broker CPU of one-record transactions without a client library's costs.

    python -m bench.txn_path [--transactions 2000] [--rounds 5] [--partitions 1]

One fresh broker; this process plays one transactional producer with raw Kafka requests, in the
order librdkafka sends them for `begin_transaction(); produce(); commit_transaction()`:
AddPartitionsToTxn, one Produce of a one-record transactional batch per partition (acks=-1),
EndTxn(commit), each sent when the previous one is answered. So the rate is what the broker
allows one producer (three round trips over loopback plus the broker's work), and the CPU is the
broker's own per transaction (/proc/PID/task/*/schedstat, every thread). `make bench` measures the
same loop through librdkafka, which adds its own scheduling between the requests; this is the
quick loop for the transaction path (coordinator/transactions.py).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import time

from kio.serial import entity_reader
from minibroker.protocol.codec import response_class
from minibroker.protocol.record_batch import build_batch

from bench.produce_path import _answer, _round_trip, broker_with_topic, produce_request
from bench.targets import cpu_ns
from conformance.wire import encode_request, response_body

_INT32 = struct.Struct(">i")
_TOPIC = "t"
_TXN_ID = "txn-path"
#: Answers that mean "ask again": the coordinator is loading or a previous transaction is still
#: being completed (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, CONCURRENT_TRANSACTIONS).
_RETRIABLE = {14, 15, 51}


def _errors(api_key: int, version: int, frame: bytes) -> set[int]:
    """Every error code in an answer (top-level and per partition)."""
    entity, _ = entity_reader(response_class(api_key, version))(response_body(api_key, version, frame), 0)
    found: set[int] = set()

    def walk(value) -> None:
        if isinstance(value, tuple):
            for item in value:
                walk(item)
        elif hasattr(value, "__dataclass_fields__"):
            for name in value.__dataclass_fields__:
                field = getattr(value, name)
                if name.endswith("error_code"):
                    found.add(int(field))
                else:
                    walk(field)

    walk(entity)
    return found - {0}


class OneRecordTransactions:
    """One transactional producer's requests, sequences and correlation ids continuing."""

    def __init__(self, s: socket.socket, partitions: int) -> None:
        self.s, self.partitions = s, partitions
        self.correlation = 100
        self.sequence = 0
        self.producer_id, self.epoch = self._init_producer_id()
        self.template = bytearray(
            build_batch(
                [(b"k", b"x" * 100)],
                producer_id=self.producer_id,
                producer_epoch=self.epoch,
                base_sequence=0,
                transactional=True,
            )
        )

    def _next_correlation(self) -> int:
        self.correlation += 1
        return self.correlation

    def _call(self, api_key: int, version: int, fields: dict, deadline_s: float = 30.0) -> None:
        """Send one request and wait for its answer; retry retriable errors, raise on others."""
        deadline = time.monotonic() + deadline_s
        while True:
            answer = _round_trip(self.s, encode_request(api_key, version, self._next_correlation(), fields))
            errors = _errors(api_key, version, answer)
            if not errors:
                return
            if not errors <= _RETRIABLE or time.monotonic() > deadline:
                raise RuntimeError(f"api key {api_key} answered errors {sorted(errors)}")
            time.sleep(0.01)

    def _init_producer_id(self) -> tuple[int, int]:
        fields = dict(
            transactional_id=_TXN_ID, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1
        )
        deadline = time.monotonic() + 30
        while True:  # the first call creates __transaction_state; the coordinator then loads it
            body = _round_trip(self.s, encode_request(22, 4, self._next_correlation(), fields))
            # InitProducerId v4: correlation id, header tags, throttle, error, producer id, epoch
            error, producer_id, epoch = struct.unpack_from(">hqh", body, 9)
            if error == 0:
                return producer_id, epoch
            if error not in _RETRIABLE or time.monotonic() > deadline:
                raise RuntimeError(f"InitProducerId failed with error {error}")
            time.sleep(0.01)

    def _produce_frame(self) -> bytes:
        correlation = self._next_correlation()
        request = produce_request(correlation, self.template, self.sequence, _TOPIC, self.partitions, _TXN_ID)
        self.sequence += 1
        return request

    def run(self, count: int) -> None:
        add = dict(
            v3_and_below_transactional_id=_TXN_ID,
            v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.epoch,
            v3_and_below_topics=[dict(name=_TOPIC, partitions=list(range(self.partitions)))],
        )
        end = dict(
            transactional_id=_TXN_ID, producer_id=self.producer_id, producer_epoch=self.epoch, committed=True
        )
        for _ in range(count):
            self._call(24, 3, add)
            request = self._produce_frame()
            self.s.sendall(_INT32.pack(len(request)) + request)
            answer = _answer(self.s)
            if _errors(0, 9, answer):
                raise RuntimeError(f"Produce answered errors {sorted(_errors(0, 9, answer))}")
            self._call(26, 3, end)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.txn_path", description=__doc__.split("\n\n")[0])
    ap.add_argument("--transactions", type=int, default=2000, help="transactions per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--partitions", type=int, default=1, help="partitions each transaction writes")
    args = ap.parse_args(argv)
    with broker_with_topic(_TOPIC, args.partitions) as (proc, s):
        txns = OneRecordTransactions(s, args.partitions)
        txns.run(50)  # warm-up: one-time costs (handler imports, first segment of each log)
        rates, cpu_ms = [], []
        for _ in range(args.rounds):
            cpu0, t0 = cpu_ns(proc.pid), time.perf_counter()
            txns.run(args.transactions)
            elapsed, cpu1 = time.perf_counter() - t0, cpu_ns(proc.pid)
            rates.append(args.transactions / elapsed)
            cpu_ms.append((cpu1 - cpu0) / args.transactions / 1e6)
    print("commits/s by round:", " ".join(f"{r:,.0f}" for r in rates))
    print("broker CPU per transaction (ms) by round:", " ".join(f"{c:.3f}" for c in cpu_ms))
    print(
        f"median {statistics.median(rates):,.0f} commits/s, {statistics.median(cpu_ms):.3f} ms broker CPU "
        f"per transaction; one record to each of {args.partitions} partition(s) per transaction"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
