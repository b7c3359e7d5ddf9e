"""Issue 4: transactions with real clients (kafka-python 3.0 and confluent-kafka/librdkafka),
Apache Kafka's own scenarios (TransactionsTest.scala):

1. commit and abort interleaved over two topics: read_committed sees exactly the committed
   records, read_uncommitted all of them; seek-to-end is the LSO (HWM for read_uncommitted);
2. two producers interleaved, one transaction left open: read_committed sees nothing from its
   first offset on until it ends (also offsets-for-times), then everything committed;
4. fencing on send / AddPartitions / sendOffsets / commit: the fenced instance's open data is
   aborted with a marker at the bumped epoch and never reaches read_committed;
5. transaction expiry: a short transaction.timeout.ms left open is aborted by the broker, the
   producer is fenced on its next call, read_committed never sees the data;
7. a delayed (min_bytes) read_committed fetch still reports the aborted ranges it spans.

Scenarios 3, 6 and 8 are in test_transactions_ctp.py, test_transactions_recovery.py and
test_transactions_protocol.py. All tests share one broker (unique topics and ids per test).
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.acceptance.test_transactions_helpers import (
    NONE,
    WAIT,
    ck_consumer,
    ck_producer,
    committed,
    consume_ck,
    consume_kp,
    kp_consumer,
    kp_producer,
    markers,
    offsets,
    read_log,
    txn_wire,
    uid,
    uncommitted,
    wait_state,
)
from tests.conftest import BrokerFactory
from tests.support.helpers import create_topic
from tests.support.wire import WireClient

CLIENTS = ["kafka-python", "confluent-kafka"]
OVERRIDES = {
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 100,
    "group.initial.rebalance.delay.ms": 0,
}

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def tx_broker(request, tmp_path_factory):
    factory = BrokerFactory(tmp_path_factory.mktemp("txn"))
    b = factory(OVERRIDES)
    yield b
    factory.teardown(request.session.testsfailed > 0)


# ------------------------------------------------------------------------------ client shims
class Txn:
    """The same transactional producer calls over kafka-python and confluent-kafka."""

    def __init__(self, client, broker, txn_id, **conf):
        self.client = client
        if client == "kafka-python":
            self.p = kp_producer(broker, txn_id, **conf)
        else:
            self.p = ck_producer(broker, txn_id, **conf)

    def init(self):
        if self.client == "kafka-python":
            self.p.init_transactions()
        else:
            self.p.init_transactions(WAIT)

    def begin(self):
        self.p.begin_transaction()

    def send(self, topic, partition, value: bytes):
        if self.client == "kafka-python":
            self.p.send(topic, value, partition=partition)
        else:
            self.p.produce(topic, value, partition=partition)

    def flush(self):
        if self.client == "kafka-python":
            self.p.flush(WAIT)
        else:
            assert self.p.flush(WAIT) == 0

    def commit(self):
        if self.client == "kafka-python":
            self.p.commit_transaction()
        else:
            self.p.commit_transaction(WAIT)

    def abort(self):
        if self.client == "kafka-python":
            self.p.abort_transaction()
        else:
            self.p.abort_transaction(WAIT)

    def close(self):
        if self.client == "kafka-python":
            self.p.close(timeout=2)
        else:
            self.p.flush(0)


def read_with_client(client, broker, isolation, tps, expected):
    """Values a real consumer of `client` delivers from offset 0 of each (topic, partition)."""
    if client == "kafka-python":
        from kafka import TopicPartition

        c = kp_consumer(broker, isolation)
        try:
            parts = [TopicPartition(t, p) for t, p in tps]
            c.assign(parts)
            c.seek_to_beginning(*parts)
            got = consume_kp(c, expected)
        finally:
            c.close()
    else:
        from confluent_kafka import TopicPartition

        c = ck_consumer(broker, isolation)
        try:
            c.assign([TopicPartition(t, p, 0) for t, p in tps])
            got = consume_ck(c, expected)
        finally:
            c.close()
    return sorted((t, p, o, v) for t, p, o, v in got)


def end_offset_with_client(client, broker, isolation, topic, partition):
    """Where a consumer's seek-to-end lands (ListOffsets latest with its isolation level)."""
    if client == "kafka-python":
        from kafka import TopicPartition

        c = kp_consumer(broker, isolation)
        try:
            tp = TopicPartition(topic, partition)
            c.assign([tp])
            c.seek_to_end(tp)
            return c.position(tp)
        finally:
            c.close()
    from confluent_kafka import TopicPartition

    c = ck_consumer(broker, isolation)
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=WAIT)[1]
    finally:
        c.close()


# ------------------------------------------------------------------------------ 1
@pytest.mark.parametrize("client", CLIENTS)
def test_commit_and_abort_interleaved_over_two_topics(tx_broker, client):
    a, b = uid("txa"), uid("txb")
    create_topic(tx_broker, a, 2)
    create_topic(tx_broker, b, 1)
    p = Txn(client, tx_broker, uid("tid"))
    try:
        p.init()
        for n, outcome in enumerate(["commit", "abort", "commit", "abort", "commit"]):
            p.begin()
            p.send(a, n % 2, f"{outcome}-{n}-a".encode())
            p.send(b, 0, f"{outcome}-{n}-b".encode())
            p.flush()
            p.commit() if outcome == "commit" else p.abort()
        # one more left open: it blocks read_committed from its first offset on
        p.begin()
        p.send(a, 0, b"open-a")
        p.send(b, 0, b"open-b")
        p.flush()

        every = [(a, 0), (a, 1), (b, 0)]
        want_committed = {f"commit-{n}-{s}".encode() for n in (0, 2, 4) for s in "ab"}
        want_all = (
            want_committed
            | {f"abort-{n}-{s}".encode() for n in (1, 3) for s in "ab"}
            | {b"open-a", b"open-b"}
        )
        got = read_with_client(client, tx_broker, "read_committed", every, len(want_committed))
        assert sorted(v for *_, v in got) == sorted(want_committed)
        got = read_with_client(client, tx_broker, "read_uncommitted", every, len(want_all))
        assert sorted(v for *_, v in got) == sorted(want_all)

        for topic in (a, b):
            hw, lso, _ = offsets(tx_broker, topic, 0)
            assert lso < hw
            assert uncommitted(tx_broker, topic, 0, start=lso)[0].startswith(b"open-")
            assert end_offset_with_client(client, tx_broker, "read_committed", topic, 0) == lso
            assert end_offset_with_client(client, tx_broker, "read_uncommitted", topic, 0) == hw
        # the wire view agrees with the clients, marker by marker
        kinds = [k for _, _, k in markers(tx_broker, b, 0)]
        assert kinds == ["COMMIT", "ABORT", "COMMIT", "ABORT", "COMMIT"]

        p.abort()
        for topic in (a, b):
            hw, lso, _ = offsets(tx_broker, topic, 0)
            assert lso == hw
            assert end_offset_with_client(client, tx_broker, "read_committed", topic, 0) == hw
        got = read_with_client(client, tx_broker, "read_committed", every, len(want_committed))
        assert sorted(v for *_, v in got) == sorted(want_committed)
    finally:
        p.close()


# ------------------------------------------------------------------------------ 2
@pytest.mark.parametrize("outcome", ["commit", "abort"])
def test_open_transaction_blocks_read_committed_until_it_ends(tx_broker, outcome):
    topic = uid("txblock")
    create_topic(tx_broker, topic, 1)
    slow = Txn("confluent-kafka", tx_broker, uid("slow"))
    fast = Txn("kafka-python", tx_broker, uid("fast"))
    try:
        slow.init()
        fast.init()
        slow.begin()
        slow.send(topic, 0, b"slow-1")
        slow.flush()  # offset 0, undecided
        fast.begin()
        fast.send(topic, 0, b"fast-1")
        fast.send(topic, 0, b"fast-2")
        fast.commit()  # offsets 1, 2 + marker 3: committed, but behind the open one

        hw, lso, _ = offsets(tx_broker, topic)
        assert (hw, lso) == (4, 0)
        assert committed(tx_broker, topic) == []
        for client in CLIENTS:
            assert end_offset_with_client(client, tx_broker, "read_committed", topic, 0) == 0
        # a real read_committed consumer waits and gets nothing
        from kafka import TopicPartition

        c = kp_consumer(tx_broker, "read_committed")
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        try:
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                assert c.poll(timeout_ms=100) == {}
            # offsets-for-times does not reveal undecided data either
            assert c.offsets_for_times({tp: 0})[tp] is None
            uc = kp_consumer(tx_broker, "read_uncommitted")
            assert uc.offsets_for_times({tp: 0})[tp].offset == 0
            uc.close()

            slow.send(topic, 0, b"slow-2")
            slow.flush()
            slow.commit() if outcome == "commit" else slow.abort()
            want = (
                [b"slow-1", b"fast-1", b"fast-2", b"slow-2"]
                if outcome == "commit"
                else [b"fast-1", b"fast-2"]
            )
            got = consume_kp(c, len(want))
            assert [v for *_, v in sorted(got, key=lambda r: r[2])] == want
        finally:
            c.close()
        assert committed(tx_broker, topic) == want
        hw, lso, _ = offsets(tx_broker, topic)
        assert hw == lso == 6
    finally:
        slow.close()
        fast.close()


# ------------------------------------------------------------------------------ 4
def _fenced_data_is_aborted(broker, topic, partitions, zombie_values, new_values):
    for p in partitions:
        assert not set(committed(broker, topic, p)) & set(zombie_values)
    everything = [v for p in partitions for v in uncommitted(broker, topic, p)]
    assert set(zombie_values) <= set(everything)
    assert sorted(v for p in partitions for v in committed(broker, topic, p)) == sorted(new_values)
    for p in partitions:
        hw, lso, _ = offsets(broker, topic, p)
        assert hw == lso


@pytest.mark.parametrize("where", ["commit", "send", "send_offsets", "add_partitions"])
def test_fencing_kafka_python(tx_broker, where):
    from kafka import TopicPartition
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    topic = uid("fence")
    create_topic(tx_broker, topic, 2)
    txn_id = uid("fenced")
    zombie = kp_producer(tx_broker, txn_id)
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send(topic, b"zombie-1", partition=0).get(WAIT)
    with txn_wire(tx_broker) as w:
        before = w.describe_transaction(txn_id)
    assert before.transaction_state == "Ongoing"

    fresh = kp_producer(tx_broker, txn_id)
    fresh.init_transactions()  # fences the zombie and aborts its transaction
    with txn_wire(tx_broker) as w:
        after = w.describe_transaction(txn_id)
    assert after.producer_id == before.producer_id
    assert after.producer_epoch == before.producer_epoch + 2  # fence bump + retry bump
    # the zombie's record was aborted by a marker at the fencing epoch
    assert markers(tx_broker, topic, 0)[-1][1:] == (before.producer_id, "ABORT")
    with WireClient.to(tx_broker) as c:
        _, part = c.fetch(topic, 0, 0, isolation_level=0)
    from tests.support.wire import iter_batches

    ctrl = [b for b in iter_batches(part.records) if b.is_control_batch]
    assert ctrl[-1].producer_epoch == before.producer_epoch + 1

    zombie_values = [b"zombie-1"]
    with pytest.raises(KafkaError):
        if where == "commit":
            zombie.commit_transaction()
        elif where == "send":
            zombie.send(topic, b"zombie-2", partition=0).get(WAIT)
            zombie.commit_transaction()
        elif where == "send_offsets":
            zombie.send_offsets_to_transaction(
                {TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)}, uid("group")
            )
            zombie.commit_transaction()
        else:  # a partition not yet in the transaction: AddPartitionsToTxn is fenced
            zombie.send(topic, b"zombie-3", partition=1).get(WAIT)
            zombie.commit_transaction()
    zombie.close(timeout=2)

    fresh.begin_transaction()
    fresh.send(topic, b"fresh-1", partition=0)
    fresh.send(topic, b"fresh-2", partition=1)
    fresh.commit_transaction()
    fresh.close(timeout=2)
    _fenced_data_is_aborted(tx_broker, topic, [0, 1], zombie_values, [b"fresh-1", b"fresh-2"])


@pytest.mark.parametrize("where", ["commit", "send"])
def test_fencing_confluent_kafka(tx_broker, where):
    from confluent_kafka import KafkaException

    topic = uid("cfence")
    create_topic(tx_broker, topic, 2)
    txn_id = uid("cfenced")
    zombie = ck_producer(tx_broker, txn_id)
    zombie.init_transactions(WAIT)
    zombie.begin_transaction()
    zombie.produce(topic, b"zombie-1", partition=0)
    assert zombie.flush(WAIT) == 0

    fresh = ck_producer(tx_broker, txn_id)
    fresh.init_transactions(WAIT)
    with pytest.raises(KafkaException) as exc:
        if where == "send":  # the produce request is refused: INVALID_PRODUCER_EPOCH
            zombie.produce(topic, b"zombie-2", partition=0)
            zombie.flush(WAIT)
        zombie.commit_transaction(WAIT)
    assert exc.value.args[0].fatal()
    assert "fenced" in str(exc.value).lower()

    fresh.begin_transaction()
    fresh.produce(topic, b"fresh-1", partition=1)
    fresh.commit_transaction(WAIT)
    _fenced_data_is_aborted(tx_broker, topic, [0, 1], [b"zombie-1"], [b"fresh-1"])


# ------------------------------------------------------------------------------ 5
@pytest.mark.parametrize("client", CLIENTS)
def test_transaction_expiry_aborts_and_fences(tx_broker, client):
    topic = uid("expire")
    create_topic(tx_broker, topic, 1)
    txn_id = uid("expiring")
    conf = (
        {"transaction_timeout_ms": 1000}
        if client == "kafka-python"
        else {"transaction.timeout.ms": 1000, "socket.timeout.ms": 1000}
    )
    p = Txn(client, tx_broker, txn_id, **conf)
    p.init()
    with txn_wire(tx_broker) as w:
        epoch = w.describe_transaction(txn_id).producer_epoch
    p.begin()
    p.send(topic, 0, b"expired-1")
    p.flush()
    d = wait_state(tx_broker, txn_id, "CompleteAbort", timeout=10)
    assert d.producer_epoch == epoch + 1  # the broker bumped the epoch to fence the producer
    assert markers(tx_broker, topic) == [(1, d.producer_id, "ABORT")]
    assert committed(tx_broker, topic) == []
    assert uncommitted(tx_broker, topic) == [b"expired-1"]

    # the producer is fenced on its next call
    if client == "kafka-python":
        from kafka.errors import KafkaError

        with pytest.raises(KafkaError):
            p.send(topic, 0, b"expired-2")
            p.flush()
            p.commit()
    else:
        from confluent_kafka import KafkaException

        with pytest.raises(KafkaException):
            p.send(topic, 0, b"expired-2")
            p.flush()
            p.commit()
    p.close()
    assert committed(tx_broker, topic) == []
    hw, lso, _ = offsets(tx_broker, topic)
    assert hw == lso
    # a new instance works
    q = Txn(client, tx_broker, txn_id)
    q.init()
    q.begin()
    q.send(topic, 0, b"after")
    q.commit()
    q.close()
    assert committed(tx_broker, topic) == [b"after"]


# ------------------------------------------------------------------------------ 7
def test_delayed_fetch_includes_aborted_transaction(tx_broker):
    topic = uid("delayed")
    create_topic(tx_broker, topic, 1)
    p1 = kp_producer(tx_broker, uid("p1"))
    p2 = kp_producer(tx_broker, uid("p2"))
    p1.init_transactions()
    p2.init_transactions()
    p1.begin_transaction()
    p2.begin_transaction()

    # park a read_committed fetch that cannot be satisfied by min_bytes before it starts
    parked = {}

    def park():
        with WireClient.to(tx_broker, timeout=15) as c:
            t0 = time.monotonic()
            parked["resp"] = c.fetch(topic, 0, 0, isolation_level=1, min_bytes=100000, max_wait_ms=1500)[1]
            parked["elapsed"] = time.monotonic() - t0

    t = threading.Thread(target=park)
    t.start()
    p2.send(topic, b"x1", partition=0).get(WAIT)  # 0
    p1.send(topic, b"y1", partition=0).get(WAIT)  # 1
    p1.send(topic, b"y2", partition=0).get(WAIT)  # 2
    p2.send(topic, b"x2", partition=0).get(WAIT)  # 3
    p1.abort_transaction()  # 4
    p2.commit_transaction()  # 5
    t.join(15)
    assert not t.is_alive()
    pid1 = p1._transaction_manager.producer_id_and_epoch.producer_id
    p1.close(timeout=2)
    p2.close(timeout=2)

    part = parked["resp"]
    assert parked["elapsed"] >= 1.0  # it really waited for min_bytes
    assert part.last_stable_offset == part.high_watermark == 6
    assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(pid1, 1)]

    # the same as a fresh delayed fetch, and through read_log's client-side filtering
    with WireClient.to(tx_broker) as c:
        t0 = time.monotonic()
        _, part = c.fetch(topic, 0, 0, isolation_level=1, min_bytes=100000, max_wait_ms=300)
        assert time.monotonic() - t0 >= 0.25
        assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(pid1, 1)]
        values, marks, aborted, end = read_log(c, topic, 0, isolation_level=1)
    assert values == [(0, b"x1"), (3, b"x2")]
    assert [k for *_, k in marks] == ["ABORT", "COMMIT"]

    # and a real consumer whose fetches sit in the broker's purgatory
    from kafka import TopicPartition

    c = kp_consumer(tx_broker, "read_committed", fetch_min_bytes=100000, fetch_max_wait_ms=100)
    c.assign([TopicPartition(topic, 0)])
    got = consume_kp(c, 2)
    c.close()
    assert [(o, v) for _, _, o, v in sorted(got)] == [(0, b"x1"), (3, b"x2")]
    cc = ck_consumer(tx_broker, "read_committed", **{"fetch.min.bytes": 100000})
    from confluent_kafka import TopicPartition as CTP

    cc.assign([CTP(topic, 0, 0)])
    got = consume_ck(cc, 2)
    cc.close()
    assert [(o, v) for _, _, o, v in sorted(got)] == [(0, b"x1"), (3, b"x2")]


# ------------------------------------------------------------------------------ inspection
def test_list_describe_transactions_and_producers(tx_broker):
    topic = uid("inspect")
    create_topic(tx_broker, topic, 2)
    open_id, done_id = uid("open"), uid("done")
    p_open = kp_producer(tx_broker, open_id)
    p_done = kp_producer(tx_broker, done_id)
    p_open.init_transactions()
    p_done.init_transactions()
    p_done.begin_transaction()
    p_done.send(topic, b"d", partition=1)
    p_done.commit_transaction()
    p_open.begin_transaction()
    p_open.send(topic, b"o", partition=0).get(WAIT)
    p_open.send(topic, b"o", partition=1).get(WAIT)
    try:
        with txn_wire(tx_broker) as w:
            resp = w.list_transactions()
            states = {s.transactional_id: s.transaction_state for s in resp.transaction_states}
            assert states[open_id] == "Ongoing" and states[done_id] == "CompleteCommit"
            resp = w.list_transactions(states=["Ongoing", "Nonsense"])
            assert resp.unknown_state_filters == ["Nonsense"]
            assert open_id in {s.transactional_id for s in resp.transaction_states}
            assert done_id not in {s.transactional_id for s in resp.transaction_states}
            d = w.describe_transactions([open_id, done_id, "no-such-id"])
            assert d["no-such-id"].error_code == 105
            o = d[open_id]
            assert o.error_code == NONE and o.transaction_state == "Ongoing"
            assert o.transaction_timeout_ms == 30000 and o.transaction_start_time_ms > 0
            assert [(t.topic, sorted(t.partitions)) for t in o.topics] == [(topic, [0, 1])]
            assert d[done_id].topics == []
            prods = w.describe_producers(topic, [0, 1, 7])
            assert prods[7].error_code == 3
            p0 = {s.producer_id: s for s in prods[0].active_producers}
            assert p0[o.producer_id].current_txn_start_offset == 0
            assert p0[o.producer_id].producer_epoch == o.producer_epoch
            p1 = {s.producer_id: s for s in prods[1].active_producers}
            assert p1[d[done_id].producer_id].current_txn_start_offset == -1
            assert p1[o.producer_id].current_txn_start_offset == 2  # after d and its marker
    finally:
        p_open.abort_transaction()
        p_open.close(timeout=2)
        p_done.close(timeout=2)


def test_transaction_state_topic_is_readable(tx_broker):
    """__transaction_state holds Kafka's TransactionLogKey/Value records (for debugging)."""
    from minibroker.coordinator.txn_state import decode_key, decode_value

    txn_id = uid("readable")
    p = kp_producer(tx_broker, txn_id)
    p.init_transactions()
    p.close(timeout=2)
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(
        bootstrap_servers=tx_broker.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    parts = c.partitions_for_topic("__transaction_state")
    assert parts
    c.assign([TopicPartition("__transaction_state", q) for q in parts])
    found = []
    deadline = time.monotonic() + WAIT
    while not found and time.monotonic() < deadline:
        for msgs in c.poll(timeout_ms=200).values():
            for m in msgs:
                if decode_key(m.key) == txn_id:
                    found.append(decode_value(txn_id, m.value))
    c.close()
    assert found and found[-1].state.display == "Empty" and found[-1].producer_epoch == 0
