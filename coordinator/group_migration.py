"""Online migration between the classic and the consumer group protocols, as Kafka 4.4 does it
(`group.consumer.migration.policy`: bidirectional, upgrade, downgrade, disabled):

- upgrade: a ConsumerGroupHeartbeat joining a non-empty classic group converts it into a consumer
  group whose members keep their generation's assignment (`upgrade`, Kafka's
  convertToConsumerGroup and ConsumerGroup.fromClassicGroup);
- classic members inside a consumer group: JoinGroup, SyncGroup, Heartbeat and LeaveGroup from
  clients on the classic protocol, answered from the consumer group's state (`ClassicMembers`,
  Kafka's classicGroupJoinToConsumerGroup and its siblings); a classic member is reconciled
  through the same path as a ConsumerGroupHeartbeat, each JoinGroup being its heartbeat;
- downgrade: when the last consumer-protocol member leaves, a group of classic members becomes a
  classic group again, and rebalances (`maybe_downgrade`, Kafka's convertToClassicGroup).

The embedded consumer protocol (ConsumerProtocolSubscription and ConsumerProtocolAssignment,
versions 0-3, the bytes classic members exchange in JoinGroup/SyncGroup) is read and written here.

Everything is computed from the state and answered once the records are written and replayed
(coordinator/runtime.py): the consumer group's records go through the consumer group's replay,
the classic group's metadata record through the manager's.
"""

from __future__ import annotations

import base64
import struct
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

import structlog
from minibroker.coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState, new_member
from minibroker.coordinator.consumer_group_records import (
    CgCurrent,
    CgEpoch,
    CgMember,
    CgTarget,
    CgTargetMeta,
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupRecord,
    EpochValue,
    TargetMetaValue,
    TopicPartitions,
)
from minibroker.coordinator.group_metadata import (
    Group,
    GroupState,
    JoinAnswer,
    JoinResult,
    Member,
    SyncAnswer,
    SyncResult,
)
from minibroker.coordinator.group_metadata_manager import ClassicGroupTombstone, GroupRecord
from minibroker.coordinator.metadata_hash import group_hash, topic_hash
from minibroker.coordinator.reconciliation import FencedMemberEpoch
from minibroker.coordinator.runtime import Operation, Write
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.common.clock import Clock
    from minibroker.coordinator.collaborators import Scheduler, TimerHandle, TopicCatalog
    from minibroker.coordinator.group_metadata_manager import GroupMetadataManager
    from minibroker.coordinator.group_requests import JoinRequest, SyncRequest
    from minibroker.coordinator.group_settings import GroupSettings

__all__ = [
    "ClassicMembers",
    "ConsumerSide",
    "MalformedProtocol",
    "MigrationRefused",
    "Subscription",
    "encode_assignment",
    "maybe_downgrade",
    "parse_assignment",
    "parse_subscription",
    "upgrade",
]

log = structlog.get_logger("minibroker.coordinator.groups")

E = ErrorCode
PROTOCOL_TYPE = "consumer"
#: The highest ConsumerProtocolSubscription/Assignment version (a higher one is read as this one,
#: as Kafka's ConsumerProtocol does).
CONSUMER_PROTOCOL_VERSION = 3

#: Where a topic's partitions are, by name (a classic member's view) or by id (a consumer group's).
NamedPartitions = list[tuple[str, list[int]]]


class MigrationRefused(Exception):
    """GROUP_ID_NOT_FOUND with Kafka's message ("Cannot upgrade classic group G to consumer
    group because ...")."""


class MalformedProtocol(ValueError):
    """Bytes that are not a ConsumerProtocolSubscription/Assignment."""


class ConsumerSide(Protocol):
    """What this module uses of the consumer group coordinator (coordinator/consumer_groups.py
    `ConsumerGroupCoordinator`)."""

    settings: GroupSettings
    manager: GroupMetadataManager
    groups: dict[str, ConsumerGroup]
    topics: TopicCatalog
    clock: Clock
    scheduler: Scheduler

    def update_member(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        *,
        owned: Mapping[uuid.UUID, Collection[int]] | None,
        records: list[GroupRecord],
        classic: bool = False,
        downgrade: bool = False,
    ) -> ConsumerGroupMember:
        """A heartbeat's work once the member's new fields are known: its metadata record if it
        changed, regexes, the group epoch bump, the target assignment and the member's
        reconciliation; appends the records and returns the reconciled member. `downgrade`: no
        new target, and no reconciliation when the target is stale."""
        ...

    def fence_members(
        self, group: ConsumerGroup, members: Collection[ConsumerGroupMember]
    ) -> Sequence[GroupRecord]: ...

    def schedule_session_timeout(
        self, group_id: str, member_id: str, timeout_ms: int | None = None
    ) -> None: ...


def _policy(settings: GroupSettings) -> str:
    return settings.consumer_migration_policy.lower()


def upgrade_enabled(settings: GroupSettings) -> bool:
    return _policy(settings) in ("upgrade", "bidirectional")


def downgrade_enabled(settings: GroupSettings) -> bool:
    return _policy(settings) in ("downgrade", "bidirectional")


def _new_member_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): url-safe base64, no padding (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")


# ===============================================================================================
# The embedded consumer protocol
# ===============================================================================================
@dataclass(frozen=True, slots=True)
class Subscription:
    """A ConsumerProtocolSubscription (v0-3)."""

    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.buf = memoryview(bytes(data))
        self.pos = 0

    def _take(self, fmt: str) -> int:
        try:
            (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        except struct.error as exc:
            raise MalformedProtocol(str(exc)) from None
        self.pos += struct.calcsize(fmt)
        return int(value)

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def string(self, nullable: bool = False) -> str | None:
        length = self.int16()
        if length < 0:
            if nullable:
                return None
            raise MalformedProtocol("null string")
        end = self.pos + length
        if end > len(self.buf):
            raise MalformedProtocol("string past the end")
        try:
            text = bytes(self.buf[self.pos : end]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedProtocol(str(exc)) from None
        self.pos = end
        return text

    def bytes_(self) -> bytes | None:
        length = self.int32()
        if length < 0:
            return None
        end = self.pos + length
        if end > len(self.buf):
            raise MalformedProtocol("bytes past the end")
        data = bytes(self.buf[self.pos : end])
        self.pos = end
        return data

    def count(self) -> int:
        n = self.int32()
        if n < 0 or n > len(self.buf):
            raise MalformedProtocol(f"bad array length {n}")
        return n

    def topic_partitions(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        out = []
        for _ in range(self.count()):
            topic = self.string()
            assert topic is not None
            out.append((topic, tuple(self.int32() for _ in range(self.count()))))
        return tuple(out)

    def version(self) -> int:
        version = self.int16()
        if version < 0:
            raise MalformedProtocol(f"unsupported version {version}")
        return min(version, CONSUMER_PROTOCOL_VERSION)


def parse_subscription(data: bytes) -> Subscription:
    """A ConsumerProtocolSubscription; raises MalformedProtocol."""
    r = _Reader(data)
    version = r.version()
    topics = []
    for _ in range(r.count()):
        topic = r.string()
        assert topic is not None
        topics.append(topic)
    user_data = r.bytes_()
    owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation_id, rack_id = -1, None
    # the fields of later versions are "ignorable": a member may send a shorter v1+ body
    if version >= 1 and r.pos < len(r.buf):
        owned = r.topic_partitions()
    if version >= 2 and r.pos < len(r.buf):
        generation_id = r.int32()
    if version >= 3 and r.pos < len(r.buf):
        rack_id = r.string(nullable=True)
    return Subscription(version, tuple(topics), user_data, owned, generation_id, rack_id)


def parse_assignment(data: bytes) -> tuple[tuple[tuple[str, tuple[int, ...]], ...], bytes | None]:
    """A ConsumerProtocolAssignment: (topic partitions, user data); raises MalformedProtocol."""
    r = _Reader(data)
    r.version()
    partitions = r.topic_partitions()
    return partitions, r.bytes_()


def protocol_version(metadata: bytes) -> int:
    """The version a member's subscription was written in: its assignment is written in it too
    (Kafka's ConsumerProtocol.deserializeVersion, clamped to the highest known)."""
    return _Reader(metadata).version()


def encode_assignment(version: int, partitions: Sequence[tuple[str, Sequence[int]]]) -> bytes:
    """A ConsumerProtocolAssignment (no user data)."""
    out = bytearray(struct.pack(">hi", max(0, min(version, CONSUMER_PROTOCOL_VERSION)), len(partitions)))
    for topic, parts in partitions:
        name = topic.encode("utf-8")
        out += struct.pack(">h", len(name)) + name + struct.pack(">i", len(parts))
        out += b"".join(struct.pack(">i", p) for p in parts)
    out += struct.pack(">i", -1)
    return bytes(out)


def _topic_ids(topics: TopicCatalog) -> dict[uuid.UUID, str]:
    return {shape.topic_id: name for name, shape in topics.topics.items()}


def _by_id(
    topics: TopicCatalog, partitions: Sequence[tuple[str, Sequence[int]]]
) -> dict[uuid.UUID, frozenset[int]]:
    """Named partitions by topic id; topics that do not exist are left out (Kafka's
    Utils.toTopicPartitionMap)."""
    catalog = topics.topics
    out: dict[uuid.UUID, set[int]] = {}
    for name, parts in partitions:
        shape = catalog.get(name)
        if shape is not None:
            out.setdefault(shape.topic_id, set()).update(parts)
    return {tid: frozenset(parts) for tid, parts in out.items()}


def _by_name(
    names: Mapping[uuid.UUID, str], partitions: Mapping[uuid.UUID, Collection[int]]
) -> NamedPartitions:
    """Partitions by topic id as a classic member sees them (names; topics gone left out),
    topics by name and partitions ascending."""
    named = [(names[tid], sorted(parts)) for tid, parts in partitions.items() if tid in names and parts]
    return sorted(named)


def _target_partitions(assignment: Mapping[uuid.UUID, Collection[int]]) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(tid, tuple(sorted(parts))) for tid, parts in assignment.items())


def _metadata_hash(topics: TopicCatalog, subscribed: Collection[str]) -> int:
    catalog = topics.topics
    hashes = {}
    for name in subscribed:
        shape = catalog.get(name)
        if shape is not None:
            hashes[name] = topic_hash(shape.topic_id, name, shape.num_partitions)
    return group_hash(hashes)


# ===============================================================================================
# Upgrade: classic -> consumer
# ===============================================================================================
def upgrade(coordinator: ConsumerSide, classic: Group) -> list[GroupRecord]:
    """The records converting a non-empty classic group into a consumer group (a
    ClassicGroupTombstone first, then the consumer group's records), after answering its pending
    JoinGroup/SyncGroup with REBALANCE_IN_PROGRESS. Raises MigrationRefused. The heartbeat that
    triggered it then runs against the replayed consumer group."""
    group_id = classic.group_id
    settings = coordinator.settings
    refused = f"Cannot upgrade classic group {group_id} to consumer group because"
    if not upgrade_enabled(settings):
        log.info("cannot upgrade the classic group: online upgrade is disabled", group=group_id)
        raise MigrationRefused(f"{refused} online upgrade is disabled.")
    if classic.protocol_type != PROTOCOL_TYPE:
        log.info("cannot upgrade the classic group: it does not use the consumer protocol", group=group_id)
        raise MigrationRefused(f"{refused} the group does not use the consumer embedded protocol.")
    if classic.size > settings.consumer_max_size:
        log.info(
            "cannot upgrade the classic group: it is larger than group.consumer.max.size", group=group_id
        )
        raise MigrationRefused(f"{refused} the group size exceeds the consumer group maximum size.")
    # as Kafka's convertToConsumerGroup: its JoinGroup/SyncGroup requests in flight are told to
    # rejoin before the members' protocol is read, so even when that refuses the upgrade
    _answer_pending(classic, E.rebalance_in_progress)
    generation = classic.generation_id
    members: list[tuple[ConsumerGroupMember, dict[uuid.UUID, frozenset[int]]]] = []
    subscribed: set[str] = set()
    try:
        for cm in classic.members.values():
            target: dict[uuid.UUID, frozenset[int]] = {}
            if cm.assignment:
                partitions, user_data = parse_assignment(cm.assignment)
                if user_data:
                    log.warning(
                        "cannot upgrade the classic group: a custom assignor's user data would be lost",
                        group=group_id,
                        member=cm.member_id,
                    )
                    raise MigrationRefused(
                        f"{refused} an unsupported custom assignor is in use. Please refer to the "
                        "documentation or switch to a default assignor before re-attempting the upgrade."
                    )
                target = _by_id(coordinator.topics, partitions)
            name = classic.protocol_name or (cm.protocols[0][0] if cm.protocols else "")
            subscription = parse_subscription(cm.metadata(name))
            subscribed.update(subscription.topics)
            member = ConsumerGroupMember(
                cm.member_id,
                member_epoch=generation,
                previous_member_epoch=generation,
                state=MemberState.STABLE,
                instance_id=cm.group_instance_id,
                rack_id=subscription.rack_id,
                rebalance_timeout_ms=cm.rebalance_timeout_ms,
                client_id=cm.client_id,
                client_host=cm.client_host,
                subscribed_topic_names=frozenset(subscription.topics),
                assigned={tid: dict.fromkeys(parts, generation) for tid, parts in target.items()},
                classic=ClassicMemberMetadata(
                    cm.session_timeout_ms, tuple(ClassicProtocol(n, bytes(m)) for n, m in cm.protocols)
                ),
            )
            members.append((member, target))
    except (MalformedProtocol, KeyError) as exc:
        log.warning(
            "cannot upgrade the classic group: malformed consumer protocol", group=group_id, error=str(exc)
        )
        raise MigrationRefused(f"{refused} the embedded consumer protocol is malformed.") from None
    # its timers stop (its requests in flight were answered above)
    classic.stop(E.rebalance_in_progress)
    records: list[GroupRecord] = [ClassicGroupTombstone(group_id)]
    records += [CgMember(group_id, m.member_id, m.metadata_value()) for m, _ in members]
    records.append(CgEpoch(group_id, EpochValue(generation, _metadata_hash(coordinator.topics, subscribed))))
    records += [CgTarget(group_id, m.member_id, _target_partitions(target)) for m, target in members]
    records.append(CgTargetMeta(group_id, TargetMetaValue(generation, 0)))
    records += [CgCurrent(group_id, m.member_id, m.current_value()) for m, _ in members]
    for member, _ in members:
        assert member.classic is not None
        coordinator.schedule_session_timeout(group_id, member.member_id, member.classic.session_timeout_ms)
    log.info(
        "converted the classic group to a consumer group",
        group=group_id,
        generation=generation,
        members=len(members),
    )
    return records


def _answer_pending(classic: Group, error: int) -> None:
    """Answer the classic group's waiting JoinGroup/SyncGroup requests with `error`, its timers
    left running (Kafka's completeAllJoinFutures and completeAllSyncFutures)."""
    for member in classic.members.values():
        if member.join_answer is not None:
            join_cb, member.join_answer = member.join_answer, None
            join_cb.complete(JoinResult(error, member.member_id))
        if member.sync_answer is not None:
            sync_cb, member.sync_answer = member.sync_answer, None
            sync_cb.complete(SyncResult(error))


# ===============================================================================================
# Downgrade: consumer -> classic
# ===============================================================================================
def maybe_downgrade(
    coordinator: ConsumerSide, group: ConsumerGroup, leaving: Collection[str]
) -> list[GroupRecord] | None:
    """When `leaving` (member ids being fenced or leaving) are the last consumer-protocol members
    and classic members remain, and the policy allows it: the records turning the group back into
    a classic group (all consumer tombstones, then the classic group's metadata), after which a
    rebalance of the classic group is prepared. None: no downgrade, fence normally."""
    group_id = group.group_id
    gone = {m for m in leaving if m in group.members}
    remaining = [m for mid, m in group.members.items() if mid not in gone]
    if not remaining or not all(m.uses_classic_protocol for m in remaining):
        return None
    if not downgrade_enabled(coordinator.settings):
        log.info(
            "cannot downgrade the consumer group to a classic group: online downgrade is disabled",
            group=group_id,
        )
        return None
    if len(remaining) > coordinator.settings.max_size:
        log.info(
            "cannot downgrade the consumer group to a classic group: it is larger than group.max.size",
            group=group_id,
        )
        return None
    classic = _classic_group(coordinator, group, remaining)
    assignments = {m.member_id: m.assignment for m in classic.members.values()}
    records: list[GroupRecord] = [*group.tombstones(), coordinator.manager.group_record(classic, assignments)]
    reason = f"Downgrade group {group_id} from consumer to classic for member leaving."
    coordinator.scheduler.call_later(0, lambda: _rebalance_downgraded(coordinator, group_id, reason))
    log.info("converting the consumer group to a classic group", group=group_id, members=len(remaining))
    return records


def downgrade_with_replaced_member(
    coordinator: ConsumerSide, group: ConsumerGroup, replaced: ConsumerGroupMember | None
) -> bool:
    """Whether a classic static member replacing `replaced` turns the group classic: it was the
    last consumer-protocol member and the policy and group.max.size allow it (Kafka's
    validateOnlineDowngradeWithReplacedMember)."""
    if (
        replaced is None
        or replaced.uses_classic_protocol
        or group.num_classic_members() != len(group.members) - 1
    ):
        return False
    if not downgrade_enabled(coordinator.settings):
        log.info(
            "cannot downgrade the consumer group to a classic group: online downgrade is disabled",
            group=group.group_id,
        )
        return False
    if len(group.members) > coordinator.settings.max_size:
        log.info(
            "cannot downgrade the consumer group to a classic group: it is larger than group.max.size",
            group=group.group_id,
        )
        return False
    return True


def downgrade_records(
    coordinator: ConsumerSide,
    group: ConsumerGroup,
    replaced: ConsumerGroupMember,
    joining: ConsumerGroupMember,
) -> list[GroupRecord]:
    """The records turning the group classic with `joining` in place of `replaced` (Kafka's
    convertToClassicGroup with a joining member): the consumer group's tombstones (the joining
    member's id for the replaced one's), then the classic group's metadata, the joining member
    last, with the replaced member's target."""
    old, new = replaced.member_id, joining.member_id
    tombstones: list[GroupRecord] = [
        r._replace(member_id=new)
        if isinstance(r, CgCurrent | CgTarget | CgMember) and r.member_id == old
        else r
        for r in group.tombstones()
    ]
    members = [
        m for m in group.members.values() if m.instance_id is None or m.instance_id != joining.instance_id
    ]
    classic = _classic_group(coordinator, group, [*members, joining], {new: old})
    assignments = {m.member_id: m.assignment for m in classic.members.values()}
    return [*tombstones, coordinator.manager.group_record(classic, assignments)]


def _classic_group(
    coordinator: ConsumerSide,
    group: ConsumerGroup,
    members: Sequence[ConsumerGroupMember],
    replaced: Mapping[str, str] | None = None,
) -> Group:
    """The classic group the consumer group's classic members make (Kafka's
    ClassicGroup.fromConsumerGroup): generation = the group epoch, each member's assignment its
    target's (`replaced`: a joining static member's id -> the id whose target it takes over)."""
    classic = Group(group.group_id, GroupState.STABLE, coordinator.clock.wall_ms())
    classic.generation_id = group.group_epoch
    for m in members:
        assert m.classic is not None
        classic.add(
            Member(
                m.member_id,
                m.instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.classic.session_timeout_ms,
                PROTOCOL_TYPE,
                [(p.name, bytes(p.metadata)) for p in m.classic.supported_protocols],
            )
        )
    classic.protocol_name = classic.select_protocol()
    names = _topic_ids(coordinator.topics)
    for member in classic.members.values():
        metadata = member.metadata(classic.protocol_name)
        owner = (replaced or {}).get(member.member_id, member.member_id)
        member.assignment = encode_assignment(
            protocol_version(metadata), _by_name(names, group.target.get(owner, {}))
        )
    return classic


def _rebalance_downgraded(coordinator: ConsumerSide, group_id: str, reason: str | None) -> Operation[None]:
    """After a downgrade's records are written and replayed: the classic group's members get
    their session timers and, with a reason, the group rebalances (Kafka's
    convertToClassicGroup, then prepareRebalance)."""
    from minibroker.coordinator.group_join import GroupMembership  # group_join dispatches here

    classic = coordinator.manager.groups.get(group_id)
    if classic is None or not classic.members or group_id in coordinator.groups:
        log.info("downgraded group changed before its rebalance", group=group_id)
        return
    # GroupMembership keeps no state of its own beyond the running operation's writes: this one
    # runs the classic group's rebalance as the broker's does
    membership = GroupMembership(
        coordinator.settings,
        manager=coordinator.manager,
        clock=coordinator.clock,
        scheduler=coordinator.scheduler,
        consumer=coordinator,
    )
    membership.start_sessions([classic])
    if reason is not None:
        membership.prepare_rebalance(classic, reason)
    log.info(
        "converted the consumer group to a classic group", group=group_id, generation=classic.generation_id
    )
    yield from membership.written()


# ===============================================================================================
# Classic members inside a consumer group
# ===============================================================================================
#: What GroupMembership does with records to write: append and replay them, then call back with
#: the outcome (E.NONE or the storage error).
WriteReplayed = Callable[[Sequence[GroupRecord], Callable[[ErrorCode], None]], None]


class ClassicMembers:
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup of classic-protocol members of a consumer
    group (Kafka's classicGroup*ToConsumerGroup). Their join timer (a member told to rejoin must
    do so within its rebalance timeout) and sync timer (a member that joined must sync within it)
    fence the member, as does its session timer (the consumer group coordinator's, with the
    JoinGroup's session timeout)."""

    def __init__(self, consumer: ConsumerSide, write: WriteReplayed) -> None:
        self.consumer = consumer
        self.write = write
        self._timers: dict[tuple[str, str, str], TimerHandle] = {}  # (kind, group, member)

    # --- JoinGroup ---------------------------------------------------------------------------------
    def join(self, group: ConsumerGroup, request: JoinRequest, answer: JoinAnswer) -> None:
        consumer = self.consumer
        group_id = group.group_id
        if _policy(consumer.settings) == "disabled":
            log.info(
                "cannot join the consumer group with the classic protocol: group migration is disabled",
                group=group_id,
            )
            answer.complete(JoinResult(E.inconsistent_group_protocol, ""))
            return
        unknown = request.member_id == ""
        member_id = _new_member_id() if unknown else request.member_id
        instance_id = request.group_instance_id
        refused = _join_refusal(group, request, member_id, consumer.settings.consumer_max_size)
        if refused is not None:
            answer.complete(JoinResult(refused, ""))
            return
        if instance_id is None and unknown and request.require_known_member_id:
            log.info(
                "new classic member of a consumer group: rejoin with this id",
                group=group_id,
                member=member_id,
            )
            answer.complete(JoinResult(E.member_id_required, member_id))
            return
        records: list[GroupRecord] = []
        replaced = group.static_member(instance_id)  # before this join replaces it
        if instance_id is None:
            member = group.members.get(member_id) or new_member(member_id)
        else:
            existing = replaced
            if unknown and existing is not None:
                # a static member back with a new member id replaces its previous incarnation,
                # keeping its assignment (Kafka's getOrMaybeSubscribeStaticConsumerGroupMember)
                log.info(
                    "static member rejoins the consumer group using the classic protocol",
                    group=group_id,
                    instance=instance_id,
                    member=member_id,
                    replaced=existing.member_id,
                )
                member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
                records += replace_member_records(group, existing, member)
                existing = member
            if not unknown and existing is None:
                answer.complete(JoinResult(E.unknown_member_id, ""))
                return
            if existing is not None and existing.member_id != member_id:
                answer.complete(JoinResult(E.fenced_instance_id, ""))
                return
            member = existing or new_member(member_id)
        try:
            subscription = parse_subscription(request.protocols[0][1])
        except MalformedProtocol:
            answer.complete(JoinResult(E.inconsistent_group_protocol, ""))
            return
        updated = replace(
            member,
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(
                request.rebalance_timeout_ms
                if request.rebalance_timeout_ms != -1
                else member.rebalance_timeout_ms
            ),
            subscribed_topic_names=frozenset(subscription.topics),
            subscribed_topic_regex="",
            client_id=request.client_id,
            client_host=request.client_host,
            classic=ClassicMemberMetadata(
                request.session_timeout_ms, tuple(ClassicProtocol(n, bytes(m)) for n, m in request.protocols)
            ),
        )
        if member_id not in group.members and not records:
            log.info(
                "member joins the consumer group using the classic protocol", group=group_id, member=member_id
            )
        # a static member replacing the last consumer-protocol member turns the group classic
        downgrade = downgrade_with_replaced_member(consumer, group, replaced)
        try:
            reconciled = consumer.update_member(
                group,
                member,
                updated,
                owned=_by_id(consumer.topics, subscription.owned),
                records=records,
                classic=True,
                downgrade=downgrade,
            )
        except Exception as exc:  # noqa: BLE001 - a refusal answers its code, anything else is raised
            code = _refusal_code(exc)
            if code is None:
                raise
            answer.complete(JoinResult(code, ""))
            return
        result = JoinResult(
            E.none, reconciled.member_id, reconciled.member_epoch, PROTOCOL_TYPE, request.protocols[0][0], ""
        )
        if downgrade:
            assert replaced is not None
            self._join_downgrading(group, replaced, reconciled, records, result, answer)
            return

        def written(error: ErrorCode) -> None:
            if error != E.none:
                answer.complete(JoinResult(error, ""))
                return
            self._cancel("join", group_id, member_id)
            consumer.schedule_session_timeout(group_id, member_id, request.session_timeout_ms)
            self._schedule(
                "sync",
                group_id,
                member_id,
                request.rebalance_timeout_ms,
                "the member failed to sync within timeout",
            )
            answer.complete(result)

        self.write(records, written)

    def _join_downgrading(
        self,
        group: ConsumerGroup,
        replaced: ConsumerGroupMember,
        joining: ConsumerGroupMember,
        records: list[GroupRecord],
        result: JoinResult,
        answer: JoinAnswer,
    ) -> None:
        """A classic static member replaced the last consumer-protocol member: the group
        becomes classic, and rebalances if its assignment was stale (Kafka's
        classicGroupJoinToConsumerGroup with a downgrade: no session nor sync timer, the classic
        group's heartbeats instead)."""
        consumer, group_id = self.consumer, group.group_id
        epochs = [r.value.epoch for r in records if isinstance(r, CgEpoch) and r.value is not None]
        reason: str | None = None
        if group.assignment_epoch < (epochs[-1] if epochs else group.group_epoch):
            reason = f"Downgrade group {group_id} from consumer to classic with stale assignment."
        records += downgrade_records(consumer, group, replaced, joining)
        log.info(
            "converting the consumer group to a classic group: a classic static member replaces its "
            "last consumer-protocol member",
            group=group_id,
            instance=joining.instance_id,
            member=joining.member_id,
            rebalance=reason is not None,
        )

        def written(error: ErrorCode) -> None:
            if error != E.none:
                answer.complete(JoinResult(error, ""))
                return
            self._cancel("join", group_id, joining.member_id)
            consumer.scheduler.call_later(0, lambda: _rebalance_downgraded(consumer, group_id, reason))
            answer.complete(result)

        self.write(records, written)

    # --- SyncGroup ---------------------------------------------------------------------------------
    def sync(self, group: ConsumerGroup, request: SyncRequest, answer: SyncAnswer) -> None:
        member, error = self._validate(
            group, request.member_id, request.group_instance_id, request.generation_id
        )
        if error is None:
            assert member is not None and member.classic is not None
            name = member.classic.supported_protocols[0].name
            if (request.protocol_type is not None and request.protocol_type != PROTOCOL_TYPE) or (
                request.protocol_name is not None and request.protocol_name != name
            ):
                error = E.inconsistent_group_protocol
            elif (
                group.assignment_epoch > member.member_epoch
                and member.state is not MemberState.UNREVOKED_PARTITIONS
            ):
                self._rejoin_within_rebalance_timeout(group, member)
                error = E.rebalance_in_progress
        if error is not None:
            answer.complete(SyncResult(error))
            return
        assert member is not None and member.classic is not None
        group_id = group.group_id
        self._cancel("sync", group_id, member.member_id)
        self.consumer.schedule_session_timeout(group_id, member.member_id, member.classic.session_timeout_ms)
        answer.complete(
            SyncResult(E.none, request.protocol_type, request.protocol_name, self.assignment_bytes(member))
        )

    def assignment_bytes(self, member: ConsumerGroupMember) -> bytes:
        """The member's assigned partitions (not those pending revocation) as the
        ConsumerProtocolAssignment it gets in SyncGroup, in the version of its subscription."""
        assert member.classic is not None
        names = _topic_ids(self.consumer.topics)
        try:
            version = protocol_version(member.classic.supported_protocols[0].metadata)
        except MalformedProtocol:
            version = 0
        return encode_assignment(version, _by_name(names, member.assigned))

    # --- Heartbeat ---------------------------------------------------------------------------------
    def heartbeat(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int
    ) -> int:
        member, error = self._validate(group, member_id, instance_id, generation_id)
        if error is not None:
            return error
        assert member is not None and member.classic is not None
        self.consumer.schedule_session_timeout(group.group_id, member_id, member.classic.session_timeout_ms)
        if (
            member.member_epoch < group.assignment_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (
                member.state is MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased_partition(member)
            )
        ):
            self._rejoin_within_rebalance_timeout(group, member)
            return E.rebalance_in_progress
        return E.none

    # --- LeaveGroup --------------------------------------------------------------------------------
    def leave(
        self, group: ConsumerGroup, members: list[tuple[str, str | None]]
    ) -> list[tuple[str, str | None, int]]:
        results: list[tuple[str, str | None, int]] = []
        leaving: dict[str, ConsumerGroupMember] = {}
        for member_id, instance_id in members:
            if instance_id is None:
                member = group.members.get(member_id)
                error = E.unknown_member_id if member is None else E.none
            else:
                member = group.static_member(instance_id)
                if member is None:
                    error = E.unknown_member_id
                elif member_id and member.member_id != member_id:
                    error = E.fenced_instance_id
                else:
                    error = E.none
            if error == E.none and member is not None:
                log.info(
                    "member left the consumer group through LeaveGroup",
                    group=group.group_id,
                    member=member.member_id,
                    instance=instance_id,
                )
                leaving[member.member_id] = member
            results.append((member_id, instance_id, error))
        if leaving:
            self._fence(group, list(leaving.values()))
        return results

    # --- helpers -----------------------------------------------------------------------------------
    def _validate(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int
    ) -> tuple[ConsumerGroupMember | None, int | None]:
        """Kafka's validateConsumerGroupMember, throwIfMemberDoesNotUseClassicProtocol and
        throwIfGenerationIdUnmatched."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                return None, E.unknown_member_id
        else:
            member = group.static_member(instance_id)
            if member is None:
                return None, E.unknown_member_id
            if member.member_id != member_id:
                return None, E.fenced_instance_id
        if not member.uses_classic_protocol:
            return None, E.unknown_member_id
        if generation_id != member.member_epoch:
            return None, E.illegal_generation
        return member, None

    def _fence(self, group: ConsumerGroup, members: list[ConsumerGroupMember]) -> None:
        for member in members:
            self._cancel("join", group.group_id, member.member_id)
            self._cancel("sync", group.group_id, member.member_id)
        records = self.consumer.fence_members(group, members)

        def written(error: ErrorCode) -> None:
            if error != E.none:
                log.warning("fencing classic members failed", group=group.group_id, error=error.name)

        if records:
            self.write(records, written)

    def _rejoin_within_rebalance_timeout(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent."""
        if ("join", group.group_id, member.member_id) not in self._timers:
            self._schedule(
                "join",
                group.group_id,
                member.member_id,
                member.rebalance_timeout_ms,
                "the classic member failed to join within the rebalance timeout",
            )

    def _schedule(self, kind: str, group_id: str, member_id: str, delay_ms: int, reason: str) -> None:
        key = (kind, group_id, member_id)
        self._cancel(kind, group_id, member_id)

        def expire() -> Operation[None]:
            if self._timers.get(key) is not handle:
                return
            del self._timers[key]
            group = self.consumer.groups.get(group_id)
            member = group.members.get(member_id) if group is not None else None
            if group is None or member is None:
                return
            log.info("member fenced from the consumer group", group=group_id, member=member_id, reason=reason)
            records = self.consumer.fence_members(group, [member])
            if records:
                yield Write(records, durable=False)

        handle = self.consumer.scheduler.call_later(max(0, delay_ms), expire)
        self._timers[key] = handle

    def close(self) -> None:
        """Cancel every join and sync timer (broker shutdown)."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def _cancel(self, kind: str, group_id: str, member_id: str) -> None:
        handle = self._timers.pop((kind, group_id, member_id), None)
        if handle is not None:
            handle.cancel()


def _refusal_code(exc: Exception) -> int | None:
    """The error code the consumer group coordinator refused a member's change with (Kafka's
    ApiException), None for another exception."""
    from minibroker.coordinator.consumer_groups import Refused  # it imports this module

    if isinstance(exc, Refused):
        return exc.code
    if isinstance(exc, FencedMemberEpoch):
        return int(E.fenced_member_epoch)
    return None


def _join_refusal(group: ConsumerGroup, request: JoinRequest, member_id: str, max_size: int) -> int | None:
    """A classic JoinGroup the group cannot take: GROUP_MAX_SIZE_REACHED, or
    INCONSISTENT_GROUP_PROTOCOL for protocols it does not support."""
    if _is_full(group, member_id, request.group_instance_id, max_size):
        return E.group_max_size_reached
    if not supports_classic_protocols(group, request.protocol_type, request.protocol_names()):
        return E.inconsistent_group_protocol
    return None


def _is_full(group: ConsumerGroup, member_id: str, instance_id: str | None, max_size: int) -> bool:
    """Kafka's throwIfConsumerGroupIsFull."""
    if group.static_member(instance_id) is not None:
        return False
    return len(group.members) >= max_size and (not member_id or member_id not in group.members)


def supports_classic_protocols(group: ConsumerGroup, protocol_type: str, names: Collection[str]) -> bool:
    """A classic member may join when it speaks the consumer protocol with an assignor every
    classic member of the group supports (Kafka's ConsumerGroup.supportsClassicProtocols)."""
    if protocol_type != PROTOCOL_TYPE:
        return False
    if group.is_empty():
        return bool(names)
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    counts: dict[str, int] = {}
    for meta in classic:
        for protocol in meta.supported_protocols:
            counts[protocol.name] = counts.get(protocol.name, 0) + 1
    return any(counts.get(name, 0) == len(classic) for name in names)


def replace_member_records(
    group: ConsumerGroup, old: ConsumerGroupMember, new: ConsumerGroupMember
) -> list[ConsumerGroupRecord]:
    """A static member's new incarnation in place of the old one, with its target (Kafka's
    replaceMember: the old member's current assignment, target and metadata tombstones, then
    the new member's metadata, target and current assignment)."""
    gid = group.group_id
    target = group.target.get(old.member_id, {})
    return [
        CgCurrent(gid, old.member_id, None),
        CgTarget(gid, old.member_id, None),
        CgMember(gid, old.member_id, None),
        CgMember(gid, new.member_id, new.metadata_value()),
        CgTarget(gid, new.member_id, _target_partitions(target)),
        CgCurrent(gid, new.member_id, new.current_value()),
    ]
