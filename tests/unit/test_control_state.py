"""broker/control/state.py: the control plane's views of partitions, transactions and groups,
built on a real PartitionLog/LogManager, TransactionCoordinator and GroupCoordinator as the
other unit tests build them (the acceptance tests read them through HTTP from a real broker)."""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.old.consumer_protocol import ConsumerProtocolMemberAssignment_v0
from minibroker.broker.control.state import (
    decode_assignment,
    group_offsets,
    group_state,
    partition_state,
    transaction_state,
    unfinished_transactions,
)
from minibroker.coordinator.group_metadata import GroupState
from minibroker.coordinator.runtime import Write
from minibroker.coordinator.txn_state import TxnState
from minibroker.protocol.errors import ErrorCode as E
from minibroker.protocol.records import build_batch

from tests.support.storage import new_topic
from tests.unit.coordinator_fakes import MemoryOffsetsStore, commit, group_coordinator, resume, stage
from tests.unit.test_groups import CONFIG, INITIAL_JOIN_MS, FakeScheduler, join_new, subscription, sync
from tests.unit.test_transactions import Env, add, init

pytestmark = pytest.mark.timeout(10)


def records(n: int, **kw) -> bytes:
    return build_batch([(b"k%d" % i, b"v", []) for i in range(n)], timestamp_ms=5000, **kw)


def assignment(*topic_partitions: tuple[str, list[int]], user_data: bytes = b"") -> bytes:
    """A ConsumerProtocolAssignment as kafka-python's consumer encodes it."""
    return ConsumerProtocolMemberAssignment_v0(0, list(topic_partitions), user_data).encode()


# --------------------------------------------------------------------------- partitions
def test_partition_state_offsets_producers_and_open_transaction(tmp_path):
    _, manager, plog = new_topic(tmp_path, 1 << 20, {}, now=5000)
    try:
        plog.append(records(3))  # a plain producer: no producer entry
        plog.append(records(2, producer_id=7, producer_epoch=1, base_sequence=0))
        plog.append(records(4, producer_id=9, producer_epoch=0, base_sequence=0, transactional=True))
        s = partition_state(plog)
        assert (s["topic"], s["partition"], s["segments"]) == ("t", 0, 1)
        assert (s["log_start_offset"], s["high_watermark"], s["log_end_offset"]) == (0, 9, 9)
        assert s["last_stable_offset"] == 5  # the transaction's first offset
        assert s["size_bytes"] > 0
        assert s["producers"] == [
            {
                "producer_id": 7,
                "producer_epoch": 1,
                "last_sequence": 1,
                "ongoing_txn_first_offset": -1,
                "last_timestamp": 5000,
                "coordinator_epoch": -1,
            },
            {
                "producer_id": 9,
                "producer_epoch": 0,
                "last_sequence": 3,
                "ongoing_txn_first_offset": 5,
                "last_timestamp": 5000,
                "coordinator_epoch": -1,
            },
        ]
        assert s["ongoing_transactions"] == [{"producer_id": 9, "producer_epoch": 0, "first_offset": 5}]

        marker = plog.append_marker(9, 0, True, 3)
        s = partition_state(plog)
        assert (
            s["ongoing_transactions"] == [] and s["last_stable_offset"] == s["high_watermark"] == marker + 1
        )
        entry = next(p for p in s["producers"] if p["producer_id"] == 9)
        assert entry["ongoing_txn_first_offset"] == -1 and entry["coordinator_epoch"] == 3
    finally:
        manager.close()


def test_partition_state_after_log_start_moves(tmp_path):
    _, manager, plog = new_topic(tmp_path, 1 << 20, {}, now=5000)
    try:
        plog.append(records(10))
        manager.delete_records("t", 0, 4)
        s = partition_state(plog)
        assert (s["log_start_offset"], s["high_watermark"], s["last_stable_offset"]) == (4, 10, 10)
    finally:
        manager.close()


# --------------------------------------------------------------------------- transactions
def test_transaction_state_follows_the_coordinator():
    env = Env()
    _, pid, epoch = init(env, "tx", timeout=45000)
    s = transaction_state(env.tc.txns["tx"])
    assert (s["state"], s["producer_id"], s["producer_epoch"], s["partitions"]) == ("Empty", pid, epoch, [])
    assert s["timeout_ms"] == 45000 and s["pending_state"] is None

    env.clock.advance(1000)
    assert add(env, "tx", pid, epoch, [("u", 1), ("t", 0)]) == E.none
    s = transaction_state(env.tc.txns["tx"])
    assert s["state"] == "Ongoing" and s["partitions"] == ["t-0", "u-1"]
    assert s["start_ms"] == env.clock.wall_ms()

    # EndTxn suspended at its first step (PrepareCommit being written): pending, still Ongoing
    op = env.tc.end_txn("tx", pid, epoch, True)
    step = next(op)
    assert isinstance(step, Write)
    assert env.tc.pending_state("tx") == TxnState.PREPARE_COMMIT
    s = transaction_state(env.tc.txns["tx"], env.tc.pending_state("tx"))
    assert (s["state"], s["pending_state"]) == ("Ongoing", "PrepareCommit")
    resume(env.tc, op, step)
    assert env.tc.pending_state("tx") is None
    assert transaction_state(env.tc.txns["tx"])["state"] == "CompleteCommit"


def test_unfinished_transactions_lists_open_ids_and_partitions(tmp_path):
    env = Env()
    _, manager, plog = new_topic(tmp_path, 1 << 20, {}, now=5000)
    try:
        assert unfinished_transactions(env.tc, manager) == {"transactions": [], "partitions": []}
        _, pid, epoch = init(env, "tx")
        init(env, "idle")  # Empty: not open
        assert add(env, "tx", pid, epoch, [("t", 0)]) == E.none
        plog.append(records(2, producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True))
        seen = unfinished_transactions(env.tc, manager)
        assert [t["transactional_id"] for t in seen["transactions"]] == ["tx"]
        assert seen["partitions"] == [
            {
                "topic": "t",
                "partition": 0,
                "last_stable_offset": 0,
                "high_watermark": 2,
                "ongoing_transactions": [{"producer_id": pid, "producer_epoch": epoch, "first_offset": 0}],
            }
        ]
        # the coordinator completes (its fake logs take the markers); the real partition is
        # still open until its own marker is written
        assert env.tc.txns["tx"].state == TxnState.ONGOING
        op = env.tc.end_txn("tx", pid, epoch, False)
        resume(env.tc, op, next(op))
        assert env.tc.txns["tx"].state == TxnState.COMPLETE_ABORT
        seen = unfinished_transactions(env.tc, manager)
        assert seen["transactions"] == [] and [p["topic"] for p in seen["partitions"]] == ["t"]
        plog.append_marker(pid, epoch, False, 0)
        assert unfinished_transactions(env.tc, manager) == {"transactions": [], "partitions": []}
    finally:
        manager.close()


# --------------------------------------------------------------------------- groups
def test_group_state_members_assignments_and_offsets():
    clock = FakeScheduler()
    gc = group_coordinator(dict(CONFIG), scheduler=clock, store=MemoryOffsetsStore(1))
    protocols = [("range", subscription("orders", "audit"))]
    boxes = [join_new(gc, clock, protocols=protocols) for _ in range(2)]
    group = gc.groups["g"]
    s = group_state(group)
    assert s["state"] == "PreparingRebalance" and len(s["members"]) == 2
    assert all(m["assignment"] == {} for m in s["members"])  # not synced yet

    clock.advance(INITIAL_JOIN_MS)
    results = [b.value for b in boxes]
    generation, leader = results[0].generation_id, results[0].leader_id
    ids = [r.member_id for r in results]
    assert group_state(group)["state"] == "CompletingRebalance"
    plan = {
        ids[0]: assignment(("orders", [0, 2]), ("audit", [0])),
        ids[1]: assignment(("orders", [1]), user_data=b"sticky"),
    }
    for mid in [leader] + [m for m in ids if m != leader]:
        box = sync(gc, mid, generation, plan if mid == leader else None)
        assert box.value.error == E.none

    s = group_state(group)
    assert s["state"] == GroupState.STABLE.value == "Stable"
    assert (s["group_id"], s["protocol_type"], s["protocol"]) == ("g", "consumer", "range")
    assert s["generation"] == generation and s["leader"] == leader and s["pending_members"] == 0
    by_id = {m["member_id"]: m for m in s["members"]}
    assert by_id[ids[0]]["assignment"] == {"orders": [0, 2], "audit": [0]}
    assert by_id[ids[1]]["assignment"] == {"orders": [1]}
    assert [m["client_id"] for m in s["members"]] == ["c", "c"]
    assert all(m["client_host"] == "/127.0.0.1" and m["group_instance_id"] is None for m in s["members"])
    assert all(m["subscription"] == ["audit", "orders"] for m in s["members"])

    assert commit(gc, "g", ids[0], None, generation, [("orders", 0, 42, 5, "m")]) == {("orders", 0): E.none}
    staged = stage(gc, 77, 0, "g", generation, ids[1], None, [("orders", 1, 9, -1, "")])
    assert staged == {("orders", 1): E.none}
    offsets = group_offsets(group)
    assert offsets["offsets"] == [
        {
            "topic": "orders",
            "partition": 0,
            "offset": 42,
            "metadata": "m",
            "leader_epoch": 5,
            "commit_timestamp_ms": clock.now,
        }
    ]
    assert offsets["pending_transactional"] == [
        {"producer_id": 77, "topic": "orders", "partition": 1, "offset": 9}
    ]


def test_group_state_of_a_non_consumer_group_keeps_assignment_undecoded():
    clock = FakeScheduler()
    gc = group_coordinator(dict(CONFIG), scheduler=clock, store=MemoryOffsetsStore(1))
    box = join_new(gc, clock, ptype="connect", protocols=[("default", b"\x00\x01")])
    clock.advance(INITIAL_JOIN_MS)
    result = box.value
    assert (
        sync(gc, result.member_id, result.generation_id, {result.member_id: b"opaque"}).value.error == E.none
    )
    s = group_state(gc.groups["g"])
    assert (s["state"], s["protocol_type"]) == ("Stable", "connect")
    assert s["members"][0]["assignment"] is None and s["members"][0]["subscription"] is None


# --------------------------------------------------------------------------- assignment bytes
def test_decode_assignment_versions_and_garbage():
    assert decode_assignment(b"") == {}
    assert decode_assignment(assignment(("a", [3, 1]), ("b", []))) == {"a": [1, 3], "b": []}
    # version 3 adds nothing to the layout before user data (ConsumerProtocolAssignment.json)
    v3 = (
        struct.pack(">hi", 3, 1)
        + struct.pack(">h", 1)
        + b"x"
        + struct.pack(">iii", 2, 0, 4)
        + struct.pack(">i", -1)
    )
    assert decode_assignment(v3) == {"x": [0, 4]}
    assert decode_assignment(b"\x00\x00\x00\x00\x00\x05\x00") is None  # truncated
    assert decode_assignment(b"\x00\x00\xff\xff\xff\xff") is None  # negative count
    assert decode_assignment(v3[:-9]) is None  # partitions cut off
