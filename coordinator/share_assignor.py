"""Kafka 4.4's SimpleAssignor for share groups (`assignor.SimpleAssignor`, its homogeneous and
heterogeneous builders): every assignable partition of the subscribed topics goes to
`desiredSharing = ceil(members / partitions)` members (several members share a partition when
there are more members than partitions), each member getting its `desiredAssignmentCount`
(the partitions x sharing spread as evenly as ceil allows, in member order), keeping what it
had where it can (sticky): first the partitions of topics no longer subscribed go, then what
overfilled members and over-shared partitions hold too much of, then the partitions still
short of sharing are filled round-robin from the members still short of their count.

Only *assignable* partitions are given out: those whose share state is initialized
(GroupSpec.isPartitionAssignable, the group's record-15 initialized topics).

Java's iteration orders are reproduced where the builders depend on them (java_order.py): the
member order of the group spec (a HashMap of member ids), member indexes and partition numbers
(Integer keys), topic ids (Uuid hash), the homogeneous builder's TopicIdPartition keys (a Java
record: 31 * topic id hash + partition), table sizes as AssignorHelpers.newHashMap sizes them,
and computeIfAbsent's insertion at the head of a bucket (`_ComputedMap`). Compared with Kafka
4.4's SimpleAssignor on 1,500 random groups (homogeneous and heterogeneous, with and without
previous assignments), the answers were equal on every group where Kafka's does not throw; a
previous assignment holding partitions that are no longer assignable can make Kafka's builders
throw a NullPointerException (the heartbeat then fails), where this one assigns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from typing import Generic, TypeVar
from uuid import UUID

from minibroker.coordinator.assignors import (
    Assignment,
    GroupSpec,
    PartitionAssignorError,
    _member_ids,
    _subscribed_ids,
    _target_order,
)
from minibroker.coordinator.java_order import hash_int, hash_uuid, java_hash_order, table_size_for

__all__ = ["NAME", "simple_assign"]

K = TypeVar("K")
V = TypeVar("V")

NAME = "simple"

#: (topic id, partition)
TP = tuple[UUID, int]
#: member index -> topic id -> partitions (Kafka's Map<Integer, Map<Uuid, Set<Integer>>>)
Groupwise = dict[int, dict[UUID, set[int]]]


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _hash_tp(tp: TP) -> int:
    """A Java record's hashCode over (Uuid topicId, int partitionId): 31 * h(topicId) + partition."""
    return _int32(31 * hash_uuid(tp[0]) + tp[1])


def _map_capacity(n: int) -> int:
    """The table of AssignorHelpers.newHashMap/newHashSet(n): `new HashMap<>((int) ((n + 1) /
    0.75f + 1))`."""
    return table_size_for(int((n + 1) / 0.75 + 1))


class _ComputedMap(Generic[K, V]):
    """A `java.util.HashMap` filled with `computeIfAbsent`, in Java's iteration order. Unlike
    `put`, which appends to its bucket, computeIfAbsent puts a new key at the HEAD of its
    bucket (after a resize check made before the insertion), so keys sharing a bucket iterate
    newest first. A resize splits every bucket in two keeping the entries' order."""

    def __init__(self, initial_capacity: int, hash_code: Callable[[K], int]) -> None:
        self.hash_code = hash_code
        self.table = table_size_for(initial_capacity)  # HashMap(int): allocated at first use
        self.buckets: list[list[K]] = [[] for _ in range(self.table)]
        self.values: dict[K, V] = {}

    def _index(self, key: K, table: int) -> int:
        h = self.hash_code(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (table - 1)

    def compute_if_absent(self, key: K, factory: Callable[[], V]) -> V:
        value = self.values.get(key)
        if value is not None:
            return value
        if len(self.values) > int(self.table * 0.75):
            self._resize()
        self.buckets[self._index(key, self.table)].insert(0, key)
        value = self.values[key] = factory()
        return value

    def _resize(self) -> None:
        old, self.table = self.table, self.table * 2
        buckets: list[list[K]] = [[] for _ in range(self.table)]
        for j in range(old):
            for key in self.buckets[j]:
                buckets[self._index(key, self.table)].append(key)
        self.buckets = buckets

    def __getitem__(self, key: K) -> V:
        return self.values[key]

    def order(self) -> list[K]:
        return [key for bucket in self.buckets for key in bucket]


def _copy(assignment: Mapping[UUID, Collection[int]]) -> dict[UUID, set[int]]:
    """AssignorHelpers.deepCopyAssignment."""
    return {t: set(ps) for t, ps in assignment.items()}


def simple_assign(
    spec: GroupSpec,
    num_partitions: Callable[[UUID], int],
    assignable: Callable[[UUID, int], bool],
    *,
    topic_name: Callable[[UUID], str] | None = None,
) -> Assignment:
    """member id -> topic id -> partitions for every member (SimpleAssignor.assign).
    `num_partitions` answers -1 for a topic that does not exist (PartitionAssignorError, as
    Kafka's builders throw); `assignable(topic, partition)` is GroupSpec.isPartitionAssignable."""
    if not spec.members:
        return {}
    builder = _Homogeneous if spec.subscription_type == "HOMOGENEOUS" else _Heterogeneous
    return builder(spec, num_partitions, assignable, topic_name).build()


class _Base:
    def __init__(self, spec: GroupSpec, topic_name: Callable[[UUID], str] | None) -> None:
        by_id = {m.member_id: m for m in spec.members}
        self.member_ids = _member_ids(spec)
        self.n = len(self.member_ids)
        self.members = [by_id[m] for m in self.member_ids]
        self.topic_name = topic_name
        # member index -> its current target (topic order and partition order as Java iterates)
        self.old: dict[int, list[tuple[UUID, list[int]]]] = {
            i: _target_order(m.target) for i, m in enumerate(self.members)
        }
        self.new: Groupwise = {}

    def _old_map(self, i: int) -> dict[UUID, set[int]]:
        return {t: set(ps) for t, ps in self.old[i]}

    def _new_of(self, i: int) -> dict[UUID, set[int]]:
        """newGroupAssignment.get(i), created as a copy of the old one when absent."""
        current = self.new.get(i)
        if current is None:
            current = self.new[i] = self._old_map(i)
        return current

    def _result(self) -> Assignment:
        out: Assignment = {}
        for i, member_id in enumerate(self.member_ids):
            chosen = self.new.get(i)
            source = chosen if chosen is not None else self._old_map(i)
            out[member_id] = {t: frozenset(ps) for t, ps in source.items()}
        return out


def _targets(
    topic_id: UUID, num_partitions: Callable[[UUID], int], assignable: Callable[[UUID, int], bool]
) -> list[TP]:
    count = num_partitions(topic_id)
    if count == -1:
        raise PartitionAssignorError(
            f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata."
        )
    return [(topic_id, p) for p in range(count) if assignable(topic_id, p)]


def _desired_counts(sharing: int, partitions: int, members: int) -> list[int]:
    precise = sharing * partitions / members
    return [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(members)]


class _Iterator:
    """A Java iterator over a HashSet<Integer> of member indexes (ascending) that supports
    `remove()` of the element last returned."""

    def __init__(self, members: set[int]) -> None:
        self.members = members
        self.order = sorted(members)
        self.pos = 0

    def has_next(self) -> bool:
        return self.pos < len(self.order)

    def next(self) -> int:
        value = self.order[self.pos]
        self.pos += 1
        return value

    def remove(self) -> None:
        self.pos -= 1
        self.members.discard(self.order.pop(self.pos))


class _Homogeneous(_Base):
    """SimpleHomogeneousAssignmentBuilder."""

    def __init__(
        self,
        spec: GroupSpec,
        num_partitions: Callable[[UUID], int],
        assignable: Callable[[UUID, int], bool],
        topic_name: Callable[[UUID], str] | None,
    ) -> None:
        super().__init__(spec, topic_name)
        self.subscribed = _subscribed_ids(self.members[0], topic_name)
        self.subscribed_set = set(self.subscribed)
        self.targets: list[TP] = []
        for topic_id in self.subscribed:
            self.targets.extend(_targets(topic_id, num_partitions, assignable))
        t = len(self.targets)
        self.sharing = 0 if t == 0 else (self.n + t - 1) // t
        self.desired = _desired_counts(self.sharing, t, self.n)
        self.by_partition: _ComputedMap[TP, set[int]] = _ComputedMap(_map_capacity(t), _hash_tp)
        self.by_member: dict[int, dict[TP, None]] = {}
        self.unfilled: set[int] = set()
        self.overfilled: set[int] = set()

    def build(self) -> Assignment:
        if not self.subscribed:
            return {}
        self._revoke_unassignable()
        self._revoke_overfilled()
        self._revoke_overshared()
        for tp in self.targets:
            self.by_partition.compute_if_absent(tp, set)
        self._assign_remaining()
        return self._result()

    def _revoke_unassignable(self) -> None:
        for i in range(self.n):
            new_assignment: dict[UUID, set[int]] | None = None
            assigned = 0
            desired = self.desired[i]
            for topic_id, partitions in self.old[i]:
                if topic_id in self.subscribed_set:
                    for p in partitions:
                        tp = (topic_id, p)
                        assigned += 1
                        self.by_partition.compute_if_absent(tp, set).add(i)
                        self.by_member.setdefault(i, {})[tp] = None
                        if assigned >= desired and new_assignment is None:
                            new_assignment = self._old_map(i)
                else:
                    if new_assignment is None:
                        new_assignment = self._old_map(i)
                    new_assignment.pop(topic_id, None)
            if new_assignment is not None:
                self.new[i] = new_assignment
            if assigned < desired:
                self.unfilled.add(i)
            elif assigned > desired:
                self.overfilled.add(i)

    def _revoke_overfilled(self) -> None:
        for i in sorted(self.overfilled):
            desired = self.desired[i]
            mine = self.by_member[i]
            if len(mine) <= desired:
                continue
            for tp in java_hash_order(list(mine), _hash_tp):
                self._new_of(i)[tp[0]].discard(tp[1])
                self.by_partition[tp].discard(i)
                del mine[tp]
                if len(mine) == desired:
                    break

    def _revoke_overshared(self) -> None:
        for tp in self.by_partition.order():
            holders = self.by_partition[tp]
            count = len(holders)
            if count <= self.sharing:
                continue
            for i in sorted(holders):
                partitions = self._new_of(i).get(tp[0])
                if partitions is not None and tp[1] in partitions:
                    partitions.discard(tp[1])
                    count -= 1
                    holders.discard(i)
                    self.by_member[i].pop(tp, None)
                    self.unfilled.add(i)
                if count <= self.sharing:
                    break

    def _assign_remaining(self) -> None:
        if not self.unfilled:
            return
        it = _Iterator(self.unfilled)
        assigned_this_round = False
        for tp in self.by_partition.order():
            holders = self.by_partition[tp]
            if len(holders) < self.sharing:
                to_make = self.sharing - len(holders)
                while to_make > 0:
                    if not it.has_next():
                        if not assigned_this_round or not self.unfilled:
                            break
                        it = _Iterator(self.unfilled)
                        assigned_this_round = False
                    i = it.next()
                    if i in holders:
                        continue
                    self._new_of(i).setdefault(tp[0], set()).add(tp[1])
                    mine = self.by_member.setdefault(i, {})
                    mine[tp] = None
                    to_make -= 1
                    assigned_this_round = True
                    if len(mine) >= self.desired[i]:
                        it.remove()
            if not self.unfilled:
                break


class _Heterogeneous(_Base):
    """SimpleHeterogeneousAssignmentBuilder: the homogeneous steps per topic, over the members
    subscribed to it."""

    def __init__(
        self,
        spec: GroupSpec,
        num_partitions: Callable[[UUID], int],
        assignable: Callable[[UUID, int], bool],
        topic_name: Callable[[UUID], str] | None,
    ) -> None:
        super().__init__(spec, topic_name)
        inserted: list[UUID] = []
        subscriptions = [_subscribed_ids(m, topic_name) for m in self.members]
        for ids in subscriptions:
            inserted.extend(ids)
        self.subscribed = java_hash_order(inserted, hash_uuid)
        self.targets = {t: _targets(t, num_partitions, assignable) for t in self.subscribed}
        self.subscribers: dict[UUID, list[int]] = {}
        for i, ids in enumerate(subscriptions):
            for t in ids:
                self.subscribers.setdefault(t, []).append(i)

    def build(self) -> Assignment:
        if not self.subscribed:
            return {}
        for topic_id in self.subscribed:
            _TopicBuilder(self, topic_id).build()
        return self._result()


class _TopicBuilder:
    """SimpleHeterogeneousAssignmentBuilder.TopicAssignmentPartialBuilder."""

    def __init__(self, outer: _Heterogeneous, topic_id: UUID) -> None:
        self.outer = outer
        self.topic_id = topic_id
        self.targets = [p for _, p in outer.targets[topic_id]]
        self.subscribers = outer.subscribers[topic_id]
        capacity = _map_capacity(len(self.targets))
        self.by_partition: _ComputedMap[int, set[int]] = _ComputedMap(capacity, hash_int)
        self.by_member: dict[int, set[int]] = {}
        t, s = len(self.targets), len(self.subscribers)
        self.sharing = 0 if t == 0 else (s + t - 1) // t
        self.desired = [0] * outer.n
        for index, count in enumerate(_desired_counts(self.sharing, t, s)):
            self.desired[self.subscribers[index]] = count

    def build(self) -> None:
        self._revoke_unassignable()
        self._revoke_overfilled()
        self._revoke_overshared()
        for p in self.targets:
            self.by_partition.compute_if_absent(p, set)
        self._assign_remaining()

    def _revoke_unassignable(self) -> None:
        # the topic is subscribed (by someone): every member's old partitions of it are kept
        # here; a member not subscribed has a desired count of 0 and loses them as overfilled
        for i in range(self.outer.n):
            for topic_id, partitions in self.outer.old[i]:
                if topic_id != self.topic_id:
                    continue
                for p in partitions:
                    self.by_partition.compute_if_absent(p, set).add(i)
                    self.by_member.setdefault(i, set()).add(p)

    def _revoke_overfilled(self) -> None:
        for i in sorted(self.by_member):
            mine = self.by_member[i]
            desired = self.desired[i]
            for p in java_hash_order(list(mine), hash_int):
                if len(mine) <= desired:
                    break
                self.by_partition[p].discard(i)
                mine.discard(p)
                self.outer._new_of(i)[self.topic_id].discard(p)

    def _revoke_overshared(self) -> None:
        for p in self.by_partition.order():
            holders = self.by_partition[p]
            count = len(holders)
            if count <= self.sharing:
                continue
            for i in sorted(holders):
                partitions = self.outer._new_of(i).get(self.topic_id)
                if partitions is not None and p in partitions:
                    partitions.discard(p)
                    count -= 1
                    holders.discard(i)
                    self.by_member[i].discard(p)
                if count <= self.sharing:
                    break

    def _assign_remaining(self) -> None:
        unfilled = {i for i in self.subscribers if len(self.by_member.get(i, ())) < self.desired[i]}
        it = _Iterator(unfilled)
        assigned_this_round = False
        for p in self.by_partition.order():
            holders = self.by_partition[p]
            if len(holders) < self.sharing:
                to_make = self.sharing - len(holders)
                while to_make > 0:
                    if not it.has_next():
                        if not assigned_this_round or not unfilled:
                            break
                        it = _Iterator(unfilled)
                        assigned_this_round = False
                    i = it.next()
                    if i in holders:
                        continue
                    self.outer._new_of(i).setdefault(self.topic_id, set()).add(p)
                    mine = self.by_member.setdefault(i, set())
                    mine.add(p)
                    to_make -= 1
                    assigned_this_round = True
                    if len(mine) >= self.desired[i]:
                        it.remove()
            if not unfilled:
                break
