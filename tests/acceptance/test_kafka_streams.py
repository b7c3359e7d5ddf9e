"""Issue 23: a Kafka Streams 4.4.0 application with processing.guarantee=exactly_once_v2 against
minibroker (jvm/streams/src/main/java/minibroker/EosCountApp.java, compiled by `make jvm`).

The application counts words: input -> selectKey(word) -> groupByKey (a repartition topic) ->
count (a RocksDB store with its changelog topic) -> output, classic group protocol, record cache
off, so every input record gives exactly one output record. Input: WORDS words x PER_WORD records.
A read_committed reader must see, for every word, exactly the counts 1, 2, ... PER_WORD in order:
a lost transaction leaves a gap, a duplicated one repeats a count, a torn one (output committed
without its state, or the reverse) repeats or skips counts after the restore.

The input arrives in two halves; the second half holds the stall point (EosCountApp stops its
stream thread inside the transaction that counts STALL_WORD up to STALL_COUNT, after that count's
changelog record was sent), so the kill always lands on an open transaction, after committed
output exists and before the run is done. Two cases:

- the application is SIGKILLed there and restarted (same state directory, so the same process id
  and transactional id: the new instance fences the old one, whose transaction is aborted);
- the broker is SIGKILLed there and restarted on the same port while the application lives on.

The application run is checked once with the broker's default feature levels and once with
`minibroker.features=transaction.version=1`; the request log shows which transaction protocol
the Java client chose, and it must be the one the broker's finalized transaction.version (read
from ApiVersions) selects: KIP-890 part 2 (EndTxn v5, no AddPartitionsToTxn/AddOffsetsToTxn)
from level 2, the classic one (AddPartitionsToTxn, EndTxn v4 or lower) below.
"""

from __future__ import annotations

import collections
import json
import queue
import signal
import subprocess
import threading
import time

import pytest
from minibroker.broker.config import PROPERTIES
from minibroker.pipelines.jars import kafka_streams_classpath

from tests.acceptance.test_transactions_helpers import markers, txn_wire, uid
from tests.support.clients import ck_consume, ck_consumer
from tests.support.helpers import create_topic, wait_until
from tests.support.wire import WireClient

pytestmark = pytest.mark.timeout(150)

PARTS = 3
WORDS = 8
PER_WORD = 100
STALL_WORD, STALL_COUNT = "w0", PER_WORD * 3 // 4  # in the second half of the input
STEP = 30.0  # bound for each wait on the application
# measured on the 2-core machine with other suites running beside it: 15-21 s per case at a load
# of 8 (mostly the two JVM starts and their first rebalances)
ELAPSED_LIMIT = 90.0
BROKER = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 500,  # the application's session timeout is 2 s
    "minibroker.request.log.enable": True,  # which transaction protocol ran
}
# helper "tv2" of issue 23 adds minibroker.features; until then the broker knows only TV1 and
# the property would be refused as unknown, so that run goes without it
FEATURES = "minibroker.features"
TV1 = {FEATURES: "transaction.version=1"} if FEATURES in PROPERTIES else {}


class StreamsApp:
    """One EosCountApp JVM; its stdout lines are pumped into a queue, stderr goes to a file."""

    def __init__(self, broker, app_id, src, dst, work_dir, stall: str | None = None):
        self.stderr = open(work_dir / "streams.stderr", "ab")
        java_tmp = work_dir / "java-tmp"
        java_tmp.mkdir(exist_ok=True)
        cmd = [
            "java",
            # a short-lived JVM on a busy 2-core machine: the C1 compiler only and one GC thread
            # reach RUNNING in about 2/3 of the default's time
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            # RocksDB extracts its 15 MB native library into java.io.tmpdir at every start and a
            # SIGKILLed JVM never deletes it: into the test's directory, not /tmp
            f"-Djava.io.tmpdir={java_tmp}",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            kafka_streams_classpath(),
            "minibroker.EosCountApp",
            broker.bootstrap,
            app_id,
            src,
            dst,
            str(work_dir / "streams-state"),
            *([stall] if stall else []),
        ]
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=self.stderr, stdin=subprocess.DEVNULL, text=True, bufsize=1
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def wait_for(self, prefix: str, timeout: float = STEP) -> str:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, (
                f"no {prefix!r} line from the application in {timeout}s: {self.seen[-8:]}\n{self.diag()}"
            )
            try:
                line = self.lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            assert line is not None, (
                f"the application exited before {prefix!r}: {self.seen[-8:]}\n{self.diag()}"
            )
            self.seen.append(line)
            if line.startswith(prefix):
                return line

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        """SIGTERM: KafkaStreams.close() in the shutdown hook, which commits and says STOPPED."""
        self.proc.send_signal(signal.SIGTERM)
        self.wait_for("STOPPED")
        self.proc.wait(STEP)

    def diag(self) -> str:
        self.stderr.flush()
        with open(self.stderr.name, errors="replace") as f:
            return f"application rc={self.proc.poll()}, stderr tail:\n{f.read()[-3000:]}"

    def close(self):
        self.kill()
        self.proc.stdout.close()
        self.stderr.close()


class CommittedOutput:
    """A read_committed confluent-kafka consumer following the output topic from the start:
    `counts[word]` is every count a read_committed client has seen for the word, in order."""

    def __init__(self, broker, topic):
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        self.consumer = ck_consumer(broker.bootstrap, **{"isolation.level": "read_committed"})
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTS)])
        self.counts: dict[str, list[int]] = collections.defaultdict(list)

    def wait_all_at(self, count: int, timeout: float = STEP) -> None:
        deadline = time.monotonic() + timeout
        while not all(self.counts.get(f"w{k}", [])[-1:] == [count] for k in range(WORDS)):
            last = {w: c[-1] for w, c in sorted(self.counts.items())}
            assert time.monotonic() < deadline, f"committed counts did not reach {count}: {last}"
            for m in self.consumer.consume(num_messages=1000, timeout=0.2):
                assert m.error() is None, m.error()
                self.counts[m.key().decode()].append(int.from_bytes(m.value(), "big"))

    def close(self):
        self.consumer.close()


def produce_input(broker, topic, first: int, end: int) -> None:
    """Records first..end-1 of every word, words interleaved; the record id is the key."""
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5, acks="all")
    for j in range(first, end):
        for k in range(WORDS):
            p.send(topic, key=f"r{j}-{k}".encode(), value=f"w{k}".encode())
    p.flush(30)
    p.close(timeout=5)


def finalized_transaction_version(broker) -> int:
    with WireClient.to(broker) as c:
        features = c.api_versions(3).finalized_features
    return max((f.max_version_level for f in features if f.name == "transaction.version"), default=0)


def app_transaction(broker, app_id) -> str:
    """The application's one transactional id (EOS v2: <application.id>-<process id>-<thread>)."""
    with txn_wire(broker) as w:
        ids = [s.transactional_id for s in w.list_transactions().transaction_states]
    mine = [i for i in ids if i.startswith(app_id + "-")]
    assert len(mine) == 1, f"transactional ids of {app_id}: {mine}"
    return mine[0]


def describe_transaction(broker, txn_id):
    with txn_wire(broker) as w:
        return w.describe_transaction(txn_id)


def request_log(broker, app_id) -> list[dict]:
    lines = (json.loads(line) for line in broker.log_text().splitlines() if '"event": "request"' in line)
    return [r for r in lines if (r.get("client_id") or "").startswith(app_id)]


def assert_transaction_protocol(broker, app_id, tv: int) -> None:
    reqs = request_log(broker, app_id)
    by_api = collections.Counter(r["api"] for r in reqs)
    end_txn = sorted({r["api_version"] for r in reqs if r["api"] == "EndTxn"})
    assert end_txn, f"no EndTxn from the application; its requests: {dict(by_api)}"
    if tv >= 2:  # KIP-890 part 2: partitions and groups join the transaction implicitly
        assert end_txn == [5], end_txn
        assert by_api["AddPartitionsToTxn"] == by_api["AddOffsetsToTxn"] == 0, dict(by_api)
    else:
        assert max(end_txn) <= 4, end_txn
        assert by_api["AddPartitionsToTxn"] > 0 and by_api["AddOffsetsToTxn"] > 0, dict(by_api)


def assert_exact_output(broker, dst) -> None:
    """A fresh read_committed reader sees every count of every word once, in order, and nothing else."""
    got = ck_consume(
        broker.bootstrap, dst, list(range(PARTS)), WORDS * PER_WORD, **{"isolation.level": "read_committed"}
    )
    counts: dict[str, list[int]] = collections.defaultdict(list)
    for records in got.values():
        for _, key, value, _, _ in records:
            counts[key.decode()].append(int.from_bytes(value, "big"))
    assert set(counts) == {f"w{k}" for k in range(WORDS)}, sorted(counts)
    expected = list(range(1, PER_WORD + 1))
    for word, seen in sorted(counts.items()):
        repeated = sorted(c for c, n in collections.Counter(seen).items() if n > 1)
        missing = sorted(set(expected) - set(seen))
        assert seen == expected, (
            f"{word}: {len(seen)} counts, repeated {repeated[:10]}, missing {missing[:10]}"
        )


class Run:
    """One application run's topics, state directory and readers."""

    def __init__(self, broker, tmp_path, name):
        self.broker = broker
        self.app_id = uid(name)
        self.src, self.dst = f"{self.app_id}-in", f"{self.app_id}-out"
        self.work_dir = tmp_path
        self.apps: list[StreamsApp] = []
        create_topic(broker, self.src, PARTS)
        create_topic(broker, self.dst, PARTS)
        self.output = CommittedOutput(broker, self.dst)

    def start(self, stall: str | None = None) -> StreamsApp:
        app = StreamsApp(self.broker, self.app_id, self.src, self.dst, self.work_dir, stall)
        self.apps.append(app)
        return app

    def to_open_transaction(self, stall: str):
        """First half in and committed, second half in, the application stalled inside an open
        transaction; returns the application and its transaction (DescribeTransactions)."""
        produce_input(self.broker, self.src, 0, PER_WORD // 2)
        app = self.start(stall)
        self.output.wait_all_at(PER_WORD // 2)
        produce_input(self.broker, self.src, PER_WORD // 2, PER_WORD)
        assert app.wait_for("STALL") == f"STALL {STALL_WORD} {STALL_COUNT}"
        txn_id = app_transaction(self.broker, self.app_id)
        txn = wait_until(
            lambda: (d := describe_transaction(self.broker, txn_id)).transaction_state == "Ongoing" and d,
            STEP,
            message=f"{txn_id} Ongoing at the stall point",
        )
        # the stall count's changelog record is in it
        assert f"{self.app_id}-counts-changelog" in {t.topic for t in txn.topics}, txn
        return app, txn

    def aborted(self, txn) -> list[tuple[str, int]]:
        """The partitions of `txn` that hold an ABORT marker of its producer id."""
        return [
            (t.topic, p)
            for t in txn.topics
            for p in t.partitions
            if any(m[1:] == (txn.producer_id, "ABORT") for m in markers(self.broker, t.topic, p))
        ]

    def close(self):
        self.output.close()
        for app in self.apps:
            app.close()


@pytest.fixture
def run_factory(tmp_path):
    runs: list[Run] = []

    def make(broker, name):
        runs.append(Run(broker, tmp_path, name))
        return runs[-1]

    yield make
    for r in runs:
        r.close()


@pytest.mark.parametrize("features", [{}, TV1], ids=["default-features", "transaction.version=1"])
def test_streams_eos_survives_application_sigkill(broker_factory, run_factory, features):
    t0 = time.monotonic()
    broker = broker_factory({**BROKER, **features})
    tv = finalized_transaction_version(broker)
    if features:
        assert tv <= 1, f"transaction.version finalized at {tv} with {features}"
    run = run_factory(broker, "streams-app-kill")

    app, txn = run.to_open_transaction(f"{STALL_WORD}:{STALL_COUNT}")
    app.kill()
    assert app.proc.returncode == -signal.SIGKILL
    # left open by the dead instance
    assert describe_transaction(broker, txn.transactional_id).transaction_state == "Ongoing"
    assert run.aborted(txn) == []

    restarted = run.start()
    run.output.wait_all_at(PER_WORD)
    restarted.stop()
    elapsed = time.monotonic() - t0

    assert_exact_output(broker, run.dst)
    # the restarted instance kept its process id (the state directory holds it), so it used the
    # same transactional id, fenced the dead instance and aborted its transaction everywhere
    assert app_transaction(broker, run.app_id) == txn.transactional_id
    assert run.aborted(txn) == [(t.topic, p) for t in txn.topics for p in t.partitions]
    assert_transaction_protocol(broker, run.app_id, tv)
    assert elapsed < ELAPSED_LIMIT, f"took {elapsed:.1f}s"


def test_streams_eos_survives_broker_sigkill(broker_factory, run_factory, tmp_path):
    t0 = time.monotonic()
    broker = broker_factory(BROKER)
    port = broker.port
    broker.extra_args = ["--port", str(port)]  # come back on the address the application knows
    run = run_factory(broker, "streams-broker-kill")
    resume = tmp_path / "resume"

    app, txn = run.to_open_transaction(f"{STALL_WORD}:{STALL_COUNT}:{resume}")
    broker.kill()
    broker.start()
    assert broker.port == port
    # the restarted broker recovered the open transaction from __transaction_state (well within
    # the application's transaction.timeout.ms, 10 s)
    after = describe_transaction(broker, txn.transactional_id)
    assert (after.transaction_state, after.producer_id, after.producer_epoch) == (
        "Ongoing",
        txn.producer_id,
        txn.producer_epoch,
    )
    resume.touch()
    assert app.wait_for("RESUMED")
    run.output.wait_all_at(PER_WORD)
    assert app.proc.poll() is None, "the application died with the broker"
    app.stop()
    elapsed = time.monotonic() - t0

    assert_exact_output(broker, run.dst)
    assert_transaction_protocol(broker, run.app_id, finalized_transaction_version(broker))
    assert elapsed < ELAPSED_LIMIT, f"took {elapsed:.1f}s"
