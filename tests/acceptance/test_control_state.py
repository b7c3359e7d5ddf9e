"""The control plane's state surface (issue 24 part 4) against a real broker and real clients:
`b.state` (minibroker.control.state over HTTP) shows what kafka-python and confluent-kafka did:
high watermark and log end after produces, the LSO held back by an open transaction with its
producer and first offset, the transactional id's state, a consumer group's members and
assignments and its committed offsets; the waits return once the state is reached and answer
408 with what they saw otherwise; unknown names answer 404. One broker for the module."""

from __future__ import annotations

import queue
import threading
import time

import pytest

import minibroker.testing
from minibroker.control import ControlError
from tests.acceptance.test_transactions_helpers import ck_producer, uid
from tests.support.clients import ck_produce, kp_produce
from tests.support.helpers import create_topic, make_messages

pytestmark = pytest.mark.timeout(90)

WAIT = 20.0  # bound for any single wait in these tests


@pytest.fixture(scope="module")
def b():
    with minibroker.testing.broker(control=True) as broker:
        yield broker


def _status(call) -> ControlError:
    with pytest.raises(ControlError) as exc:
        call()
    return exc.value


# ------------------------------------------------------------------------------ partitions
def test_produces_move_high_watermark_and_log_end(b):
    topic = uid("state-produce")
    create_topic(b, topic, partitions=2)
    kp_produce(b.bootstrap, topic, make_messages(6, 2, "kp"))  # 3 records a partition
    ck_produce(b.bootstrap, topic, make_messages(4, 2, "ck"), **{"enable.idempotence": True, "retries": 5})

    p0 = b.state.partition(topic, 0)
    assert (p0["topic"], p0["partition"]) == (topic, 0)
    assert (p0["log_start_offset"], p0["high_watermark"], p0["log_end_offset"]) == (0, 5, 5)
    assert p0["last_stable_offset"] == 5 and p0["ongoing_transactions"] == []
    assert p0["segments"] == 1 and p0["size_bytes"] > 0
    # the idempotent confluent producer: one producer id, 2 records a partition (sequences 0, 1)
    assert [
        (p["producer_epoch"], p["last_sequence"], p["ongoing_txn_first_offset"]) for p in p0["producers"]
    ] == [(0, 1, -1)]
    listed = b.state.partitions(topic)
    assert [(p["partition"], p["high_watermark"]) for p in listed] == [(0, 5), (1, 5)]
    assert topic in {p["topic"] for p in b.state.partitions()}
    assert not any(p["topic"].startswith("__") for p in b.state.partitions())


# ------------------------------------------------------------------------------ transactions
def test_open_transaction_holds_the_lso_until_commit(b):
    topic, txn_id = uid("state-txn"), uid("tx")
    create_topic(b, topic, partitions=1)
    kp_produce(b.bootstrap, topic, make_messages(2, 1, "plain"))
    producer = ck_producer(b, txn_id)
    producer.init_transactions(WAIT)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, b"t%d" % i, partition=0)
    assert producer.flush(WAIT) == 0

    [txn] = [t for t in b.state.transactions() if t["transactional_id"] == txn_id]
    assert txn["state"] == "Ongoing" and txn["partitions"] == [f"{topic}-0"]
    assert txn["timeout_ms"] == 30000 and txn["start_ms"] > 0
    assert b.state.transaction(txn_id) == txn
    assert [t["transactional_id"] for t in b.state.transactions(state="Ongoing")] == [txn_id]

    p0 = b.state.partition(topic, 0)
    assert (p0["high_watermark"], p0["last_stable_offset"]) == (5, 2)
    assert p0["ongoing_transactions"] == [
        {"producer_id": txn["producer_id"], "producer_epoch": txn["producer_epoch"], "first_offset": 2}
    ]
    [entry] = [p for p in p0["producers"] if p["producer_id"] == txn["producer_id"]]
    assert entry["ongoing_txn_first_offset"] == 2 and entry["last_sequence"] == 2

    started = time.monotonic()
    timed_out = _status(lambda: b.state.wait_for_transactions_complete(timeout=0.3))
    assert timed_out.status == 408 and txn_id in timed_out.message and "Ongoing" in timed_out.message
    assert time.monotonic() - started < 5

    producer.commit_transaction(WAIT)
    assert b.state.wait_for_transactions_complete(timeout=WAIT) == {"transactions": [], "partitions": []}
    p0 = b.state.partition(topic, 0)
    assert p0["last_stable_offset"] == p0["high_watermark"] == 6  # the commit marker is offset 5
    assert p0["ongoing_transactions"] == []
    assert b.state.transaction(txn_id)["state"] == "CompleteCommit"


# ------------------------------------------------------------------------------ groups
class Member(threading.Thread):
    """A kafka-python consumer of a group, polling on its own thread; `commit(offsets)` runs on
    that thread (the client is not thread safe)."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.commands: queue.Queue = queue.Queue()
        self.answers: queue.Queue = queue.Queue()
        self.stopping = threading.Event()

    def run(self) -> None:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.errors import CommitFailedError, RebalanceInProgressError
        from kafka.structs import OffsetAndMetadata

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=self.name,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=10000,
            heartbeat_interval_ms=500,
            fetch_max_wait_ms=100,
            request_timeout_ms=15000,
        )
        try:
            # subscribe, then wait for the topic in the metadata (see test_groups.py: kafka-python
            # may otherwise assign from an empty metadata snapshot with a 0 ms rebalance delay)
            consumer.subscribe([self.topic])
            deadline = time.monotonic() + WAIT
            while self.topic not in consumer.topics() and time.monotonic() < deadline:
                time.sleep(0.05)
            while not self.stopping.is_set():
                consumer.poll(timeout_ms=100)
                try:
                    offsets = self.commands.get_nowait()
                except queue.Empty:
                    continue
                tps = {
                    TopicPartition(self.topic, p): OffsetAndMetadata(o, f"m{p}", -1)
                    for p, o in offsets.items()
                }
                for _ in range(50):  # a rebalance may be in progress: poll completes it
                    try:
                        consumer.commit(tps)
                        self.answers.put("committed")
                        break
                    except (CommitFailedError, RebalanceInProgressError):
                        consumer.poll(timeout_ms=100)
                else:
                    self.answers.put("commit failed")
        except Exception as exc:  # noqa: BLE001 - reported to the test
            self.answers.put(repr(exc))
        finally:
            consumer.close()

    def commit(self, offsets: dict[int, int]) -> None:
        self.commands.put(offsets)
        assert self.answers.get(timeout=WAIT) == "committed"

    def stop(self) -> None:
        self.stopping.set()
        self.join(WAIT)


def test_consumer_group_members_assignments_and_committed_offsets(b):
    topic, group = uid("state-group"), uid("g")
    create_topic(b, topic, partitions=3)
    members = [Member(b.bootstrap, group, topic, f"member-{i}") for i in range(2)]
    for m in members:
        m.start()
    try:
        g = b.state.wait_for_group(group, "Stable", members=2, timeout=WAIT)
        assert g["state"] == "Stable" and g["group_id"] == group
        assert (g["protocol_type"], g["generation"] >= 1) == ("consumer", True)
        assert g["protocol"] in ("range", "roundrobin", "sticky", "cooperative-sticky")
        assert sorted(m["client_id"] for m in g["members"]) == ["member-0", "member-1"]
        assert g["leader"] in {m["member_id"] for m in g["members"]}
        assert all(m["client_host"] and m["group_instance_id"] is None for m in g["members"])
        assert all(m["subscription"] == [topic] for m in g["members"])
        assigned = [p for m in g["members"] for p in m["assignment"].get(topic, [])]
        assert sorted(assigned) == [0, 1, 2], g["members"]  # every partition, each once
        assert all(m["assignment"].get(topic) for m in g["members"])  # both got some
        assert b.state.group(group)["generation"] == g["generation"]
        assert group in {x["group_id"] for x in b.state.groups()}

        members[0].commit({0: 3, 1: 5, 2: 7})
        seen = b.state.wait_for_offset(group, topic, 2, 7, timeout=WAIT)
        assert (seen["offset"], seen["metadata"], seen["leader_epoch"]) == (7, "m2", -1)
        assert b.state.committed(group) == {(topic, 0): 3, (topic, 1): 5, (topic, 2): 7}
        assert b.state.offsets(group)[0]["metadata"] == "m0"

        started = time.monotonic()
        timed_out = _status(lambda: b.state.wait_for_offset(group, topic, 2, 8, timeout=0.3))
        assert timed_out.status == 408 and '"offset": 7' in timed_out.message
        assert time.monotonic() - started < 5
    finally:
        for m in members:
            m.stop()
    # both left (LeaveGroup on close): the group is empty and keeps its offsets
    g = b.state.wait_for_group(group, "Empty", members=0, timeout=WAIT)
    assert g["members"] == [] and b.state.committed(group)[(topic, 2)] == 7


# ------------------------------------------------------------------------------ refusals
def test_unknown_names_answer_404_and_bad_queries_400(b):
    topic = uid("state-404")
    create_topic(b, topic, partitions=1)
    cases = [
        (lambda: b.state.partition("no-such-topic", 0), "no topic 'no-such-topic'"),
        (lambda: b.state.partition(topic, 3), "1 partition(s): no partition 3"),
        (lambda: b.state.partitions("no-such-topic"), "no topic"),
        (lambda: b.state.group("no/such group"), "no group 'no/such group'"),
        (lambda: b.state.offsets("no-such-group"), "no group"),
        (lambda: b.state.transaction("no-such-txn"), "no transactional id"),
    ]
    for call, text in cases:
        err = _status(call)
        assert err.status == 404 and text in err.message, err
    bad = [
        ("/v1/state/wait/group", {"group": "g", "state": "Rebalancing"}, "unknown group state"),
        ("/v1/state/wait/offset", {"group": "g", "topic": topic}, "'partition' is required"),
        ("/v1/state/wait/group", {"group": "g", "timeout": "soon"}, "timeout must be a number"),
        (f"/v1/state/partitions/{topic}/x", {}, "partition must be an integer"),
    ]
    for path, query, text in bad:
        err = _status(lambda path=path, query=query: b.control.get(path, **query))
        assert err.status == 400 and text in err.message, err


def test_waits_time_out_with_408_and_what_they_saw(b):
    started = time.monotonic()
    err = _status(lambda: b.state.wait_for_group(uid("nobody"), "Stable", members=1, timeout=0.2))
    assert err.status == 408 and "Stable with 1 member(s)" in err.message and '"state": null' in err.message
    assert 0.2 <= time.monotonic() - started < 5
    # a wait whose condition already holds answers at once
    assert b.state.wait_for_transactions_complete(timeout=0) == {"transactions": [], "partitions": []}
