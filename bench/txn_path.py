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
import time

from minibroker.protocol.records import build_batch

from bench.produce_path import broker_with_topic, decoded_answer, error_codes, produce_request
from bench.targets import cpu_ns
from conformance.wire import encode_request

_TOPIC = "t"
_TXN_ID = "txn-path"
#: Answers that mean "ask again": the coordinator is loading or a previous transaction is still
#: being completed (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, CONCURRENT_TRANSACTIONS).
_RETRIABLE = {14, 15, 51}


class OneRecordTransactions:
    """One transactional producer's requests, sequences and correlation ids continuing;
    `retries` counts the answers that asked it to try again."""

    def __init__(self, s: socket.socket, partitions: int) -> None:
        self.s, self.partitions = s, partitions
        self.correlation = 100
        self.sequence = 0
        self.retries = 0
        fields = dict(
            transactional_id=_TXN_ID, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1
        )
        # the first call creates __transaction_state, and the coordinator loads it: retried
        answer = self._call(22, 4, fields)
        self.producer_id, self.epoch = answer["producer_id"], answer["producer_epoch"]
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

    def _call(self, api_key: int, version: int, fields: dict, deadline_s: float = 30.0):
        """The answer to one request; retriable errors are retried, others raise."""
        deadline = time.monotonic() + deadline_s
        while True:
            request = encode_request(api_key, version, self._next_correlation(), fields)
            answer = decoded_answer(self.s, api_key, version, request)
            errors = error_codes(answer)
            if not errors:
                return answer
            if not errors <= _RETRIABLE or time.monotonic() > deadline:
                raise RuntimeError(f"api key {api_key} answered errors {sorted(errors)}")
            self.retries += 1
            time.sleep(0.01)

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
            request = produce_request(
                self._next_correlation(), self.template, self.sequence, _TOPIC, self.partitions, _TXN_ID
            )
            self.sequence += 1
            errors = error_codes(decoded_answer(self.s, 0, 9, request))
            if errors:
                raise RuntimeError(f"Produce answered errors {sorted(errors)}")
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
    if txns.retries:
        print(f"{txns.retries} answers asked to retry (10 ms pause each, inside the timed rounds)")
    print(
        f"median {statistics.median(rates):,.0f} commits/s, {statistics.median(cpu_ms):.3f} ms broker CPU "
        f"per transaction; one record to each of {args.partitions} partition(s) per transaction"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
