"""A KIP-848 consumer group and its members as Kafka 4.4's group coordinator keeps them
(`modern.consumer.ConsumerGroup`, `ConsumerGroupMember`): group epoch, target assignment and its
epoch, each member's epochs, state, assigned partitions (with the epoch each was assigned in) and
partitions pending revocation, the resolved regular expressions, and the group's committed
offsets (the same attributes as a classic `Group`, so the offset machinery serves both).

State changes only by `replay` of the records of coordinator/consumer_group_records.py: after
their write, and at load, the same code (Kafka's model). The heartbeat operation
(coordinator/consumer_groups.py) reads this state, computes the records and yields them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import ClassVar
from uuid import UUID

from minibroker.coordinator.consumer_group_records import (
    ClassicMemberMetadata,
    ConsumerGroupRecord,
    CurrentAssignmentValue,
    MemberMetadataValue,
    ResolvedRegexValue,
)
from minibroker.coordinator.group_metadata import OffsetAndMetadata

__all__ = [
    "Assignment",
    "ConsumerGroup",
    "ConsumerGroupMember",
    "ConsumerGroupState",
    "MemberState",
    "replay",
]

#: topic id -> partition -> the epoch it was assigned in (a member's assigned partitions or
#: partitions pending revocation)
Assignment = Mapping[UUID, Mapping[int, int]]
#: topic id -> partitions (a target assignment: no epochs)
TargetPartitions = Mapping[UUID, frozenset[int]]


class MemberState(IntEnum):
    """`MemberState`; the values are the byte of record type 8."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @property
    def label(self) -> str:
        """As Kafka names it in logs and describe output ("stable", "unrevoked_partitions"...)."""
        return self.name.lower()


class ConsumerGroupState:
    """The group states as Kafka spells them (ListGroups, ConsumerGroupDescribe)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """One member (immutable: a change is a new member built from the old one and replayed)."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    classic: ClassicMemberMetadata | None = None  # joined with the classic protocol

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def metadata_value(self) -> MemberMetadataValue:
        """Record type 5's value for this member."""
        raise NotImplementedError

    def current_value(self) -> CurrentAssignmentValue:
        """Record type 8's value for this member (assignment epochs included)."""
        raise NotImplementedError


class ConsumerGroup:
    """One consumer group. `group_type` tells it from a classic `Group` (the manager keeps both
    kinds; a group id is one or the other)."""

    group_type: ClassVar[str] = "consumer"

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.assignment_epoch = -1  # the target assignment's epoch; -1 before the first
        self.assignment_timestamp_ms = 0
        self.members: dict[str, ConsumerGroupMember] = {}  # insertion order = Kafka's map order
        self.target: dict[str, TargetPartitions] = {}  # member id -> its target partitions
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.resolved_regexes: dict[str, ResolvedRegexValue] = {}
        # topic id -> partition -> epoch of the member that owns it (assigned or pending
        # revocation): a partition is assignable to another member only once it is absent here
        self.partition_epochs: dict[UUID, dict[int, int]] = {}
        self.has_legacy_partition_metadata = False  # a type-4 record to tombstone
        self.metadata_refresh_deadline_ms = 0  # 0: refresh metadata at the next heartbeat
        self.metadata_refresh_epoch = -1  # the group epoch that deadline belongs to
        self.last_regex_refresh_ms = 0
        self.last_resolved_topics_version = 0
        # committed offsets and transactional offsets waiting for their marker (as `Group`)
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = {}

    # --- derived state -----------------------------------------------------------------------
    @property
    def state(self) -> str:
        """Empty, Assigning, Reconciling or Stable (ConsumerGroupState)."""
        raise NotImplementedError

    def is_empty(self) -> bool:
        return not self.members

    def num_classic_members(self) -> int:
        return sum(1 for m in self.members.values() if m.uses_classic_protocol)

    def current_partition_epoch(self, topic_id: UUID, partition: int) -> int:
        """The epoch of the member owning the partition, -1 when no member does."""
        return self.partition_epochs.get(topic_id, {}).get(partition, -1)

    def subscribed_topic_names(self) -> dict[str, int]:
        """Topic name -> number of members subscribed to it by name or through a resolved regex."""
        raise NotImplementedError

    def is_subscribed_to_topic(self, topic: str) -> bool:
        raise NotImplementedError

    def subscription_type(self) -> str:
        """ "HOMOGENEOUS" or "HETEROGENEOUS", as Kafka decides it for the assignors."""
        raise NotImplementedError

    def preferred_assignor(self, default: str) -> str:
        """The most frequent server assignor among the members, else `default`."""
        raise NotImplementedError

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def tombstones(self) -> list[ConsumerGroupRecord]:
        """The records that delete the group, in Kafka's order (type 8s, 7s, one 6, 5s, 16s, a 4
        tombstone, a 3 tombstone); its offsets' tombstones are the manager's."""
        raise NotImplementedError


def replay(groups: dict[str, ConsumerGroup], record: ConsumerGroupRecord) -> None:
    """Apply one consumer group record to the groups (Kafka's GroupMetadataManager.replay for
    types 3-8 and 16): after its write and at load."""
    raise NotImplementedError
