"""Offsets of KIP-848 consumer groups as Kafka 4.4 checks them (ConsumerGroup.validateOffsetCommit,
its per-partition assignment-epoch validator, validateOffsetFetch), through the check functions
and through the group coordinator's OffsetCommit, TxnOffsetCommit and OffsetFetch, on groups
built by hand (the heartbeat is not needed for these tables)."""

from __future__ import annotations

import uuid

import pytest
from minibroker.coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember
from minibroker.coordinator.consumer_group_records import ClassicMemberMetadata
from minibroker.coordinator.groups import OffsetCommitRefused, consumer_commit_check, consumer_fetch_check
from minibroker.protocol.errors import ErrorCode as E

from tests.unit.coordinator_fakes import MemoryOffsetsStore, commit, group_coordinator, run_now, stage
from tests.unit.test_groups import CONFIG, FakeScheduler

pytestmark = pytest.mark.timeout(20)

T = uuid.UUID(int=1)  # the id EveryTopicCatalog gives every topic
OTHER = uuid.UUID(int=2)
CLASSIC = ClassicMemberMetadata(45000, ())


def group(*members: ConsumerGroupMember, group_id: str = "g") -> ConsumerGroup:
    g = ConsumerGroup(group_id)
    for m in members:
        g.update_member(m)
    return g


def member(member_id: str = "m", epoch: int = 5, classic: bool = False, **fields) -> ConsumerGroupMember:
    # partition 0 assigned in epoch 3, partition 1 pending revocation since epoch 4
    return ConsumerGroupMember(
        member_id,
        member_epoch=epoch,
        assigned={T: {0: 3}},
        pending_revocation={T: {1: 4}},
        classic=CLASSIC if classic else None,
        **fields,
    )


def refusal(fn, *args, **kwargs) -> tuple[int, str] | None:
    try:
        check = fn(*args, **kwargs)
    except OffsetCommitRefused as refused:
        return refused.code, refused.message
    assert check is None
    return None


def partition_refusal(check, topic: str, topic_id, partition: int) -> tuple[int, str] | None:
    try:
        check(topic, topic_id, partition)
    except OffsetCommitRefused as refused:
        return refused.code, refused.message
    return None


# --- validateOffsetCommit: the whole request -----------------------------------------------------
@pytest.mark.parametrize(
    "members, member_id, instance, epoch, transactional, version, expected",
    [
        # no members: an admin's or a simple commit (epoch < 0) passes
        ((), "", None, -1, False, 9, None),
        ((), "", None, -1, False, 2, None),
        # a commit naming no member while there are members
        ((member(),), "", None, -1, False, 9, (E.unknown_member_id, "Member  is not a member of group g.")),
        # a producer without the consumer's group metadata passes a group with members
        ((member(),), "", None, -1, True, 3, None),
        ((member(),), "x", None, 5, False, 10, (E.unknown_member_id, "Member x is not a member of group g.")),
        # a consumer-protocol member must use OffsetCommit v9+ (not TxnOffsetCommit)
        (
            (member(),),
            "m",
            None,
            5,
            False,
            8,
            (
                E.unsupported_version,
                "OffsetCommit version 9 or above must be used by members using the consumer group protocol",
            ),
        ),
        ((member(),), "m", None, 5, True, 3, None),
        ((member(classic=True),), "m", None, 5, False, 8, None),
        # the current epoch
        ((member(),), "m", None, 5, False, 9, None),
        # newer than the member's
        (
            (member(),),
            "m",
            None,
            6,
            False,
            10,
            (E.stale_member_epoch, "Received member epoch 6 is newer than current member epoch 5."),
        ),
        (
            (member(classic=True),),
            "m",
            None,
            6,
            False,
            10,
            (E.illegal_generation, "Received generation id 6 is newer than current member epoch 5."),
        ),
    ],
)
def test_commit_validation(members, member_id, instance, epoch, transactional, version, expected):
    g = group(*members)
    got = refusal(
        consumer_commit_check, g, member_id, instance, epoch, transactional=transactional, api_version=version
    )
    assert got == expected


# --- the 4.4 per-partition assignment-epoch rule -------------------------------------------------
@pytest.mark.parametrize(
    "epoch, topic, topic_id, partition, expected",
    [
        (4, "t", T, 0, None),  # assigned in epoch 3
        (3, "t", T, 0, None),
        (
            2,
            "t",
            T,
            0,
            (
                E.stale_member_epoch,
                "Received member epoch 2 is older than assignment epoch 3 for partition t-0.",
            ),
        ),
        (4, "t", T, 1, None),  # pending revocation since epoch 4
        (
            3,
            "t",
            T,
            1,
            (
                E.stale_member_epoch,
                "Received member epoch 3 is older than assignment epoch 4 for partition t-1.",
            ),
        ),
        (
            4,
            "t",
            T,
            2,
            (E.stale_member_epoch, "Partition t-2 is not assigned or pending revocation for member."),
        ),
        (
            4,
            "u",
            OTHER,
            0,
            (E.stale_member_epoch, "Partition u-0 is not assigned or pending revocation for member."),
        ),
        (
            4,
            "gone",
            None,
            0,
            (E.stale_member_epoch, "Partition gone-0 is not assigned or pending revocation for member."),
        ),
    ],
)
def test_older_epoch_checks_each_partition(epoch, topic, topic_id, partition, expected):
    check = consumer_commit_check(group(member()), "m", None, epoch, transactional=False, api_version=10)
    assert check is not None
    assert partition_refusal(check, topic, topic_id, partition) == expected


def test_a_classic_member_is_refused_with_illegal_generation_per_partition():
    check = consumer_commit_check(
        group(member(classic=True)), "m", None, 2, transactional=False, api_version=8
    )
    assert partition_refusal(check, "t", T, 0) == (
        E.illegal_generation,
        "Received generation id 2 is older than assignment epoch 3 for partition t-0.",
    )
    assert partition_refusal(check, "t", T, 5) == (
        E.illegal_generation,
        "Partition t-5 is not assigned or pending revocation for member.",
    )


# --- validateOffsetFetch -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "member_id, epoch, classic, expected",
    [
        (None, -1, False, None),  # an admin
        ("m", 5, False, None),
        ("x", 5, False, (E.unknown_member_id, "Member x is not a member of group g.")),
        (None, 5, False, (E.unknown_member_id, "Member None is not a member of group g.")),
        (
            "m",
            4,
            False,
            (E.stale_member_epoch, "The received member epoch 4 does not match the expected member epoch 5."),
        ),
        (
            "m",
            -1,
            False,
            (
                E.stale_member_epoch,
                "The received member epoch -1 does not match the expected member epoch 5.",
            ),
        ),
        (
            "m",
            6,
            True,
            (
                E.illegal_generation,
                "The received generation id 6 does not match the expected member epoch 5.",
            ),
        ),
    ],
)
def test_fetch_validation(member_id, epoch, classic, expected):
    g = group(member(classic=classic))
    assert refusal(consumer_fetch_check, g, member_id, epoch) == expected


# --- through the group coordinator ----------------------------------------------------------------
@pytest.fixture
def gc():
    return group_coordinator(dict(CONFIG), scheduler=FakeScheduler(), store=MemoryOffsetsStore(1))


def with_group(gc, *members: ConsumerGroupMember, group_id: str = "g") -> ConsumerGroup:
    g = group(*members, group_id=group_id)
    gc.manager.consumer_groups[g.group_id] = g
    return g


def offsets(*partitions: int, topic: str = "t", metadata: str = ""):
    return [(topic, p, 10, -1, metadata) for p in partitions]


def test_a_refusal_fails_the_whole_commit(gc):
    with_group(gc, member())
    # partition 0 would pass, partition 2 is not the member's: both get the error
    assert commit(gc, "g", "m", None, 4, offsets(0, 2), 10) == {
        ("t", 0): E.stale_member_epoch,
        ("t", 2): E.stale_member_epoch,
    }
    assert commit(gc, "g", "m", None, 6, offsets(0), 9) == {("t", 0): E.stale_member_epoch}
    assert commit(gc, "g", "m", None, 5, offsets(0), 8) == {("t", 0): E.unsupported_version}
    assert commit(gc, "g", "nobody", None, 5, offsets(0), 9) == {("t", 0): E.unknown_member_id}
    # while the group has members, an admin's commit is refused (kafka-consumer-groups
    # --reset-offsets needs an inactive group)
    assert commit(gc, "g", "", None, -1, offsets(0), 9) == {("t", 0): E.unknown_member_id}
    assert gc.manager.consumer_groups["g"].offsets == {}


def test_a_refusal_leaves_unknown_topics_their_own_error():
    class Catalog:
        topics = {"t": type("Shape", (), {"num_partitions": 4, "topic_id": T})()}

    gc = group_coordinator(
        dict(CONFIG), scheduler=FakeScheduler(), store=MemoryOffsetsStore(1), topics=Catalog()
    )
    with_group(gc, member())
    assert commit(gc, "g", "m", None, 7, offsets(0) + offsets(0, topic="nope"), 10) == {
        ("t", 0): E.stale_member_epoch,
        ("nope", 0): E.unknown_topic_or_partition,
    }


def test_transactional_commits_map_stale_member_epoch_by_version(gc):
    with_group(gc, member())
    assert stage(gc, 1, 0, "g", 6, "m", None, offsets(0), api_version=6) == {("t", 0): E.stale_member_epoch}
    assert stage(gc, 1, 0, "g", 6, "m", None, offsets(0), api_version=5) == {("t", 0): E.illegal_generation}
    assert stage(gc, 1, 0, "g", 2, "m", None, offsets(0), api_version=3) == {("t", 0): E.illegal_generation}
    assert stage(gc, 1, 0, "g", 5, "x", None, offsets(0), api_version=4) == {("t", 0): E.unknown_member_id}


def test_a_member_of_a_missing_group(gc):
    assert commit(gc, "missing", "m", None, 3, offsets(0), 9) == {("t", 0): E.group_id_not_found}
    assert commit(gc, "missing", "m", None, 3, offsets(0), 8) == {("t", 0): E.illegal_generation}
    assert stage(gc, 1, 0, "missing", 3, "m", None, offsets(0), api_version=6) == {
        ("t", 0): E.group_id_not_found
    }
    assert stage(gc, 1, 0, "missing", 3, "m", None, offsets(0), api_version=5) == {
        ("t", 0): E.illegal_generation
    }


def test_fetch_refusals_are_the_groups_error(gc):
    with_group(gc, member())
    assert gc.fetch_offsets("g", [("t", 0)], member_id="m", member_epoch=4) == (E.stale_member_epoch, [])
    assert gc.fetch_offsets("g", None, member_id="x", member_epoch=5) == (E.unknown_member_id, [])


def test_describe_consumer_groups_refusals(gc):
    with_group(gc, member())
    gc.manager.add_group("classic")
    answers = gc.describe_consumer_groups(["", "missing", "classic"], {T: "t"})
    assert [(a["group_id"], a["error_code"], a["error_message"]) for a in answers] == [
        ("", E.invalid_group_id, None),
        ("missing", E.group_id_not_found, "Group missing not found."),
        ("classic", E.group_id_not_found, "Group classic is not a consumer group."),
    ]


def test_describe_a_consumer_group(gc):
    g = with_group(gc, member(subscribed_topic_names=frozenset({"t"}), client_id="c", client_host="/h"))
    g.group_epoch = g.assignment_epoch = 5
    g.update_target("m", {T: frozenset({0, 2}), OTHER: frozenset({0})})
    [described] = gc.describe_consumer_groups(["g"], {T: "t"})  # OTHER is no topic now
    assert described["error_code"] == E.none
    assert (described["group_state"], described["group_epoch"], described["assignment_epoch"]) == (
        "Stable",
        5,
        5,
    )
    assert described["assignor_name"] == "uniform"
    [m] = described["members"]
    assert (m["member_id"], m["member_epoch"], m["client_id"], m["client_host"], m["member_type"]) == (
        "m",
        5,
        "c",
        "/h",
        1,
    )
    assert m["subscribed_topic_names"] == ["t"]
    assert m["assignment"] == {"topic_partitions": [dict(topic_id=T, topic_name="t", partitions=[0, 1])]}
    assert m["target_assignment"] == {
        "topic_partitions": [dict(topic_id=T, topic_name="t", partitions=[0, 2])]
    }


def test_list_groups_of_both_kinds(gc):
    with_group(gc, member(), group_id="g")
    with_group(gc, group_id="empty")
    gc.manager.add_group("old")
    everything = {
        g["group_id"]: (g["group_type"], g["group_state"], g["protocol_type"]) for g in gc.list_groups()
    }
    assert everything == {
        "g": ("consumer", "Reconciling", "consumer"),
        "empty": ("consumer", "Empty", "consumer"),
        "old": ("classic", "Empty", ""),
    }
    assert {g["group_id"] for g in gc.list_groups(types=["Consumer"])} == {"g", "empty"}
    assert {g["group_id"] for g in gc.list_groups(types=["classic"])} == {"old"}
    assert gc.list_groups(types=["share"]) == [] and gc.list_groups(types=["nope"]) == []
    assert {g["group_id"] for g in gc.list_groups(states=["EMPTY"])} == {"empty", "old"}
    assert {g["group_id"] for g in gc.list_groups(states=["reconciling"], types=["consumer"])} == {"g"}


def test_describe_groups_calls_a_consumer_group_dead(gc):
    with_group(gc, member())
    assert gc.group_type("g") == "consumer"
    assert gc.describe_group("g") == (
        E.none,
        dict(group_state="Dead", protocol_type="", protocol_data="", members=[]),
    )


def test_delete_a_non_empty_consumer_group_is_refused(gc):
    with_group(gc, member())
    assert run_now(gc, gc.delete_groups(["g"])) == {"g": E.non_empty_group}
    assert "g" in gc.manager.consumer_groups


def test_offset_delete_refuses_subscribed_topics(gc):
    with_group(gc, member(subscribed_topic_names=frozenset({"t"})))
    error, results = run_now(gc, gc.delete_offsets("g", [("t", 0), ("u", 0)]))
    assert error == E.none
    assert results == {("t", 0): E.group_subscribed_to_topic, ("u", 0): E.none}


def test_a_member_commits_and_fetches_its_offsets(gc):
    with_group(gc, member())
    assert commit(gc, "g", "m", None, 5, offsets(0, 1), 10) == {("t", 0): E.none, ("t", 1): E.none}
    # an older epoch is fine for a partition it has owned since then (0 since 3, 1 since 4)
    assert commit(gc, "g", "m", None, 4, offsets(0, 1), 9) == {("t", 0): E.none, ("t", 1): E.none}
    assert set(gc.manager.consumer_groups["g"].offsets) == {("t", 0), ("t", 1)}
    assert "g" not in gc.groups  # still the consumer group's, no classic group made
    error, rows = gc.fetch_offsets("g", [("t", 0)], member_id="m", member_epoch=5)
    assert (error, rows) == (E.none, [("t", 0, 10, -1, "", E.none)])
    assert gc.fetch_offsets("g", None)[1] == [("t", 0, 10, -1, "", E.none), ("t", 1, 10, -1, "", E.none)]


def test_transactional_offsets_of_a_member_stay_pending_until_the_marker(gc):
    with_group(gc, member())
    assert stage(gc, 7, 0, "g", 5, "m", None, offsets(0), api_version=5) == {("t", 0): E.none}
    assert gc.fetch_offsets("g", [("t", 0)], require_stable=True)[1] == [
        ("t", 0, -1, -1, "", E.unstable_offset_commit)
    ]
    gc.complete_txn(7, commit=True)
    assert gc.fetch_offsets("g", [("t", 0)], require_stable=True)[1] == [("t", 0, 10, -1, "", E.none)]


def test_an_empty_consumer_group_is_deleted_with_its_offsets(gc):
    g = with_group(gc, member())
    assert commit(gc, "g", "m", None, 5, offsets(0), 9) == {("t", 0): E.none}
    g.remove_member("m")  # as its leave's replay would
    assert commit(gc, "g", "", None, -1, offsets(1), 9) == {("t", 1): E.none}  # an admin's reset
    assert run_now(gc, gc.delete_groups(["g"])) == {"g": E.none}
    assert gc.group_type("g") is None
    assert gc.fetch_offsets("g", None) == (E.none, [])
    assert run_now(gc, gc.delete_groups(["g"])) == {"g": E.group_id_not_found}
