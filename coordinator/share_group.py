"""A KIP-932 share group and its members as Kafka 4.4's group coordinator keeps them
(`modern.share.ShareGroup`, `ShareGroupMember`, and the GroupMetadataManager's
`shareGroupStatePartitionMetadata` of the group): group epoch and metadata hash, the target
assignment and its epoch, each member's epochs and assigned partitions (several members share
a partition), and which of the subscribed share-partitions have share state (initializing,
initialized, being deleted; record type 15).

State changes only by `replay` of the records of coordinator/share_group_records.py, after
their write and at load (Kafka's model); coordinator/share_groups.py computes the records.

A share group has no reconciliation: a member goes straight to its target (no revocation), so
its states are Empty (no members) and Stable; Dead once deleted. A new group starts at group
epoch 1 and assignment epoch 1 (ModernGroup, TargetAssignmentMetadata.INITIAL), as a consumer
group does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import ClassVar, NamedTuple
from uuid import UUID

from minibroker.coordinator.consumer_group import IllegalGroupState
from minibroker.coordinator.java_order import hash_uuid, java_hash_order
from minibroker.coordinator.share_group_records import (
    SgCurrent,
    SgEpoch,
    SgMember,
    SgStatePartitions,
    SgTarget,
    SgTargetMeta,
    ShareCurrentValue,
    ShareGroupRecord,
    ShareMemberValue,
    StatePartitionsValue,
    TopicInfo,
    TopicPartitions,
    TopicPartitionsInfo,
)

__all__ = [
    "ASSIGNOR_NAME",
    "InitValue",
    "ShareGroup",
    "ShareGroupMember",
    "ShareGroupState",
    "replay",
    "topic_partitions",
]

#: The only share group assignor (group.share.assignors), named in ShareGroupDescribe.
ASSIGNOR_NAME = "simple"
STABLE = 0  # MemberState.STABLE, the byte of record type 14

#: topic id -> partitions
Partitions = Mapping[UUID, frozenset[int]]


class ShareGroupState:
    """The group states as Kafka spells them (ListGroups, ShareGroupDescribe)."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


class InitValue(NamedTuple):
    """Kafka's ShareGroup.InitMapValue: a topic's share-partitions in one init state. The
    timestamp is not persisted (a replay takes the time of the replay)."""

    name: str
    partitions: frozenset[int]
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class ShareGroupMember:
    """One member (immutable: a change is a new member built from the old one and replayed).
    A new member is Kafka's `new ShareGroupMember.Builder(memberId).build()`: epoch 0,
    previous epoch -1."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = STABLE
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    assigned: Partitions = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.member_id, self.member_epoch))

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state == STABLE and self.member_epoch == target_epoch

    def metadata_value(self) -> ShareMemberValue:
        """Record type 10's value (topic names sorted)."""
        return ShareMemberValue(
            self.rack_id, self.client_id, self.client_host, tuple(sorted(self.subscribed_topic_names))
        )

    def current_value(self) -> ShareCurrentValue:
        """Record type 14's value."""
        return ShareCurrentValue(
            self.member_epoch, self.previous_member_epoch, self.state, topic_partitions(self.assigned)
        )

    def assignment_response(self) -> tuple[tuple[UUID, tuple[int, ...]], ...]:
        """The assigned partitions as ShareGroupHeartbeat answers them."""
        return tuple((t, tuple(sorted(ps))) for t, ps in self.assigned.items() if ps)


def topic_partitions(assignment: Partitions) -> tuple[TopicPartitions, ...]:
    """An assignment as records list it: topics in Java's HashMap order, partitions ascending."""
    return tuple(
        TopicPartitions(t, tuple(sorted(assignment[t])))
        for t in java_hash_order([t for t, ps in assignment.items() if ps], hash_uuid)
    )


def _assignment(topics: Iterable[TopicPartitions]) -> dict[UUID, frozenset[int]]:
    return {tp.topic_id: frozenset(tp.partitions) for tp in topics}


class ShareGroup:
    """One share group. `group_type` tells it from the classic and consumer groups (the
    manager keeps all three; a group id names one of them)."""

    group_type: ClassVar[str] = "share"
    protocol_type: ClassVar[str] = "share"

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 1
        self.metadata_hash = 0
        self.assignment_epoch = 1  # -1 once the type-12 tombstone is replayed
        self.assignment_timestamp_ms = 0
        self.members: dict[str, ShareGroupMember] = {}
        self.target: dict[str, Partitions] = {}  # member id -> its target partitions
        self.subscribed_names: dict[str, int] = {}  # topic name -> members subscribed to it
        self.metadata_refresh_deadline_ms = 0  # not persisted (Kafka's metadataRefreshDeadline)
        self.metadata_refresh_epoch = -1
        # record type 15 (None: no record, Kafka's shareGroupStatePartitionMetadata has no entry)
        self.has_state_metadata = False
        self.initializing: dict[UUID, InitValue] = {}
        self.initialized: dict[UUID, InitValue] = {}
        self.deleting: dict[UUID, str] = {}  # topic id -> name

    # --- reading ------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def is_empty(self) -> bool:
        return not self.members

    def subscription_type(
        self, names: Mapping[str, int] | None = None, num_members: int | None = None
    ) -> str:
        """HOMOGENEOUS iff every subscribed topic is subscribed by every member (Kafka's
        ModernGroup.subscriptionType without regexes)."""
        names = self.subscribed_names if names is None else names
        count = len(self.members) if num_members is None else num_members
        return "HOMOGENEOUS" if all(c == count for c in names.values()) else "HETEROGENEOUS"

    def compute_subscribed_names(
        self, old: ShareGroupMember | None, new: ShareGroupMember | None
    ) -> dict[str, int]:
        """The subscribed topic counts with `old` replaced by `new` (either may be None)."""
        names = dict(self.subscribed_names)
        _update_names(names, old, new)
        return names

    def initialized_partitions(self) -> dict[UUID, frozenset[int]]:
        return {t: v.partitions for t, v in self.initialized.items()}

    def state_value(
        self,
        initializing: Mapping[UUID, InitValue],
        initialized: Mapping[UUID, InitValue],
        deleting: Mapping[UUID, str],
    ) -> StatePartitionsValue:
        """Record type 15's value for these maps (topics in Java's HashMap order)."""

        def infos(values: Mapping[UUID, InitValue]) -> tuple[TopicPartitionsInfo, ...]:
            return tuple(
                TopicPartitionsInfo(t, values[t].name, tuple(sorted(values[t].partitions)))
                for t in java_hash_order(values, hash_uuid)
            )

        return StatePartitionsValue(
            infos(initializing),
            infos(initialized),
            tuple(TopicInfo(t, deleting[t]) for t in java_hash_order(deleting, hash_uuid)),
        )

    def describe(self, topic_names: Mapping[UUID, str]) -> dict[str, object]:
        """The group as ShareGroupDescribe answers it (Kafka's asDescribedGroup), with the
        response's field names; `topic_names` maps the ids of the topics that exist (a topic
        that does not is left out of the assignments, as Kafka leaves it out)."""
        return {
            "error_code": 0,
            "error_message": None,
            "group_id": self.group_id,
            "group_state": self.state,
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "assignor_name": ASSIGNOR_NAME,
            "members": [
                {
                    "member_id": m.member_id,
                    "rack_id": m.rack_id,
                    "member_epoch": m.member_epoch,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "subscribed_topic_names": sorted(m.subscribed_topic_names),
                    "assignment": {
                        "topic_partitions": [
                            {"topic_id": t, "topic_name": topic_names[t], "partitions": sorted(ps)}
                            for t, ps in m.assigned.items()
                            if t in topic_names
                        ]
                    },
                }
                for m in self.members.values()
            ],
        }

    def tombstones(self) -> list[ShareGroupRecord]:
        """The records that delete the group, in Kafka's order (createGroupTombstoneRecords:
        14s, 13s, the 12, 10s, the 15, the 11)."""
        gid = self.group_id
        out: list[ShareGroupRecord] = []
        out.extend(SgCurrent(gid, m, None) for m in self.members)
        out.extend(SgTarget(gid, m, None) for m in self.members)
        out.append(SgTargetMeta(gid, None))
        out.extend(SgMember(gid, m, None) for m in self.members)
        out.append(SgStatePartitions(gid, None))
        out.append(SgEpoch(gid, None))
        return out

    # --- changes (only from replay) ----------------------------------------------------------
    def update_member(self, new: ShareGroupMember) -> None:
        old = self.members.get(new.member_id)
        self.members[new.member_id] = new
        _update_names(self.subscribed_names, old, new)

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            _update_names(self.subscribed_names, old, None)

    def set_state_metadata(self, value: StatePartitionsValue | None, now_ms: int) -> None:
        if value is None:
            self.has_state_metadata = False
            self.initializing, self.initialized, self.deleting = {}, {}, {}
            return
        self.has_state_metadata = True
        self.initializing = {
            t.topic_id: InitValue(t.topic_name, frozenset(t.partitions), now_ms) for t in value.initializing
        }
        self.initialized = {
            t.topic_id: InitValue(t.topic_name, frozenset(t.partitions), now_ms) for t in value.initialized
        }
        self.deleting = {t.topic_id: t.topic_name for t in value.deleting}


def _update_names(names: dict[str, int], old: ShareGroupMember | None, new: ShareGroupMember | None) -> None:
    if old is not None:
        for topic in old.subscribed_topic_names:
            count = names.get(topic, 0) - 1
            if count > 0:
                names[topic] = count
            else:
                names.pop(topic, None)
    if new is not None:
        for topic in new.subscribed_topic_names:
            names[topic] = names.get(topic, 0) + 1


def replay(groups: dict[str, ShareGroup], record: ShareGroupRecord, now_ms: int) -> None:
    """Apply one share group record (Kafka's GroupMetadataManager.replay for types 10-15):
    after its write and at load. A record other than a tombstone creates its group (and a
    member record its member); a tombstone for an absent group or member does nothing.
    Out-of-order tombstones raise IllegalGroupState before changing anything, as Kafka's
    IllegalStateException. `now_ms` stamps type 15's topics (Kafka: the replay's time)."""
    gid = record.group_id
    group = groups.get(gid)
    if group is None:
        if record.value is None:
            return
        group = groups[gid] = ShareGroup(gid)
    if isinstance(record, SgMember):
        _replay_member(group, record)
    elif isinstance(record, SgEpoch):
        _replay_epoch(groups, group, record)
    elif isinstance(record, SgTargetMeta):
        if record.value is not None:
            group.assignment_epoch = record.value.assignment_epoch
            group.assignment_timestamp_ms = record.value.timestamp_ms
        elif group.target:
            raise IllegalGroupState(
                f"Received a tombstone record to delete target assignment of {gid} but the "
                f"assignment still has {len(group.target)} members."
            )
        else:
            group.assignment_epoch, group.assignment_timestamp_ms = -1, 0
    elif isinstance(record, SgTarget):
        if record.value is not None:
            group.target[record.member_id] = _assignment(record.value)
        else:
            group.target.pop(record.member_id, None)
    elif isinstance(record, SgCurrent):
        _replay_current(group, record)
    elif isinstance(record, SgStatePartitions):
        group.set_state_metadata(record.value, now_ms)


def _replay_member(group: ShareGroup, record: SgMember) -> None:
    old = group.members.get(record.member_id)
    value = record.value
    if value is not None:
        base = old or ShareGroupMember(record.member_id)
        group.update_member(
            replace(
                base,
                rack_id=value.rack_id,
                client_id=value.client_id,
                client_host=value.client_host,
                subscribed_topic_names=frozenset(value.subscribed_topic_names),
            )
        )
        return
    if old is None:
        return
    if old.member_epoch != -1:
        raise IllegalGroupState(
            f"Received a tombstone record to delete member {record.member_id} with invalid leave group epoch."
        )
    if record.member_id in group.target:
        raise IllegalGroupState(
            f"Received a tombstone record to delete member {record.member_id} but member exists in "
            "target assignment."
        )
    group.remove_member(record.member_id)


def _replay_epoch(groups: dict[str, ShareGroup], group: ShareGroup, record: SgEpoch) -> None:
    if record.value is not None:
        group.group_epoch = record.value.epoch
        group.metadata_hash = record.value.metadata_hash
        return
    gid = group.group_id
    if group.members:
        raise IllegalGroupState(
            f"Received a tombstone record to delete group {gid} but the group still has "
            f"{len(group.members)} members."
        )
    if group.target:
        raise IllegalGroupState(
            f"Received a tombstone record to delete group {gid} but the target assignment still "
            f"has {len(group.target)} members."
        )
    if group.assignment_epoch != -1:
        raise IllegalGroupState(
            f"Received a tombstone record to delete group {gid} but target assignment epoch in invalid."
        )
    del groups[gid]


def _replay_current(group: ShareGroup, record: SgCurrent) -> None:
    old = group.members.get(record.member_id)
    value = record.value
    if value is not None:
        base = old or ShareGroupMember(record.member_id)
        group.update_member(
            replace(
                base,
                member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                state=value.state,
                assigned=_assignment(value.assigned),
            )
        )
        return
    if old is None:
        return
    group.update_member(replace(old, member_epoch=-1, previous_member_epoch=-1, assigned={}))
