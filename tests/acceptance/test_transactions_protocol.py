"""Issue 4, scenario 8 and the error codes per version, with raw requests where clients cannot
express them (kafka-python's schema classes over tests/support/wire.py): INVALID_TRANSACTION_TIMEOUT,
CONCURRENT_TRANSACTIONS while a fenced transaction is aborted, KIP-360 producer id/epoch fields,
PRODUCER_FENCED vs INVALID_PRODUCER_EPOCH by version, AddPartitionsToTxn per-partition results,
TxnOffsetCommit without AddOffsetsToTxn, EndTxn on Empty and EndTxn retries, misuse after
fencing, transactional Produce checks, transactional.id expiration."""

from __future__ import annotations

import pytest

from tests.acceptance.test_transactions_helpers import (
    CONCURRENT_TRANSACTIONS,
    ILLEGAL_GENERATION,
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TRANSACTION_TIMEOUT,
    INVALID_TXN_STATE,
    NONE,
    OPERATION_NOT_ATTEMPTED,
    PRODUCER_FENCED,
    TRANSACTION_ABORTABLE,
    TRANSACTIONAL_ID_NOT_FOUND,
    UNKNOWN_MEMBER_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
    WAIT,
    committed,
    txn_batch,
    txn_wire,
    uid,
)
from tests.conftest import BrokerFactory
from tests.support.helpers import create_topic, wait_until

pytestmark = pytest.mark.timeout(60)

MAX_TIMEOUT = 60000


@pytest.fixture(scope="module")
def pbroker(request, tmp_path_factory):
    factory = BrokerFactory(tmp_path_factory.mktemp("txnproto"))
    b = factory({"transaction.max.timeout.ms": MAX_TIMEOUT})
    yield b
    factory.teardown(request.session.testsfailed > 0)


@pytest.fixture
def topic(pbroker):
    name = uid("pt")
    create_topic(pbroker, name, 2)
    return name


def _init(w, txn_id, **kw):
    r = w.init_producer_id(txn_id, **kw)
    assert r.error_code == NONE, r
    return r.producer_id, r.producer_epoch


# ------------------------------------------------------------------------------ InitProducerId
@pytest.mark.parametrize("version", [0, 2, 4, 5])
def test_idempotent_init_producer_id(pbroker, version):
    with txn_wire(pbroker) as w:
        a = w.init_producer_id(None, timeout_ms=0, version=version)
        b = w.init_producer_id(None, timeout_ms=0, version=version)
    assert a.error_code == b.error_code == NONE
    assert a.producer_epoch == b.producer_epoch == 0 and a.producer_id != b.producer_id


def test_invalid_transaction_timeout(pbroker):
    with txn_wire(pbroker) as w:
        for timeout in (MAX_TIMEOUT + 1, 0, -5):
            r = w.init_producer_id(uid("tt"), timeout_ms=timeout)
            assert (r.error_code, r.producer_id, r.producer_epoch) == (INVALID_TRANSACTION_TIMEOUT, -1, -1)
        assert w.init_producer_id(uid("tt"), timeout_ms=MAX_TIMEOUT).error_code == NONE


def test_invalid_transaction_timeout_with_clients(pbroker):
    from confluent_kafka import KafkaException, Producer
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    p = Producer(
        {
            "bootstrap.servers": pbroker.bootstrap,
            "transactional.id": uid("ck"),
            "transaction.timeout.ms": MAX_TIMEOUT + 1000,
        }
    )
    with pytest.raises(KafkaException) as exc:
        p.init_transactions(WAIT)
    assert "timeout" in str(exc.value).lower()
    kp = KafkaProducer(
        bootstrap_servers=pbroker.bootstrap,
        transactional_id=uid("kp"),
        transaction_timeout_ms=MAX_TIMEOUT + 1000,
        max_block_ms=10000,
    )
    with pytest.raises(KafkaError):
        kp.init_transactions()
    kp.close(timeout=1)


def test_epoch_bumps_and_kip360(pbroker, topic):
    txn = uid("kip360")
    with txn_wire(pbroker) as w:
        pid, e0 = _init(w, txn)
        assert e0 == 0
        assert _init(w, txn) == (pid, 1)
        # v3+: the producer's own id and epoch: bumped once; a retry returns the same
        assert _init(w, txn, producer_id=pid, producer_epoch=1, version=4) == (pid, 2)
        assert _init(w, txn, producer_id=pid, producer_epoch=1, version=4) == (pid, 2)
        # a stale epoch: PRODUCER_FENCED from v4, INVALID_PRODUCER_EPOCH before
        assert (
            w.init_producer_id(txn, producer_id=pid, producer_epoch=0, version=4).error_code
            == PRODUCER_FENCED
        )
        assert (
            w.init_producer_id(txn, producer_id=pid, producer_epoch=0, version=3).error_code
            == INVALID_PRODUCER_EPOCH
        )
        # another producer id
        assert (
            w.init_producer_id(txn, producer_id=pid + 1000, producer_epoch=2, version=5).error_code
            == PRODUCER_FENCED
        )
        # only one of the two fields set
        assert (
            w.init_producer_id(txn, producer_id=pid, producer_epoch=-1, version=4).error_code == 42
        )  # INVALID_REQUEST


def test_init_over_open_transaction_is_concurrent_then_bumps(pbroker, topic):
    txn = uid("reinit")
    with txn_wire(pbroker) as w:
        pid, epoch = _init(w, txn)
        assert w.add_partitions(txn, pid, epoch, [(topic, 0)]) == {(topic, 0): NONE}
        batch = txn_batch([b"open"], producer_id=pid, producer_epoch=epoch, base_sequence=0)
        assert w.produce_txn(txn, topic, 0, batch).error_code == NONE
        r = w.init_producer_id(txn)
        assert (r.error_code, r.producer_id, r.producer_epoch) == (CONCURRENT_TRANSACTIONS, -1, -1)
        assert w.describe_transaction(txn).transaction_state == "CompleteAbort"
        assert _init(w, txn) == (pid, epoch + 2)
    assert committed(pbroker, topic, 0) == []


# ------------------------------------------------------------------------------ AddPartitions
def test_add_partitions_unknown_partition_fails_whole_request(pbroker, topic):
    txn = uid("addp")
    with txn_wire(pbroker) as w:
        pid, epoch = _init(w, txn)
        res = w.add_partitions(txn, pid, epoch, [(topic, 0), (topic, 9), ("no-such-topic", 0)])
        assert res == {
            (topic, 0): OPERATION_NOT_ATTEMPTED,
            (topic, 9): UNKNOWN_TOPIC_OR_PARTITION,
            ("no-such-topic", 0): UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert w.describe_transaction(txn).transaction_state == "Empty"
        assert w.add_partitions(uid("none"), pid, epoch, [(topic, 0)]) == {
            (topic, 0): INVALID_PRODUCER_ID_MAPPING
        }
        assert w.add_partitions(txn, pid + 1, epoch, [(topic, 0)]) == {
            (topic, 0): INVALID_PRODUCER_ID_MAPPING
        }
        for version, code in (
            (0, INVALID_PRODUCER_EPOCH),
            (1, INVALID_PRODUCER_EPOCH),
            (2, PRODUCER_FENCED),
            (3, PRODUCER_FENCED),
        ):
            assert w.add_partitions(txn, pid, epoch + 1, [(topic, 0), (topic, 1)], version=version) == {
                (topic, 0): code,
                (topic, 1): code,
            }
        assert w.add_partitions(txn, pid, epoch, [(topic, 0), (topic, 1)], version=0) == {
            (topic, 0): NONE,
            (topic, 1): NONE,
        }
        d = w.describe_transaction(txn)
        assert d.transaction_state == "Ongoing"
        assert [(t.topic, sorted(t.partitions)) for t in d.topics] == [(topic, [0, 1])]
        assert w.end_txn(txn, pid, epoch, False) == NONE


# ------------------------------------------------------------------------------ EndTxn
def test_end_txn_on_empty_and_retries(pbroker, topic):
    txn = uid("end")
    with txn_wire(pbroker) as w:
        pid, epoch = _init(w, txn)
        assert w.end_txn(txn, pid, epoch, True) == INVALID_TXN_STATE
        assert w.end_txn(txn, pid, epoch, False) == INVALID_TXN_STATE
        assert w.add_partitions(txn, pid, epoch, [(topic, 1)]) == {(topic, 1): NONE}
        batch = txn_batch([b"a", b"b"], producer_id=pid, producer_epoch=epoch, base_sequence=0)
        assert w.produce_txn(txn, topic, 1, batch).error_code == NONE
        for version, code in (
            (0, INVALID_PRODUCER_EPOCH),
            (1, INVALID_PRODUCER_EPOCH),
            (2, PRODUCER_FENCED),
            (4, PRODUCER_FENCED),
        ):
            assert w.end_txn(txn, pid, epoch + 1, True, version=version) == code
        assert w.end_txn(txn, pid + 1, epoch, True) == INVALID_PRODUCER_ID_MAPPING
        assert w.end_txn(uid("none"), pid, epoch, True) == INVALID_PRODUCER_ID_MAPPING
        assert w.end_txn(txn, pid, epoch, True, version=0) == NONE
        # retries: the same outcome is NONE (no second marker), the other INVALID_TXN_STATE
        assert w.end_txn(txn, pid, epoch, True, version=4) == NONE
        assert w.end_txn(txn, pid, epoch, False) == INVALID_TXN_STATE
        assert w.describe_transaction(txn).transaction_state == "CompleteCommit"
    assert committed(pbroker, topic, 1) == [b"a", b"b"]
    from tests.acceptance.test_transactions_helpers import markers

    assert [k for *_, k in markers(pbroker, topic, 1)] == ["COMMIT"]


# ------------------------------------------------------------------------------ AddOffsets / TxnOffsetCommit
def test_txn_offset_commit_requires_add_offsets(pbroker, topic):
    txn, group = uid("toc"), uid("tocg")
    with txn_wire(pbroker) as w:
        pid, epoch = _init(w, txn)
        offs = {(topic, 0): 5, (topic, 1): 6}
        assert w.txn_offset_commit(txn, group, pid, epoch, offs, version=3) == {
            k: INVALID_TXN_STATE for k in offs
        }
        assert w.txn_offset_commit(txn, group, pid, epoch, offs, version=4) == {
            k: TRANSACTION_ABORTABLE for k in offs
        }
        for version, code in ((1, INVALID_PRODUCER_EPOCH), (2, PRODUCER_FENCED), (4, PRODUCER_FENCED)):
            assert w.add_offsets(txn, pid, epoch + 1, group, version=version) == code
        assert w.add_offsets(txn, pid, epoch, group, version=0) == NONE
        d = w.describe_transaction(txn)
        assert [t.topic for t in d.topics] == ["__consumer_offsets"]
        # stale epoch, unknown topic, KIP-447 member checks (v3+), then success
        assert w.txn_offset_commit(txn, group, pid, epoch + 1, offs) == {
            k: INVALID_PRODUCER_EPOCH for k in offs
        }
        assert w.txn_offset_commit(txn, group, pid, epoch, {("no-such", 0): 1, (topic, 0): 5}) == {
            ("no-such", 0): UNKNOWN_TOPIC_OR_PARTITION,
            (topic, 0): NONE,
        }
        assert w.txn_offset_commit(txn, group, pid, epoch, offs, generation_id=3, member_id="ghost") == {
            k: UNKNOWN_MEMBER_ID for k in offs
        }
        # (Kafka 3.x answers ILLEGAL_GENERATION here, 4.x's ClassicGroup UNKNOWN_MEMBER_ID)
        res = w.txn_offset_commit(txn, group, pid, epoch, offs, generation_id=3)
        assert set(res) == set(offs) and set(res.values()) <= {ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID}
        assert w.txn_offset_commit(txn, group, pid, epoch, offs, version=0) == {k: NONE for k in offs}
        assert w.end_txn(txn, pid, epoch, True) == NONE

    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=pbroker.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        assert c.committed(TopicPartition(topic, 0)) == 5
        assert c.committed(TopicPartition(topic, 1)) == 6
    finally:
        c.close()


def test_aborted_txn_offsets_are_dropped(pbroker, topic):
    txn, group = uid("toca"), uid("tocag")
    with txn_wire(pbroker) as w:
        pid, epoch = _init(w, txn)
        assert w.add_offsets(txn, pid, epoch, group) == NONE
        assert w.txn_offset_commit(txn, group, pid, epoch, {(topic, 0): 3}) == {(topic, 0): NONE}
        assert w.end_txn(txn, pid, epoch, False) == NONE
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=pbroker.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        assert c.committed(TopicPartition(topic, 0)) is None
    finally:
        c.close()


# ------------------------------------------------------------------------------ Produce
def test_transactional_produce_checks(pbroker, topic):
    txn = uid("prod")
    with txn_wire(pbroker) as w:
        pid, epoch = _init(w, txn)

        def produce(partition, seq, *, e=epoch, p=pid, tid=txn, version=9):
            batch = txn_batch([b"x"], producer_id=p, producer_epoch=e, base_sequence=seq)
            return w.produce_txn(tid, topic, partition, batch, version=version).error_code

        assert produce(0, 0) == INVALID_TXN_STATE  # not added to any transaction
        assert produce(0, 0, tid=uid("unknown")) == INVALID_PRODUCER_ID_MAPPING
        assert w.add_partitions(txn, pid, epoch, [(topic, 0)]) == {(topic, 0): NONE}
        assert produce(1, 0) == INVALID_TXN_STATE  # partition 1 was not added
        assert produce(0, 0, e=epoch + 1) == INVALID_PRODUCER_EPOCH
        assert produce(0, 0, p=pid + 1) == INVALID_PRODUCER_ID_MAPPING
        assert produce(0, 0) == NONE
        assert produce(0, 1) == NONE
        # a non-transactional batch from the producer while its transaction is open
        plain = txn_batch([b"y"], producer_id=pid, producer_epoch=epoch, base_sequence=2, transactional=False)
        assert w.produce_txn(txn, topic, 0, plain).error_code == INVALID_TXN_STATE
        assert w.end_txn(txn, pid, epoch, True) == NONE
        assert produce(0, 2) == INVALID_TXN_STATE  # the transaction is over
    assert committed(pbroker, topic, 0) == [b"x", b"x"]


# ------------------------------------------------------------------------------ misuse after fencing
def test_fenced_producer_is_refused_everywhere(pbroker, topic):
    txn, group = uid("zombie"), uid("zombieg")
    with txn_wire(pbroker) as w:
        pid, old = _init(w, txn)
        assert w.add_partitions(txn, pid, old, [(topic, 0)]) == {(topic, 0): NONE}
        batch = txn_batch([b"z"], producer_id=pid, producer_epoch=old, base_sequence=0)
        assert w.produce_txn(txn, topic, 0, batch).error_code == NONE
        assert w.init_producer_id(txn).error_code == CONCURRENT_TRANSACTIONS
        _, new = _init(w, txn)
        assert new == old + 2

        later = txn_batch([b"z2"], producer_id=pid, producer_epoch=old, base_sequence=1)
        assert w.produce_txn(txn, topic, 0, later).error_code == INVALID_PRODUCER_EPOCH
        assert w.add_partitions(txn, pid, old, [(topic, 1)]) == {(topic, 1): PRODUCER_FENCED}
        assert w.add_partitions(txn, pid, old, [(topic, 1)], version=1) == {
            (topic, 1): INVALID_PRODUCER_EPOCH
        }
        assert w.add_offsets(txn, pid, old, group) == PRODUCER_FENCED
        assert w.txn_offset_commit(txn, group, pid, old, {(topic, 0): 1}) == {
            (topic, 0): INVALID_PRODUCER_EPOCH
        }
        assert w.end_txn(txn, pid, old, True) == PRODUCER_FENCED
        assert w.end_txn(txn, pid, old, False) == PRODUCER_FENCED
        assert w.end_txn(txn, pid, old, True, version=1) == INVALID_PRODUCER_EPOCH
        assert (
            w.init_producer_id(txn, producer_id=pid, producer_epoch=old, version=4).error_code
            == PRODUCER_FENCED
        )
        # the new instance is unaffected
        assert w.add_partitions(txn, pid, new, [(topic, 1)]) == {(topic, 1): NONE}
        fresh = txn_batch([b"new"], producer_id=pid, producer_epoch=new, base_sequence=0)
        assert w.produce_txn(txn, topic, 1, fresh).error_code == NONE
        assert w.end_txn(txn, pid, new, True) == NONE
    assert committed(pbroker, topic, 0) == []
    assert committed(pbroker, topic, 1) == [b"new"]


# ------------------------------------------------------------------------------ expiration
def test_transactional_id_expiration(broker_factory):
    b = broker_factory(
        {
            "transactional.id.expiration.ms": 1000,
            "transaction.remove.expired.transaction.cleanup.interval.ms": 100,
        }
    )
    txn, busy = uid("idle"), uid("busy")
    topic = uid("exp")
    create_topic(b, topic, 1)
    with txn_wire(b) as w:
        pid, _ = _init(w, txn)
        bpid, bepoch = _init(w, busy, timeout_ms=MAX_TIMEOUT)
        assert w.add_partitions(busy, bpid, bepoch, [(topic, 0)]) == {(topic, 0): NONE}

    def gone():
        with txn_wire(b) as w:
            return w.describe_transaction(txn).error_code == TRANSACTIONAL_ID_NOT_FOUND

    wait_until(gone, WAIT, message=f"{txn} to expire")
    with txn_wire(b) as w:
        listed = {s.transactional_id for s in w.list_transactions().transaction_states}
        assert txn not in listed and busy in listed  # an Ongoing transaction never expires
        new_pid, epoch = _init(w, txn)
        assert new_pid != pid and epoch == 0
    b.restart(kill=True)
    with txn_wire(b) as w:
        d = w.describe_transaction(txn)
        assert (d.producer_id, d.producer_epoch) == (new_pid, 0)
        assert w.describe_transaction(busy).transaction_state == "Ongoing"
