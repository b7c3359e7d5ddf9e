"""Issue 4, scenario 6: the broker is SIGKILLed mid-transaction and in the middle of EndTxn
(crash points armed by the property `minibroker.test.fault`: the process kills itself with
SIGKILL right after PrepareCommit/PrepareAbort is durable, after the first of several markers,
or after the last marker but before CompleteCommit), then restarted on the same data directory.

After restart: nothing is lost or duplicated; a transaction whose commit was decided is complete
on every partition (markers, group offsets); an open one stays blocked until it is aborted with
markers (by a new producer instance, or by its timeout when it expired while the broker was
down); the LSO moves on; EndTxn retries answer as Kafka does."""

from __future__ import annotations

import time

import pytest

from tests.acceptance.test_transactions_helpers import (
    CONCURRENT_TRANSACTIONS,
    INVALID_TXN_STATE,
    NONE,
    WAIT,
    ck_producer,
    committed,
    kp_producer,
    markers,
    offsets,
    txn_wire,
    uid,
    uncommitted,
)
from tests.support.helpers import create_topic, wait_until
from tests.support.wire import ConnectionClosed

pytestmark = pytest.mark.timeout(120)

PARTS = 3
OVERRIDES = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 100}


def _produce_open(broker, topic, txn_id, tag, client="confluent-kafka"):
    """One committed transaction (c-*) and one left open (tag-*) on every partition; returns
    the producer (still referencing the broker) and its (pid, epoch). With kafka-python the
    committed one comes from another transactional id (a fault hook is armed for this one)."""
    if client == "confluent-kafka":
        p = ck_producer(broker, txn_id)
    else:
        first = kp_producer(broker, txn_id + "-first")
        first.init_transactions()
        first.begin_transaction()
        for i in range(PARTS):
            first.send(topic, f"c-{i}".encode(), partition=i)
        first.commit_transaction()
        first.close(timeout=2)
        p = kp_producer(broker, txn_id)
    if client == "confluent-kafka":
        p.init_transactions(WAIT)
        p.begin_transaction()
        for i in range(PARTS):
            p.produce(topic, f"c-{i}".encode(), partition=i)
        p.commit_transaction(WAIT)
        p.begin_transaction()
        for i in range(PARTS):
            p.produce(topic, f"{tag}-{i}".encode(), partition=i)
        assert p.flush(WAIT) == 0
    else:
        p.init_transactions()
        p.begin_transaction()
        for i in range(PARTS):
            p.send(topic, f"{tag}-{i}".encode(), partition=i)
        p.flush(WAIT)
    with txn_wire(broker) as w:
        d = w.describe_transaction(txn_id)
    assert d.transaction_state == "Ongoing"
    assert sorted(p for t in d.topics for p in t.partitions) == list(range(PARTS))
    return p, d.producer_id, d.producer_epoch


def _assert_blocked(broker, topic):
    for i in range(PARTS):
        hw, lso, _ = offsets(broker, topic, i)
        assert lso < hw, f"partition {i}: LSO {lso} should stop at the open transaction"
        assert committed(broker, topic, i) == [f"c-{i}".encode()]


def _assert_settled(broker, topic, open_tag, open_outcome):
    for i in range(PARTS):
        hw, lso, _ = offsets(broker, topic, i)
        assert lso == hw, f"partition {i}: LSO {lso} != HWM {hw}"
        want = [f"c-{i}".encode()]
        if open_outcome == "COMMIT":
            want.append(f"{open_tag}-{i}".encode())
        assert committed(broker, topic, i) == want
        assert uncommitted(broker, topic, i) == [f"c-{i}".encode(), f"{open_tag}-{i}".encode()]
        kinds = [k for *_, k in markers(broker, topic, i)]
        assert kinds[0] == "COMMIT" and kinds[-1] == open_outcome and len(kinds) in (2, 3), kinds


def test_sigkill_mid_transaction_then_new_instance_aborts_it(broker_factory):
    b = broker_factory(OVERRIDES)
    topic, txn_id = uid("killmid"), uid("killmid")
    create_topic(b, topic, PARTS)
    p, pid, epoch = _produce_open(b, topic, txn_id, "open")
    b.kill()
    del p
    b.start()
    with txn_wire(b) as w:
        d = w.describe_transaction(txn_id)
    assert (d.transaction_state, d.producer_id, d.producer_epoch) == ("Ongoing", pid, epoch)
    _assert_blocked(b, topic)

    q = ck_producer(b, txn_id)
    q.init_transactions(WAIT)  # aborts the open transaction with markers, fences the old one
    _assert_settled(b, topic, "open", "ABORT")
    with txn_wire(b) as w:
        d = w.describe_transaction(txn_id)
        assert d.producer_id == pid and d.producer_epoch == epoch + 2
        # the dead instance's EndTxn is fenced
        assert w.end_txn(txn_id, pid, epoch, True) == 90
    q.begin_transaction()
    q.produce(topic, b"after", partition=0)
    q.commit_transaction(WAIT)
    assert committed(b, topic, 0) == [b"c-0", b"after"]


def test_transaction_that_expired_while_down_is_aborted_at_startup(broker_factory):
    b = broker_factory(OVERRIDES)
    topic, txn_id = uid("killexp"), uid("killexp")
    create_topic(b, topic, PARTS)
    p = ck_producer(b, txn_id, **{"transaction.timeout.ms": 1500, "socket.timeout.ms": 1500})
    p.init_transactions(WAIT)
    p.begin_transaction()
    for i in range(PARTS):
        p.produce(topic, f"c-{i}".encode(), partition=i)
    p.commit_transaction(WAIT)
    p.begin_transaction()
    for i in range(PARTS):
        p.produce(topic, f"late-{i}".encode(), partition=i)
    assert p.flush(WAIT) == 0
    began = time.monotonic()
    with txn_wire(b) as w:
        d = w.describe_transaction(txn_id)
    b.kill()
    del p
    wait_until(lambda: time.monotonic() - began > 2.0, 5, message="transaction timeout to pass")
    b.restart(overrides={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 60000})
    # aborted by load() itself (the periodic duty is far away now), before serving
    with txn_wire(b) as w:
        after = w.describe_transaction(txn_id)
    assert after.transaction_state == "CompleteAbort"
    assert after.producer_epoch == d.producer_epoch + 1
    _assert_settled(b, topic, "late", "ABORT")
    b.wait_for_log("aborting timed-out transaction")


@pytest.mark.parametrize(
    "fault, commit",
    [
        ("txn.after_prepare", True),
        ("txn.after_markers", True),
        ("txn.before_complete", True),
        ("txn.after_prepare", False),
    ],
)
def test_crash_during_end_txn_is_completed_at_restart(broker_factory, fault, commit):
    from kafka import KafkaConsumer, TopicPartition

    outcome = "COMMIT" if commit else "ABORT"
    topic, txn_id, group = uid("crash"), uid("crash"), uid("crashgroup")
    b = broker_factory(
        {**OVERRIDES, "minibroker.test.fault": f"{fault}@{txn_id}", "group.initial.rebalance.delay.ms": 0}
    )
    create_topic(b, topic, PARTS)
    p, pid, epoch = _produce_open(b, topic, txn_id, "decided", client="kafka-python")
    from kafka.structs import OffsetAndMetadata

    p.send_offsets_to_transaction({TopicPartition(topic, 1): OffsetAndMetadata(7, "m", -1)}, group)
    with txn_wire(b) as w:
        parts = w.describe_transaction(txn_id).topics
        assert "__consumer_offsets" in {t.topic for t in parts}
        with pytest.raises((ConnectionClosed, TimeoutError)):
            w.end_txn(txn_id, pid, epoch, commit)
    assert b.proc.wait(WAIT) == -9  # SIGKILL
    p.close(timeout=0)
    b.restart(overrides={"minibroker.test.fault": ""})
    b.wait_for_log("completing transaction interrupted by a restart")

    with txn_wire(b) as w:
        d = w.describe_transaction(txn_id)
        assert d.transaction_state == ("CompleteCommit" if commit else "CompleteAbort")
        assert (d.producer_id, d.producer_epoch) == (pid, epoch)
        # the client's retry of its EndTxn: same outcome NONE, the other INVALID_TXN_STATE
        assert w.end_txn(txn_id, pid, epoch, commit) == NONE
        assert w.end_txn(txn_id, pid, epoch, not commit) == INVALID_TXN_STATE
    _assert_settled(b, topic, "decided", outcome)

    c = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        got = c.committed(TopicPartition(topic, 1))
    finally:
        c.close()
    assert got == (7 if commit else None)

    # the same producer id goes on working after the restart (new instance bumps the epoch)
    q = kp_producer(b, txn_id)
    q.init_transactions()
    q.begin_transaction()
    q.send(topic, b"next", partition=2)
    q.commit_transaction()
    q.close(timeout=2)
    assert committed(b, topic, 2)[-1] == b"next"


def test_concurrent_transactions_answered_only_while_completing(broker_factory):
    """After a restart completed the transaction there is nothing pending: a new
    InitProducerId succeeds at once (no CONCURRENT_TRANSACTIONS loop)."""
    topic, txn_id = uid("cc"), uid("cc")
    b = broker_factory({**OVERRIDES, "minibroker.test.fault": f"txn.after_prepare@{txn_id}"})
    create_topic(b, topic, 1)
    with txn_wire(b) as w:
        r = w.init_producer_id(txn_id)
        assert r.error_code == NONE
        pid, epoch = r.producer_id, r.producer_epoch
        assert w.add_partitions(txn_id, pid, epoch, [(topic, 0)]) == {(topic, 0): NONE}
        from tests.acceptance.test_transactions_helpers import txn_batch

        resp = w.produce_txn(
            txn_id, topic, 0, txn_batch([b"v"], producer_id=pid, producer_epoch=epoch, base_sequence=0)
        )
        assert resp.error_code == NONE
        with pytest.raises((ConnectionClosed, TimeoutError)):
            w.end_txn(txn_id, pid, epoch, True)
    assert b.proc.wait(WAIT) == -9  # SIGKILL
    b.restart(overrides={"minibroker.test.fault": ""})
    with txn_wire(b) as w:
        r = w.init_producer_id(txn_id, producer_id=pid, producer_epoch=epoch)
        assert r.error_code != CONCURRENT_TRANSACTIONS
        assert (r.error_code, r.producer_id, r.producer_epoch) == (NONE, pid, epoch + 1)
    assert committed(b, topic) == [b"v"]
