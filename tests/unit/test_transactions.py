"""The transaction coordinator without a network: state machine, Kafka's error codes, the
__transaction_state record format, durability ordering, recovery, timeouts and expiry.

Storage is faked (markers recorded per partition, an in-memory __transaction_state) so every
test runs in milliseconds; the acceptance tests run the same paths against real logs."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest
from minibroker.common.clock import ManualClock
from minibroker.common.faults import Faults
from minibroker.coordinator.partitioning import java_string_hash, partition_for
from minibroker.coordinator.runtime import AwaitDurable, Write
from minibroker.coordinator.transactions import OFFSETS_TOPIC, TransactionCoordinator, TransactionSettings
from minibroker.coordinator.txn_state import (
    IllegalTransition,
    TransactionMetadata,
    TxnState,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from minibroker.protocol.errors import ErrorCode as E
from minibroker.storage.errors import KafkaStorageError

from tests.unit.coordinator_fakes import MemoryTxnStore, perform, resume, run_now

# --------------------------------------------------------------------------- fakes


class NoOpenTransactions:
    def ongoing_transactions(self):
        return {}


class FakeLog:
    """`MarkerLog`, plus the flush protocol the group commit drives."""

    def __init__(self, topic, partition, events):
        self.topic, self.partition = topic, partition
        self.producer_state = NoOpenTransactions()
        self.markers: list[tuple[int, int, bool, int]] = []
        self.flushes = 0
        self.events = events
        self.fail_with = None

    def append_marker(self, pid, epoch, commit, coordinator_epoch):
        if self.fail_with is not None:
            exc, self.fail_with = self.fail_with, None
            raise exc
        self.markers.append((pid, epoch, commit, coordinator_epoch))
        self.events.append(("marker", self.topic, self.partition, commit))
        return len(self.markers) - 1

    # the PartitionLog flush protocol the group commit drives
    def begin_flush(self):
        return SimpleNamespace(sync=lambda: None)

    def finish_flush(self, ticket, *, ok):
        self.flushes += 1


class FakeLogs:
    def __init__(self, events):
        self.events = events
        self.topics: dict[str, SimpleNamespace] = {}
        self.logs: dict[tuple[str, int], FakeLog] = {}

    def create(self, name, partitions):
        self.topics[name] = SimpleNamespace(num_partitions=partitions, internal=False)
        for p in range(partitions):
            self.logs[(name, p)] = FakeLog(name, p, self.events)

    def get_log(self, topic, partition):
        return self.logs.get((topic, partition))

    def all_logs(self):
        return list(self.logs.values())


class FakeGroups:
    def __init__(self, events):
        self.events = events

    def partition_for(self, group_id):
        return partition_for(group_id, 3)

    def complete_txn(self, pid, commit, partition=None):
        self.events.append(("groups", pid, commit))


class FakeIds:
    def __init__(self, start=1000):
        self.next = start

    def allocate(self):
        self.next += 1
        return self.next - 1


class RecordingStore(MemoryTxnStore):
    def __init__(self, events, partitions=2):
        super().__init__(partitions)
        self.events = events

    def append(self, partition, key, value):
        super().append(partition, key, value)
        state = None if value is None else decode_value(decode_key(key), value).state
        self.events.append(("state", decode_key(key), state))


def make_config(**over):
    cfg = {
        "transaction.max.timeout.ms": 900000,
        "transactional.id.expiration.ms": 604800000,
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10000,
        "transaction.remove.expired.transaction.cleanup.interval.ms": 3600000,
        "transaction.state.log.num.partitions": 2,
        "offsets.topic.num.partitions": 3,
    }
    cfg.update(over)
    return cfg


class Env:
    """A coordinator over fakes; `restart()` builds a new one over the same store and logs."""

    def __init__(self, **config):
        self.events: list = []
        self.logs = FakeLogs(self.events)
        self.logs.create("t", 3)
        self.logs.create("u", 2)
        self.logs.create(OFFSETS_TOPIC, 3)
        self.groups = FakeGroups(self.events)
        self.ids = FakeIds()
        self.clock = ManualClock()
        self.store = RecordingStore(self.events)
        self.config = make_config(**config)
        self.tc = self.coordinator()

    def coordinator(self):
        return TransactionCoordinator(
            TransactionSettings.from_config(self.config),
            store=self.store,
            logs=self.logs,
            groups=self.groups,
            producer_ids=self.ids,
            clock=self.clock,
            faults=Faults(),
        )

    def restart(self):
        self.tc = self.coordinator()
        run_now(self.tc, self.tc.load())
        return self.tc

    def markers(self, topic, partition):
        return self.logs.get_log(topic, partition).markers


def init(env, txn="tx", timeout=60000, pid=-1, epoch=-1):
    return run_now(env.tc, env.tc.init_producer_id(txn, timeout, pid, epoch))


def add(env, txn, pid, epoch, parts):
    return run_now(env.tc, env.tc.add_partitions(txn, pid, epoch, parts))


def end(env, txn, pid, epoch, commit):
    return run_now(env.tc, env.tc.end_txn(txn, pid, epoch, commit))[0]


def end_v2(env, txn, pid, epoch, commit):
    """EndTxn v5 (TV2): (error, producer id, epoch)."""
    return run_now(env.tc, env.tc.end_txn(txn, pid, epoch, commit, client_version=2))


def txn_batch(pid, epoch, transactional=True):
    """A 61-byte header (plus padding) with the fields verify_produce reads."""
    buf = bytearray(70)
    struct.pack_into(">h", buf, 21, 0x10 if transactional else 0)
    struct.pack_into(">qh", buf, 43, pid, epoch)
    return bytes(buf)


# --------------------------------------------------------------------------- record format


def test_java_hash_and_partition_for_match_kafka():
    # values of "abc".hashCode() etc. in Java
    assert java_string_hash("") == 0
    assert java_string_hash("abc") == 96354
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) == 0
    assert java_string_hash("\u00e9t\u00e9") == (233 * 31 * 31 + 116 * 31 + 233)
    assert partition_for("my-txn", 50) == abs(java_string_hash("my-txn")) % 50


def test_key_format_is_kafka_transaction_log_key_v0():
    key = encode_key("tx-1")
    assert key == b"\x00\x00\x00\x04tx-1"
    assert decode_key(key) == "tx-1"


def test_value_v0_layout_and_round_trip():
    meta = TransactionMetadata(
        "tx",
        producer_id=7,
        producer_epoch=3,
        timeout_ms=60000,
        state=TxnState.ONGOING,
        partitions=frozenset({("b", 1), ("a", 0), ("a", 2)}),
        txn_start_ms=111,
        last_update_ms=222,
    )
    raw = encode_value(meta)
    expected = (
        struct.pack(">hqhib", 0, 7, 3, 60000, 1)
        + struct.pack(">i", 2)
        + struct.pack(">h", 1)
        + b"a"
        + struct.pack(">iii", 2, 0, 2)
        + struct.pack(">h", 1)
        + b"b"
        + struct.pack(">ii", 1, 1)
        + struct.pack(">qq", 222, 111)
    )
    assert raw == expected
    back = decode_value("tx", raw)
    assert back.partitions == meta.partitions and back.state == TxnState.ONGOING
    assert (back.producer_id, back.producer_epoch, back.timeout_ms) == (7, 3, 60000)
    assert (back.txn_start_ms, back.last_update_ms) == (111, 222)


def test_empty_state_writes_null_partition_array():
    meta = TransactionMetadata("tx", producer_id=7, producer_epoch=0, state=TxnState.EMPTY)
    raw = encode_value(meta)
    assert raw[2 + 8 + 2 + 4 + 1 :][:4] == b"\xff\xff\xff\xff"
    assert decode_value("tx", raw).partitions == frozenset()


def test_value_v1_carries_previous_producer_id_and_last_epoch_as_tagged_fields():
    meta = TransactionMetadata(
        "tx",
        producer_id=9,
        producer_epoch=0,
        state=TxnState.EMPTY,
        last_producer_id=8,
        last_producer_epoch=32766,
        last_update_ms=5,
    )
    raw = encode_value(meta)
    assert raw[:2] == b"\x00\x01"
    back = decode_value("tx", raw)
    assert (back.last_producer_id, back.last_producer_epoch) == (8, 32766)
    # v1 with partitions
    meta2 = TransactionMetadata(
        "tx",
        producer_id=9,
        producer_epoch=4,
        state=TxnState.PREPARE_COMMIT,
        partitions=frozenset({("x", 3)}),
        last_producer_epoch=3,
    )
    back2 = decode_value("tx", encode_value(meta2))
    assert back2.partitions == frozenset({("x", 3)}) and back2.state == TxnState.PREPARE_COMMIT
    assert back2.last_producer_epoch == 3


def test_decode_rejects_unknown_versions_and_truncation():
    with pytest.raises(ValueError):
        decode_key(b"\x00\x01\x00\x01a")
    raw = encode_value(TransactionMetadata("tx", producer_id=1, producer_epoch=0))
    with pytest.raises(ValueError):
        decode_value("tx", raw[:-3])
    with pytest.raises(ValueError):
        decode_value("tx", b"\x00\x05" + raw[2:])


# --------------------------------------------------------------------------- pure transitions


def test_illegal_transitions_raise():
    meta = TransactionMetadata("tx", producer_id=1, producer_epoch=0, state=TxnState.EMPTY)
    with pytest.raises(IllegalTransition):
        meta.prepare_abort_or_commit(True, 0)
    with pytest.raises(IllegalTransition):
        meta.prepare_complete(0)
    ongoing = meta.prepare_add_partitions([("t", 0)], 10)
    assert ongoing.state == TxnState.ONGOING and ongoing.txn_start_ms == 10
    more = ongoing.prepare_add_partitions([("t", 1)], 20)
    assert more.txn_start_ms == 10 and more.partitions == {("t", 0), ("t", 1)}
    with pytest.raises(IllegalTransition):
        ongoing.prepare_dead()
    done = ongoing.prepare_abort_or_commit(True, 30).prepare_complete(40)
    assert done.state == TxnState.COMPLETE_COMMIT and not done.partitions
    assert done.prepare_add_partitions([("t", 2)], 50).txn_start_ms == 50


# --------------------------------------------------------------------------- InitProducerId


def test_idempotent_init_gives_fresh_ids_at_epoch_zero():
    env = Env()
    a = run_now(env.tc, env.tc.init_producer_id(None, 0))
    b = run_now(env.tc, env.tc.init_producer_id(None, 0))
    assert a[0] == E.none and b[0] == E.none and a[1] != b[1] and a[2] == b[2] == 0
    assert env.store.appends == 0


def test_init_validations():
    env = Env(**{"transaction.max.timeout.ms": 1000})
    assert init(env, timeout=1001)[0] == E.invalid_transaction_timeout
    assert init(env, timeout=0)[0] == E.invalid_transaction_timeout
    assert init(env, txn="")[0] == E.invalid_request
    assert init(env, pid=5, epoch=-1)[0] == E.invalid_request
    assert init(env, pid=-1, epoch=3)[0] == E.invalid_request
    assert init(env, timeout=1000)[0] == E.none


def test_first_init_allocates_and_later_inits_bump_epoch():
    env = Env()
    err, pid, epoch = init(env)
    assert (err, epoch) == (E.none, 0)
    assert init(env)[1:] == (pid, 1)
    assert init(env)[1:] == (pid, 2)
    assert [e for e in env.events if e[0] == "state"] == [("state", "tx", TxnState.EMPTY)] * 3


def test_kip360_expected_epoch_and_retry():
    env = Env()
    _, pid, e0 = init(env)
    # bump with the current epoch: ok
    assert init(env, pid=pid, epoch=e0) == (E.none, pid, e0 + 1)
    # a retry of that request (response lost): same answer, no second bump
    assert init(env, pid=pid, epoch=e0) == (E.none, pid, e0 + 1)
    # an epoch that is neither current nor last: fenced
    assert init(env, pid=pid, epoch=e0 + 7)[0] == E.producer_fenced
    # another producer id: fenced
    assert init(env, pid=pid + 50, epoch=0)[0] == E.producer_fenced
    # a plain init resets the last epoch: the old retry is now fenced
    assert init(env)[1:] == (pid, e0 + 2)
    assert init(env, pid=pid, epoch=e0)[0] == E.producer_fenced


def test_epoch_exhaustion_rotates_producer_id():
    env = Env()
    _, pid, _ = init(env)
    env.tc.txns["tx"].producer_epoch = 32765
    assert init(env)[1:] == (pid, 32766)
    err, new_pid, epoch = init(env)
    assert err == E.none and new_pid != pid and epoch == 0
    # survives a restart, and the old id no longer maps
    tc = env.restart()
    assert tc.txns["tx"].producer_id == new_pid
    with pytest.raises(KafkaStorageError) as exc:
        tc.verify_produce("tx", "t", 0, txn_batch(pid, 32766))
    assert exc.value.error_code == E.invalid_producer_id_mapping


def test_epoch_exhaustion_with_kip360_records_last_epoch():
    env = Env()
    _, pid, _ = init(env)
    env.tc.txns["tx"].producer_epoch = 32766
    err, new_pid, epoch = init(env, pid=pid, epoch=32766)
    assert err == E.none and new_pid != pid and epoch == 0
    meta = env.tc.txns["tx"]
    assert (meta.last_producer_id, meta.last_producer_epoch) == (pid, 32766)
    # a retry with the old (exhausted) id is recognised, not fenced
    assert init(env, pid=pid, epoch=32766) == (E.none, new_pid, 0)


def test_init_over_ongoing_aborts_with_bumped_epoch_then_concurrent():
    env = Env()
    _, pid, epoch = init(env)
    assert add(env, "tx", pid, epoch, [("t", 0), ("u", 1)]) == E.none
    env.events.clear()
    err, _, _ = init(env)
    assert err == E.concurrent_transactions
    assert env.markers("t", 0) == [(pid, epoch + 1, False, 0)]
    assert env.markers("u", 1) == [(pid, epoch + 1, False, 0)]
    assert env.tc.txns["tx"].state == TxnState.COMPLETE_ABORT
    kinds = [e[0] if e[0] != "state" else e[2] for e in env.events]
    assert kinds == [TxnState.PREPARE_ABORT, "marker", "marker", "groups", TxnState.COMPLETE_ABORT]
    # the retry bumps once more
    assert init(env) == (E.none, pid, epoch + 2)
    # the old instance is fenced everywhere
    assert add(env, "tx", pid, epoch, [("t", 1)]) == E.producer_fenced
    assert end(env, "tx", pid, epoch, True) == E.producer_fenced
    with pytest.raises(KafkaStorageError) as exc:
        env.tc.verify_produce("tx", "t", 0, txn_batch(pid, epoch))
    assert exc.value.error_code == E.invalid_producer_epoch


def test_init_during_prepare_is_concurrent_transactions():
    env = Env()
    _, pid, epoch = init(env)
    add(env, "tx", pid, epoch, [("t", 0)])
    meta = env.tc.txns["tx"]
    env.tc.txns["tx"] = meta.prepare_abort_or_commit(True, 1)
    assert init(env)[0] == E.concurrent_transactions
    assert add(env, "tx", pid, epoch, [("t", 1)]) == E.concurrent_transactions
    assert end(env, "tx", pid, epoch, True) == E.concurrent_transactions
    assert end(env, "tx", pid, epoch, False) == E.invalid_txn_state


# --------------------------------------------------------------------------- AddPartitions / EndTxn


def test_add_partitions_errors():
    env = Env()
    _, pid, epoch = init(env)
    assert add(env, "nope", pid, epoch, [("t", 0)]) == E.invalid_producer_id_mapping
    assert add(env, "tx", pid + 1, epoch, [("t", 0)]) == E.invalid_producer_id_mapping
    assert add(env, "tx", pid, epoch - 1, [("t", 0)]) == E.producer_fenced
    assert add(env, "", pid, epoch, [("t", 0)]) == E.invalid_request
    n = env.store.appends
    assert add(env, "tx", pid, epoch, [("t", 0)]) == E.none
    assert add(env, "tx", pid, epoch, [("t", 0)]) == E.none  # already in: no write
    assert env.store.appends == n + 1
    assert add(env, "tx", pid, epoch, [("t", 1)]) == E.none
    assert env.tc.txns["tx"].partitions == {("t", 0), ("t", 1)}


def test_two_phase_commit_order_and_retries():
    env = Env()
    _, pid, epoch = init(env)
    add(env, "tx", pid, epoch, [("t", 2), ("u", 0)])
    assert run_now(env.tc, env.tc.add_offsets("tx", pid, epoch, "g1")) == E.none
    gp = partition_for("g1", 3)
    env.events.clear()
    assert end(env, "tx", pid, epoch, True) == E.none
    kinds = [e[0] if e[0] != "state" else e[2] for e in env.events]
    assert kinds == [
        TxnState.PREPARE_COMMIT,
        "marker",
        "marker",
        "marker",
        "groups",
        TxnState.COMPLETE_COMMIT,
    ]
    assert env.markers(OFFSETS_TOPIC, gp) == [(pid, epoch, True, 0)]
    assert env.markers("t", 2) == [(pid, epoch, True, 0)]
    assert env.logs.get_log("t", 2).flushes == 1
    # retries after completion
    assert end(env, "tx", pid, epoch, True) == E.none
    assert end(env, "tx", pid, epoch, False) == E.invalid_txn_state
    assert len(env.markers("t", 2)) == 1
    # a new transaction at the same epoch, aborted
    add(env, "tx", pid, epoch, [("t", 0)])
    assert end(env, "tx", pid, epoch, False) == E.none
    assert end(env, "tx", pid, epoch, False) == E.none
    assert end(env, "tx", pid, epoch, True) == E.invalid_txn_state
    assert env.markers("t", 0) == [(pid, epoch, False, 0)]


def test_end_txn_errors():
    env = Env()
    _, pid, epoch = init(env)
    assert end(env, "tx", pid, epoch, True) == E.invalid_txn_state  # Empty
    assert end(env, "nope", pid, epoch, True) == E.invalid_producer_id_mapping
    add(env, "tx", pid, epoch, [("t", 0)])
    assert end(env, "tx", pid + 1, epoch, True) == E.invalid_producer_id_mapping
    assert end(env, "tx", pid, epoch + 1, True) == E.producer_fenced
    assert end(env, "tx", pid, epoch - 1, True) == E.producer_fenced
    assert env.tc.txns["tx"].state == TxnState.ONGOING


def test_txn_offset_commit_checks():
    env = Env()
    _, pid, epoch = init(env)
    check = env.tc.check_txn_offset_commit
    assert check("tx", pid, epoch, "g", 3) == E.invalid_txn_state  # not added
    assert check("tx", pid, epoch, "g", 4) == E.transaction_abortable
    assert check("nope", pid, epoch, "g", 3) == E.invalid_producer_id_mapping
    run_now(env.tc, env.tc.add_offsets("tx", pid, epoch, "g"))
    assert check("tx", pid, epoch, "g", 3) == E.none
    assert check("tx", pid, epoch + 1, "g", 3) == E.invalid_producer_epoch
    assert check("tx", pid + 1, epoch, "g", 3) == E.invalid_producer_id_mapping
    other = next(g for g in ("h", "i", "j", "k", "l") if partition_for(g, 3) != partition_for("g", 3))
    assert check("tx", pid, epoch, other, 0) == E.invalid_txn_state


def test_verify_produce():
    env = Env()
    tc = env.tc
    tc.verify_produce("tx", "t", 0, txn_batch(5, 0, transactional=False))  # no-op
    tc.verify_produce(None, "t", 0, b"")
    with pytest.raises(KafkaStorageError) as exc:
        tc.verify_produce("tx", "t", 0, txn_batch(5, 0))
    assert exc.value.error_code == E.invalid_producer_id_mapping
    _, pid, epoch = init(env)
    with pytest.raises(KafkaStorageError) as exc:
        tc.verify_produce("tx", "t", 0, txn_batch(pid, epoch))
    assert exc.value.error_code == E.invalid_txn_state
    with pytest.raises(KafkaStorageError) as exc:
        tc.verify_produce("tx", "t", 0, txn_batch(pid, epoch), api_version=11)
    assert exc.value.error_code == E.transaction_abortable
    with pytest.raises(KafkaStorageError) as exc:
        tc.verify_produce(None, "t", 0, txn_batch(pid, epoch))
    assert exc.value.error_code == E.transactional_id_authorization_failed
    add(env, "tx", pid, epoch, [("t", 0)])
    tc.verify_produce("tx", "t", 0, txn_batch(pid, epoch))
    with pytest.raises(KafkaStorageError) as exc:
        tc.verify_produce("tx", "t", 1, txn_batch(pid, epoch))
    assert exc.value.error_code == E.invalid_txn_state
    with pytest.raises(KafkaStorageError) as exc:
        tc.verify_produce("tx", "t", 0, txn_batch(pid, epoch - 1 if epoch else 5))
    assert exc.value.error_code == E.invalid_producer_epoch
    end(env, "tx", pid, epoch, True)
    with pytest.raises(KafkaStorageError) as exc:
        tc.verify_produce("tx", "t", 0, txn_batch(pid, epoch))
    assert exc.value.error_code == E.invalid_txn_state


# --------------------------------------------------------------------------- durability


def test_failed_state_write_changes_nothing():
    env = Env()
    _, pid, epoch = init(env)
    env.store.fail_with = KafkaStorageError(E.kafka_storage_error, "disk")
    assert add(env, "tx", pid, epoch, [("t", 0)]) == E.coordinator_not_available
    assert env.tc.txns["tx"].state == TxnState.EMPTY
    add(env, "tx", pid, epoch, [("t", 0)])
    env.store.fail_with = OSError("disk")
    assert end(env, "tx", pid, epoch, True) == E.coordinator_not_available
    assert env.tc.txns["tx"].state == TxnState.ONGOING
    assert env.markers("t", 0) == []
    assert end(env, "tx", pid, epoch, True) == E.none


def test_failed_fence_write_still_fences_in_memory_and_does_not_bump_twice():
    env = Env()
    _, pid, epoch = init(env)
    add(env, "tx", pid, epoch, [("t", 0)])
    env.store.fail_with = OSError("disk")
    assert init(env)[0] == E.coordinator_not_available
    meta = env.tc.txns["tx"]
    assert meta.producer_epoch == epoch + 1 and meta.has_failed_epoch_fence
    assert add(env, "tx", pid, epoch, [("t", 1)]) == E.producer_fenced
    assert init(env)[0] == E.concurrent_transactions
    assert env.markers("t", 0) == [(pid, epoch + 1, False, 0)]
    assert init(env) == (E.none, pid, epoch + 2)


def test_marker_failure_leaves_prepare_and_duty_finishes():
    env = Env()
    _, pid, epoch = init(env)
    add(env, "tx", pid, epoch, [("t", 0), ("t", 1)])
    env.logs.get_log("t", 1).fail_with = KafkaStorageError(E.kafka_storage_error, "disk")
    # the decision is durable: the client is told NONE (as Kafka does after PrepareCommit)
    assert end(env, "tx", pid, epoch, True) == E.none
    assert env.tc.txns["tx"].state == TxnState.PREPARE_COMMIT
    assert add(env, "tx", pid, epoch, [("t", 2)]) == E.concurrent_transactions
    assert end(env, "tx", pid, epoch, True) == E.concurrent_transactions
    run_now(env.tc, env.tc.abort_timed_out_transactions())
    assert env.tc.txns["tx"].state == TxnState.COMPLETE_COMMIT
    assert env.markers("t", 1) == [(pid, epoch, True, 0)]
    assert end(env, "tx", pid, epoch, True) == E.none


def test_fenced_marker_is_skipped():
    env = Env()
    _, pid, epoch = init(env)
    add(env, "tx", pid, epoch, [("t", 0), ("t", 1)])
    env.logs.get_log("t", 0).fail_with = KafkaStorageError(E.invalid_producer_epoch, "newer")
    assert end(env, "tx", pid, epoch, False) == E.none
    assert env.tc.txns["tx"].state == TxnState.COMPLETE_ABORT


# --------------------------------------------------------------------------- recovery


def test_restart_restores_every_state():
    env = Env()
    _, p1, e1 = init(env, "a")
    add(env, "a", p1, e1, [("t", 0)])
    _, p2, e2 = init(env, "b")
    add(env, "b", p2, e2, [("u", 1)])
    end(env, "b", p2, e2, True)
    _, p3, e3 = init(env, "c")
    tc = env.restart()
    assert tc.txns["a"].state == TxnState.ONGOING and tc.txns["a"].partitions == {("t", 0)}
    assert tc.txns["b"].state == TxnState.COMPLETE_COMMIT
    assert tc.txns["c"].state == TxnState.EMPTY and tc.txns["c"].producer_epoch == e3
    # the restored coordinator keeps working
    assert run_now(tc, tc.end_txn("a", p1, e1, True))[0] == E.none
    assert tc.verify_produce("b", "u", 1, txn_batch(p2, e2, False)) is None


@pytest.mark.parametrize("commit", [True, False])
def test_restart_completes_prepare(commit):
    env = Env()
    _, pid, epoch = init(env)
    add(env, "tx", pid, epoch, [("t", 0), ("t", 1), ("u", 0)])
    meta = env.tc.txns["tx"]
    prepared = meta.prepare_abort_or_commit(commit, env.clock.wall_ms())
    env.store.append(env.tc._partition("tx"), encode_key("tx"), encode_value(prepared))
    env.logs.get_log("t", 0).markers.append((pid, epoch, commit, 0))  # one marker made it
    env.events.clear()
    tc = env.restart()
    state = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
    assert tc.txns["tx"].state == state
    for tp in [("t", 0), ("t", 1), ("u", 0)]:
        assert env.markers(*tp)[-1] == (pid, epoch, commit, 0)
    assert ("groups", pid, commit) in env.events
    # the client's retried EndTxn gets NONE, the opposite INVALID_TXN_STATE
    assert run_now(tc, tc.end_txn("tx", pid, epoch, commit))[0] == E.none
    assert run_now(tc, tc.end_txn("tx", pid, epoch, not commit))[0] == E.invalid_txn_state


def test_restart_aborts_timed_out_ongoing_with_bumped_epoch():
    env = Env()
    _, pid, epoch = init(env, timeout=1000)
    add(env, "tx", pid, epoch, [("t", 0)])
    env.clock.advance(5000)
    tc = env.restart()
    assert tc.txns["tx"].state == TxnState.COMPLETE_ABORT
    assert env.markers("t", 0) == [(pid, epoch + 1, False, 0)]
    assert run_now(tc, tc.end_txn("tx", pid, epoch, True))[0] == E.producer_fenced


def test_unreadable_records_are_skipped():
    env = Env()
    _, pid, epoch = init(env)
    MemoryTxnStore.append(env.store, 0, b"\x00\x07junk", b"x")
    MemoryTxnStore.append(env.store, 0, encode_key("bad"), b"\x00\x00\x01")
    tc = env.restart()
    assert set(tc.txns) == {"tx"}


# --------------------------------------------------------------------------- timeouts, expiry


def test_timeout_duty_aborts_and_fences():
    env = Env()
    _, pid, epoch = init(env, timeout=1000)
    add(env, "tx", pid, epoch, [("t", 0), ("u", 0)])
    env.clock.advance(999)
    run_now(env.tc, env.tc.abort_timed_out_transactions())
    assert env.tc.txns["tx"].state == TxnState.ONGOING
    env.clock.advance(2)
    run_now(env.tc, env.tc.abort_timed_out_transactions())
    meta = env.tc.txns["tx"]
    assert meta.state == TxnState.COMPLETE_ABORT and meta.producer_epoch == epoch + 1
    assert env.markers("t", 0) == [(pid, epoch + 1, False, 0)]
    assert add(env, "tx", pid, epoch, [("t", 1)]) == E.producer_fenced
    assert end(env, "tx", pid, epoch, True) == E.producer_fenced
    assert end(env, "tx", pid, epoch, False) == E.producer_fenced
    with pytest.raises(KafkaStorageError) as exc:
        env.tc.verify_produce("tx", "t", 0, txn_batch(pid, epoch))
    assert exc.value.error_code == E.invalid_producer_epoch
    # a new instance starts cleanly
    assert init(env, timeout=1000) == (E.none, pid, epoch + 2)


def test_expiration_writes_tombstone_and_forgets_id():
    env = Env(**{"transactional.id.expiration.ms": 10000})
    _, pid, epoch = init(env, "old")
    _, pid2, epoch2 = init(env, "busy")
    add(env, "busy", pid2, epoch2, [("t", 0)])
    env.clock.advance(10001)
    run_now(env.tc, env.tc.remove_expired_transactional_ids())
    assert "old" not in env.tc.txns and "busy" in env.tc.txns  # Ongoing never expires
    assert ("state", "old", None) in env.events
    assert env.tc.describe_transaction("old")["error_code"] == E.transactional_id_not_found
    tc = env.restart()
    assert "old" not in tc.txns
    err, new_pid, new_epoch = run_now(tc, tc.init_producer_id("old", 60000))
    assert err == E.none and new_pid != pid and new_epoch == 0


# --------------------------------------------------------------------------- inspection


def test_list_and_describe():
    env = Env()
    _, p1, e1 = init(env, "a")
    add(env, "a", p1, e1, [("t", 0), ("t", 2), ("u", 1)])
    _, p2, _ = init(env, "b")
    unknown, rows = env.tc.list_transactions([], [])
    assert {r["transactional_id"]: r["transaction_state"] for r in rows} == {"a": "Ongoing", "b": "Empty"}
    unknown, rows = env.tc.list_transactions(["Ongoing", "Bogus"], [])
    assert unknown == ["Bogus"] and [r["transactional_id"] for r in rows] == ["a"]
    assert [r["transactional_id"] for r in env.tc.list_transactions([], [p2])[1]] == ["b"]
    env.clock.advance(5000)
    # Kafka (KIP-994) keeps entries with now - start > duration; Empty has start -1
    assert [r["transactional_id"] for r in env.tc.list_transactions([], [], 4000)[1]] == ["a", "b"]
    assert [r["transactional_id"] for r in env.tc.list_transactions(["Ongoing"], [], 4000)[1]] == ["a"]
    assert env.tc.list_transactions(["Ongoing"], [], 6000)[1] == []
    d = env.tc.describe_transaction("a")
    assert d["error_code"] == E.none and d["transaction_state"] == "Ongoing"
    assert d["topics"] == [dict(topic="t", partitions=[0, 2]), dict(topic="u", partitions=[1])]
    assert d["producer_id"] == p1 and d["transaction_timeout_ms"] == 60000
    assert env.tc.describe_transaction("zzz")["error_code"] == E.transactional_id_not_found
    assert env.tc.describe_transaction("")["error_code"] == E.invalid_request


# --------------------------------------------------------------------------- concurrency


def test_pending_operation_answers_concurrent_transactions():
    """While an EndTxn waits for its markers' fsync, other requests for the id are told
    CONCURRENT_TRANSACTIONS and the duties leave it alone."""
    env = Env()
    _, pid, epoch = init(env)
    add(env, "tx", pid, epoch, [("t", 0)])
    op = env.tc.end_txn("tx", pid, epoch, True)
    waiting = next(op)
    while isinstance(waiting, Write):  # PrepareCommit
        perform(env.tc, waiting)
        waiting = op.send(None)
    assert isinstance(waiting, AwaitDurable)  # suspended until the markers are durable
    assert waiting.logs == (env.logs.get_log("t", 0),)
    assert env.tc.txns["tx"].state == TxnState.PREPARE_COMMIT
    assert run_now(env.tc, env.tc.init_producer_id("tx", 60000)) == (E.concurrent_transactions, -1, -1)
    assert run_now(env.tc, env.tc.add_partitions("tx", pid, epoch, [("t", 1)])) == E.concurrent_transactions
    assert run_now(env.tc, env.tc.end_txn("tx", pid, epoch, True))[0] == E.concurrent_transactions
    assert run_now(env.tc, env.tc.end_txn("tx", pid, epoch - 1, True))[0] == E.producer_fenced
    run_now(env.tc, env.tc.abort_timed_out_transactions())  # must not touch it
    assert ("groups", pid, True) not in env.events
    assert resume(env.tc, op, waiting)[0] == E.none
    assert env.tc.txns["tx"].state == TxnState.COMPLETE_COMMIT
    assert env.markers("t", 0) == [(pid, epoch, True, 0)]


# --------------------------------------------------------------------------- crash points


class Crashed(BaseException):  # like the exit it stands for: nothing catches it
    pass


def _raise_crashed():
    raise Crashed


@pytest.mark.parametrize(
    "point, markers_written",
    [("txn.after_prepare", 0), ("txn.after_markers", 1), ("txn.before_complete", 2)],
)
def test_a_crash_point_stops_the_completion_and_the_restart_finishes_it(point, markers_written):
    env = Env()
    _, pid, epoch = init(env)
    add(env, "tx", pid, epoch, [("t", 0), ("t", 1)])
    env.tc.faults = Faults([f"{point}@tx"], crash=_raise_crashed)
    with pytest.raises(Crashed):
        end(env, "tx", pid, epoch, True)
    assert sum(len(env.markers("t", p)) for p in (0, 1)) == markers_written
    tc = env.restart()  # an unarmed broker over the same store and logs
    assert tc.txns["tx"].state == TxnState.COMPLETE_COMMIT
    assert env.markers("t", 0)[-1] == env.markers("t", 1)[-1] == (pid, epoch, True, 0)


def test_a_crash_point_armed_for_another_id_does_not_fire():
    env = Env()
    env.tc.faults = Faults(["txn.after_prepare@other"], crash=_raise_crashed)
    _, pid, epoch = init(env)
    add(env, "tx", pid, epoch, [("t", 0)])
    assert end(env, "tx", pid, epoch, True) == E.none
