"""The KIP-848 records of __consumer_offsets (coordinator/consumer_group_records.py): Kafka's exact
bytes (golden values a Kafka 4.4 broker wrote), round trips of every type with and without their
tagged fields; and the manager's side of them (coordinator/group_metadata_manager.py): one batch
per operation and group, load, offsets that belong to the group id across classic and consumer
groups, offset fetch, transactions, expiry and deletion of consumer groups.

The manager tests replay through coordinator/consumer_group.py (`replay`, `tombstones()`), with
the records in the order Kafka writes them (its replay checks the tombstones' order)."""

from __future__ import annotations

from uuid import UUID

import pytest
import structlog
from minibroker.coordinator import consumer_group_records as cgr
from minibroker.coordinator.consumer_group_records import (
    CgCurrent,
    CgEpoch,
    CgMember,
    CgPartitionMetadataTombstone,
    CgRegex,
    CgTarget,
    CgTargetMeta,
    ClassicMemberMetadata,
    ClassicProtocol,
    CurrentAssignmentValue,
    EpochValue,
    MemberMetadataValue,
    ResolvedRegexValue,
    TargetMetaValue,
    TopicPartitions,
)
from minibroker.coordinator.group_metadata import GroupState, OffsetAndMetadata
from minibroker.coordinator.group_metadata_manager import (
    ClassicGroupTombstone,
    GroupMetadataManager,
    GroupMetadataRecord,
    OffsetsRecord,
    TxnMarker,
)
from minibroker.coordinator.group_records import GroupValue, decode_key, encode_group_key
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.internal_topic import InternalBatch
from minibroker.coordinator.runtime import Write
from minibroker.protocol.errors import ErrorCode as E

from tests.unit.coordinator_fakes import EveryTopicCatalog, MemoryOffsetsStore, perform, run_now
from tests.unit.test_groups import CONFIG, FakeScheduler

pytestmark = pytest.mark.timeout(30)

TOPIC = UUID("cc35cab2-8380-4221-83c9-0e345f935a1f")
MEMBER = "g7OdmNYuThKycXNYYETh-w"

# (key, value) hex of records a Kafka 4.4 broker wrote (group "g848--include", one member of a
# console consumer with group.protocol=consumer, topic rx-a of two partitions; its first member
# record, before the client resolved its pattern)
GOLDEN = {
    "member": (
        "0005000d673834382d2d696e636c756465001667374f646d4e597554684b7963584e59594554682d77",
        "0000000011636f6e736f6c652d636f6e73756d65720b2f3132372e302e302e310101000493e00001000100",
    ),
    "epoch": ("0003000d673834382d2d696e636c756465", "0000000000020100085a17e966a8b11446"),
    "target": (
        "0007000d673834382d2d696e636c756465001667374f646d4e597554684b7963584e59594554682d77",
        "000002cc35cab28380422183c90e345f935a1f0300000000000000010000",
    ),
    "target_meta": ("0006000d673834382d2d696e636c756465", "000000000002010008000001a21fb61795"),
    "target_meta_no_timestamp": ("0006000d673834382d2d696e636c756465", "00000000000300"),
    "current": (
        "0008000d673834382d2d696e636c756465001667374f646d4e597554684b7963584e59594554682d77",
        "000000000002000000010002cc35cab28380422183c90e345f935a1f03000000000000000101000903"
        "00000002000000020100",
    ),
}


def _golden(name: str) -> tuple[bytes, bytes]:
    key, value = GOLDEN[name]
    return bytes.fromhex(key), bytes.fromhex(value)


def test_golden_records_decode_to_what_kafka_wrote_and_encode_back_to_its_bytes():
    expected = {
        "member": CgMember(
            "g848--include",
            MEMBER,
            MemberMetadataValue(None, None, "console-consumer", "/127.0.0.1", (), "", 300000, None, None),
        ),
        "epoch": CgEpoch("g848--include", EpochValue(2, 6491914015003972678)),
        "target": CgTarget("g848--include", MEMBER, (TopicPartitions(TOPIC, (0, 1)),)),
        "target_meta": CgTargetMeta("g848--include", TargetMetaValue(2, 1795828357013)),
        "target_meta_no_timestamp": CgTargetMeta("g848--include", TargetMetaValue(3, 0)),
        "current": CgCurrent(
            "g848--include",
            MEMBER,
            CurrentAssignmentValue(2, 1, 0, (TopicPartitions(TOPIC, (0, 1), (2, 2)),), ()),
        ),
    }
    for name, record in expected.items():
        key, value = _golden(name)
        assert cgr.decode(key, value) == record, name
        assert cgr.encode(record) == (key, value), name


RECORDS = [
    CgEpoch("g", EpochValue(5)),
    CgEpoch("g", EpochValue(5, -123456789)),
    CgPartitionMetadataTombstone("g"),
    CgMember("g", "m", MemberMetadataValue("i", "rack", "c", "/h", ("a", "b"), None, 45000, "uniform", None)),
    CgMember(
        "g",
        "m",
        MemberMetadataValue(
            None,
            None,
            "c",
            "/h",
            (),
            "^re.*",
            -1,
            None,
            ClassicMemberMetadata(10000, (ClassicProtocol("range", b"\x00\x01"), ClassicProtocol("rr", b""))),
        ),
    ),
    CgMember(
        "g", "m", MemberMetadataValue(None, None, "c", "/h", (), None, -1, None, ClassicMemberMetadata(0, ()))
    ),
    CgTargetMeta("g", TargetMetaValue(7)),
    CgTargetMeta("g", TargetMetaValue(7, 1_700_000_000_000)),
    CgTarget("g", "m", ()),
    CgTarget("g", "m", (TopicPartitions(TOPIC, (2, 0)), TopicPartitions(UUID(int=7), ()))),
    CgCurrent("g", "m", CurrentAssignmentValue(3, 2, 1, (TopicPartitions(TOPIC, (0,), (3,)),), ())),
    CgCurrent(
        "g",
        "m",
        CurrentAssignmentValue(
            4, 3, 2, (TopicPartitions(TOPIC, (1, 2)),), (TopicPartitions(UUID(int=9), (5,), (1,)),)
        ),
    ),
    CgCurrent("g", "m", CurrentAssignmentValue(-1, -1, 127, (), ())),
    CgRegex("g", "t.*", ResolvedRegexValue(("t1", "t2"), 12, 1_700_000_000_001)),
    CgRegex("g", "t.*", ResolvedRegexValue((), 0, 0)),
    CgEpoch("g", None),
    CgMember("g", "m", None),
    CgTargetMeta("g", None),
    CgTarget("g", "m", None),
    CgCurrent("g", "m", None),
    CgRegex("g", "t.*", None),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_round_trip(record):
    key, value = cgr.encode(record)
    assert int.from_bytes(key[:2], "big") in cgr.RECORD_TYPES
    assert cgr.decode(key, value) == record
    assert (value is None) == (getattr(record, "value", None) is None)


def test_tagged_fields_are_written_only_off_their_default():
    plain = cgr.encode(CgEpoch("g", EpochValue(5)))[1]
    hashed = cgr.encode(CgEpoch("g", EpochValue(5, 1)))[1]
    assert plain == bytes.fromhex("00000000000500")
    assert hashed == bytes.fromhex("0000000000050100080000000000000001")
    assert cgr.encode(CgTargetMeta("g", TargetMetaValue(5)))[1] == bytes.fromhex("00000000000500")
    # a consumer-protocol member: the null ClassicMemberMetadata IS written (tag 0, one byte 0),
    # as Kafka's generated code does; the default struct is left out and reads back as itself
    member = MemberMetadataValue(None, None, "c", "h", (), None, -1, None, None)
    assert cgr.encode(CgMember("g", "m", member))[1].endswith(bytes.fromhex("01000100"))
    default = member._replace(classic=ClassicMemberMetadata(0, ()))
    assert cgr.encode(CgMember("g", "m", default))[1].endswith(bytes.fromhex("00"))
    # assignment epochs: only in type 8, only when not empty
    no_epochs = CurrentAssignmentValue(1, 0, 0, (TopicPartitions(TOPIC, (0,)),), ())
    with_epochs = no_epochs._replace(assigned=(TopicPartitions(TOPIC, (0,), (1,)),))
    assert (
        len(cgr.encode(CgCurrent("g", "m", with_epochs))[1])
        == len(cgr.encode(CgCurrent("g", "m", no_epochs))[1]) + 1 + 1 + 1 + 4
    )  # tag, size, array length, one int32 (the tag count 1 instead of 0)


def test_legacy_partition_metadata_value_reads_as_the_marker():
    key = cgr.encode(CgPartitionMetadataTombstone("g"))[0]
    assert key == bytes.fromhex("00040001") + b"g"
    # a Kafka 4.0 value: one topic of 1 partition with no racks
    value = (
        bytes.fromhex("000002") + TOPIC.bytes + bytes.fromhex("02") + b"t" + bytes.fromhex("00000001010000")
    )
    assert cgr.decode(key, value) == CgPartitionMetadataTombstone("g")
    assert cgr.decode(key, None) == CgPartitionMetadataTombstone("g")


def test_other_key_types_are_not_these_records_and_damage_raises():
    for record_type in (0, 1, 2, 9, 15, 17, 21):
        assert cgr.decode(record_type.to_bytes(2, "big") + b"\x00\x01g", b"\x00\x00") is None
    key, value = cgr.encode(RECORDS[3])
    with pytest.raises(ValueError):
        cgr.decode(key, value[:-3])
    with pytest.raises(ValueError):
        cgr.decode(key[:-1], value)
    with pytest.raises(ValueError):
        cgr.decode(key, b"\x00\x01" + value[2:])  # a value version Kafka 4.4 does not write
    with pytest.raises(TypeError):
        cgr.encode(("g", None))  # type: ignore[arg-type]


# --- the manager -------------------------------------------------------------------------------
RETENTION_MS = 10 * 60_000


@pytest.fixture
def clock():
    return FakeScheduler()


@pytest.fixture
def store():
    return MemoryOffsetsStore(1)


def _manager(store, clock) -> GroupMetadataManager:
    settings = GroupSettings.from_config({**CONFIG, "offsets.retention.minutes": 10})
    return GroupMetadataManager(settings, store=store, topics=EveryTopicCatalog(), clock=clock)


def _write(manager, *records) -> None:
    perform(manager, Write(tuple(records)))


def _member(*topics: str) -> MemberMetadataValue:
    return MemberMetadataValue(None, None, "c", "/h", topics, None, 45000, None, None)


def _offset(manager, group_id, *tps, producer_id=-1) -> None:
    now = manager.clock.wall_ms()
    offsets = tuple(((t, p), OffsetAndMetadata(10 + p, -1, "", now)) for t, p in tps)
    _write(manager, OffsetsRecord(group_id, offsets, producer_id, 0 if producer_id >= 0 else -1))


def _join(manager, group_id="cg", member="m1", topics=("t",), epoch=1) -> None:
    _write(
        manager,
        CgMember(group_id, member, _member(*topics)),
        CgEpoch(group_id, EpochValue(epoch)),
        CgTarget(group_id, member, ()),
        CgTargetMeta(group_id, TargetMetaValue(epoch)),
        CgCurrent(group_id, member, CurrentAssignmentValue(epoch, 0, 0, (), ())),
    )


def _leave(manager, group_id, member, epoch) -> None:
    """A member's leave as Kafka writes it: its assignment, target and metadata tombstones."""
    _write(
        manager,
        CgCurrent(group_id, member, None),
        CgTarget(group_id, member, None),
        CgMember(group_id, member, None),
        CgEpoch(group_id, EpochValue(epoch)),
    )


def _reloaded(store, clock) -> GroupMetadataManager:
    again = _manager(store, clock)
    again.load()
    return again


def test_records_of_one_operation_and_group_go_in_one_batch(store, clock):
    manager = _manager(store, clock)
    _join(manager)
    assert [len(b.records) for b in store.logs[0]] == [5]
    _offset(manager, "cg", ("t", 0))
    _write(
        manager,
        CgEpoch("a", EpochValue(1)),
        CgEpoch("a", EpochValue(2)),
        CgEpoch("b", EpochValue(1)),
        GroupMetadataRecord("x", GroupValue("consumer", 1, None, None, 0, ())),
        CgEpoch("b", EpochValue(2)),
    )
    assert [len(b.records) for b in store.logs[0]] == [5, 1, 2, 1, 1, 1]
    assert manager.consumer_groups["cg"].members.keys() == {"m1"}
    assert manager.group_type("cg") == "consumer"


def test_load_replays_the_records_and_skips_other_types_quietly(store, clock):
    manager = _manager(store, clock)
    _join(manager, member="m1")
    _join(manager, member="m2", epoch=2)
    _offset(manager, "cg", ("t", 0))
    # streams groups' records (types 9, 17+) as a Kafka data directory may hold them (share
    # groups' 10-15 are served: coordinator/share_group_records.py)
    store.append(0, InternalBatch([(b"\x00\x09\x00\x01s", b"\x00\x00\x00"), (b"\x00\x11\x00\x01s", None)]))
    with structlog.testing.capture_logs() as logs:
        again = _reloaded(store, clock)
    assert not [e for e in logs if e["log_level"] in ("warning", "error")]
    assert [e["records_by_type"] for e in logs if "records_by_type" in e] == [{9: 1, 17: 1}]
    group = again.consumer_groups["cg"]
    assert group.group_epoch == 2 and set(group.members) == {"m1", "m2"}
    assert again.fetch_offsets("cg", None) == (E.none, [("t", 0, 10, -1, "", E.none)])


def test_upgrade_moves_the_classic_groups_offsets_into_the_consumer_group(store, clock):
    manager = _manager(store, clock)
    _write(manager, GroupMetadataRecord("g", GroupValue("consumer", 3, None, None, 0, ())))
    _offset(manager, "g", ("t", 0), ("t", 1))
    _offset(manager, "g", ("t", 2), producer_id=7)
    _write(manager, ClassicGroupTombstone("g"), CgMember("g", "m", _member("t")), CgEpoch("g", EpochValue(4)))
    assert len(store.logs[0][-1].records) == 3  # the tombstone with the consumer group's records
    for m in (manager, _reloaded(store, clock)):
        assert m.group_type("g") == "consumer"
        group = m.consumer_groups["g"]
        assert set(group.offsets) == {("t", 0), ("t", 1)}
        assert set(group.pending_txn_offsets[7]) == {("t", 2)}
        assert m.has_pending_txn_offsets(7)
    manager.complete_txn(7, commit=True)
    assert manager.fetch_offsets("g", [("t", 2)], require_stable=True)[1] == [("t", 2, 12, -1, "", E.none)]
    assert not manager.has_pending_txn_offsets(7)


def test_classic_tombstone_alone_leaves_the_offsets_with_the_id(store, clock):
    manager = _manager(store, clock)
    _write(manager, GroupMetadataRecord("g", GroupValue("consumer", 3, "range", None, 0, ())))
    _offset(manager, "g", ("t", 0))
    _write(manager, ClassicGroupTombstone("g"))
    for m in (manager, _reloaded(store, clock)):
        group = m.groups["g"]
        assert group.protocol_type is None and group.generation_id == 0
        assert set(group.offsets) == {("t", 0)}


def test_classic_delete_and_expiry_tombstones_remove_the_group_at_load(store, clock):
    manager = _manager(store, clock)
    _write(manager, GroupMetadataRecord("g", GroupValue("consumer", 3, None, None, 0, ())))
    _offset(manager, "g", ("t", 0))
    assert run_now(manager, manager.delete_group(manager.groups["g"])) == E.none
    assert [decode_key(k) for _, k, _ in store.logs[0][-1].records][-1] == decode_key(encode_group_key("g"))
    for m in (manager, _reloaded(store, clock)):
        assert m.group_type("g") is None


def test_downgrade_leaves_offsets_for_the_classic_group_that_follows(store, clock):
    manager = _manager(store, clock)
    _join(manager, "g", "m")
    _offset(manager, "g", ("t", 0))
    _offset(manager, "g", ("t", 1), producer_id=9)
    _write(manager, *manager.consumer_groups["g"].tombstones())
    _write(manager, GroupMetadataRecord("g", GroupValue("consumer", 5, "range", None, 0, ())))
    for m in (manager, _reloaded(store, clock)):
        assert m.group_type("g") == "classic"
        group = m.groups["g"]
        assert group.generation_id == 5 and set(group.offsets) == {("t", 0)}
        assert set(group.pending_txn_offsets[9]) == {("t", 1)}
    manager.complete_txn(9, commit=False)
    assert not manager.groups["g"].pending_txn_offsets


def test_offsets_of_a_consumer_group(store, clock):
    manager = _manager(store, clock)
    _join(manager)
    _offset(manager, "cg", ("t", 0))
    _offset(manager, "cg", ("u", 0), producer_id=3)
    assert "cg" not in manager.groups
    assert manager.fetch_offsets("cg", [("t", 0), ("u", 0)], require_stable=True) == (
        E.none,
        [("t", 0, 10, -1, "", E.none), ("u", 0, -1, -1, "", E.unstable_offset_commit)],
    )
    store.append_marker(0, 3, True)
    manager.complete_txn(3, True, 0)
    assert manager.fetch_offsets("cg", None)[1] == [
        ("t", 0, 10, -1, "", E.none),
        ("u", 0, 10, -1, "", E.none),
    ]
    assert run_now(manager, manager.remove_topic_offsets("u")) == 1
    assert set(manager.consumer_groups["cg"].offsets) == {("t", 0)}
    group = manager.consumer_groups["cg"]
    assert run_now(manager, manager.delete_offsets(group, [("t", 0)])) == (E.none, {("t", 0): E.none})
    assert _reloaded(store, clock).consumer_groups["cg"].offsets == {}


def test_consumer_group_tombstones_start_with_its_offsets(store, clock):
    manager = _manager(store, clock)
    _join(manager)
    _offset(manager, "cg", ("t", 0))
    records = manager.consumer_group_tombstones("cg")
    assert [type(r).__name__ for r in records] == [
        "OffsetsRemoval",
        "CgCurrent",
        "CgTarget",
        "CgTargetMeta",
        "CgMember",
        "CgPartitionMetadataTombstone",
        "CgEpoch",
    ]
    assert all(getattr(r, "value", None) is None for r in records[1:])
    _write(manager, *records)
    for m in (manager, _reloaded(store, clock)):
        assert m.group_type("cg") is None


def test_expiry_of_a_consumer_group_with_members_spares_its_subscribed_topics(store, clock):
    manager = _manager(store, clock)
    _join(manager, topics=("t",))
    _offset(manager, "cg", ("t", 0), ("old", 0))
    clock.advance(RETENTION_MS - 1)
    assert run_now(manager, manager.expire_offsets()) == 0
    clock.advance(1)
    assert run_now(manager, manager.expire_offsets()) == 1
    assert set(manager.consumer_groups["cg"].offsets) == {("t", 0)}
    clock.advance(10 * RETENTION_MS)
    assert run_now(manager, manager.expire_offsets()) == 0  # subscribed, with a member


def test_expiry_of_an_empty_consumer_group_deletes_it_once_its_offsets_are_gone(store, clock):
    manager = _manager(store, clock)
    _join(manager, topics=("t",))
    _offset(manager, "cg", ("t", 0))
    _offset(manager, "cg", ("t", 1), producer_id=4)
    _leave(manager, "cg", "m1", epoch=2)  # Empty
    clock.advance(RETENTION_MS)
    assert run_now(manager, manager.expire_offsets()) == 1
    assert manager.group_type("cg") == "consumer"  # a transaction still pends
    store.append_marker(0, 4, True)
    manager.replay(TxnMarker(4, True, 0))
    clock.advance(RETENTION_MS)
    assert run_now(manager, manager.expire_offsets()) == 1
    assert manager.group_type("cg") is None
    last = store.logs[0][-1]
    assert [cgr.decode(k, v) or decode_key(k) for _, k, v in last.records][-2:] == [
        CgPartitionMetadataTombstone("cg"),
        CgEpoch("cg", None),
    ]
    assert _reloaded(store, clock).group_type("cg") is None


def test_an_empty_consumer_group_without_offsets_is_deleted_by_expiry(store, clock):
    manager = _manager(store, clock)
    _write(manager, CgEpoch("cg", EpochValue(3)))
    assert run_now(manager, manager.expire_offsets()) == 0
    assert manager.group_type("cg") is None


def test_unload_and_reload_take_consumer_groups_too(store, clock):
    manager = _manager(store, clock)
    _join(manager)
    _offset(manager, "cg", ("t", 0), producer_id=5)
    assert manager.unload_partition(0) == []  # classic groups only: the caller ends their sessions
    assert manager.group_type("cg") is None and not manager.has_pending_txn_offsets(5)
    manager.reload_partition(0)
    assert manager.group_type("cg") == "consumer" and manager.has_pending_txn_offsets(5)
    assert manager.consumer_groups["cg"].members.keys() == {"m1"}


def test_classic_group_state_is_dead_after_its_tombstone(store, clock):
    manager = _manager(store, clock)
    _write(manager, GroupMetadataRecord("g", GroupValue("consumer", 3, None, None, 0, ())))
    group = manager.groups["g"]
    _write(manager, ClassicGroupTombstone("g"))
    assert group.is_state(GroupState.DEAD) and "g" not in manager.groups


def test_a_record_out_of_order_is_skipped_with_a_warning(store, clock):
    manager = _manager(store, clock)
    _write(manager, GroupMetadataRecord("g", GroupValue("consumer", 3, None, None, 0, ())))
    _offset(manager, "g", ("t", 0))
    _join(manager, "cg")
    with structlog.testing.capture_logs() as logs:
        # a member's metadata tombstone before its assignment's: Kafka's replay refuses it
        _write(manager, CgMember("cg", "m1", None))
        manager.replay(CgEpoch("g", None))  # no consumer group "g": nothing to do
    assert [e["reason"] for e in logs if e["log_level"] == "warning"] == [
        "Received a tombstone record to delete member m1 but did not receive "
        "ConsumerGroupCurrentMemberAssignmentValue tombstone."
    ]
    assert manager.consumer_groups["cg"].members.keys() == {"m1"}
    assert set(manager.groups["g"].offsets) == {("t", 0)}
    assert _reloaded(store, clock).consumer_groups["cg"].members.keys() == {"m1"}
