"""The share group model (coordinator/share_group.py): replay of records 10-15 one by one as
Kafka's GroupMetadataManager.replay applies them, its refusals of out-of-order tombstones, the
state, subscription counts and type, and the manager's handling of a record for a group id of
another type."""

from __future__ import annotations

import uuid

import pytest
import structlog
from minibroker.coordinator.consumer_group import IllegalGroupState
from minibroker.coordinator.share_group import ShareGroup, replay
from minibroker.coordinator.share_group_records import (
    SgCurrent,
    SgEpoch,
    SgMember,
    SgStatePartitions,
    SgTarget,
    SgTargetMeta,
    ShareCurrentValue,
    ShareEpochValue,
    ShareMemberValue,
    ShareTargetMetaValue,
    StatePartitionsValue,
    TopicInfo,
    TopicPartitions,
    TopicPartitionsInfo,
)

from tests.unit.coordinator_fakes import MemoryOffsetsStore, group_coordinator
from tests.unit.test_groups import FakeScheduler

T = uuid.UUID(int=7)


def member(gid, mid, *topics):
    return SgMember(gid, mid, ShareMemberValue(None, "c", "h", tuple(topics)))


def test_replay_builds_the_group_and_the_tombstones_remove_it_in_kafkas_order():
    groups: dict[str, ShareGroup] = {}
    replay(groups, member("g", "a", "t", "u"), 5)
    replay(groups, member("g", "b", "t"), 5)
    replay(groups, SgEpoch("g", ShareEpochValue(3, 99)), 5)
    replay(groups, SgTarget("g", "a", (TopicPartitions(T, (0, 1)),)), 5)
    replay(groups, SgTargetMeta("g", ShareTargetMetaValue(3, 1234)), 5)
    replay(groups, SgCurrent("g", "a", ShareCurrentValue(3, 2, 0, (TopicPartitions(T, (0, 1)),))), 5)
    info = StatePartitionsValue(
        (), (TopicPartitionsInfo(T, "t", (0, 1)),), (TopicInfo(uuid.UUID(int=8), "x"),)
    )
    replay(groups, SgStatePartitions("g", info), 5)
    g = groups["g"]
    assert (g.group_epoch, g.metadata_hash, g.assignment_epoch, g.assignment_timestamp_ms) == (3, 99, 3, 1234)
    assert g.state == "Stable" and g.subscribed_names == {"t": 2, "u": 1}
    assert g.subscription_type() == "HETEROGENEOUS"
    assert g.members["a"].assigned == {T: frozenset({0, 1})} and g.members["a"].previous_member_epoch == 2
    assert g.initialized_partitions() == {T: frozenset({0, 1})} and g.initialized[T].timestamp_ms == 5
    assert g.deleting == {uuid.UUID(int=8): "x"}
    # a member's metadata tombstone before its current assignment's: refused, nothing changes
    with pytest.raises(IllegalGroupState, match="invalid leave group epoch"):
        replay(groups, SgMember("g", "a", None), 5)
    with pytest.raises(IllegalGroupState, match="still has 2 members"):
        replay(groups, SgEpoch("g", None), 5)
    for record in g.tombstones():
        replay(groups, record, 5)
    assert "g" not in groups
    # tombstones of what does not exist do nothing
    replay(groups, SgEpoch("g", None), 5)
    replay(groups, SgMember("g", "zz", None), 5)
    assert groups == {}


def test_state_record_alone_creates_the_group_and_its_tombstone_clears_it():
    groups: dict[str, ShareGroup] = {}
    replay(groups, SgStatePartitions("g", StatePartitionsValue((), (), ())), 1)
    assert groups["g"].is_empty() and groups["g"].has_state_metadata
    replay(groups, SgStatePartitions("g", None), 1)
    assert not groups["g"].has_state_metadata


def test_the_manager_skips_a_share_record_for_a_group_of_another_type():
    clock = FakeScheduler()
    gc = group_coordinator({"offsets.topic.num.partitions": 1}, store=MemoryOffsetsStore(1), scheduler=clock)
    gc.manager.add_group("classic")
    with structlog.testing.capture_logs() as logs:
        gc.manager.replay(member("classic", "a", "t"))
    assert "classic" not in gc.manager.share_groups and gc.manager.group_type("classic") == "classic"
    assert any(e["event"] == "skipping a share group record for a group of another type" for e in logs)
    # and one out of order for its group is skipped too, the group kept as it was
    gc.manager.replay(member("s", "a", "t"))
    with structlog.testing.capture_logs() as logs:
        gc.manager.replay(SgEpoch("s", None))
    assert "a" in gc.manager.share_groups["s"].members
    assert any(e["event"] == "skipping a share group record out of order for its group" for e in logs)
