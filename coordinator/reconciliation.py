"""How a consumer group member moves toward its target assignment: Kafka 4.4's
`CurrentAssignmentBuilder`, a pure function of the member, the group's target and who owns what.

A partition is revoked from its owner before it is given to another member: it is assignable
only once no member's current assignment holds it (`current_partition_epoch` is -1), unless it
is this member's own partition pending revocation.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from uuid import UUID

from minibroker.coordinator.consumer_group import ConsumerGroupMember

__all__ = ["FencedMemberEpoch", "next_member"]


class FencedMemberEpoch(Exception):
    """FENCED_MEMBER_EPOCH with Kafka's message (a member in an unknown state)."""


def next_member(
    member: ConsumerGroupMember,
    *,
    target_epoch: int,
    target: Mapping[UUID, frozenset[int]],
    subscribed_topic_ids: Collection[UUID],
    current_partition_epoch: Callable[[UUID, int], int],
    owned: Mapping[UUID, Collection[int]] | None,
    subscription_changed: bool,
) -> ConsumerGroupMember:
    """The member after one reconciliation step (Kafka's CurrentAssignmentBuilder.build):
    `owned` is the TopicPartitions the member reported in this heartbeat (None: not sent, which
    counts as still owning everything). Returns `member` itself when nothing changes."""
    raise NotImplementedError
