"""The server-side assignors of KIP-848 consumer groups, Kafka 4.4's algorithms
(org.apache.kafka.coordinator.group.assignor): `uniform` (homogeneous and heterogeneous
subscriptions) and `range`. The same input gives the same assignment as Kafka's classes
(tests/unit/test_assignors.py checks it against them through a JVM oracle).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple
from uuid import UUID

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


#: (group spec, topic id -> number of partitions, -1 when missing) -> member id -> topic id -> partitions
Assignor = Callable[[GroupSpec, Callable[[UUID], int]], dict[str, dict[UUID, frozenset[int]]]]


def uniform(spec: GroupSpec, num_partitions: Callable[[UUID], int]) -> dict[str, dict[UUID, frozenset[int]]]:
    raise NotImplementedError


def range_(spec: GroupSpec, num_partitions: Callable[[UUID], int]) -> dict[str, dict[UUID, frozenset[int]]]:
    raise NotImplementedError


ASSIGNORS: Mapping[str, Assignor] = {"uniform": uniform, "range": range_}
