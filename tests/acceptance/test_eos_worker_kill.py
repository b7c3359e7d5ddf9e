"""Issue 5, "Exactly-once loop": a consume-transform-produce worker (tests/support/eos_worker.py,
confluent-kafka, its own process) is SIGKILLed repeatedly while processing, at chosen points of a
transaction (output written but not committed; offsets added but not committed); each time a
replacement with the same transactional.id and group takes over (fencing the dead instance,
aborting its open transaction, and resuming from the group's committed offsets once the dead
member's session expired). At the end every input record has exactly one output record for a
read_committed reader, and the group's committed offsets are the input's end offsets.
"""

from __future__ import annotations

import collections
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.acceptance.test_transactions_helpers import committed, markers, offsets, uid
from tests.support.broker import REPO_ROOT
from tests.support.helpers import admin_client, create_topic

pytestmark = pytest.mark.timeout(150)

N = 600
PARTS = 3
OVERRIDES = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
WORKER = REPO_ROOT / "tests" / "support" / "eos_worker.py"
# kill points, one worker each: after its output is in the log (open transaction), and after its
# offsets were added to the transaction (pending transactional offset commit)
KILLS = ["PRODUCED", "OFFSETS", "PRODUCED", "OFFSETS"]
GROWTH = 50  # output high-watermark growth (sum over partitions) before a kill is armed
STEP_DEADLINE = 20.0  # per worker: start, join, make progress, reach the kill point


class Worker:
    def __init__(self, broker, src, dst, group, txn_id, log_dir, n, pause, *extra: str):
        self.name = f"worker{n}"
        self.stderr = open(log_dir / f"{self.name}.stderr", "wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(WORKER),
                broker.bootstrap,
                src,
                dst,
                group,
                txn_id,
                "--batch",
                "20",
                "--pause",
                str(pause),
                *extra,
            ],
            cwd=str(REPO_ROOT),
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def next_line(self, deadline: float) -> str | None:
        """The next stdout line, or None at EOF; AssertionError past the deadline."""
        timeout = deadline - time.monotonic()
        assert timeout > 0, f"{self.name}: no progress in time; stdout so far {self.seen[-5:]}\n{self.diag()}"
        try:
            line = self.lines.get(timeout=min(timeout, 0.5))
        except queue.Empty:
            return ""
        if line is not None:
            self.seen.append(line)
        return line

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def diag(self) -> str:
        self.stderr.flush()
        try:
            with open(self.stderr.name, errors="replace") as f:
                err = f.read()[-3000:]
        except OSError:
            err = ""
        return f"{self.name} rc={self.proc.poll()} stderr tail:\n{err}"

    def close(self):
        self.kill()
        self.proc.stdout.close()
        self.stderr.close()


def _seed(broker, topic):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
    for i in range(N):
        p.send(topic, f"in-{i:04d}".encode(), partition=i % PARTS)
    p.flush(30)
    p.close(timeout=5)


def _hwm_sum(broker, topic):
    return sum(offsets(broker, topic, p)[0] for p in range(PARTS))


def _group_offsets(broker, group, topic):
    admin = admin_client(broker.bootstrap)
    try:
        got = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    return {tp.partition: om.offset for tp, om in got.items() if tp.topic == topic}


def _read_committed_output(broker, topic):
    """Read the output with a read_committed confluent-kafka consumer, manual assignment, from the
    beginning until every partition reports EOF (the LSO for read_committed)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": uid("reader"),
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        lso = {}
        for p in range(PARTS):
            low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
            lso[p] = high
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTS)])
        out, eof = [], set()
        deadline = time.monotonic() + 30
        while eof != set(range(PARTS)):
            assert time.monotonic() < deadline, f"reading output: eof on {eof}, {len(out)} records"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                if m.offset() >= lso[m.partition()]:
                    eof.add(m.partition())
                continue
            assert m.offset() < lso[m.partition()]
            out.append((m.partition(), m.offset(), m.value()))
        return out, lso
    finally:
        c.close()


def test_eos_worker_survives_repeated_sigkill(broker_factory, tmp_path):
    broker = broker_factory(OVERRIDES)
    src, dst, group, txn_id = uid("eos-in"), uid("eos-out"), uid("eos-group"), "eos-worker"
    create_topic(broker, src, PARTS)
    create_topic(broker, dst, PARTS)
    _seed(broker, src)
    input_end = {p: offsets(broker, src, p)[0] for p in range(PARTS)}
    assert input_end == {p: N // PARTS for p in range(PARTS)}

    workers: list[Worker] = []
    t0 = time.monotonic()
    try:
        # ---- kill phase: each worker is killed at its kill point once the output has grown
        for n, point in enumerate(KILLS):
            w = Worker(broker, src, dst, group, txn_id, tmp_path, n, pause=0.3)
            workers.append(w)
            start_hwm = _hwm_sum(broker, dst)
            deadline = time.monotonic() + STEP_DEADLINE
            armed = False
            while True:
                line = w.next_line(deadline)
                assert line is not None, f"{w.name} exited early; stdout {w.seen[-5:]}\n{w.diag()}"
                if not armed and line.startswith("COMMITTED"):
                    armed = _hwm_sum(broker, dst) - start_hwm >= GROWTH
                elif armed and line.split()[0] == point:
                    w.kill()
                    break
            assert w.proc.returncode == -signal.SIGKILL
            assert "STOPPED" not in w.seen

        # ---- the last worker finishes all input
        last = Worker(broker, src, dst, group, txn_id, tmp_path, len(KILLS), pause=0)
        workers.append(last)
        deadline = time.monotonic() + 40
        while True:
            line = last.next_line(deadline)
            assert line is not None, f"{last.name} exited early; stdout {last.seen[-5:]}\n{last.diag()}"
            if line.startswith("COMMITTED") and _group_offsets(broker, group, src) == input_end:
                break
        last.proc.send_signal(signal.SIGTERM)
        assert last.proc.wait(15) == 0, last.diag()
        deadline = time.monotonic() + 5
        while last.next_line(deadline) is not None:
            pass
        assert last.seen[-1] == "STOPPED"
    finally:
        for w in workers:
            w.close()
    elapsed = time.monotonic() - t0

    # every worker made progress of its own (committed at least one transaction)
    for w in workers:
        assert any(s.startswith("COMMITTED") for s in w.seen), (w.name, w.seen[-5:])
    # no worker had to abort on its own: every abort is the broker's, on fencing a killed one
    assert not [s for w in workers for s in w.seen if s.startswith("ABORTED")]

    # ---- exactly one output per input, for a read_committed client
    out, lso = _read_committed_output(broker, dst)
    values = collections.Counter(v for _, _, v in out)
    expected = {f"out-in-{i:04d}".encode() for i in range(N)}
    dups = {v: c for v, c in values.items() if c > 1}
    assert not dups, f"duplicated outputs: {sorted(dups.items())[:10]} ({len(dups)} values)"
    missing = expected - set(values)
    assert not missing, f"{len(missing)} inputs without output, e.g. {sorted(missing)[:10]}"
    assert set(values) == expected
    # per partition, the output keeps the input's order
    for p in range(PARTS):
        assert [v for q, _, v in out if q == p] == [f"out-in-{i:04d}".encode() for i in range(p, N, PARTS)]
        # the same through a raw read_committed Fetch (aborted list applied as clients do)
        assert committed(broker, dst, p) == [f"out-in-{i:04d}".encode() for i in range(p, N, PARTS)]
        hw, stable, _ = offsets(broker, dst, p)
        assert stable == hw == lso[p], (p, hw, stable, lso[p])

    # every kill left an open transaction that the replacement's fencing aborted
    aborts = [m for p in range(PARTS) for m in markers(broker, dst, p) if m[2] == "ABORT"]
    assert len(aborts) >= len(KILLS), f"{len(aborts)} ABORT markers for {len(KILLS)} kills"

    # ---- the group's committed offsets are the input's end offsets
    assert _group_offsets(broker, group, src) == input_end
    assert elapsed < 90, f"took {elapsed:.1f}s"
