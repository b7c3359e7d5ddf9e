"""The long fuzz run of issue 9 (not part of `make test`):

    .venv/bin/python -m tests.support.fuzz_run [--requests 50000] [--batches 2000] [--seed 1]

Starts a broker subprocess, sends mutated requests and CRC-valid random batches (the same
generators as tests/acceptance/test_fuzz.py), and prints what happened: answers, closed
connections, accepted/rejected batches by error code, batches stored but undecodable by
kafka-python, log-end-offset mismatches, a librdkafka read-back of every stored batch,
unhandled handler exceptions, and whether the broker is still alive. Exit code 0 only if every property held.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

from tests.support import fuzzing as fz
from tests.support.broker import BrokerFactory
from tests.support.wire import WireClient


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=50_000)
    ap.add_argument("--batches", type=int, default=2_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    factory = BrokerFactory(Path(tempfile.mkdtemp(prefix="minibroker-fuzz-")))
    broker = fz.start_fuzz_broker(factory)
    report: dict = {"seed": args.seed, "data dir": str(factory.base_dir)}
    try:
        t0 = time.monotonic()
        seeds = fz.seed_frames(rng)
        sender = fz.RequestSender(broker, wait_s=0.2)
        died_at = None
        sent = 0
        for i in range(args.requests):
            sent += 1
            sender.send(fz.mutate_frame(rng.choice(seeds)[2], rng))
            if i % 5000 == 4999 and not broker.running:
                died_at = i
                break
        sender.close()
        report["requests"] = {
            "sent": sent,
            **sender.counts,
            "broker died at": died_at,
            "seconds": round(time.monotonic() - t0, 1),
        }
        t0 = time.monotonic()
        rng = random.Random(f"batches-{args.seed}")  # independent of the request phase
        outcome = fz.BatchOutcome()
        mutated = 0
        with WireClient.to(broker) as c:
            for _ in range(args.batches):
                batch = fz.random_batch(rng)
                if rng.random() < 0.9:
                    batch = fz.mutate_batch(batch, rng)
                    mutated += 1
                fz.produce_and_check(c, fz.BATCH_TOPIC, batch, outcome)
        report["batches"] = {
            "sent": args.batches,
            "mutated": mutated,
            "accepted": outcome.accepted,
            "rejected by error code": dict(sorted(outcome.rejected.items())),
            "stored but undecodable": len(outcome.undecodable),
            "log end offset mismatches": len(outcome.leo_mismatch),
            "seconds": round(time.monotonic() - t0, 1),
        }
        with WireClient.to(broker) as c:
            end = c.list_offsets(fz.BATCH_TOPIC, 0, -1).offset
        rd = fz.librdkafka_read(broker, fz.BATCH_TOPIC, end)
        report["librdkafka read-back"] = {
            **rd,
            "consumer errors": len(rd["consumer errors"]),
            "log end offset": end,
        }
        report["unhandled handler exceptions"] = len(fz.handler_failures(broker))
        report["broker alive"] = fz.alive(broker)
        print(json.dumps(report, indent=1))
        for item in (outcome.undecodable + outcome.leo_mismatch)[:5]:
            print("example:", item, file=sys.stderr)
        for line in fz.handler_failures(broker)[:5]:
            print("handler failure:", line[:500], file=sys.stderr)
    finally:
        factory.teardown(False)
    ok = (
        report["broker alive"]
        and not outcome.undecodable
        and not outcome.leo_mismatch
        and report["unhandled handler exceptions"] == 0
        and rd["reached end"]
        and not rd["consumer errors"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
