"""A KIP-848 consumer group and its members as Kafka 4.4's group coordinator keeps them
(`modern.consumer.ConsumerGroup`, `ConsumerGroupMember`): group epoch, target assignment and its
epoch, each member's epochs, state, assigned partitions (with the epoch each was assigned in) and
partitions pending revocation, the resolved regular expressions, and the group's committed
offsets (the same attributes as a classic `Group`, so the offset machinery serves both).

State changes only by `replay` of the records of coordinator/consumer_group_records.py: after
their write, and at load, the same code (Kafka's model). The heartbeat operation
(coordinator/consumer_groups.py) reads this state, computes the records and yields them; the
`compute_*` methods answer "what would the group look like with this member changed" without
changing it (Kafka's computeSubscribedTopicNames, computePreferredServerAssignor...).

A new group starts at group epoch 1 and target assignment epoch 1 (Kafka 4.4's ModernGroup and
TargetAssignmentMetadata.INITIAL), so the first member joins at epoch 2. Only the type-6
tombstone sets the assignment epoch to -1, which a type-3 tombstone requires.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import ClassVar
from uuid import UUID

from minibroker.coordinator.consumer_group_records import (
    CgCurrent,
    CgEpoch,
    CgMember,
    CgPartitionMetadataTombstone,
    CgRegex,
    CgTarget,
    CgTargetMeta,
    ClassicMemberMetadata,
    ConsumerGroupRecord,
    CurrentAssignmentValue,
    MemberMetadataValue,
    ResolvedRegexValue,
    TopicPartitions,
)
from minibroker.coordinator.group_metadata import OffsetAndMetadata
from minibroker.coordinator.partitioning import java_string_hash

__all__ = [
    "Assignment",
    "ConsumerGroup",
    "ConsumerGroupMember",
    "ConsumerGroupState",
    "IllegalGroupState",
    "MemberState",
    "SubscriptionCount",
    "TargetPartitions",
    "new_member",
    "replay",
    "subscription_type",
]

#: topic id -> partition -> the epoch it was assigned in (a member's assigned partitions or
#: partitions pending revocation)
Assignment = Mapping[UUID, Mapping[int, int]]
#: topic id -> partitions (a target assignment: no epochs)
TargetPartitions = Mapping[UUID, frozenset[int]]

HOMOGENEOUS = "HOMOGENEOUS"
HETEROGENEOUS = "HETEROGENEOUS"


class IllegalGroupState(Exception):
    """A record that Kafka's replay refuses with an IllegalStateException (a tombstone out of
    order, a partition given to a member while another owns it at a newer epoch). Raised before
    the record changes anything, so the group stays as it was."""


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

    @classmethod
    def from_value(cls, value: int) -> MemberState:
        """Kafka's MemberState.fromValue: an unknown byte is UNKNOWN."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class ConsumerGroupState:
    """The group states as Kafka spells them (ListGroups, ConsumerGroupDescribe)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class SubscriptionCount:
    """How many members subscribe to a topic by name, and how many resolved regexes hold it."""

    by_name: int = 0
    by_regex: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """One member (immutable: a change is a new member built from the old one and replayed).

    `subscribed_topic_regex` None means no regex (Kafka keeps "" for that; records carry "",
    and a replayed "" becomes None)."""

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

    def __hash__(self) -> int:  # the assignments are dicts: hash what identifies the member
        return hash((self.member_id, self.member_epoch))

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    @property
    def regex(self) -> str | None:
        """The subscribed regex, None when there is none (Kafka's subscribedTopicRegexOrNull)."""
        return self.subscribed_topic_regex or None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def assignment_epoch(self, topic_id: UUID, partition: int) -> int | None:
        """The epoch the partition was assigned to this member in; None if not assigned."""
        return self.assigned.get(topic_id, {}).get(partition)

    def pending_revocation_epoch(self, topic_id: UUID, partition: int) -> int | None:
        return self.pending_revocation.get(topic_id, {}).get(partition)

    def assigned_partitions_response(self) -> tuple[tuple[UUID, tuple[int, ...]], ...]:
        """The assigned partitions (never those pending revocation) as the heartbeat answers
        them: (topic id, sorted partitions) per topic."""
        return tuple((t, tuple(sorted(ps))) for t, ps in self.assigned.items())

    def metadata_value(self) -> MemberMetadataValue:
        """Record type 5's value for this member (topic names sorted, as Kafka writes them)."""
        return MemberMetadataValue(
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=tuple(sorted(self.subscribed_topic_names)),
            subscribed_topic_regex=self.subscribed_topic_regex or "",
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            server_assignor=self.server_assignor,
            classic=self.classic,
        )

    def current_value(self) -> CurrentAssignmentValue:
        """Record type 8's value for this member (assignment epochs included)."""
        return CurrentAssignmentValue(
            member_epoch=self.member_epoch,
            previous_member_epoch=self.previous_member_epoch,
            state=int(self.state),
            assigned=_topic_partitions(self.assigned),
            pending_revocation=_topic_partitions(self.pending_revocation),
        )

    def with_metadata(self, value: MemberMetadataValue) -> ConsumerGroupMember:
        """This member with a type-5 value applied (Kafka's Builder.updateWith)."""
        return replace(
            self,
            instance_id=value.instance_id,
            rack_id=value.rack_id,
            client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topic_names=frozenset(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex or None,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor,
            classic=value.classic,
        )

    def with_current(self, value: CurrentAssignmentValue) -> ConsumerGroupMember:
        """This member with a type-8 value applied; a partition without an assignment epoch
        (a record from before Kafka 4.4) takes max(member epoch, 0)."""
        return replace(
            self,
            member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch,
            state=MemberState.from_value(value.state),
            assigned=_assignment(value.assigned, value.member_epoch),
            pending_revocation=_assignment(value.pending_revocation, value.member_epoch),
        )


def new_member(member_id: str) -> ConsumerGroupMember:
    """A member as Kafka's `new ConsumerGroupMember.Builder(memberId).build()` makes it
    (epoch 0, previous epoch -1): a join, and a record replayed for an unknown member."""
    return ConsumerGroupMember(member_id, member_epoch=0, previous_member_epoch=-1)


def _topic_partitions(assignment: Assignment) -> tuple[TopicPartitions, ...]:
    out = []
    for topic_id, epochs in assignment.items():
        partitions = tuple(sorted(epochs))
        out.append(TopicPartitions(topic_id, partitions, tuple(epochs[p] for p in partitions)))
    return tuple(out)


def _assignment(topics: Iterable[TopicPartitions], member_epoch: int) -> dict[UUID, dict[int, int]]:
    default = max(member_epoch, 0)
    out: dict[UUID, dict[int, int]] = {}
    for tp in topics:
        epochs = tp.assignment_epochs
        if epochs is not None and len(epochs) == len(tp.partitions):
            out[tp.topic_id] = dict(zip(tp.partitions, epochs, strict=True))
        else:
            out[tp.topic_id] = dict.fromkeys(tp.partitions, default)
    return out


def subscription_type(
    regexes: Mapping[str, int], names: Mapping[str, SubscriptionCount], num_members: int
) -> str:
    """HOMOGENEOUS or HETEROGENEOUS as Kafka's ConsumerGroup.subscriptionType decides it: without
    regexes, homogeneous iff every topic is subscribed by name by every member; with regexes,
    iff the first regex (Kafka's map order; with one regex, that one) is used by every member
    and every topic comes from exactly one regex and no name."""
    if not regexes:
        return HOMOGENEOUS if all(c.by_name == num_members for c in names.values()) else HETEROGENEOUS
    if next(iter(regexes.values())) != num_members:
        return HETEROGENEOUS
    if any(c.by_regex != 1 or c.by_name > 0 for c in names.values()):
        return HETEROGENEOUS
    return HOMOGENEOUS


def _inc(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _dec(counts: dict[str, int], key: str) -> None:
    value = counts.get(key)
    if value is None:
        return
    if value == 1:
        del counts[key]
    else:
        counts[key] = value - 1


def _count(names: dict[str, SubscriptionCount], topic: str, by_name: int = 0, by_regex: int = 0) -> None:
    """Kafka's SubscriptionCount inc/dec: an entry is removed when the count it decrements is its
    last (1 of that kind and 0 of the other); decrementing an absent entry does nothing."""
    old = names.get(topic)
    if by_name > 0 or by_regex > 0:
        old = old or SubscriptionCount()
        names[topic] = SubscriptionCount(old.by_name + by_name, old.by_regex + by_regex)
        return
    if old is None:
        return
    if by_name < 0:
        if old.by_name == 1 and old.by_regex == 0:
            del names[topic]
        else:
            names[topic] = SubscriptionCount(old.by_name - 1, old.by_regex)
    elif by_regex < 0:
        if old.by_regex == 1 and old.by_name == 0:
            del names[topic]
        else:
            names[topic] = SubscriptionCount(old.by_name, old.by_regex - 1)


def _update_names(
    names: dict[str, SubscriptionCount], old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
) -> None:
    if old is not None:
        for topic in old.subscribed_topic_names:
            _count(names, topic, by_name=-1)
    if new is not None:
        for topic in new.subscribed_topic_names:
            _count(names, topic, by_name=1)


def _update_assignors(
    counts: dict[str, int], old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
) -> None:
    if old is not None and old.server_assignor is not None:
        _dec(counts, old.server_assignor)
    if new is not None and new.server_assignor is not None:
        _inc(counts, new.server_assignor)


def _most_frequent(counts: Mapping[str, int]) -> str | None:
    """The name with the highest count; a tie goes to the first of them in the iteration order
    of the `java.util.HashMap` Kafka copies the counts into (computePreferredServerAssignor: by
    bucket of the names' spread String hash codes, then insertion)."""
    if not counts:
        return None
    capacity = 16
    while len(counts) > capacity * 3 // 4:
        capacity *= 2
    order = {name: (_spread(java_string_hash(name)) & (capacity - 1), i) for i, name in enumerate(counts)}
    return min(counts, key=lambda name: (-counts[name], order[name]))


def _spread(h: int) -> int:
    """java.util.HashMap.hash: h ^ (h >>> 16) over the int32 hash code."""
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


class ConsumerGroup:
    """One consumer group. `group_type` tells it from a classic `Group` (the manager keeps both
    kinds; a group id is one or the other)."""

    group_type: ClassVar[str] = "consumer"

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 1  # Kafka 4.4's ModernGroup starts at 1
        self.metadata_hash = 0
        # the target assignment's epoch (TargetAssignmentMetadata.INITIAL: 1); -1 once its
        # type-6 tombstone is replayed, which the group's type-3 tombstone requires
        self.assignment_epoch = 1
        self.assignment_timestamp_ms = 0
        self.members: dict[str, ConsumerGroupMember] = {}  # insertion order = Kafka's map order
        self.target: dict[str, TargetPartitions] = {}  # member id -> its target partitions
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.resolved_regexes: dict[str, ResolvedRegexValue] = {}
        # topic id -> partition -> epoch of the member that owns it (assigned or pending
        # revocation): a partition is assignable to another member only once it is absent here
        self.partition_epochs: dict[UUID, dict[int, int]] = {}
        # topic name -> members subscribed by name / resolved regexes that hold it
        self.subscribed_names: dict[str, SubscriptionCount] = {}
        self.subscribed_regexes: dict[str, int] = {}  # regex -> members subscribed with it
        self.server_assignors: dict[str, int] = {}  # assignor name -> members that asked for it
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
        """Empty, Assigning, Reconciling or Stable (ConsumerGroupState), as Kafka's
        maybeUpdateGroupState derives it."""
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    def num_classic_members(self) -> int:
        return sum(1 for m in self.members.values() if m.uses_classic_protocol)

    def current_partition_epoch(self, topic_id: UUID, partition: int) -> int:
        """The epoch of the member owning the partition, -1 when no member does."""
        return self.partition_epochs.get(topic_id, {}).get(partition, -1)

    def subscribed_topic_names(self) -> dict[str, int]:
        """Topic name -> number of members subscribed to it by name plus the number of resolved
        regexes that hold it (`subscribed_names` has the two counts apart)."""
        return {t: c.by_name + c.by_regex for t, c in self.subscribed_names.items()}

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_names

    def subscription_type(self) -> str:
        """ "HOMOGENEOUS" or "HETEROGENEOUS", as Kafka decides it for the assignors."""
        return subscription_type(self.subscribed_regexes, self.subscribed_names, len(self.members))

    def preferred_assignor(self, default: str) -> str:
        """The most frequent server assignor among the members, else `default` (ties: see
        `_most_frequent`)."""
        return _most_frequent(self.server_assignors) or default

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def target_of(self, member_id: str, instance_id: str | None = None) -> TargetPartitions:
        """A member's target assignment; for a static member, the target of the member that
        holds the instance id now (Kafka's targetAssignment(memberId, instanceId))."""
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            return self.target.get(previous, {}) if previous is not None else {}
        return self.target.get(member_id, {})

    def inverted_target(self) -> dict[UUID, dict[int, str]]:
        """topic id -> partition -> the member whose target holds it."""
        out: dict[UUID, dict[int, str]] = {}
        for member_id, partitions in self.target.items():
            for topic_id, ps in partitions.items():
                for p in ps:
                    out.setdefault(topic_id, {})[p] = member_id
        return out

    def subscribed_topics_of(self, member: ConsumerGroupMember) -> set[str]:
        """The topic names the member subscribes to: its names and what its regex resolved to
        (CurrentAssignmentBuilder.subscribedTopicIds before the names become ids)."""
        names = set(member.subscribed_topic_names)
        regex = member.regex
        if regex is not None:
            resolved = self.resolved_regexes.get(regex)
            if resolved is not None:
                names.update(resolved.topics)
        return names

    def subscribed_topic_ids(
        self, member: ConsumerGroupMember, topic_ids_by_name: Mapping[str, UUID]
    ) -> set[UUID]:
        """The ids of the topics the member subscribes to (names and resolved regex) that
        exist: what `reconciliation.next_member` takes as `subscribed_topic_ids`."""
        return {topic_ids_by_name[n] for n in self.subscribed_topics_of(member) if n in topic_ids_by_name}

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """The member is UNRELEASED_PARTITIONS and some partition of its target, not yet
        assigned to it, is still owned by another member (Kafka's waitingOnUnreleasedPartition)."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, partitions in self.target.get(member.member_id, {}).items():
            assigned = member.assigned.get(topic_id, {})
            for p in partitions:
                if p not in assigned and self.current_partition_epoch(topic_id, p) != -1:
                    return True
        return False

    def describe(self, default_assignor: str, topic_names: Mapping[UUID, str]) -> dict[str, object]:
        """The group as ConsumerGroupDescribe answers it (Kafka's asDescribedGroup), with the
        response's field names; `topic_names` maps the ids of the topics that exist (a topic
        that does not is left out). The handler adds authorized_operations."""
        return {
            "error_code": 0,
            "error_message": None,
            "group_id": self.group_id,
            "group_state": self.state,
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "assignor_name": self.preferred_assignor(default_assignor),
            "members": [self._describe_member(m, topic_names) for m in self.members.values()],
        }

    def _describe_member(self, m: ConsumerGroupMember, topic_names: Mapping[UUID, str]) -> dict[str, object]:
        current: dict[UUID, list[int]] = {}
        for assignment in (m.assigned, m.pending_revocation):
            for topic_id, partitions in assignment.items():
                if topic_id in topic_names:
                    current.setdefault(topic_id, []).extend(sorted(partitions))
        target = {t: sorted(ps) for t, ps in self.target.get(m.member_id, {}).items() if t in topic_names}
        return {
            "member_id": m.member_id,
            "instance_id": m.instance_id,
            "rack_id": m.rack_id,
            "member_epoch": m.member_epoch,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": sorted(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex or "",  # Kafka's member keeps ""
            "assignment": {"topic_partitions": _described(current, topic_names)},
            "target_assignment": {"topic_partitions": _described(target, topic_names)},
            "member_type": 0 if m.uses_classic_protocol else 1,  # v1
        }

    # --- what the group would be with a member changed (no state change) ---------------------
    def compute_subscribed_names(
        self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
    ) -> dict[str, SubscriptionCount]:
        """The subscribed topic counts with `old` replaced by `new` (either may be None). When
        `old`'s regex goes away with its last member, its resolved topics lose their regex
        count (Kafka's ConsumerGroup.computeSubscribedTopicNames)."""
        names = dict(self.subscribed_names)
        _update_names(names, old, new)
        old_regex = old.regex if old is not None else None
        if old_regex is not None:
            new_regex = new.regex if new is not None else None
            if old_regex != new_regex and self.subscribed_regexes.get(old_regex, 0) == 1:
                resolved = self.resolved_regexes.get(old_regex)
                for topic in resolved.topics if resolved is not None else ():
                    _count(names, topic, by_regex=-1)
        return names

    def compute_subscribed_names_without(
        self, removed: Collection[ConsumerGroupMember], removed_regexes: Collection[str]
    ) -> dict[str, SubscriptionCount]:
        """The subscribed topic counts without these members and regexes (fencing)."""
        names = dict(self.subscribed_names)
        for member in removed:
            _update_names(names, member, None)
        for regex in removed_regexes:
            resolved = self.resolved_regexes.get(regex)
            for topic in resolved.topics if resolved is not None else ():
                _count(names, topic, by_regex=-1)
        return names

    def compute_subscribed_regexes(
        self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
    ) -> dict[str, int]:
        """regex -> members using it, with `old` replaced by `new`."""
        counts = dict(self.subscribed_regexes)
        old_regex = old.regex if old is not None else None
        new_regex = new.regex if new is not None else None
        if old_regex != new_regex:
            if old_regex is not None:
                _dec(counts, old_regex)
            if new_regex is not None:
                _inc(counts, new_regex)
        return counts

    def compute_preferred_assignor(
        self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
    ) -> str | None:
        """The most frequent server assignor with `old` replaced by `new`; None when no member
        names one (Kafka's computePreferredServerAssignor: the caller falls back to the first
        of group.consumer.assignors)."""
        counts = dict(self.server_assignors)
        _update_assignors(counts, old, new)
        return _most_frequent(counts)

    # --- changes (only from replay) ----------------------------------------------------------
    def update_member(self, new: ConsumerGroupMember) -> None:
        """Put `new` in place of the member with its id (Kafka's ConsumerGroup.updateMember):
        counts, static members and partition epochs follow. Raises IllegalGroupState, changing
        nothing, when a partition of `new` is owned at an epoch >= new's epoch."""
        old = self.members.get(new.member_id)
        self._check_partition_epochs(old, new)
        self.members[new.member_id] = new
        _update_names(self.subscribed_names, old, new)
        _update_assignors(self.server_assignors, old, new)
        if old is not None:
            self._remove_partition_epochs(old)
        self._add_partition_epochs(new.assigned, new.member_epoch)
        self._add_partition_epochs(new.pending_revocation, new.member_epoch)
        self._update_regex_count(old, new)
        if old is not None and old.instance_id is not None:
            self.static_members.pop(old.instance_id, None)
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        _update_names(self.subscribed_names, old, None)
        _update_assignors(self.server_assignors, old, None)
        self._remove_partition_epochs(old)
        self._update_regex_count(old, None)
        if old.instance_id is not None:
            self.static_members.pop(old.instance_id, None)

    def update_target(self, member_id: str, partitions: TargetPartitions) -> None:
        self.target[member_id] = partitions

    def remove_target(self, member_id: str) -> None:
        self.target.pop(member_id, None)

    def set_target_meta(self, epoch: int, timestamp_ms: int) -> None:
        self.assignment_epoch = epoch
        self.assignment_timestamp_ms = timestamp_ms

    def update_resolved_regex(self, regex: str, value: ResolvedRegexValue | None) -> None:
        """Set (or, with None, remove) what a regex resolved to; its topics' regex counts follow."""
        old = self.resolved_regexes.pop(regex, None)
        for topic in set(old.topics) if old is not None else ():
            _count(self.subscribed_names, topic, by_regex=-1)
        if value is not None:
            self.resolved_regexes[regex] = value
            for topic in set(value.topics):
                _count(self.subscribed_names, topic, by_regex=1)

    def _update_regex_count(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None) -> None:
        if old is not None and old.regex is not None:
            _dec(self.subscribed_regexes, old.regex)
        if new is not None and new.regex is not None:
            _inc(self.subscribed_regexes, new.regex)

    def _check_partition_epochs(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember) -> None:
        for assignment in (new.assigned, new.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    stored = self.current_partition_epoch(topic_id, p)
                    if stored == -1 or (
                        old is not None and stored == old.member_epoch and _holds(old, topic_id, p)
                    ):
                        continue  # free, or this member's own epoch, removed before the add
                    if stored >= new.member_epoch:
                        raise IllegalGroupState(
                            f"Cannot set the epoch of {topic_id}-{p} to {new.member_epoch} because the "
                            f"partition is still owned at epoch {stored}"
                        )

    def _add_partition_epochs(self, assignment: Assignment, epoch: int) -> None:
        for topic_id, partitions in assignment.items():
            epochs = self.partition_epochs.setdefault(topic_id, {})
            for p in partitions:
                epochs[p] = epoch

    def _remove_partition_epochs(self, member: ConsumerGroupMember) -> None:
        """Remove the member's partitions whose stored epoch is the member's epoch (another
        member may own one at another epoch already)."""
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                epochs = self.partition_epochs.get(topic_id)
                if epochs is None:
                    continue
                for p in partitions:
                    if epochs.get(p) == member.member_epoch:
                        del epochs[p]
                if not epochs:
                    del self.partition_epochs[topic_id]

    def tombstones(self) -> list[ConsumerGroupRecord]:
        """The records that delete the group, in Kafka's order (type 8s, 7s, one 6, 5s, 16s, a 4
        tombstone, a 3 tombstone); its offsets' tombstones are the manager's."""
        gid = self.group_id
        out: list[ConsumerGroupRecord] = []
        out.extend(CgCurrent(gid, m, None) for m in self.members)
        out.extend(CgTarget(gid, m, None) for m in self.members)
        out.append(CgTargetMeta(gid, None))
        out.extend(CgMember(gid, m, None) for m in self.members)
        out.extend(CgRegex(gid, r, None) for r in self.resolved_regexes)
        out.append(CgPartitionMetadataTombstone(gid))
        out.append(CgEpoch(gid, None))
        return out


def _described(
    partitions: Mapping[UUID, list[int]], topic_names: Mapping[UUID, str]
) -> list[dict[str, object]]:
    return [{"topic_id": t, "topic_name": topic_names[t], "partitions": ps} for t, ps in partitions.items()]


def _holds(member: ConsumerGroupMember, topic_id: UUID, partition: int) -> bool:
    return partition in member.assigned.get(topic_id, {}) or partition in member.pending_revocation.get(
        topic_id, {}
    )


def replay(groups: dict[str, ConsumerGroup], record: ConsumerGroupRecord) -> None:
    """Apply one consumer group record to the groups (Kafka's GroupMetadataManager.replay for
    types 3-8 and 16): after its write and at load. A record other than a tombstone creates
    its group; a tombstone for an absent group or member does nothing. Out-of-order tombstones
    (a member's 5 before its 8, the group's 3 before its members, target and 6 are gone) raise
    IllegalGroupState before changing anything, as Kafka's IllegalStateException."""
    gid = record.group_id
    group = groups.get(gid)
    if group is None:
        if isinstance(record, CgPartitionMetadataTombstone) or record.value is None:
            return
        group = groups[gid] = ConsumerGroup(gid)
    if isinstance(record, CgEpoch):
        _replay_epoch(groups, group, record)
    elif isinstance(record, CgPartitionMetadataTombstone):
        group.has_legacy_partition_metadata = False
    elif isinstance(record, CgMember):
        _replay_member(group, record)
    elif isinstance(record, CgTargetMeta):
        if record.value is not None:
            group.set_target_meta(record.value.assignment_epoch, record.value.timestamp_ms)
        elif group.target:
            raise IllegalGroupState(
                f"Received a tombstone record to delete target assignment of {gid} but the "
                f"assignment still has {len(group.target)} members."
            )
        else:
            group.set_target_meta(-1, 0)
    elif isinstance(record, CgTarget):
        if record.value is not None:
            group.update_target(
                record.member_id, {tp.topic_id: frozenset(tp.partitions) for tp in record.value}
            )
        else:
            group.remove_target(record.member_id)
    elif isinstance(record, CgCurrent):
        _replay_current(group, record)
    elif isinstance(record, CgRegex):
        group.update_resolved_regex(record.regex, record.value)


def _replay_epoch(groups: dict[str, ConsumerGroup], group: ConsumerGroup, record: CgEpoch) -> None:
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
            f"Received a tombstone record to delete group {gid} but did not receive "
            "ConsumerGroupTargetAssignmentMetadataValue tombstone."
        )
    del groups[gid]


def _replay_member(group: ConsumerGroup, record: CgMember) -> None:
    old = group.members.get(record.member_id)
    if record.value is not None:
        group.update_member((old or new_member(record.member_id)).with_metadata(record.value))
        return
    if old is None:
        return
    if old.member_epoch != -1:
        raise IllegalGroupState(
            f"Received a tombstone record to delete member {record.member_id} but did not receive "
            "ConsumerGroupCurrentMemberAssignmentValue tombstone."
        )
    if record.member_id in group.target:
        raise IllegalGroupState(
            f"Received a tombstone record to delete member {record.member_id} but did not receive "
            "ConsumerGroupTargetAssignmentMetadataValue tombstone."
        )
    group.remove_member(record.member_id)


def _replay_current(group: ConsumerGroup, record: CgCurrent) -> None:
    old = group.members.get(record.member_id)
    if record.value is not None:
        group.update_member((old or new_member(record.member_id)).with_current(record.value))
        return
    if old is None:
        return
    group.update_member(
        replace(old, member_epoch=-1, previous_member_epoch=-1, assigned={}, pending_revocation={})
    )
