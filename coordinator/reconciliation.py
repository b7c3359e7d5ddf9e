"""How a consumer group member moves toward its target assignment: Kafka 4.4's
`CurrentAssignmentBuilder`, a pure function of the member, the group's target and who owns what.

A partition is revoked from its owner before it is given to another member: it is assignable
only once no member's current assignment holds it (`current_partition_epoch` is -1), unless it
is this member's own partition pending revocation.

By the member's state:
- STABLE: behind the target epoch, the next assignment; at it, a subscription change moves the
  partitions of topics it left to pending revocation.
- UNREVOKED_PARTITIONS: while the member still owns a partition pending revocation it waits
  (or, on a subscription change, revokes more); once it owns none, the next assignment.
- UNRELEASED_PARTITIONS: the next assignment (a partition it waited for may be free now).
- UNKNOWN: a member that reports owning nothing starts over at the target epoch; else fenced.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from uuid import UUID

from minibroker.coordinator.consumer_group import Assignment, ConsumerGroupMember, MemberState

__all__ = ["FencedMemberEpoch", "next_member"]

UNKNOWN_STATE_MESSAGE = (
    "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin."
)


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
    step = _Step(member, target_epoch, target, subscribed_topic_ids, current_partition_epoch, owned)
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            result = step.next_assignment(member.member_epoch)
        elif subscription_changed:
            result = step.revoke_unsubscribed()
        else:
            return member
    elif state is MemberState.UNREVOKED_PARTITIONS:
        if step.owns_any(member.pending_revocation):
            if not subscription_changed:
                return member
            result = step.revoke_unsubscribed()
        else:
            result = step.next_assignment(member.member_epoch)
    elif state is MemberState.UNRELEASED_PARTITIONS:
        result = step.next_assignment(member.member_epoch)
    else:  # UNKNOWN
        if owned is not None and not owned:
            result = step.next_assignment(target_epoch)
        else:
            raise FencedMemberEpoch(UNKNOWN_STATE_MESSAGE)
    return member if result == member else result


class _Step:
    def __init__(
        self,
        member: ConsumerGroupMember,
        target_epoch: int,
        target: Mapping[UUID, frozenset[int]],
        subscribed: Collection[UUID],
        current_partition_epoch: Callable[[UUID, int], int],
        owned: Mapping[UUID, Collection[int]] | None,
    ) -> None:
        self.member = member
        self.target_epoch = target_epoch
        self.target = target
        self.subscribed = subscribed
        self.current_partition_epoch = current_partition_epoch
        self.owned = owned

    def owns_any(self, revoking: Assignment) -> bool:
        """The member still owns some of these partitions (a heartbeat without its owned
        partitions counts as owning them all)."""
        if self.owned is None:
            return True
        return any(p in revoking.get(t, {}) for t, ps in self.owned.items() for p in ps)

    def _moved(
        self, epoch: int, state: MemberState, assigned: Assignment, pending: Assignment
    ) -> ConsumerGroupMember:
        # Kafka's Builder.updateMemberEpoch: the previous epoch becomes the current one
        return replace(
            self.member,
            state=state,
            member_epoch=epoch,
            previous_member_epoch=self.member.member_epoch,
            assigned=assigned,
            pending_revocation=pending,
        )

    def revoke_unsubscribed(self) -> ConsumerGroupMember:
        """Kafka's updateCurrentAssignment: at the same epoch, the assigned partitions of topics
        the member no longer subscribes to go to pending revocation (all of them when it
        subscribes to nothing and has nothing pending)."""
        member = self.member
        assigned = member.assigned
        new_assigned: Assignment
        new_pending: Assignment
        if not self.subscribed and not member.pending_revocation:
            # everything goes (Kafka builds a new member here even when nothing was assigned)
            new_assigned, new_pending = {}, assigned
        else:
            left = [t for t in assigned if t not in self.subscribed]
            if not left:
                return member
            new_assigned = {t: ps for t, ps in assigned.items() if t in self.subscribed}
            pending = {t: dict(ps) for t, ps in member.pending_revocation.items()}
            for t in left:
                pending.setdefault(t, {}).update(assigned[t])
            new_pending = pending
        if new_pending and self.owns_any(new_pending):
            return self._moved(
                member.member_epoch, MemberState.UNREVOKED_PARTITIONS, new_assigned, new_pending
            )
        # not owned any more: dropped at once (the state and pending revocation stay)
        return replace(member, previous_member_epoch=member.member_epoch, assigned=new_assigned)

    def next_assignment(self, epoch: int) -> ConsumerGroupMember:
        """Kafka's computeNextAssignment: keep what is still in the target, revoke the rest;
        assign new partitions only once nothing is left to revoke, and only those no other
        member still owns (else UNRELEASED_PARTITIONS)."""
        member = self.member
        current = member.assigned
        unreleased = False
        kept_all: dict[UUID, dict[int, int]] = {}
        revoke_all: dict[UUID, dict[int, int]] = {}
        to_assign_all: dict[UUID, list[int]] = {}
        for topic_id in dict.fromkeys([*self.target, *current]):
            target = self.target.get(topic_id, frozenset()) if topic_id in self.subscribed else frozenset()
            owned_now = current.get(topic_id, {})
            kept = {p: e for p, e in owned_now.items() if p in target}
            revoke = {p: e for p, e in owned_now.items() if p not in kept}
            own_pending = member.pending_revocation.get(topic_id, {})
            to_assign = []
            for p in sorted(target):
                if p in kept:
                    continue
                if self.current_partition_epoch(topic_id, p) != -1 and p not in own_pending:
                    unreleased = True  # still owned by another member: wait for its release
                    continue
                to_assign.append(p)
            if kept:
                kept_all[topic_id] = kept
            if revoke:
                revoke_all[topic_id] = revoke
            if to_assign:
                to_assign_all[topic_id] = to_assign
        if revoke_all and self.owns_any(revoke_all):
            return self._moved(epoch, MemberState.UNREVOKED_PARTITIONS, kept_all, revoke_all)
        for topic_id, partitions in to_assign_all.items():
            epochs = kept_all.setdefault(topic_id, {})
            for p in partitions:
                epochs[p] = self.target_epoch
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return self._moved(self.target_epoch, state, kept_all, {})
