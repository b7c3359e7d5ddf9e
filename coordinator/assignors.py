"""The server-side assignors of KIP-848 consumer groups, Kafka 4.4's algorithms
(org.apache.kafka.coordinator.group.assignor): `uniform` (homogeneous and heterogeneous
subscriptions) and `range`. The same input gives the same assignment as Kafka's classes
(tests/unit/test_assignors.py checks it against them through a JVM oracle).

Where Kafka's answer depends on the iteration order of its hash maps and sets, that order is
rebuilt here (coordinator/java_order.py) from how Kafka fills them:
- the member ids: a `HashMap<String, ...>` filled in the order of `GroupSpec.members`;
- a member's subscribed topic ids: `TopicIds` over the member's `HashSet<String>` of topic names
  (filled in the client's order; with `topic_name` given, the names' Java order is used, ties
  broken by name);
- a member's target: `Assignment.fromRecord`, a `HashMap` filled in the mapping's order whose
  partition sets are `new HashSet<>(list)` of the record's list (a sequence's order, a set
  ascending).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import NamedTuple, Protocol
from uuid import UUID

from minibroker.coordinator.java_order import (
    hash_int,
    hash_string,
    hash_uuid,
    hashset_capacity,
    java_hash_order,
    uuid_compare_key,
)

__all__ = ["ASSIGNORS", "Assignor", "GroupSpec", "MemberSpec", "PartitionAssignorError", "range_", "uniform"]


class PartitionAssignorError(Exception):
    """Kafka's PartitionAssignorException (a subscribed topic missing, partitions left over)."""


class MemberSpec(NamedTuple):
    member_id: str
    instance_id: str | None
    rack_id: str | None
    topic_ids: frozenset[UUID]  # what the member subscribes to (names and resolved regexes)
    target: Mapping[UUID, frozenset[int]]  # its current target assignment


class GroupSpec(NamedTuple):
    #: in the order of the group's member map (Kafka copies it into a HashMap: the assignors
    #: apply Java's iteration order themselves)
    members: tuple[MemberSpec, ...]
    subscription_type: str  # "HOMOGENEOUS" | "HETEROGENEOUS"


Assignment = dict[str, dict[UUID, frozenset[int]]]


class Assignor(Protocol):
    """(group spec, topic id -> number of partitions, -1 when missing) -> member id -> topic id ->
    partitions. `topic_name` (topic id -> name) makes the order of the subscribed topics Kafka's."""

    def __call__(
        self,
        spec: GroupSpec,
        num_partitions: Callable[[UUID], int],
        *,
        topic_name: Callable[[UUID], str] | None = None,
    ) -> Assignment: ...


# -- Java orders of the inputs ------------------------------------------------------------------


def _member_ids(spec: GroupSpec) -> list[str]:
    """`groupSpec.memberIds()`: the keys of a default HashMap filled in the group's member order."""
    return java_hash_order((m.member_id for m in spec.members), hash_string)


def _subscribed_ids(member: MemberSpec, topic_name: Callable[[UUID], str] | None) -> list[UUID]:
    """The iteration order of the member's `TopicIds` (its topic-name HashSet, mapped to ids)."""
    ids: Iterable[UUID] = member.topic_ids
    if topic_name is None:
        return sorted(ids, key=uuid_compare_key)
    if not isinstance(ids, (list, tuple)):
        ids = sorted(ids, key=topic_name)
    by_name = {topic_name(t): t for t in ids}
    names = java_hash_order(by_name, hash_string, hashset_capacity(len(by_name)))
    return [by_name[name] for name in names]


def _target_order(target: Mapping[UUID, Collection[int]]) -> list[tuple[UUID, list[int]]]:
    """The iteration order of `Assignment.fromRecord(record of target)`."""
    out = []
    for topic_id in java_hash_order(target, hash_uuid):
        parts = target[topic_id]
        listed = list(parts) if isinstance(parts, (list, tuple)) else sorted(parts)
        out.append((topic_id, java_hash_order(listed, hash_int, hashset_capacity(len(listed)))))
    return out


def _java_string_key(value: str) -> bytes:
    """A sort key giving `String.compareTo` (UTF-16 code units)."""
    return value.encode("utf-16-be", "surrogatepass")


def _empty(spec: GroupSpec) -> Assignment:
    return {m.member_id: {} for m in spec.members}


def _freeze(assignment: Mapping[str, Mapping[UUID, Collection[int]]]) -> Assignment:
    return {m: {t: frozenset(p) for t, p in topics.items() if p} for m, topics in assignment.items()}


# -- range ------------------------------------------------------------------------------------


class _RangeTopic:
    def __init__(self, topic_id: UUID, num_partitions: int, num_members: int) -> None:
        self.topic_id = topic_id
        self.num_partitions = num_partitions
        self.num_members = num_members
        self.min_quota = -1
        self.extra = -1
        self.next_range = 0

    def maybe_compute_quota(self) -> None:
        if self.min_quota == -1:
            self.min_quota = self.num_partitions // self.num_members
            self.extra = self.num_partitions % self.num_members

    def take(self, assignment: dict[UUID, frozenset[int]]) -> None:
        start, quota = self.next_range, self.min_quota
        if self.extra > 0:
            quota += 1
            self.extra -= 1
        end = min(start + quota, self.num_partitions)
        self.next_range = end
        if start < end:
            assignment[self.topic_id] = frozenset(range(start, end))


def range_(
    spec: GroupSpec, num_partitions: Callable[[UUID], int], *, topic_name: Callable[[UUID], str] | None = None
) -> Assignment:
    """Kafka's RangeAssignor: co-partitioned ranges, members sorted by instance id then member id
    (no hash order matters: `topic_name` is taken only for the same call shape as `uniform`)."""
    if not spec.members:
        return {}
    by_id = {m.member_id: m for m in spec.members}

    def sort_key(member_id: str) -> tuple[int, bytes]:
        instance_id = by_id[member_id].instance_id
        if instance_id is not None:
            return 0, _java_string_key(instance_id)
        return 1, _java_string_key(member_id)

    member_ids = sorted(_member_ids(spec), key=sort_key)
    out: Assignment = {}
    if spec.subscription_type == "HOMOGENEOUS":
        topics = []
        for topic_id in by_id[member_ids[0]].topic_ids:
            n = num_partitions(topic_id)
            if n == -1:
                raise PartitionAssignorError("Member is subscribed to a non-existent topic")
            topics.append(_RangeTopic(topic_id, n, len(member_ids)))
        for member_id in member_ids:
            assignment: dict[UUID, frozenset[int]] = {}
            for topic in topics:
                topic.maybe_compute_quota()
                topic.take(assignment)
            out[member_id] = assignment
        return out
    by_topic: dict[UUID, _RangeTopic] = {}
    for member_id in member_ids:
        for topic_id in by_id[member_id].topic_ids:
            if topic_id not in by_topic:
                n = num_partitions(topic_id)
                if n == -1:
                    raise PartitionAssignorError("Member is subscribed to a non-existent topic")
                by_topic[topic_id] = _RangeTopic(topic_id, n, 0)
            by_topic[topic_id].num_members += 1
    for member_id in member_ids:
        assignment = {}
        for topic_id in by_id[member_id].topic_ids:  # each topic keeps its own ranges: any order
            topic = by_topic[topic_id]
            topic.maybe_compute_quota()
            topic.take(assignment)
        out[member_id] = assignment
    return out


# -- uniform ----------------------------------------------------------------------------------


def uniform(
    spec: GroupSpec, num_partitions: Callable[[UUID], int], *, topic_name: Callable[[UUID], str] | None = None
) -> Assignment:
    """Kafka's UniformAssignor: sticky and balanced. `topic_name` (topic id -> name) lets the
    homogeneous case follow Kafka's order of the subscribed topics exactly (see the module doc)."""
    if not spec.members:
        return {}
    if spec.subscription_type == "HOMOGENEOUS":
        return _uniform_homogeneous(spec, num_partitions, topic_name)
    return _UniformHeterogeneous(spec, num_partitions).build()


def _missing_topic(topic_id: UUID) -> PartitionAssignorError:
    return PartitionAssignorError(
        f"Members are subscribed to topic {_kafka_uuid(topic_id)} which doesn't exist in the topic metadata."
    )


def _uniform_homogeneous(
    spec: GroupSpec, num_partitions: Callable[[UUID], int], topic_name: Callable[[UUID], str] | None
) -> Assignment:
    """UniformHomogeneousAssignmentBuilder."""
    by_id = {m.member_id: m for m in spec.members}
    member_ids = _member_ids(spec)
    first = _subscribed_ids(by_id[member_ids[0]], topic_name)
    subscribed = java_hash_order(first, hash_uuid, hashset_capacity(len(first)))
    if not subscribed:
        return _empty(spec)
    assigned = {(t, p) for m in spec.members for t, parts in m.target.items() for p in parts}
    unassigned: list[tuple[UUID, int]] = []
    total = 0
    for topic_id in subscribed:
        n = num_partitions(topic_id)
        if n == -1:
            raise _missing_topic(topic_id)
        unassigned.extend((topic_id, p) for p in range(n) if (topic_id, p) not in assigned)
        total += n
    targets, unfilled = _homogeneous_revoke(
        [by_id[m] for m in member_ids], set(subscribed), total, unassigned
    )
    # assignRemainingPartitions
    taken = 0
    for member_id, quota in unfilled:
        for topic_id, partition in unassigned[taken : taken + quota]:
            targets[member_id].setdefault(topic_id, set()).add(partition)
        taken = min(taken + quota, len(unassigned))
    if taken < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return _freeze(targets)


def _homogeneous_revoke(
    members: list[MemberSpec], subscribed: set[UUID], total: int, unassigned: list[tuple[UUID, int]]
) -> tuple[dict[str, dict[UUID, set[int]]], list[tuple[str, int]]]:
    """maybeRevokePartitions: each member keeps its old target up to its quota (the first members
    in order with room get the extra partitions); the rest goes to the end of `unassigned`.
    Returns the kept targets and the members with room left (in order, with their room)."""
    count = len(members)
    min_quota, remaining_extra = divmod(total, count)
    targets: dict[str, dict[UUID, set[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for index, member in enumerate(members):
        kept = {t: set(p) for t, p in member.target.items() if t in subscribed}
        quota = min_quota
        has_extra = remaining_extra > 0
        if has_extra:
            quota += 1
        for topic_id, partitions in _target_order(member.target):
            if topic_id not in subscribed:
                continue
            if len(partitions) <= quota:
                quota -= len(partitions)
                continue
            for partition in partitions:
                if quota > 0:
                    quota -= 1
                else:
                    kept[topic_id].discard(partition)
                    unassigned.append((topic_id, partition))
        if quota > 0 and has_extra and count - index > remaining_extra:
            quota -= 1
            has_extra = False
        if quota > 0:
            unfilled.append((member.member_id, quota))
        if has_extra:
            remaining_extra -= 1
        targets[member.member_id] = kept
    return targets, unfilled


class _UniformHeterogeneous:
    """UniformHeterogeneousAssignmentBuilder, method by method."""

    MAX_ITERATION_COUNT = 16

    def __init__(self, spec: GroupSpec, num_partitions: Callable[[UUID], int]) -> None:
        self.spec = spec
        self.num_partitions = num_partitions
        self.by_id = {m.member_id: m for m in spec.members}
        self.member_ids = _member_ids(spec)
        self.member_indices = {m: i for i, m in enumerate(self.member_ids)}
        self.subscribed: set[UUID] = set()
        self.topic_subscribers: dict[UUID, list[int]] = {}
        self.target: dict[str, dict[UUID, set[int]]] = {}
        self.sizes = [0] * len(self.member_ids)
        for index, member_id in enumerate(self.member_ids):
            for topic_id in sorted(self.by_id[member_id].topic_ids, key=uuid_compare_key):
                if num_partitions(topic_id) == -1:
                    raise _missing_topic(topic_id)
                self.subscribed.add(topic_id)
                self.topic_subscribers.setdefault(topic_id, []).append(index)
        self.owners = {t: [-1] * num_partitions(t) for t in self.subscribed}

    def topic_key(self, topic_id: UUID) -> tuple[float, int, tuple[int, int]]:
        # partitions per subscriber descending, then subscriber count, then Uuid.compareTo
        subscribers = len(self.topic_subscribers[topic_id])
        return -(self.num_partitions(topic_id) / subscribers), subscribers, uuid_compare_key(topic_id)

    def member_key(self, index: int) -> tuple[int, int]:
        return self.sizes[index], index

    def build(self) -> Assignment:
        if not self.subscribed:
            return _empty(self.spec)
        self.maybe_revoke()
        self.assign_remaining(self.compute_unassigned())
        self.balance()
        return _freeze(self.target)

    def maybe_revoke(self) -> None:
        for member_id in self.member_ids:
            index = self.member_indices[member_id]
            member = self.by_id[member_id]
            new = {}
            for topic_id, partitions in member.target.items():
                if topic_id in member.topic_ids:
                    new[topic_id] = set(partitions)
                    self.sizes[index] += len(partitions)
                    for partition in partitions:
                        self.owners[topic_id][partition] = index
            self.target[member_id] = new

    def compute_unassigned(self) -> dict[UUID, list[int]]:
        unassigned = {}
        for topic_id in self.subscribed:
            free = [p for p, owner in enumerate(self.owners[topic_id]) if owner == -1]
            if free:
                unassigned[topic_id] = free
        return unassigned

    def assign_remaining(self, unassigned: dict[UUID, list[int]]) -> None:
        balancer = _MemberBalancer(self)
        for topic_id in sorted(unassigned, key=self.topic_key):
            balancer.initialize(self.topic_subscribers[topic_id])
            for partition in unassigned[topic_id]:
                self.assign_partition(topic_id, partition, balancer.next_least_loaded())

    def balance(self) -> None:
        topics = [t for t in self.subscribed if len(self.topic_subscribers[t]) >= 2]
        if not topics:
            return
        ordered = sorted(topics, key=self.topic_key)
        last_rebalanced = -1
        balancer = _MemberBalancer(self)
        for _ in range(self.MAX_ITERATION_COUNT):
            for topic_index, topic_id in enumerate(ordered):
                if topic_index == last_rebalanced:
                    return
                moved = self.balance_topic(topic_id, balancer)
                if moved > 0 or last_rebalanced == -1:
                    last_rebalanced = topic_index

    def balance_topic(self, topic_id: UUID, balancer: _MemberBalancer) -> int:
        moved = 0
        owners = self.owners[topic_id]
        if balancer.initialize(self.topic_subscribers[topic_id]) <= 1:
            return moved
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, partition in enumerate(partitions):
            start.setdefault(owners[partition], i)
            end[owners[partition]] = i + 1
        while not balancer.is_balanced():
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    return moved
                if most in end and end[most] - start[most] > 0:
                    partition = partitions[end[most] - 1]
                    end[most] -= 1
                    least = balancer.next_least_loaded()
                    if balancer.is_balanced():
                        return moved
                    self.assign_partition(topic_id, partition, least)
                    moved += 1
                    break
                balancer.exclude_most_loaded()
        return moved

    def assign_partition(self, topic_id: UUID, partition: int, index: int) -> None:
        old = self.owners[topic_id][partition]
        if old != -1:
            parts = self.target[self.member_ids[old]].get(topic_id)
            if parts is not None:
                parts.discard(partition)
                if not parts:
                    del self.target[self.member_ids[old]][topic_id]
            self.owners[topic_id][partition] = -1
            self.sizes[old] -= 1
        self.target[self.member_ids[index]].setdefault(topic_id, set()).add(partition)
        self.owners[topic_id][partition] = index
        self.sizes[index] += 1


class _MemberBalancer:
    """UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer: round-robin over the members
    at the lowest (highest) load, the range widening as loads change."""

    def __init__(self, builder: _UniformHeterogeneous) -> None:
        self.builder = builder
        self.sizes = builder.sizes
        self.members: list[int] = []
        self.least_end = 0
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> int:
        if not members:
            raise ValueError("Cannot balance an empty subscriber list.")
        self.members = sorted(members, key=self.builder.member_key)
        sizes, ms = self.sizes, self.members
        self.least_end = 0
        self.least_count = sizes[ms[0]] - 1
        self.next_least = 0
        self.most_start = self.most_end = len(ms)
        self.most_count = sizes[ms[-1]] + 1
        self.next_most = len(ms) - 1
        return sizes[ms[-1]] - sizes[ms[0]]

    def next_least_loaded(self) -> int:
        sizes, ms = self.sizes, self.members
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(ms) and sizes[ms[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        index = ms[self.next_least]
        self.next_least += 1
        return index

    def next_most_loaded(self) -> int:
        sizes, ms = self.sizes, self.members
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[ms[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[ms[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        index = ms[self.next_most]
        self.next_most -= 1
        return index

    def exclude_most_loaded(self) -> None:
        ms = self.members
        index = ms[self.next_most + 1]
        ms[self.next_most + 1] = ms[self.most_end - 1]
        ms[self.most_end - 1] = index
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


def _kafka_uuid(topic_id: UUID) -> str:
    """Kafka's `Uuid.toString()`: url-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


ASSIGNORS: Mapping[str, Assignor] = {"uniform": uniform, "range": range_}
