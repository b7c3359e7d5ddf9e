"""Issue 24 part 2: every crash point under a transactional load, armed through the control
plane (`b.crash_at`), then a restart on the same data directory.

The broker SIGKILLs itself at the point (exit status -9). After `restart()`:
- no acknowledged record is lost (every transaction whose commit_transaction returned is
  visible read_committed) and nothing else appears but the one transaction in flight, all of it
  or none of it;
- no record of an aborted transaction is visible read_committed;
- no transaction is left hanging: the PrepareX a crash in EndTxn left is completed by recovery
  alone, and once the producer comes back (same transactional.id) every partition's LSO equals
  its HWM (ListOffsets read_committed) and a read_committed consumer reaches the end;
- the group's committed offset is the one the acknowledged transactions (or commits) gave;
- a read-process-write loop's output is exactly once.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import pytest

from minibroker.control import ControlError
from minibroker.testing import broker
from tests.acceptance.test_transactions_helpers import (
    WAIT,
    ck_consumer,
    ck_producer,
    committed,
    uid,
    uncommitted,
)
from tests.support.helpers import create_topic, wait_until
from tests.support.wire import WireClient

pytestmark = pytest.mark.timeout(90)

PARTS = 3
PER_PARTITION = 3  # records per partition per transaction
BASE = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 500,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
}
# the broker's own settings and the topic's configs each point needs to be reached
SMALL_SEGMENTS = {"log.segment.bytes": 2000}
FAST_CLEANER = {**SMALL_SEGMENTS, "log.cleaner.backoff.ms": 200}
COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.01}


class TxnLoad:
    """A confluent-kafka transactional producer in a thread: transactions of PER_PARTITION
    records on each partition, each also committing the group's offset (TxnOffsetCommit) of
    `topic`-0 to its number + 1; every fourth one aborted. It stops at the first failure (the
    broker died). What it saw: `acked` (values of transactions whose commit returned), `aborted`
    (values of transactions whose abort returned, or that were aborting), `inflight` (the values
    of the transaction in progress at the failure, `inflight_commit` whether it was committing)."""

    def __init__(self, b, topic: str, txn_id: str, group: str, *, max_txns: int = 400) -> None:
        self.b, self.topic, self.txn_id, self.group, self.max_txns = b, topic, txn_id, group, max_txns
        self.acked: list[bytes] = []
        self.aborted: list[bytes] = []
        self.acked_offset: int | None = None  # the group offset of the last acknowledged commit
        self.inflight: list[bytes] = []
        self.inflight_commit = True
        self.inflight_offset = 0
        self.txns = 0
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="txn-load", daemon=True)

    def start(self) -> TxnLoad:
        self.thread.start()
        return self

    def snapshot(self) -> dict:
        """What the load knew when the broker died (a copy: the thread may still be failing)."""
        return {
            "acked": list(self.acked),
            "aborted": list(self.aborted),
            "acked_offset": self.acked_offset,
            "inflight": list(self.inflight),
            "inflight_commit": self.inflight_commit,
            "inflight_offset": self.inflight_offset,
            "txns": self.txns,
        }

    def _run(self) -> None:
        from confluent_kafka import TopicPartition

        try:
            meta = ck_consumer(self.b, "read_committed", group=self.group).consumer_group_metadata()
            p = ck_producer(self.b, self.txn_id, **{"message.timeout.ms": 8000})
            p.init_transactions(WAIT)
            for i in range(self.max_txns):
                if self.stop.is_set():
                    return
                commit = i % 4 != 3
                values = [
                    f"{'c' if commit else 'a'}{i}-{part}-{j}".encode()
                    for part in range(PARTS)
                    for j in range(PER_PARTITION)
                ]
                self.inflight, self.inflight_commit, self.inflight_offset = values, commit, i + 1
                p.begin_transaction()
                for k, v in enumerate(values):
                    part = k // PER_PARTITION
                    p.produce(
                        self.topic, value=v, key=f"k{part}-{k % PER_PARTITION}".encode(), partition=part
                    )
                p.send_offsets_to_transaction([TopicPartition(self.topic, 0, i + 1)], meta, 8)
                if commit:
                    p.commit_transaction(8)
                    self.acked.extend(values)
                    self.acked_offset = i + 1
                else:
                    p.flush(8)  # so that the aborted records really are in the log
                    p.abort_transaction(8)
                    self.aborted.extend(values)
                self.inflight = []
                self.txns = i + 1
        except BaseException as exc:  # noqa: BLE001 - the broker died under it: what the test expects
            self.error = exc


def _ends(b, topic: str) -> dict[int, tuple[int, int]]:
    """(high watermark, last stable offset) of each partition, by ListOffsets (latest) with
    read_uncommitted and read_committed."""
    with WireClient.to(b) as c:
        return {
            p: (
                c.list_offsets(topic, p, -1, isolation_level=0).offset,
                c.list_offsets(topic, p, -1, isolation_level=1).offset,
            )
            for p in range(PARTS)
        }


def _settled(b, topic: str) -> bool:
    return all(hwm == lso for hwm, lso in _ends(b, topic).values())


def _committed_offset(b, group: str, topic: str, partition: int) -> int | None:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return c.committed(TopicPartition(topic, partition))
    finally:
        c.close()


def _read_committed_to_the_end(b, topic: str) -> list[bytes]:
    """A kafka-python read_committed consumer from the start: it must reach each partition's end
    (the HWM: nothing may stay open); the values it delivered."""
    from kafka import KafkaConsumer, TopicPartition

    tps = [TopicPartition(topic, p) for p in range(PARTS)]
    c = KafkaConsumer(
        bootstrap_servers=b.bootstrap,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=10000,
    )
    try:
        c.assign(tps)
        c.seek_to_beginning(*tps)
        hwm = {
            tp.partition: hw
            for tp, hw in zip(tps, (_ends(b, topic)[p][0] for p in range(PARTS)), strict=True)
        }
        out: list[bytes] = []
        deadline = time.monotonic() + WAIT
        while any(c.position(tp) < hwm[tp.partition] for tp in tps):
            assert time.monotonic() < deadline, (
                f"read_committed stuck at {[c.position(tp) for tp in tps]} of {hwm}: a transaction left open"
            )
            for msgs in c.poll(timeout_ms=200).values():
                out.extend(m.value for m in msgs)
        return out
    finally:
        c.close()


# point -> (broker properties, topic configs, crash_at arguments (key None: the transactional
# id, "topic": the partition topic-0, "group": the group), what to check in the data dir)
CASES = {
    "produce.after_append": ({}, {}, dict(key=None, hits=5)),
    "txn.after_prepare": ({}, {}, dict(key=None, hits=3)),
    "txn.after_markers": ({}, {}, dict(key=None, after=2, hits=2)),
    "txn.before_complete": ({}, {}, dict(key=None, hits=3)),
    "offsets.after_write": ({}, {}, dict(key="group", hits=3)),
    "log.mid_roll": (SMALL_SEGMENTS, {}, dict(key="topic", hits=2)),
    "cleaner.mid_swap": (FAST_CLEANER, COMPACT, dict(key="topic")),
    "checkpoint.mid_write": ({"log.flush.offset.checkpoint.interval.ms": 200}, {}, dict(hits=2)),
}
DECIDED = {"txn.after_prepare", "txn.after_markers", "txn.before_complete"}  # recovery completes them


@pytest.mark.parametrize("point", list(CASES))
def test_crash_point_under_a_transactional_load_recovers(point):
    props, configs, arm = CASES[point]
    topic, txn_id, group = uid("crash"), uid("crash-tx"), uid("crash-g")
    with broker({**BASE, **props}, control=True) as b:
        create_topic(b, topic, PARTS, configs)
        key = {None: txn_id, "topic": f"{topic}-0", "group": group}[arm.get("key")] if "key" in arm else None
        b.crash_at(point, key=key, after=arm.get("after"), hits=arm.get("hits"))
        assert b.control.crash_points()["armed"][0]["point"] == point
        load = TxnLoad(b, topic, txn_id, group).start()
        rc = b.wait_crashed(timeout=30)
        seen = load.snapshot()
        load.stop.set()
        assert rc == -9, f"exit status {rc}, not SIGKILL's"
        line = b.wait_for_log("crash point reached", since=0, timeout=1)
        assert f'"point": "{point}"' in line and '"level": "warning"' in line, line
        assert seen["txns"] >= 1, f"the load did nothing before the crash: {load.error!r}"
        _check_what_the_crash_left(point, b, topic)

        b.restart()
        if point in DECIDED:
            # the PrepareX is completed by recovery alone, before any client comes back
            b.wait_for_log("completing transaction interrupted by a restart", since=0)
            wait_until(lambda: _settled(b, topic), WAIT, message="recovery to complete the transaction")
        if point == "cleaner.mid_swap":
            b.wait_for_log("completed a log-cleaner swap", since=0)
        if point == "checkpoint.mid_write":
            assert not list(Path(b.data_dir).glob(".tmp-*")), "the interrupted checkpoint's temp file is left"

        # the application comes back: the same transactional.id fences the dead instance and
        # aborts what it left open, then goes on
        p = ck_producer(b, txn_id)
        p.init_transactions(WAIT)
        p.begin_transaction()
        after = [f"after-{part}".encode() for part in range(PARTS)]
        for part, v in enumerate(after):
            p.produce(topic, value=v, key=b"after", partition=part)
        p.commit_transaction(WAIT)
        wait_until(lambda: _settled(b, topic), WAIT, message="LSO == HWM on every partition")

        visible = [v for part in range(PARTS) for v in committed(b, topic, part)]
        if point == "produce.after_append":
            # what was appended but never answered is in the log (aborted data now)
            everything = {v for part in range(PARTS) for v in uncommitted(b, topic, part)}
            assert everything & set(seen["inflight"]), "the unanswered produce's records are not in the log"
        consumed = _read_committed_to_the_end(b, topic)
        if point == "cleaner.mid_swap":  # the cleaner may have run between the two reads
            assert _latest(consumed) == _latest(visible)
        else:
            assert sorted(consumed) == sorted(visible)
        _check_outcome(point, seen, visible, after)
        inflight_done = bool(seen["inflight"]) and seen["inflight"][0] in visible
        expected_offset = seen["inflight_offset"] if inflight_done else seen["acked_offset"]
        assert _committed_offset(b, group, topic, 0) == expected_offset
    # the dead instance's thread ends when its call times out (a daemon: not waited for)


def _latest(values: list[bytes]) -> dict[str, bytes]:
    """The last value of each key (the load's values name their key: c<txn>-<partition>-<j> is
    key k<partition>-<j>), in the order given (each partition's in offset order)."""
    last: dict[str, bytes] = {}
    for v in values:
        if v.startswith(b"after-"):
            last[v.decode()] = v
        else:
            _txn, part, j = v[1:].decode().split("-")
            last[f"k{part}-{j}"] = v
    return last


def _check_what_the_crash_left(point: str, b, topic: str) -> None:
    """The data directory as the point leaves it (before the restart repairs it)."""
    if point == "checkpoint.mid_write":
        temps = list(Path(b.data_dir).glob(".tmp-*"))
        assert temps, "no temporary checkpoint file: the crash was not in the middle of the write"
        assert temps[0].read_text().startswith("0\n"), "the temporary file holds the new checkpoint"
    if point == "log.mid_roll":
        logs = sorted(next(Path(b.data_dir).rglob(f"{topic}-0")).glob("*.log"))
        assert len(logs) >= 2 and logs[-1].stat().st_size == 0, f"no new empty segment: {logs}"
        newest = int(logs[-1].name[:20])
        assert not (logs[-1].parent / f"{newest:020d}.snapshot").exists(), "the roll's snapshot was written"


def _check_outcome(point: str, seen: dict, visible: list[bytes], after: list[bytes]) -> None:
    visible_set = set(visible)
    assert len(visible_set) == len(visible), "a record visible twice"
    inflight = seen["inflight"]
    inflight_visible = [v for v in inflight if v in visible_set]
    # the transaction in flight is atomic: all of it or none of it, and none if it was aborting
    assert inflight_visible in ([], inflight), f"transaction in flight half visible: {inflight_visible}"
    if not seen["inflight_commit"]:
        assert not inflight_visible, "an aborting transaction became visible"
    assert not visible_set & set(seen["aborted"]), "records of aborted transactions visible read_committed"
    assert set(after) <= visible_set
    allowed = set(seen["acked"]) | set(inflight) | set(after)
    assert visible_set <= allowed, f"records from nowhere: {sorted(visible_set - allowed)[:5]}"
    if point == "cleaner.mid_swap":
        # compaction keeps each key's latest value: that of the last acknowledged transaction
        # (or of the one in flight, if it was committed)
        last = _latest([*seen["acked"], *inflight_visible])
        assert set(last.values()) <= visible_set, "an acknowledged latest value was lost"
    else:
        lost = [v for v in seen["acked"] if v not in visible_set]
        assert not lost, f"{len(lost)} acknowledged records lost, e.g. {lost[:3]}"
    if point in ("produce.after_append", "offsets.after_write"):
        # the crash came before EndTxn: the transaction was open, and is aborted by the fence
        assert seen["inflight"] and not inflight_visible, "an open transaction became visible"
    if point in DECIDED:
        # the crash came after the outcome was decided (PrepareCommit/PrepareAbort written)
        assert seen["inflight"], "the crash was in EndTxn: a transaction was in flight"
        if seen["inflight_commit"]:
            assert inflight_visible == inflight, "a decided commit was not completed"


def test_plain_offset_commit_written_before_the_crash_is_kept():
    """offsets.after_write on OffsetCommit: the commits answered are kept, and the one written
    but not answered too (it reached the log before the crash, as in Kafka)."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    topic, group = uid("crash-oc"), uid("crash-oc-g")
    with broker(BASE, control=True) as b:
        create_topic(b, topic, 1)
        b.crash_at("offsets.after_write", key=group, hits=3)
        c = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=group, enable_auto_commit=False)
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        acked = []
        for n in (10, 20):
            c.commit({tp: OffsetAndMetadata(n, "", -1)})
            acked.append(n)
        # the third is never answered (kafka-python would retry it for ever): from a thread

        def third() -> None:
            with contextlib.suppress(Exception):
                c.commit({tp: OffsetAndMetadata(30, "", -1)})

        threading.Thread(target=third, daemon=True).start()
        assert b.wait_crashed(timeout=30) == -9
        b.restart()
        assert _committed_offset(b, group, topic, 0) == 30
        assert acked == [10, 20]


# ------------------------------------------------------------------------ read-process-write
N_IN = 90


def _rpw_worker(b, src: str, dst: str, group: str, txn_id: str, stop: threading.Event, deadline: float):
    """Consume src (read_committed), write b"out-" + value to dst in transactions that also
    carry the consumed positions, until every partition's position reaches its end or `stop`."""
    from confluent_kafka import TopicPartition

    consumer = ck_consumer(
        b, "read_committed", group=group, **{"session.timeout.ms": 1000, "heartbeat.interval.ms": 200}
    )
    producer = ck_producer(b, txn_id, **{"message.timeout.ms": 8000})
    producer.init_transactions(WAIT)
    consumer.subscribe([src])
    try:
        while not stop.is_set():
            assert time.monotonic() < deadline, "the read-process-write loop did not finish"
            msgs = [m for m in consumer.consume(num_messages=10, timeout=0.2) if not m.error()]
            if not msgs:
                done = consumer.committed([TopicPartition(src, p) for p in range(PARTS)], timeout=WAIT)
                if all(tp.offset >= N_IN // PARTS for tp in done):
                    return
                continue
            producer.begin_transaction()
            positions: dict[int, int] = {}
            for m in msgs:
                producer.produce(dst, value=b"out-" + m.value(), partition=m.partition())
                positions[m.partition()] = m.offset() + 1
            producer.send_offsets_to_transaction(
                [TopicPartition(src, p, off) for p, off in positions.items()],
                consumer.consumer_group_metadata(),
                8,
            )
            producer.commit_transaction(8)
    finally:
        consumer.close()


@pytest.mark.parametrize("point, after", [("txn.after_prepare", None), ("txn.after_markers", 1)])
def test_read_process_write_is_exactly_once_across_a_crash(point, after):
    from confluent_kafka import Producer

    src, dst, group, txn_id = uid("rpw-in"), uid("rpw-out"), uid("rpw-g"), uid("rpw-tx")
    with broker(BASE, control=True) as b:
        create_topic(b, src, PARTS)
        create_topic(b, dst, PARTS)
        p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 5})
        inputs = [f"in-{part}-{i}".encode() for part in range(PARTS) for i in range(N_IN // PARTS)]
        for k, v in enumerate(inputs):
            p.produce(src, value=v, partition=k // (N_IN // PARTS))
        assert p.flush(WAIT) == 0
        b.crash_at(point, key=txn_id, after=after, hits=3)
        stop = threading.Event()
        failed: list[BaseException] = []

        def first_instance() -> None:
            try:
                _rpw_worker(b, src, dst, group, txn_id, stop, time.monotonic() + 60)
            except BaseException as exc:  # noqa: BLE001 - the broker died under it, as intended
                failed.append(exc)

        first = threading.Thread(target=first_instance, daemon=True)
        first.start()
        assert b.wait_crashed(timeout=30) == -9
        stop.set()
        b.restart()
        # a new instance of the worker: same transactional.id, same group
        _rpw_worker(b, src, dst, group, txn_id, threading.Event(), time.monotonic() + 45)
        wait_until(lambda: _settled(b, dst), WAIT, message="output LSO == HWM")
        out = [v for part in range(PARTS) for v in committed(b, dst, part)]
        assert sorted(out) == sorted(b"out-" + v for v in inputs), "output not exactly once"
        ends = {part: _committed_offset(b, group, src, part) for part in range(PARTS)}
        assert ends == {part: N_IN // PARTS for part in range(PARTS)}


# ------------------------------------------------------------------------ the HTTP routes
def test_crash_routes():
    with broker(control=True) as b:
        ctl = b.control
        listed = ctl.crash_points()
        assert listed["armed"] == []
        assert set(listed["points"]) == {
            "produce.after_append",
            "txn.after_prepare",
            "txn.after_markers",
            "txn.before_complete",
            "offsets.after_write",
            "log.mid_roll",
            "cleaner.mid_swap",
            "checkpoint.mid_write",
        }
        with pytest.raises(ControlError) as refused:
            ctl.crash_at("txn.after_prepar")
        assert refused.value.status == 400 and "txn.after_prepare" in refused.value.message
        for body in ({"point": "txn.after_prepare", "after": 2}, {"point": "log.mid_roll", "hits": "x"}, {}):
            with pytest.raises(ControlError) as refused:
                ctl.post("/v1/crash", body)
            assert refused.value.status == 400
        armed = ctl.crash_at("txn.after_markers", key="tx-1", after=2, hits=3)["armed"]
        assert armed == [{"point": "txn.after_markers", "key": "tx-1", "after": 2, "hits": 3, "reached": 0}]
        ctl.crash_at("log.mid_roll")
        assert [a["point"] for a in ctl.crash_points()["armed"]] == ["txn.after_markers", "log.mid_roll"]
        ctl.disarm()
        assert ctl.crash_points()["armed"] == []
        ctl.crash_at("checkpoint.mid_write")
        ctl.reset()  # the plane's reset disarms too
        assert ctl.crash_points()["armed"] == []
        assert b.running
