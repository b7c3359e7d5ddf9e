"""Transactions V2 (KIP-890 part 2) in the transaction coordinator's state machine and in the
`__transaction_state` record format: EndTxn v5's epoch bump, retries, aborts without partitions,
the epoch overflow to a new producer id, implicit partition addition, and the TV2 tagged fields
written and read back. The expected answers are Kafka 4.4's (TransactionCoordinator /
TransactionMetadata; the same sequences were checked against a Kafka 4.4.0 broker)."""

from __future__ import annotations

import dataclasses

from minibroker.common.faults import Faults
from minibroker.coordinator.transactions import TransactionCoordinator, TransactionSettings
from minibroker.coordinator.txn_state import (
    SHORT_MAX,
    TransactionMetadata,
    TxnState,
    decode_value,
    encode_value,
)
from minibroker.protocol.errors import ErrorCode as E

from tests.unit.coordinator_fakes import run_now
from tests.unit.test_transactions import Env, add, end, end_v2, init, txn_batch


class EnvV2(Env):
    """A coordinator whose finalized transaction.version is 2 (its own aborts use it)."""

    def coordinator(self):
        return TransactionCoordinator(
            TransactionSettings.from_config(self.config),
            store=self.store,
            logs=self.logs,
            groups=self.groups,
            producer_ids=self.ids,
            clock=self.clock,
            faults=Faults(),
            transaction_version=lambda: 2,
        )


def add_v2(env, txn, batches):
    """What a transactional Produce v12+ does before appending (None: nothing to add)."""
    op = env.tc.produced_partitions_to_add(txn, batches)
    return None if op is None else run_now(env.tc, op)


def test_end_txn_v5_bumps_the_epoch_and_answers_it():
    env = EnvV2()
    _, pid, epoch = init(env)
    assert add_v2(env, "tx", [("t", 0, txn_batch(pid, epoch)), ("u", 1, txn_batch(pid, epoch))]) == E.none
    meta = env.tc.txns["tx"]
    assert meta.state == TxnState.ONGOING and meta.client_transaction_version == 2
    assert meta.partitions == {("t", 0), ("u", 1)}
    # already in the transaction: no operation at all
    assert add_v2(env, "tx", [("t", 0, txn_batch(pid, epoch))]) is None
    assert end_v2(env, "tx", pid, epoch, True) == (E.none, pid, epoch + 1)
    # the markers carry the bumped epoch
    assert env.markers("t", 0) == [(pid, epoch + 1, True, 0)]
    meta = env.tc.txns["tx"]
    assert (meta.state, meta.producer_epoch, meta.last_producer_epoch) == (TxnState.COMPLETE_COMMIT, 1, 0)
    # a retry (the previous epoch) is recognised and answers the current producer id and epoch
    assert end_v2(env, "tx", pid, epoch, True) == (E.none, pid, epoch + 1)
    assert end_v2(env, "tx", pid, epoch, False) == (E.invalid_txn_state, -1, -1)
    # the old epoch is fenced for new work
    assert add_v2(env, "tx", [("t", 1, txn_batch(pid, epoch))]) == E.producer_fenced
    assert end_v2(env, "tx", pid, epoch - 1, True) == (E.producer_fenced, -1, -1)
    assert end_v2(env, "tx", pid + 1, epoch + 1, True) == (E.invalid_producer_id_mapping, -1, -1)


def test_end_txn_v5_abort_without_partitions_and_commit_refused():
    env = EnvV2()
    _, pid, epoch = init(env)
    # Empty: an abort ends (and bumps) though nothing was added; a commit is INVALID_TXN_STATE
    assert end_v2(env, "tx", pid, epoch, True) == (E.invalid_txn_state, -1, -1)
    assert end_v2(env, "tx", pid, epoch, False) == (E.none, pid, epoch + 1)
    assert env.tc.txns["tx"].state == TxnState.COMPLETE_ABORT
    # from CompleteAbort at the current epoch: another epoch bump
    assert end_v2(env, "tx", pid, epoch + 1, False) == (E.none, pid, epoch + 2)
    assert end_v2(env, "tx", pid, epoch + 2, True) == (E.invalid_txn_state, -1, -1)


def test_end_txn_v5_epoch_overflow_moves_to_a_new_producer_id():
    env = EnvV2()
    _, pid, _ = init(env)
    meta = env.tc.txns["tx"]
    last = SHORT_MAX - 1  # an exhausted epoch: the next end must not reach Short.MAX_VALUE for the client
    env.tc.txns["tx"] = dataclasses.replace(meta, producer_epoch=last)
    assert add(env, "tx", pid, last, [("t", 0)]) == E.none
    error, answered_pid, answered_epoch = end_v2(env, "tx", pid, last, True)
    assert error == E.none and (answered_pid, answered_epoch) == (pid, SHORT_MAX)
    meta = env.tc.txns["tx"]
    new_pid = meta.producer_id
    assert new_pid != pid and meta.producer_epoch == 0 and meta.last_producer_id == pid
    assert meta.next_producer_id == -1 and meta.state == TxnState.COMPLETE_COMMIT
    assert env.markers("t", 0) == [(pid, SHORT_MAX, True, 0)]
    # the client's retry with the old id and epoch is recognised
    assert end_v2(env, "tx", pid, last, True) == (E.none, new_pid, 0)
    # the new producer id goes on
    assert add_v2(env, "tx", [("t", 1, txn_batch(new_pid, 0))]) == E.none
    # and survives a restart (Kafka's prevProducerId is the id before each transition: now new_pid)
    env.restart()
    assert env.tc.txns["tx"].producer_id == new_pid and env.tc.txns["tx"].last_producer_id == new_pid


def test_fencing_under_tv2_bumps_once_and_the_v1_path_is_unchanged():
    env = EnvV2()
    _, pid, epoch = init(env)
    assert add_v2(env, "tx", [("t", 0, txn_batch(pid, epoch))]) == E.none
    assert end_v2(env, "tx", pid, epoch, True) == (E.none, pid, 1)
    assert add_v2(env, "tx", [("t", 0, txn_batch(pid, 1))]) == E.none
    # a new instance: the open transaction is aborted at epoch 2 (no second bump), the retry gives 3
    assert init(env) == (E.concurrent_transactions, -1, -1)
    assert env.markers("t", 0)[-1] == (pid, 2, False, 0)
    assert init(env) == (E.none, pid, 3)
    # TV1 requests on the same coordinator keep the classic rules: no bump at the end
    assert add(env, "tx", pid, 3, [("t", 1)]) == E.none
    assert end(env, "tx", pid, 3, True) == E.none
    assert env.tc.txns["tx"].producer_epoch == 3


def test_implicit_add_skips_what_is_not_transactional_or_does_not_exist():
    env = EnvV2()
    _, pid, epoch = init(env)
    plain = txn_batch(pid, epoch, transactional=False)
    assert add_v2(env, "tx", [("t", 0, plain)]) is None
    assert add_v2(env, None, [("t", 0, txn_batch(pid, epoch))]) is None
    assert (
        add_v2(env, "tx", [("missing", 0, txn_batch(pid, epoch)), ("t", 2, txn_batch(pid, epoch))]) == E.none
    )
    assert env.tc.txns["tx"].partitions == {("t", 2)}
    # the group's offsets partition (TxnOffsetCommit v5+)
    assert run_now(env.tc, env.tc.add_offsets_v2("tx", pid, epoch, "g")) == E.none
    assert env.tc.check_txn_offset_commit("tx", pid, epoch, "g", 5) == E.none


def test_a_transaction_open_at_a_crash_is_recovered_with_its_tv2_fields():
    env = EnvV2()
    _, pid, epoch = init(env)
    assert add_v2(env, "tx", [("t", 0, txn_batch(pid, epoch))]) == E.none
    tc = env.restart()
    meta = tc.txns["tx"]
    assert (meta.state, meta.client_transaction_version, meta.partitions) == (TxnState.ONGOING, 2, {("t", 0)})
    assert end_v2(env, "tx", pid, epoch, False) == (E.none, pid, epoch + 1)
    assert env.restart().txns["tx"].producer_epoch == epoch + 1


def test_record_format_carries_the_tv2_tagged_fields():
    meta = TransactionMetadata(
        "tx",
        producer_id=7,
        producer_epoch=3,
        timeout_ms=60000,
        state=TxnState.PREPARE_COMMIT,
        partitions=frozenset({("t", 0)}),
        txn_start_ms=10,
        last_update_ms=20,
        last_producer_id=5,
        last_producer_epoch=2,
        next_producer_id=9,
        client_transaction_version=2,
    )
    raw = encode_value(meta)
    assert raw[:2] == b"\x00\x01"  # TransactionLogValue v1 (flexible): it has tagged fields
    # Kafka's tags: 0 PreviousProducerId, 1 NextProducerId, 2 ClientTransactionVersion (int16 2)
    assert b"\x02\x02\x00\x02" in raw
    back = decode_value("tx", raw)
    assert back == meta
    # a TV0 record stays v0, as before
    v0 = dataclasses.replace(
        meta, last_producer_id=7, last_producer_epoch=-1, next_producer_id=-1, client_transaction_version=0
    )
    assert encode_value(v0)[:2] == b"\x00\x00" and decode_value("tx", encode_value(v0)) == v0
