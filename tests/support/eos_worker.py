"""A consume-transform-produce worker for the exactly-once acceptance test (issue 5), run as its
own process so the test can SIGKILL it: a confluent-kafka group member (read_committed, manual
commits) and a transactional producer with a fixed transactional.id, so that a replacement fences
the killed instance and aborts its open transaction.

Each input record becomes one output record (value b"out-" + input value, same partition) in a
transaction that also carries the consumed positions (send_offsets_to_transaction with the group
metadata). Progress is reported on stdout, one flushed line per step, so the test can kill the
worker at a chosen point of a transaction:

    READY                 after init_transactions
    PRODUCED <n>          output records written and flushed (transaction open, data in the log)
    OFFSETS               offsets added to the transaction (pending transactional offset commit)
    COMMITTED <n>         transaction committed
    ABORTED <reason>      transaction aborted after an abortable error (consumer rewound)

With --pause S the worker waits S seconds after PRODUCED and after OFFSETS, giving the test a
window to kill it inside an open transaction. SIGTERM stops it cleanly between transactions.

Usage: python tests/support/eos_worker.py BOOTSTRAP INPUT OUTPUT GROUP TXN_ID [--batch N] [--pause S]
       [--group-protocol classic|consumer]
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

OP_TIMEOUT = 30.0


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("group")
    ap.add_argument("txn_id")
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--pause", type=float, default=0.0)
    ap.add_argument("--session-timeout-ms", type=int, default=1500)
    # "consumer": a KIP-848 group member (the broker sets its session timeout and heartbeats)
    ap.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
    args = ap.parse_args(argv)
    if args.group_protocol == "classic":
        membership = {
            "session.timeout.ms": args.session_timeout_ms,
            "heartbeat.interval.ms": max(100, args.session_timeout_ms // 5),
        }
    else:  # librdkafka refuses the classic-only settings in this mode
        membership = {"group.protocol": "consumer"}

    stopping = False

    def on_term(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **membership,
            # also the JoinGroup rebalance timeout: deliberately longer than the test's per-step
            # deadlines, so a dead member must be expired by its session timeout, not this
            "max.poll.interval.ms": 60000,
            "fetch.wait.max.ms": 100,
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "transactional.id": args.txn_id,
            "transaction.timeout.ms": 30000,
            "linger.ms": 5,
            "socket.timeout.ms": 10000,
        }
    )
    producer.init_transactions(OP_TIMEOUT)
    say("READY")
    consumer.subscribe([args.input])

    def rewind() -> None:
        assignment = consumer.assignment()
        if not assignment:
            return
        for tp in consumer.committed(assignment, timeout=OP_TIMEOUT):
            consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else -2))

    try:
        while not stopping:
            msgs = consumer.consume(num_messages=args.batch, timeout=0.2)
            errors = [m.error() for m in msgs if m.error() is not None]
            for err in errors:
                if err.fatal():
                    raise KafkaException(err)
            msgs = [m for m in msgs if m.error() is None]
            if not msgs:
                continue
            producer.begin_transaction()
            try:
                for m in msgs:
                    producer.produce(
                        args.output, value=b"out-" + m.value(), key=m.key(), partition=m.partition()
                    )
                remaining = producer.flush(OP_TIMEOUT)
                assert remaining == 0, f"{remaining} records not delivered"
                say(f"PRODUCED {len(msgs)}")
                if args.pause:
                    time.sleep(args.pause)
                positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
                producer.send_offsets_to_transaction(
                    positions, consumer.consumer_group_metadata(), OP_TIMEOUT
                )
                say("OFFSETS")
                if args.pause:
                    time.sleep(args.pause)
                producer.commit_transaction(OP_TIMEOUT)
                say(f"COMMITTED {len(msgs)}")
            except KafkaException as exc:
                err = exc.args[0]
                if not err.txn_requires_abort():
                    raise
                producer.abort_transaction(OP_TIMEOUT)
                say(f"ABORTED {err.name()}")
                rewind()
    finally:
        consumer.close()
    say("STOPPED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
