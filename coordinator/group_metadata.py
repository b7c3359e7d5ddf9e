"""The in-memory model of one classic consumer group: members, generation, offsets.

This mirrors Apache Kafka's GroupMetadata/MemberMetadata (core/.../coordinator/group). It holds
state and answers questions about it; every decision that changes state over time lives in
coordinator.group_join.GroupMembership (rebalances, timers) and coordinator.groups.GroupCoordinator
(persistence through the metadata manager). No I/O, no clock, no asyncio.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar, TypeAlias

from minibroker.coordinator.collaborators import TimerHandle
from minibroker.coordinator.group_records import MemberIdentity
from minibroker.coordinator.runtime import Deferred

__all__ = [
    "GroupState",
    "Member",
    "Group",
    "OffsetAndMetadata",
    "JoinResult",
    "SyncResult",
    "parse_subscription_topics",
]


class GroupState(str, Enum):  # noqa: UP042 - StrEnum would change how states print in logs
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Kafka's GroupMetadata.validPreviousStates
_VALID_PREVIOUS = {
    GroupState.DEAD: {
        GroupState.STABLE,
        GroupState.PREPARING_REBALANCE,
        GroupState.COMPLETING_REBALANCE,
        GroupState.EMPTY,
        GroupState.DEAD,
    },
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.PREPARING_REBALANCE: {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY},
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
}


@dataclass(slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int  # -1 = none
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None
    # Position of the record holding this offset in __consumer_offsets: decides which of a
    # transactional and a plain commit of the same partition is newer (as Kafka does).
    record_offset: int = -1


@dataclass(slots=True)
class JoinResult:
    error: int
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    # (member_id, group_instance_id, metadata) - only for the leader
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass(slots=True)
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


#: Where a JoinGroup or SyncGroup waits for its answer (a parked response of the coordinator
#: runtime, completed now or when the rebalance gets there).
JoinAnswer: TypeAlias = Deferred[JoinResult]
SyncAnswer: TypeAlias = Deferred[SyncResult]


@dataclass(slots=True, eq=False)
class Member(MemberIdentity):
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (name, metadata) in the member's preference order
    assignment: bytes = b""
    join_answer: JoinAnswer | None = None
    sync_answer: SyncAnswer | None = None
    is_new: bool = False
    heartbeat_satisfied: bool = False
    heartbeat_timer: TimerHandle | None = None  # scheduler handle

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_answer is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_answer is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        if len(protocols) != len(self.protocols):
            return False
        return all(
            a[0] == b[0] and bytes(a[1]) == bytes(b[1])
            for a, b in zip(self.protocols, protocols, strict=True)
        )

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError("member does not support any of the candidate protocols")

    def has_satisfied_heartbeat(self) -> bool:
        """Kafka's MemberMetadata.hasSatisfiedHeartbeat."""
        if self.is_new:
            return self.heartbeat_satisfied
        if self.awaiting_join or self.awaiting_sync:
            return True
        return self.heartbeat_satisfied


class Group:
    """One group's members and offsets (Kafka's GroupMetadata)."""

    group_type: ClassVar[str] = "classic"  # a KIP-848 coordinator/consumer_group.ConsumerGroup is "consumer"

    def __init__(self, group_id: str, state: GroupState = GroupState.EMPTY, now_ms: int = -1):
        self.group_id = group_id
        self.state = state
        self.state_timestamp = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # group_instance_id -> member_id
        self.pending_members: dict[str, TimerHandle | None] = {}  # member_id -> expiry timer handle
        self.pending_sync_members: set[str] = set()
        self.supported_protocols: dict[str, int] = {}  # protocol name -> #members supporting it
        self.new_member_added = False
        self.subscribed_topics: set[str] | None = None
        # committed offsets and transactional offsets waiting for their marker
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = {}
        # timers (scheduler handles) owned by the coordinator
        self.join_timer: TimerHandle | None = None
        self.initial_join = False  # the join timer is the initial-delay kind (never early)
        self.sync_timer: TimerHandle | None = None

    # --- state -----------------------------------------------------------------------------
    def is_state(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, state: GroupState, now_ms: int = -1) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise AssertionError(
                f"group {self.group_id}: invalid transition {self.state.value} -> {state.value}"
            )
        self.state = state
        self.state_timestamp = now_ms

    def can_rebalance(self) -> bool:
        return self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY)

    # --- members ---------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def has_all_members_joined(self) -> bool:
        return self.size == self.num_awaiting_join and not self.pending_members

    def not_yet_rejoined_members(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        assert self.protocol_type == member.protocol_type
        assert self.supports_protocols(member.protocol_type, member.protocol_names())
        if self.leader_id is None:
            self.leader_id = member.member_id
        if member.group_instance_id is not None:  # a static member
            self.static_members[member.group_instance_id] = member.member_id
        self.members[member.member_id] = member
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + 1
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._uncount_protocols(member)
        instance_id = member.group_instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        self.pending_sync_members.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def update_member(
        self,
        member: Member,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        answer: JoinAnswer | None,
    ) -> None:
        self._uncount_protocols(member)
        member.protocols = list(protocols)
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + 1
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.join_answer = answer

    def _uncount_protocols(self, member: Member) -> None:
        """The member's protocols no longer count towards the group's candidates."""
        for name in member.protocol_names():
            count = self.supported_protocols.get(name, 0) - 1
            if count <= 0:
                self.supported_protocols.pop(name, None)
            else:
                self.supported_protocols[name] = count

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        if group_instance_id is None:
            return None
        return self.static_members.get(group_instance_id)

    def is_static_member_fenced(self, group_instance_id: str | None, member_id: str) -> bool:
        current = self.static_member_id(group_instance_id)
        return current is not None and current != member_id

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        return member

    def maybe_elect_new_joined_leader(self) -> bool:
        """Kafka: if the leader did not rejoin, pick any member that did. True when the
        (possibly new) leader is awaiting join."""
        if self.leader_id is not None:
            leader = self.members.get(self.leader_id)
            if leader is not None and leader.awaiting_join:
                return True
            for member in self.members.values():
                if member.awaiting_join:
                    self.leader_id = member.member_id
                    return True
            return False
        return False

    # --- protocols -------------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        n = self.size
        return {name for name, count in self.supported_protocols.items() if count == n}

    def supports_protocols(self, protocol_type: str, protocol_names: list[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocol_names)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(n, 0) == self.size for n in protocol_names
        )

    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        if not candidates:
            raise AssertionError(f"group {self.group_id}: no protocol supported by all members")
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        # most votes; ties go to the protocol first voted for (deterministic)
        return max(votes, key=lambda name: votes[name])

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self._compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self._compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members = set(self.members)

    def _compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None if self.members else set()
        topics: set[str] = set()
        for member in self.members.values():
            try:
                topics |= parse_subscription_topics(member.metadata(self.protocol_name))
            except (ValueError, KeyError, struct.error, UnicodeDecodeError):
                return None
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return True
        return topic in self.subscribed_topics

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        assert self.protocol_name is not None
        return [
            (m.member_id, m.group_instance_id, m.metadata(self.protocol_name)) for m in self.members.values()
        ]

    def stop(self, error: int) -> None:
        """Cancel the group's timers and answer every waiting JoinGroup/SyncGroup with `error`
        (an unloaded group; a group that becomes a consumer group: Kafka's
        completeAllJoinFutures/completeAllSyncFutures)."""
        for handle in (self.join_timer, self.sync_timer, *self.pending_members.values()):
            if handle is not None:
                handle.cancel()
        self.join_timer = self.sync_timer = None
        for member in self.members.values():
            if member.heartbeat_timer is not None:
                member.heartbeat_timer.cancel()
                member.heartbeat_timer = None
            if member.join_answer is not None:
                join_cb, member.join_answer = member.join_answer, None
                join_cb.complete(JoinResult(error, member.member_id))
            if member.sync_answer is not None:
                sync_cb, member.sync_answer = member.sync_answer, None
                sync_cb.complete(SyncResult(error))

    # --- offsets ---------------------------------------------------------------------------
    def has_pending_offsets(self, tp: tuple[str, int]) -> bool:
        return any(tp in pending for pending in self.pending_txn_offsets.values())

    def has_offsets(self) -> bool:
        return bool(self.offsets) or bool(self.pending_txn_offsets)

    def is_consumer_group(self) -> bool:
        return self.protocol_type == "consumer"


def parse_subscription_topics(data: bytes) -> set[str]:
    """Topics of a ConsumerProtocolSubscription (every version starts with int16 version,
    then an array of int16-length strings)."""
    buf = memoryview(bytes(data))
    if len(buf) < 6:
        raise ValueError("short subscription")
    (count,) = struct.unpack_from(">i", buf, 2)
    if count < 0 or count > 1_000_000:
        raise ValueError("bad topic count")
    pos = 6
    topics = set()
    for _ in range(count):
        (length,) = struct.unpack_from(">h", buf, pos)
        pos += 2
        if length < 0 or pos + length > len(buf):
            raise ValueError("bad topic length")
        topics.add(bytes(buf[pos : pos + length]).decode("utf-8"))
        pos += length
    return topics
