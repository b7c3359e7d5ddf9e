"""`python -m conformance [--only GLOB ...] [--report FILE] [--transaction-version N]`: start both
brokers, run, compare. `--transaction-version 1` finalizes transaction.version=1 on both brokers
(UpdateFeatures) before the cases, so the clients run the classic transaction flow.

Exit status 0 when every difference is listed in deviations.toml, 1 otherwise, 2 when a broker
could not be started. Every process started here is stopped before exit, also on a timeout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conformance.brokers import SHARED_CONFIG, MiniBroker
from conformance.cases.e_txn_v2 import set_transaction_version
from conformance.reference_kafka import ReferenceKafka
from conformance.runner import (
    classify,
    compare_case,
    load_deviations,
    run_case,
    selected_cases,
    table,
    uncovered,
)

#: Whole-run bound (Kafka's start on a loaded machine can take over a minute).
RUN_TIMEOUT_S = 1200


class RunTimeout(Exception):
    pass


def _on_alarm(_signum, _frame):
    raise RunTimeout(f"conformance run exceeded {RUN_TIMEOUT_S}s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance")
    parser.add_argument("--only", action="append", default=[], help="run cases matching this glob")
    parser.add_argument("--report", type=Path, help="write every mismatch as JSON here")
    parser.add_argument("--all", action="store_true", help="also print intended deviations")
    parser.add_argument(
        "--transaction-version",
        type=int,
        help="finalize transaction.version at this level on both brokers first",
    )
    args = parser.parse_args(argv)

    deviations = load_deviations()
    cases = selected_cases(args.only)
    workdir = Path(tempfile.mkdtemp(prefix="conformance-"))
    kafka = ReferenceKafka(workdir / "kafka", SHARED_CONFIG)
    mini = MiniBroker(workdir / "minibroker", SHARED_CONFIG)
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(RUN_TIMEOUT_S)
    started = time.monotonic()
    try:
        try:
            with ThreadPoolExecutor(2) as pool:
                for f in [pool.submit(kafka.start), pool.submit(mini.start)]:
                    f.result()
        except Exception as exc:  # noqa: BLE001
            print(
                f"conformance: could not start the brokers: {exc}\n{kafka.log_tail()}\n{mini.log_tail()}",
                file=sys.stderr,
            )
            return 2
        print(
            f"conformance: minibroker {mini.address}, Apache Kafka {kafka.address} "
            f"(both up after {time.monotonic() - started:.1f}s); {len(cases)} cases",
            flush=True,
        )
        addresses = {"minibroker": mini.address, "kafka": kafka.address}
        for side, session in run_case("warm-up", lambda s: s.wait_coordinators(), addresses).items():
            if session.error:
                print(f"conformance: {side} not ready: {session.error}", file=sys.stderr)
                return 2
        if args.transaction_version is not None:
            level = args.transaction_version
            for side, session in run_case(
                "features", lambda s: set_transaction_version(s, level), addresses
            ).items():
                if session.error:
                    print(f"conformance: {side}: {session.error}", file=sys.stderr)
                    return 2
        compared, mismatches, covered = 0, [], set()
        for name, fn in cases:
            sessions = run_case(name, fn, addresses)
            covered |= {(r.api_key, r.version) for r in sessions["minibroker"].records}
            n, found = compare_case(name, sessions)
            compared += n
            mismatches += found
        classify(mismatches, deviations)
    finally:
        signal.alarm(0)
        mini.stop()
        kafka.stop()
    unexpected = [m for m in mismatches if m.reason is None]
    intended = [m for m in mismatches if m.reason is not None]
    failing_cases = {m.case for m in unexpected}
    if args.all and intended:
        print("\nIntended deviations (conformance/deviations.toml):\n" + table(intended))
    if unexpected:
        print("\nUnexpected differences (minibroker vs Apache Kafka):\n" + table(unexpected))
    missing = [] if args.only else uncovered(covered)
    if missing:
        print("\nAdvertised API versions no case sends: " + ", ".join(f"{k} v{v}" for k, v in missing))
    unused = [d for d in deviations if d.used == 0 and not args.only]
    for d in unused:
        print(f"note: deviation no longer seen: case={d.case!r} path={d.path!r}")
    if args.report:
        args.report.write_text(json.dumps([m.__dict__ for m in mismatches], indent=1, default=str))
    print(
        f"\nconformance: {len(cases)} cases, {compared} answers compared; "
        f"{len(intended)} intended differences; {len(unexpected)} unexpected differences "
        f"in {len(failing_cases)} answers ({time.monotonic() - started:.0f}s)"
    )
    print(f"{compared - len(failing_cases)} passed, {len(failing_cases)} failed")
    if unexpected or missing:
        print(f"broker logs kept in {workdir}")
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
