"""The KIP-848 consumer group model (coordinator/consumer_group.py) as Kafka 4.4 keeps it:
record values, replay of every record type with Kafka's order checks, the tombstones of a
group, the group state, topic counts, subscription type, preferred assignor and the partition
epochs that make revoke-before-assign hold."""

from __future__ import annotations

from dataclasses import replace
from uuid import UUID

import pytest
from minibroker.coordinator.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupState,
    IllegalGroupState,
    MemberState,
    SubscriptionCount,
    new_member,
    replay,
)
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
    ConsumerGroupRecord,
    CurrentAssignmentValue,
    EpochValue,
    MemberMetadataValue,
    ResolvedRegexValue,
    TargetMetaValue,
    TopicPartitions,
)

G = "g"
T1 = UUID(int=1)
T2 = UUID(int=2)


def meta(
    names: tuple[str, ...] = ("t1",),
    regex: str = "",
    assignor: str | None = None,
    instance: str | None = None,
) -> MemberMetadataValue:
    return MemberMetadataValue(
        instance_id=instance,
        rack_id=None,
        client_id="c",
        client_host="/127.0.0.1",
        subscribed_topic_names=names,
        subscribed_topic_regex=regex,
        rebalance_timeout_ms=30000,
        server_assignor=assignor,
    )


def current(epoch: int, assigned: dict[UUID, dict[int, int]], state: int = 0, previous: int = 0):
    return CurrentAssignmentValue(
        epoch,
        previous,
        state,
        tuple(TopicPartitions(t, tuple(ps), tuple(ps.values())) for t, ps in assigned.items()),
        (),
    )


def apply(groups: dict[str, ConsumerGroup], *records: ConsumerGroupRecord) -> None:
    for r in records:
        replay(groups, r)


def joined(*member_ids: str, epoch: int = 3) -> dict[str, ConsumerGroup]:
    """A group whose members each hold partition i of T1 (i = their position), stable at `epoch`."""
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, CgEpoch(G, EpochValue(epoch, 77)))
    for i, m in enumerate(member_ids):
        apply(
            groups,
            CgMember(G, m, meta()),
            CgTarget(G, m, (TopicPartitions(T1, (i,)),)),
        )
    apply(groups, CgTargetMeta(G, TargetMetaValue(epoch, 1234)))
    for i, m in enumerate(member_ids):
        apply(groups, CgCurrent(G, m, current(epoch, {T1: {i: epoch}}, previous=epoch - 1)))
    return groups


# --- record values --------------------------------------------------------------------------------
def test_member_values_round_trip_through_replay() -> None:
    classic = ClassicMemberMetadata(45000, (ClassicProtocol("range", b"\x00\x01"),))
    m = ConsumerGroupMember(
        "m1",
        member_epoch=7,
        previous_member_epoch=6,
        state=MemberState.UNREVOKED_PARTITIONS,
        instance_id="i1",
        rack_id="r1",
        rebalance_timeout_ms=5000,
        client_id="cid",
        client_host="/10.0.0.1",
        subscribed_topic_names=frozenset({"b", "a"}),
        subscribed_topic_regex="x.*",
        server_assignor="range",
        assigned={T1: {2: 5, 0: 7}},
        pending_revocation={T2: {1: 4}},
        classic=classic,
    )
    v5 = m.metadata_value()
    assert v5.subscribed_topic_names == ("a", "b")  # sorted, as Kafka writes them
    v8 = m.current_value()
    assert v8.state == 1
    assert v8.assigned == (TopicPartitions(T1, (0, 2), (7, 5)),)  # the epochs per partition
    assert v8.pending_revocation == (TopicPartitions(T2, (1,), (4,)),)
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, CgMember(G, "m1", v5), CgCurrent(G, "m1", v8))
    assert groups[G].members["m1"] == m


def test_no_regex_is_written_as_the_empty_string_and_read_back_as_none() -> None:
    m = new_member("m1")
    assert (m.member_epoch, m.previous_member_epoch) == (0, -1)  # Kafka's new Builder(memberId)
    assert m.metadata_value().subscribed_topic_regex == ""
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, CgMember(G, "m1", m.metadata_value()))
    got = groups[G].members["m1"]
    assert got.subscribed_topic_regex is None and got.regex is None
    assert got.previous_member_epoch == -1


@pytest.mark.parametrize(
    ("epochs", "member_epoch", "expected"),
    [
        (None, 5, {0: 5, 1: 5}),  # a record from before Kafka 4.4: the member epoch
        ((3,), 5, {0: 5, 1: 5}),  # a wrong length: the same fall-back (Kafka logs an error)
        (None, -2, {0: 0, 1: 0}),  # never below 0
        ((3, 4), 5, {0: 3, 1: 4}),
    ],
)
def test_assignment_epochs_fall_back_to_the_member_epoch(epochs, member_epoch, expected) -> None:
    value = CurrentAssignmentValue(member_epoch, 1, 0, (TopicPartitions(T1, (0, 1), epochs),), ())
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, CgCurrent(G, "m1", value))
    assert groups[G].members["m1"].assigned == {T1: expected}


def test_an_unknown_state_byte_is_unknown() -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, CgCurrent(G, "m1", current(3, {}, state=42)))
    assert groups[G].members["m1"].state is MemberState.UNKNOWN


# --- replay ---------------------------------------------------------------------------------------
def test_a_new_group_starts_at_epoch_1_and_assignment_epoch_1() -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, CgEpoch(G, EpochValue(1)))
    g = groups[G]
    assert (g.group_epoch, g.assignment_epoch, g.state) == (1, 1, ConsumerGroupState.EMPTY)


@pytest.mark.parametrize(
    "record",
    [
        CgEpoch(G, EpochValue(4, 9)),
        CgMember(G, "m", meta()),
        CgTargetMeta(G, TargetMetaValue(4, 5)),
        CgTarget(G, "m", ()),
        CgCurrent(G, "m", current(4, {})),
        CgRegex(G, "t.*", ResolvedRegexValue(("t1",), 1, 2)),
    ],
    ids=["3", "5", "6", "7", "8", "16"],
)
def test_any_record_creates_its_group(record) -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, record)
    assert isinstance(groups[G], ConsumerGroup)


@pytest.mark.parametrize(
    "record",
    [
        CgEpoch(G, None),
        CgPartitionMetadataTombstone(G),
        CgMember(G, "m", None),
        CgTargetMeta(G, None),
        CgTarget(G, "m", None),
        CgCurrent(G, "m", None),
        CgRegex(G, "t.*", None),
    ],
    ids=["3", "4", "5", "6", "7", "8", "16"],
)
def test_a_tombstone_for_an_absent_group_does_nothing(record) -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, record)
    assert groups == {}


def test_replay_sets_epochs_target_and_hash() -> None:
    groups = joined("a", "b")
    g = groups[G]
    assert (g.group_epoch, g.metadata_hash) == (3, 77)
    assert (g.assignment_epoch, g.assignment_timestamp_ms) == (3, 1234)
    assert g.target == {"a": {T1: frozenset({0})}, "b": {T1: frozenset({1})}}
    apply(groups, CgTarget(G, "a", None))
    assert list(g.target) == ["b"]


def test_member_tombstones_must_come_in_kafkas_order() -> None:
    groups = joined("a")
    g = groups[G]
    with pytest.raises(IllegalGroupState, match="did not receive ConsumerGroupCurrentMemberAssignmentValue"):
        apply(groups, CgMember(G, "a", None))
    apply(groups, CgCurrent(G, "a", None))
    a = g.members["a"]
    assert (a.member_epoch, a.previous_member_epoch, a.assigned, a.pending_revocation) == (-1, -1, {}, {})
    assert g.current_partition_epoch(T1, 0) == -1
    with pytest.raises(IllegalGroupState, match="did not receive ConsumerGroupTargetAssignmentMetadataValue"):
        apply(groups, CgMember(G, "a", None))  # its target first
    apply(groups, CgTarget(G, "a", None), CgMember(G, "a", None))
    assert g.members == {} and g.state == ConsumerGroupState.EMPTY
    apply(groups, CgMember(G, "a", None), CgCurrent(G, "a", None))  # an absent member: nothing


def test_group_tombstone_requires_no_members_no_target_and_the_target_meta_tombstone() -> None:
    groups = joined("a")
    with pytest.raises(IllegalGroupState, match="still has 1 members"):
        apply(groups, CgEpoch(G, None))
    apply(groups, CgCurrent(G, "a", None))
    with pytest.raises(IllegalGroupState, match="assignment still has 1 members"):
        apply(groups, CgTargetMeta(G, None))
    apply(groups, CgTarget(G, "a", None), CgMember(G, "a", None))
    with pytest.raises(IllegalGroupState, match="did not receive ConsumerGroupTargetAssignmentMetadataValue"):
        apply(groups, CgEpoch(G, None))
    apply(groups, CgTargetMeta(G, None))
    assert groups[G].assignment_epoch == -1
    apply(groups, CgEpoch(G, None))
    assert groups == {}


def test_tombstones_in_kafkas_order_delete_the_group_on_replay() -> None:
    groups = joined("a", "b")
    apply(groups, CgRegex(G, "t.*", ResolvedRegexValue(("t1", "t2"), 3, 4)))
    tombstones = groups[G].tombstones()
    assert tombstones == [
        CgCurrent(G, "a", None),
        CgCurrent(G, "b", None),
        CgTarget(G, "a", None),
        CgTarget(G, "b", None),
        CgTargetMeta(G, None),
        CgMember(G, "a", None),
        CgMember(G, "b", None),
        CgRegex(G, "t.*", None),
        CgPartitionMetadataTombstone(G),
        CgEpoch(G, None),
    ]
    apply(groups, *tombstones)
    assert groups == {}


def test_static_members_follow_the_members() -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, CgMember(G, "m1", meta(instance="i1")))
    g = groups[G]
    assert g.static_members == {"i1": "m1"}
    assert g.static_member("i1") is g.members["m1"]
    assert g.static_member(None) is None and g.static_member("other") is None
    apply(groups, CgMember(G, "m1", meta(instance="i2")))
    assert g.static_members == {"i2": "m1"}
    # a replacement: the old member's tombstones, then the new member with the instance id
    apply(groups, CgCurrent(G, "m1", None), CgMember(G, "m1", None), CgMember(G, "m2", meta(instance="i2")))
    assert g.static_members == {"i2": "m2"}
    assert g.target_of("m2", "i2") == {}
    apply(groups, CgTarget(G, "m2", (TopicPartitions(T1, (0,)),)))
    assert g.target_of("m9", "i2") == {T1: frozenset({0})}  # the target of the instance's member


def test_regex_records_count_their_topics() -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(
        groups,
        CgMember(G, "a", meta(names=("t1",))),
        CgMember(G, "b", meta(names=(), regex="t.*")),
        CgRegex(G, "t.*", ResolvedRegexValue(("t1", "t2"), 5, 6)),
    )
    g = groups[G]
    assert g.subscribed_names == {"t1": SubscriptionCount(1, 1), "t2": SubscriptionCount(0, 1)}
    assert g.subscribed_topic_names() == {"t1": 2, "t2": 1}
    assert g.subscribed_regexes == {"t.*": 1}
    assert g.is_subscribed_to_topic("t2") and not g.is_subscribed_to_topic("t3")
    assert g.subscribed_topic_ids(g.members["b"], {"t1": T1, "t2": T2}) == {T1, T2}
    assert g.subscribed_topic_ids(g.members["b"], {"t1": T1}) == {T1}  # t2 does not exist
    apply(groups, CgRegex(G, "t.*", ResolvedRegexValue(("t2",), 6, 7)))
    assert g.subscribed_names == {"t1": SubscriptionCount(1, 0), "t2": SubscriptionCount(0, 1)}
    apply(groups, CgRegex(G, "t.*", None))
    assert g.subscribed_names == {"t1": SubscriptionCount(1, 0)}
    apply(groups, CgCurrent(G, "a", None), CgMember(G, "a", None))
    assert g.subscribed_names == {}


def test_compute_subscribed_names_drops_a_regex_with_its_last_member() -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(
        groups,
        CgMember(G, "b", meta(names=(), regex="t.*")),
        CgRegex(G, "t.*", ResolvedRegexValue(("t1",), 5, 6)),
    )
    g = groups[G]
    b = g.members["b"]
    moved = replace(b, subscribed_topic_regex=None, subscribed_topic_names=frozenset({"t3"}))
    assert g.compute_subscribed_names(b, moved) == {"t3": SubscriptionCount(1, 0)}
    assert g.compute_subscribed_regexes(b, moved) == {}
    assert g.compute_subscribed_names_without([b], ["t.*"]) == {}
    assert g.subscribed_names == {"t1": SubscriptionCount(0, 1)}  # unchanged


# --- derived state --------------------------------------------------------------------------------
def test_group_state() -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, CgEpoch(G, EpochValue(1)))
    g = groups[G]
    assert g.state == ConsumerGroupState.EMPTY
    apply(groups, CgMember(G, "a", meta()), CgEpoch(G, EpochValue(2)))
    assert g.state == ConsumerGroupState.ASSIGNING  # group epoch 2 > assignment epoch 1
    apply(groups, CgTarget(G, "a", ()), CgTargetMeta(G, TargetMetaValue(2, 0)))
    assert g.state == ConsumerGroupState.RECONCILING  # a at epoch 0
    apply(groups, CgCurrent(G, "a", current(2, {}, state=2)))
    assert g.state == ConsumerGroupState.RECONCILING  # at the epoch, but UNRELEASED
    apply(groups, CgCurrent(G, "a", current(2, {})))
    assert g.state == ConsumerGroupState.STABLE


@pytest.mark.parametrize(
    ("members", "regexes", "expected"),
    [
        ([], {}, "HOMOGENEOUS"),
        ([(("t1", "t2"), ""), (("t2", "t1"), "")], {}, "HOMOGENEOUS"),
        ([(("t1",), ""), (("t1", "t2"), "")], {}, "HETEROGENEOUS"),
        ([((), "r"), ((), "r")], {"r": ("t1", "t2")}, "HOMOGENEOUS"),
        ([((), "r"), ((), "s")], {"r": ("t1",), "s": ("t2",)}, "HETEROGENEOUS"),
        ([((), "r"), (("t1",), "r")], {"r": ("t1",)}, "HETEROGENEOUS"),  # t1 by name too
        ([((), "r"), ((), "r")], {"r": ("t1",), "s": ("t1",)}, "HETEROGENEOUS"),  # t1 from 2 regexes
    ],
)
def test_subscription_type(members, regexes, expected) -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, CgEpoch(G, EpochValue(1)))
    for i, (names, regex) in enumerate(members):
        apply(groups, CgMember(G, f"m{i}", meta(names=names, regex=regex)))
    for regex, topics in regexes.items():
        apply(groups, CgRegex(G, regex, ResolvedRegexValue(topics, 1, 1)))
    assert groups[G].subscription_type() == expected


def test_preferred_assignor() -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, CgMember(G, "a", meta()))
    g = groups[G]
    assert g.preferred_assignor("uniform") == "uniform"  # nobody names one: the default
    assert g.compute_preferred_assignor(None, None) is None
    apply(groups, CgMember(G, "b", meta(assignor="range")))
    assert g.preferred_assignor("uniform") == "range"
    apply(groups, CgMember(G, "c", meta(assignor="uniform")), CgMember(G, "d", meta(assignor="uniform")))
    assert g.preferred_assignor("range") == "uniform"  # the most frequent
    b = g.members["b"]
    # a tie goes to the first in java.util.HashMap order: "uniform" (bucket 1) before "range" (9)
    assert g.compute_preferred_assignor(g.members["c"], None) == "uniform"
    assert g.compute_preferred_assignor(b, replace(b, server_assignor="uniform")) == "uniform"
    apply(groups, CgMember(G, "c", meta()))
    assert g.server_assignors == {"range": 1, "uniform": 1}
    assert g.preferred_assignor("x") == "uniform"
    apply(groups, CgMember(G, "e", meta(assignor="range")))
    assert g.preferred_assignor("x") == "range"


# --- partition epochs -----------------------------------------------------------------------------
def test_partition_epochs_follow_the_owner() -> None:
    groups = joined("a", "b", epoch=3)
    g = groups[G]
    assert g.partition_epochs == {T1: {0: 3, 1: 3}}
    # a moves to epoch 4, keeping T1-0 (its assignment epoch stays 3, its owner epoch is 4)
    apply(groups, CgCurrent(G, "a", current(4, {T1: {0: 3}}, previous=3)))
    assert g.current_partition_epoch(T1, 0) == 4
    assert g.members["a"].assignment_epoch(T1, 0) == 3
    # b lets T1-1 go
    apply(groups, CgCurrent(G, "b", current(4, {}, previous=3)))
    assert g.current_partition_epoch(T1, 1) == -1
    assert g.current_partition_epoch(T2, 0) == -1


def test_a_partition_owned_at_a_newer_epoch_is_refused_and_nothing_changes() -> None:
    groups = joined("a", "b", epoch=3)
    g = groups[G]
    before = g.members["b"]
    with pytest.raises(IllegalGroupState, match="still owned at epoch 3"):
        apply(groups, CgCurrent(G, "b", current(3, {T1: {0: 3, 1: 3}})))  # a owns T1-0 at 3
    assert g.members["b"] is before
    assert g.partition_epochs == {T1: {0: 3, 1: 3}}
    # at a newer epoch it is taken over (Kafka allows it: the stored epoch is older)
    apply(groups, CgCurrent(G, "b", current(4, {T1: {0: 4, 1: 3}})))
    assert g.partition_epochs == {T1: {0: 4, 1: 4}}
    # a's removal leaves b's epoch alone: removal only when the stored epoch is the member's
    apply(groups, CgCurrent(G, "a", None))
    assert g.partition_epochs == {T1: {0: 4, 1: 4}}


def test_temporary_leave_keeps_the_partitions_at_epoch_minus_2() -> None:
    groups = joined("a", epoch=3)
    g = groups[G]
    apply(groups, CgCurrent(G, "a", current(-2, {T1: {0: 0}}, previous=3)))
    assert g.current_partition_epoch(T1, 0) == -2
    assert g.members["a"].assigned_partitions_response() == ((T1, (0,)),)


def test_waiting_on_unreleased_partition() -> None:
    groups = joined("a", "b", epoch=3)
    g = groups[G]
    apply(groups, CgTarget(G, "b", (TopicPartitions(T1, (0, 1)),)))
    apply(groups, CgCurrent(G, "b", current(3, {T1: {1: 3}}, state=2)))
    assert g.waiting_on_unreleased_partition(g.members["b"])  # T1-0 still a's
    apply(groups, CgCurrent(G, "a", current(4, {}, previous=3)))
    assert not g.waiting_on_unreleased_partition(g.members["b"])
    assert not g.waiting_on_unreleased_partition(g.members["a"])  # not UNRELEASED


def test_members_can_be_set_elements() -> None:
    a = new_member("a")
    assert len({a, replace(a, assigned={T1: {0: 1}}), new_member("a"), new_member("b")}) == 3


def test_describe() -> None:
    groups = joined("a", "b", epoch=3)
    apply(groups, CgCurrent(G, "b", current(3, {T1: {1: 3}, T2: {0: 3}}, state=1)))
    d = groups[G].describe("uniform", {T1: "t1"})  # T2 does not exist (any more)
    assert {
        k: d[k] for k in ("group_id", "group_state", "group_epoch", "assignment_epoch", "assignor_name")
    } == {
        "group_id": G,
        "group_state": ConsumerGroupState.RECONCILING,
        "group_epoch": 3,
        "assignment_epoch": 3,
        "assignor_name": "uniform",
    }
    a, b = d["members"]
    assert a["member_id"] == "a" and a["subscribed_topic_regex"] == "" and a["member_type"] == 1
    assert b["assignment"] == {"topic_partitions": [{"topic_id": T1, "topic_name": "t1", "partitions": [1]}]}
    assert b["target_assignment"] == {
        "topic_partitions": [{"topic_id": T1, "topic_name": "t1", "partitions": [1]}]
    }
