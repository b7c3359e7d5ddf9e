"""`python -m bench.history`: the issue-13 targets after a long history (1,000,000 one-record
transactions and 1,000,000 offset commits on one group by default).

Through the network that history takes hours (a librdkafka transactional producer does about
200 transactions/s against minibroker), so it is **generated in-process**: a real ``Broker``
(broker/state.py) is started on a fresh data directory with the broker's defaults, and its own
objects are driven the way the request handlers drive them:

* per transaction: ``TransactionCoordinator.add_partitions`` (AddPartitionsToTxn) ->
  ``verify_produce`` + ``PartitionLog.append`` of a one-record transactional batch (Produce) ->
  ``TransactionCoordinator.end_txn(commit=True)`` (EndTxn: PrepareCommit, COMMIT marker,
  CompleteCommit), after one ``init_producer_id`` (InitProducerId);
* per offset commit: ``GroupCoordinator.commit_offsets`` for group ``history-group`` without a
  generation (what a consumer's ``commit()`` without ``subscribe()`` sends, as bench/growth.py).

Why the data directory is the one a broker would have after that history: every byte on disk is
written by the same coordinator and storage code (the same records, batches, segment rolls,
indexes, producer snapshots and checkpoints), and the broker's own background duties run on the
same event loop as in ``python -m minibroker``: the log cleaner (worker process, every
``log.cleaner.backoff.ms``), retention and expiration. Two things differ and neither changes what
ends up on disk: no sockets (the request bytes are not what is stored), and fsyncs are skipped
while generating (a fsync changes when bytes are durable, not which bytes; the final clean stop
flushes everything as usual). The generator is faster than the network path (~15x), so the
cleaner sees more dirty data per pass than at 200 transactions/s; the figures are measured after
the cleaner has caught up (no log qualifies for a pass any more), and the size right
after the last record is reported too.

Then the real broker process (`python -m minibroker`) is started on that data directory and timed
from launch to its first Metadata answer: after a clean stop, and after a SIGKILL (each the
median of ``--runs`` starts), with the broker's own per-phase figures from its log.

Last, the SIGKILL that matters after a long history: ``--tail`` transactions appended after the
last recovery-point checkpoint (``append_unflushed_tail``), then a start, ``--runs`` times.

    python -m bench.history [--transactions 1000000] [--commits 1000000] [--runs 3]
                            [--data-dir DIR]  (keep the generated history; reused if present)
                            [--tail 27000]

Results go to bench/history-results.json. `make bench BENCH_ARGS="history [options]"` runs it
(as does the command above); never part of `make test`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.targets import ROOT, compile_sources, cpu_seconds, wait_for_metadata
from conformance.ports import free_low_port

__all__ = ["generate", "measure_startups", "main"]

TOPIC = "history"
TXN_ID = "history-txn"
GROUP = "history-group"
INTERNAL = ("__transaction_state", "__consumer_offsets")


def _no_fsync():
    """The broker's Durability without fsync rounds, while generating (what is written is
    unchanged; the clean stop at the end flushes everything)."""
    from minibroker.broker.durability import Durability

    class NoFsync(Durability):
        async def sync(self, logs) -> None:
            return None

    return NoFsync()


def dir_bytes(data_dir: str, topic: str, suffix: str = "") -> int:
    path = Path(data_dir) / f"{topic}-0"
    if not path.exists():
        return 0
    return sum(f.stat().st_size for f in path.rglob(f"*{suffix}") if f.is_file())


def internal_sizes(data_dir: str) -> dict[str, float]:
    out = {}
    for topic in INTERNAL:
        name = topic.strip("_")
        out[f"{name}_log_mb"] = round(dir_bytes(data_dir, topic, ".log") / 1e6, 3)
        out[f"{name}_dir_mb"] = round(dir_bytes(data_dir, topic) / 1e6, 3)
    return out


async def _generate(data_dir: str, transactions: int, commits: int, backoff_ms: int) -> dict:
    import structlog
    from minibroker.broker.cli import build_config, parse_args
    from minibroker.broker.coordinator_runtime import CoordinatorRuntime
    from minibroker.broker.logging import configure
    from minibroker.broker.state import Broker
    from minibroker.protocol.errors import ErrorCode
    from minibroker.protocol.records import build_batch

    configure("warning", "console")
    structlog.get_logger()  # logging configured before the broker's modules log
    config = build_config(
        parse_args(["--port", "0", "--data-dir", data_dir, "--set", f"log.cleaner.backoff.ms={backoff_ms}"])
    )
    broker = Broker(config)
    broker.durability = _no_fsync()
    broker.coordinators = CoordinatorRuntime(broker.durability)  # the driver waits on that one
    await broker.start()
    out: dict = {}
    try:
        broker.logs.create_topic(TOPIC, 1, {})
        plog = broker.get_log(TOPIC, 0)
        txns = broker.txns
        err, pid, epoch = await broker.coordinators.run(txns, txns.init_producer_id(TXN_ID, 60_000))
        assert err == ErrorCode.none, err
        started = time.perf_counter()
        for seq in range(transactions):
            err = await broker.coordinators.run(txns, txns.add_partitions(TXN_ID, pid, epoch, [(TOPIC, 0)]))
            assert err == ErrorCode.none, err
            batch = build_batch(
                [(None, b"x")],
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq % (1 << 31),
                transactional=True,
            )
            txns.verify_produce(TXN_ID, TOPIC, 0, batch, 11)
            plog.append(batch)
            err = await broker.coordinators.run(txns, txns.end_txn(TXN_ID, pid, epoch, True))
            assert err == ErrorCode.none, err
            if seq % 200 == 0:
                await asyncio.sleep(0)  # the broker's duties (cleaner, timers) get their turn
                if seq % 100_000 == 0 and seq:
                    print(f"  {seq} transactions", file=sys.stderr, flush=True)
        out["transactions_per_s"] = round(transactions / (time.perf_counter() - started))
        started = time.perf_counter()
        groups = broker.groups
        for i in range(commits):
            result = await broker.coordinators.run(
                groups, groups.commit_offsets(GROUP, "", None, -1, [(TOPIC, 0, i + 1, -1, None)])
            )
            assert set(result.values()) == {0}, result
            if i % 200 == 0:
                await asyncio.sleep(0)
                if i % 100_000 == 0 and i:
                    print(f"  {i} offset commits", file=sys.stderr, flush=True)
        out["commits_per_s"] = round(commits / (time.perf_counter() - started))
        out["right_after_history"] = internal_sizes(data_dir)
        # then the broker idles: the cleaner's duty runs (without waiting out its backoff here)
        # until no log qualifies for a pass any more
        cleaner, deadline = broker.logs.cleaner, time.monotonic() + 900
        while time.monotonic() < deadline:
            if not cleaner.maybe_clean():
                break
            await asyncio.sleep(0.05)
        out["cleaner_passes"] = broker.logs.cleaner.passes
    finally:
        await broker.stop()
    out["after_clean_stop"] = internal_sizes(data_dir)
    out["history_topic_mb"] = round(dir_bytes(data_dir, TOPIC) / 1e6, 1)
    return out


def generate(data_dir: str, transactions: int, commits: int, *, backoff_ms: int = 15_000) -> dict:
    try:
        import uvloop

        return uvloop.run(_generate(data_dir, transactions, commits, backoff_ms))
    except ImportError:
        return asyncio.run(_generate(data_dir, transactions, commits, backoff_ms))


def _start(data_dir: str, log_path: str) -> tuple[subprocess.Popen, float, float]:
    """The broker process on ``data_dir``: (process, seconds to the first Metadata answer,
    CPU seconds it used until then)."""
    port = free_low_port()
    with open(log_path, "ab") as log:
        launched = time.perf_counter()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "minibroker",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--data-dir",
                data_dir,
                "--log-format",
                "json",
            ],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    seconds = wait_for_metadata(("127.0.0.1", port), proc, launched, 120)
    return proc, seconds, cpu_seconds(proc.pid)


def _phases(log_path: str) -> dict[str, float]:
    """The last start's own figures from the broker's JSON log (ms)."""
    phases: dict[str, float] = {}
    for line in Path(log_path).read_text().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        name = event.get("event")
        if name == "loaded partition logs":
            phases["log_open_ms"] = event["ms"]
        elif name == "recovered partition log":
            phases[f"recover_{event['topic']}_ms"] = event["ms"]
        elif name == "transaction coordinator loaded":
            phases["txn_load_ms"] = event["load_ms"]
            phases["txn_records_replayed"] = event["records"]
        elif name == "broker ready":
            phases["ready_ms"] = event["startup_ms"]
    return phases


def measure_startups(data_dir: str, runs: int, workdir: str) -> dict:
    log_path = os.path.join(workdir, "broker.log")
    out: dict = {}
    for kind in ("clean_stop", "sigkill"):
        starts = []
        for _ in range(runs):
            # the stop before this start: SIGTERM (clean) or SIGKILL after a ready broker
            proc, _s, _c = _start(data_dir, log_path)
            time.sleep(0.5)
            proc.send_signal(signal.SIGTERM if kind == "clean_stop" else signal.SIGKILL)
            proc.wait(60)
            starts.append(_timed_start(data_dir, log_path))
        out.update(_summary(f"startup_after_{kind}", starts))
    out["after_measurements"] = internal_sizes(data_dir)
    return out


def _timed_start(data_dir: str, log_path: str) -> tuple[float, float, dict]:
    """(seconds to the first Metadata answer, broker CPU seconds, phases) of one start; the
    broker is stopped cleanly afterwards."""
    Path(log_path).write_text("")  # _phases reads this start only
    proc, seconds, cpu = _start(data_dir, log_path)
    phases = _phases(log_path)
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    return seconds, cpu, phases


def _summary(prefix: str, starts: list[tuple[float, float, dict]]) -> dict:
    seconds = [s for s, _, _ in starts]
    return {
        f"{prefix}_s": round(statistics.median(seconds), 3),
        f"{prefix}_all_s": [round(s, 3) for s in seconds],
        f"{prefix}_cpu_s": round(statistics.median(c for _, c, _ in starts), 3),
        f"{prefix}_phases": starts[len(starts) // 2][2],
    }


def append_unflushed_tail(data_dir: str, transactions: int) -> None:
    """Leave ``data_dir`` as a SIGKILL leaves it ``transactions`` one-record transactions after
    the last recovery-point checkpoint: the history topic's log is opened in-process, the
    history's producer continues (data batch + COMMIT marker each, as the coordinator writes
    them) and the files are closed without a flush, a snapshot or the clean-shutdown marker."""
    from minibroker.common.clock import SYSTEM_CLOCK
    from minibroker.protocol.records import build_batch
    from minibroker.storage.log_manager import LogManager

    manager = LogManager(data_dir, {}, clock=SYSTEM_CLOCK)
    manager.open()
    plog = manager.get_log(TOPIC, 0)
    assert plog is not None
    producer = max(plog.producer_state.producers(), key=lambda e: e.producer_id)
    pid, epoch, seq = producer.producer_id, producer.epoch, producer.last_sequence + 1
    for i in range(transactions):
        batch = build_batch(
            [(None, b"x")],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=(seq + i) % (1 << 31),
            transactional=True,
        )
        plog.append(batch)
        plog.append_marker(pid, epoch, True, producer.coordinator_epoch)
    for each in manager.all_logs():  # the kill: files as written, nothing else
        for seg in each.segments:
            seg.close()


def measure_tail_starts(data_dir: str, tail: int, runs: int, workdir: str) -> dict:
    """Starts after a SIGKILL that left ``tail`` transactions after the recovery point (at
    most one checkpoint interval's worth: log.flush.offset.checkpoint.interval.ms)."""
    log_path = os.path.join(workdir, "broker.log")
    starts = []
    for _ in range(runs):
        append_unflushed_tail(data_dir, tail)
        starts.append(_timed_start(data_dir, log_path))
    return {"tail_transactions": tail, **_summary("startup_after_sigkill_with_tail", starts)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.history", description=__doc__.split("\n\n")[0])
    ap.add_argument("--transactions", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3, help="starts per kind of stop (median)")
    ap.add_argument("--data-dir", help="keep the generated history here (reused if it exists)")
    ap.add_argument(
        "--tail",
        type=int,
        default=27_000,
        help="transactions after the last recovery-point checkpoint for the last SIGKILL starts "
        "(27,000: one 60 s checkpoint interval at 450 transactions/s; 0: skip)",
    )
    ap.add_argument("--out", default=str(ROOT / "bench" / "history-results.json"))
    args = ap.parse_args(argv)
    compile_sources()
    results: dict = {
        "transactions": args.transactions,
        "commits": args.commits,
        "runs": args.runs,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "loadavg_before": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="minibroker-history-") as tmp:
        data_dir = args.data_dir or os.path.join(tmp, "data")
        if not os.path.exists(os.path.join(data_dir, "meta.properties")):
            started = time.monotonic()
            print(
                f"generating {args.transactions} transactions and {args.commits} offset "
                f"commits in {data_dir} ...",
                file=sys.stderr,
                flush=True,
            )
            results["generation"] = generate(data_dir, args.transactions, args.commits)
            results["generation"]["seconds"] = round(time.monotonic() - started)
        results.update(measure_startups(data_dir, args.runs, tmp))
        if args.tail:
            results.update(measure_tail_starts(data_dir, args.tail, args.runs, tmp))
    results["loadavg_after"] = os.getloadavg()
    print(json.dumps(results, indent=2))
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
