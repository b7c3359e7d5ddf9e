"""The share group coordinator (Kafka's GroupMetadataManager for share groups): members join
and heartbeat (ShareGroupHeartbeat), the SimpleAssignor gives each subscribed partition to
several members, and share-partitions get share state (InitializeShareGroupState in the share
coordinator) before they are assignable. Part of the group coordinator shard: records 10-15 in
__consumer_offsets (coordinator/share_group_records.py), groups in `manager.share_groups`
(coordinator/share_group.py).

Reached as `GroupCoordinator.share`. An operation computes the records and yields them in one
`Write`; the state changes only when they are replayed; the answer is built after.

The share-state handshake (Kafka's): a heartbeat whose group subscribes to partitions without
share state records them as *initializing* (record 15) and lists them in its answer
(`initialize`, with the group epoch as state epoch); the broker initializes them in the share
coordinator and calls `partitions_initialized`, which records them as *initialized*. The next
heartbeat sees initialized partitions missing from the target assignment, bumps the group
epoch and assigns them. Partitions listed but never reported are listed again once
group.share.initialize.retry.interval.ms has passed.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import structlog
from minibroker.common.clock import Clock
from minibroker.coordinator.assignors import GroupSpec, MemberSpec, PartitionAssignorError
from minibroker.coordinator.collaborators import GroupConfigSource, Scheduler, TimerHandle
from minibroker.coordinator.group_metadata_manager import GroupMetadataManager, storage_error_for_group
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.java_order import hash_string, java_hash_order
from minibroker.coordinator.modern_groups import ModernGroupCoordinator
from minibroker.coordinator.runtime import Operation, Write
from minibroker.coordinator.share_assignor import simple_assign
from minibroker.coordinator.share_group import (
    InitValue,
    ShareGroup,
    ShareGroupMember,
    topic_partitions,
)
from minibroker.coordinator.share_group_records import (
    SgCurrent,
    SgEpoch,
    SgMember,
    SgStatePartitions,
    SgTarget,
    SgTargetMeta,
    ShareEpochValue,
    ShareGroupRecord,
    ShareTargetMetaValue,
)
from minibroker.protocol.errors import ErrorCode

__all__ = [
    "INITIALIZE_RETRY_INTERVAL_MS",
    "ShareGroupCoordinator",
    "ShareHeartbeat",
    "ShareHeartbeatAnswer",
    "TopicPartitions",
]

log = structlog.get_logger("minibroker.coordinator.share_groups")

E = ErrorCode
INT_MAX = 2**31 - 1
JOIN_EPOCH, LEAVE_EPOCH = 0, -1
#: group.share.initialize.retry.interval.ms (Kafka's default; a GroupSettings field of that
#: name, when there is one, wins)
INITIALIZE_RETRY_INTERVAL_MS = 30_000
#: Errors.NON_EMPTY_GROUP.message()
NON_EMPTY_MESSAGE = "The group is not empty."

#: topic id -> partitions
TopicPartitions = Mapping[uuid.UUID, frozenset[int]]


class ShareHeartbeat(NamedTuple):
    """A validated ShareGroupHeartbeat (the handler checks ids, authorization, share.version)."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None
    client_id: str
    client_host: str


class ShareHeartbeatAnswer(NamedTuple):
    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None = None
    #: share-partitions the broker must initialize in the share coordinator (state epoch, start
    #: offset -1) and then report with `partitions_initialized`: only then are they assignable
    initialize: Mapping[uuid.UUID, frozenset[int]] = {}
    state_epoch: int = 0  # the state epoch to initialize them with (the group epoch)
    #: topics of `initialize` whose new partitions start at offset 0, not -1: the group already
    #: had state for the topic (partitions added to it; Kafka's alreadyKnownTopics)
    from_start: frozenset[uuid.UUID] = frozenset()


class Refused(Exception):
    """An operation answered with an error (Kafka's ApiException): code and message."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Plan(NamedTuple):
    records: list[ShareGroupRecord]
    before: ShareGroupMember
    initialize: dict[uuid.UUID, frozenset[int]]
    from_start: frozenset[uuid.UUID]
    state_epoch: int
    send_assignment: bool


class ShareGroupCoordinator(ModernGroupCoordinator):
    KIND = "share"

    def __init__(
        self,
        settings: GroupSettings,
        *,
        manager: GroupMetadataManager,
        group_configs: GroupConfigSource,
        clock: Clock,
        scheduler: Scheduler,
    ) -> None:
        self.settings = settings
        self.manager = manager
        self.groups: dict[str, ShareGroup] = manager.share_groups
        self.topics = manager.topics
        self.group_configs = group_configs
        self.clock = clock
        self.scheduler = scheduler
        #: called with (group id, member id) when a member leaves or is removed (the broker
        #: releases the records it holds)
        self.on_member_removed: Callable[[str, str], None] | None = None
        self._timers: dict[tuple[str, str], TimerHandle] = {}  # (group, member): session timer

    @property
    def initialize_retry_interval_ms(self) -> int:
        value = getattr(self.settings, "share_initialize_retry_interval_ms", None)
        return INITIALIZE_RETRY_INTERVAL_MS if value is None else int(value)

    # =========================================================================================
    # Groups
    # =========================================================================================
    def _get_or_create(self, group_id: str, create: bool) -> ShareGroup:
        """Kafka's getOrMaybeCreateShareGroup (a new group exists once its records replay)."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if self.manager.group_type(group_id) is not None:
            raise Refused(E.group_id_not_found, f"Group {group_id} is not a share group.")
        if not create:
            raise Refused(E.group_id_not_found, f"Share group {group_id} not found.")
        return ShareGroup(group_id)

    def _share_group(self, group_id: str) -> ShareGroup:
        """Kafka's shareGroup(id): the group must exist and be a share group."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if self.manager.group_type(group_id) is not None:
            raise Refused(E.group_id_not_found, f"Group {group_id} is not a share group.")
        raise Refused(E.group_id_not_found, f"Group {group_id} not found.")

    def _topic_names(self) -> dict[uuid.UUID, str]:
        return {shape.topic_id: name for name, shape in self.topics.topics.items()}

    def _write(self, group_id: str, records: Sequence[ShareGroupRecord]) -> Operation[int]:
        """Write and replay the records in one batch; 0, or the error code of a failed write."""
        if not records:
            return 0
        try:
            yield Write(tuple(records), durable=False)
        except Exception as exc:  # noqa: BLE001 - a failed write answers its error
            log.warning("share group write failed", group=group_id, error=str(exc))
            return storage_error_for_group(exc)
        return 0

    # =========================================================================================
    # ShareGroupHeartbeat
    # =========================================================================================
    def heartbeat(self, request: ShareHeartbeat) -> Operation[ShareHeartbeatAnswer]:
        """ShareGroupHeartbeat: join (epoch 0), heartbeat, leave (-1)."""
        group_id, member_id = request.group_id, request.member_id
        if request.member_epoch == LEAVE_EPOCH:
            try:
                records = self._leave(group_id, member_id)
            except Refused as exc:
                return ShareHeartbeatAnswer(error_code=exc.code, error_message=exc.message)
            error = yield from self._write(group_id, records)
            if error:
                return ShareHeartbeatAnswer(error_code=error)
            self._removed(group_id, member_id)
            return ShareHeartbeatAnswer(member_id=member_id, member_epoch=LEAVE_EPOCH)
        try:
            plan = self._heartbeat(request)
        except Refused as exc:
            return ShareHeartbeatAnswer(error_code=exc.code, error_message=exc.message)
        error = yield from self._write(group_id, plan.records)
        if error:
            return ShareHeartbeatAnswer(error_code=error)
        self._schedule_session_timeout(group_id, member_id)
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is None:  # cannot happen: the records replayed add it
            return ShareHeartbeatAnswer(error_code=E.unknown_server_error)
        assignment = None
        if plan.send_assignment or dict(plan.before.assigned) != dict(member.assigned):
            assignment = member.assignment_response()
        return ShareHeartbeatAnswer(
            member_id=member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group_id),
            assignment=assignment,
            initialize=plan.initialize,
            state_epoch=plan.state_epoch,
            from_start=plan.from_start,
        )

    def _heartbeat(self, request: ShareHeartbeat) -> _Plan:
        """Kafka's shareGroupHeartbeat (GroupMetadataManager), in its order; raises Refused."""
        now = self.clock.wall_ms()
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        joining = epoch == JOIN_EPOCH
        group = self._get_or_create(group_id, joining)
        limit = self.settings.share_max_size
        if len(group.members) >= limit and (not member_id or member_id not in group.members):
            raise Refused(
                E.group_max_size_reached,
                f"The share group has reached its maximum capacity of {limit} members.",
            )
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise Refused(E.unknown_member_id, f"Member {member_id} is not a member of group {group_id}.")
            member = ShareGroupMember(member_id)
            log.info("member joins the share group", group=group_id, member=member_id)
        else:
            _check_epoch(member, epoch)
        updated = dataclasses.replace(
            member,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            subscribed_topic_names=frozenset(request.subscribed_topic_names)
            if request.subscribed_topic_names is not None
            else member.subscribed_topic_names,
            client_id=request.client_id,
            client_host=request.client_host,
        )
        records: list[ShareGroupRecord] = []
        bump = False
        if updated != member:
            records.append(SgMember(group_id, member_id, updated.metadata_value()))
            if updated.subscribed_topic_names != member.subscribed_topic_names:
                log.info(
                    "share group member updated its subscribed topics",
                    group=group_id,
                    member=member_id,
                    topics=sorted(updated.subscribed_topic_names),
                )
                bump = True
        group_epoch = group.group_epoch
        if group.assignment_epoch >= group_epoch:
            bump = bump or self._initialized_assignment_pending(group)
        names: Mapping[str, int] = group.subscribed_names
        subscription_type = group.subscription_type()
        if bump or now >= group.metadata_refresh_deadline_ms or group_epoch < group.metadata_refresh_epoch:
            old = group.members.get(member_id)
            names = group.compute_subscribed_names(old, updated)
            metadata_hash = self._metadata_hash(names)
            num_members = len(group.members) + (0 if member_id in group.members else 1)
            subscription_type = group.subscription_type(names, num_members)
            if metadata_hash != group.metadata_hash:
                bump = True
            if bump:
                group_epoch += 1
                records.append(SgEpoch(group_id, ShareEpochValue(group_epoch, metadata_hash)))
                log.info(
                    "share group epoch bumped", group=group_id, epoch=group_epoch, metadata_hash=metadata_hash
                )
            # not persisted (Kafka's setMetadataRefreshDeadline)
            group.metadata_refresh_deadline_ms = now + INT_MAX
            group.metadata_refresh_epoch = group_epoch
        target_epoch, target = self._maybe_update_target(
            group, group_epoch, updated, subscription_type, records, now
        )
        # the answer reads the member as its records replay
        self._maybe_reconcile(group, updated, target_epoch, target, bump, records)
        known = frozenset(group.initialized) | frozenset(group.initializing)
        initialize = self._initialize_request(group, names, records, now)
        return _Plan(
            records=records,
            before=member,
            initialize=initialize,
            from_start=frozenset(t for t in initialize if t in known),
            state_epoch=group_epoch,
            send_assignment=joining or request.subscribed_topic_names is not None,
        )

    def _topic_ids(self, names: Iterable[str]) -> frozenset[uuid.UUID]:
        catalog = self.topics.topics
        return frozenset(shape.topic_id for name in names if (shape := catalog.get(name)) is not None)

    def _initialized_assignment_pending(self, group: ShareGroup) -> bool:
        """Kafka's initializedAssignmentPending: initialized partitions of a subscribed topic
        that the target assignment does not hold yet (they became assignable since)."""
        if group.is_empty() or not group.initialized:
            return False
        subscribed = group.subscribed_names
        if not subscribed:
            return False
        assigned: dict[uuid.UUID, set[int]] = {}
        for target in group.target.values():
            for topic_id, partitions in target.items():
                assigned.setdefault(topic_id, set()).update(partitions)
        for topic_id, value in group.initialized.items():
            if value.name in subscribed and assigned.get(topic_id) != set(value.partitions):
                return True
        return False

    def _maybe_update_target(
        self,
        group: ShareGroup,
        group_epoch: int,
        updated: ShareGroupMember,
        subscription_type: str,
        records: list[ShareGroupRecord],
        now: int,
    ) -> tuple[int, Mapping[uuid.UUID, frozenset[int]]]:
        """Kafka's maybeUpdateTargetAssignment for share groups: (target epoch, the member's
        target). Skipped until the group epoch moves past the assignment epoch and
        share.assignment.interval.ms has passed since the last assignment."""
        group_id = group.group_id
        if group.assignment_epoch >= group_epoch or not self._can_assign(group, now):
            return group.assignment_epoch, group.target.get(updated.member_id, {})
        members = dict(group.members)
        members[updated.member_id] = updated
        targets = dict(group.target)
        spec = GroupSpec(
            members=tuple(
                MemberSpec(
                    member_id,
                    None,
                    member.rack_id,
                    self._topic_ids(member.subscribed_topic_names),
                    targets.get(member_id, {}),
                )
                for member_id, member in members.items()
            ),
            subscription_type=subscription_type,
        )
        shapes = {shape.topic_id: (name, shape.num_partitions) for name, shape in self.topics.topics.items()}
        initialized = group.initialized_partitions()
        try:
            result = simple_assign(
                spec,
                lambda topic_id: shapes[topic_id][1] if topic_id in shapes else -1,
                lambda topic_id, partition: partition in initialized.get(topic_id, ()),
                topic_name=lambda topic_id: shapes[topic_id][0] if topic_id in shapes else "",
            )
        except PartitionAssignorError as exc:
            message = f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}"
            log.error("share group target assignment failed", group=group_id, error=message)
            raise Refused(E.unknown_server_error, message) from exc
        for member_id in java_hash_order(members, hash_string):
            assigned = _normalized(result.get(member_id, {}))
            if member_id not in targets or assigned != _normalized(targets[member_id]):
                records.append(SgTarget(group_id, member_id, topic_partitions(assigned)))
        records.append(SgTargetMeta(group_id, ShareTargetMetaValue(group_epoch, now)))
        log.info(
            "share group target assignment computed",
            group=group_id,
            epoch=group_epoch,
            assignor="simple",
            members=len(members),
        )
        return group_epoch, _normalized(result.get(updated.member_id, {}))

    def _maybe_reconcile(
        self,
        group: ShareGroup,
        member: ShareGroupMember,
        target_epoch: int,
        target: Mapping[uuid.UUID, frozenset[int]],
        subscription_changed: bool,
        records: list[ShareGroupRecord],
    ) -> ShareGroupMember:
        """Kafka's maybeReconcile with the ShareGroupAssignmentBuilder: no revocation, the
        member takes its target (of the topics it subscribes to) and the target epoch."""
        if not subscription_changed and member.is_reconciled_to(target_epoch):
            return member
        subscribed = self._topic_ids(member.subscribed_topic_names)
        filtered = {t: ps for t, ps in target.items() if t in subscribed}
        if target_epoch != member.member_epoch:
            updated = dataclasses.replace(
                member,
                state=0,
                assigned=filtered,
                previous_member_epoch=member.member_epoch,
                member_epoch=target_epoch,
            )
        elif subscription_changed:
            updated = dataclasses.replace(member, assigned=filtered)
        else:
            return member
        if updated != member:
            records.append(SgCurrent(group.group_id, updated.member_id, updated.current_value()))
            log.info(
                "share group member assignment",
                group=group.group_id,
                member=updated.member_id,
                epoch=updated.member_epoch,
                previous_epoch=updated.previous_member_epoch,
                partitions=sum(len(ps) for ps in updated.assigned.values()),
            )
        return updated

    # --- share-partition initialization --------------------------------------------------------
    def _initialize_request(
        self, group: ShareGroup, names: Mapping[str, int], records: list[ShareGroupRecord], now: int
    ) -> dict[uuid.UUID, frozenset[int]]:
        """Kafka's maybeCreateInitializeShareGroupStateRequest: the subscribed partitions with
        neither share state nor a recent initialization under way; recorded as initializing."""
        if not names:
            return {}
        retry = self.initialize_retry_interval_ms
        known: dict[uuid.UUID, set[int]] = {t: set(v.partitions) for t, v in group.initialized.items()}
        for topic_id, value in group.initializing.items():
            if now - value.timestamp_ms < retry:
                known.setdefault(topic_id, set()).update(value.partitions)
        change: dict[uuid.UUID, InitValue] = {}
        catalog = self.topics.topics
        for name in names:
            shape = catalog.get(name)
            if shape is None:
                continue
            already = known.get(shape.topic_id, set())
            if not already or len(already) < shape.num_partitions:
                missing = frozenset(range(shape.num_partitions)) - already
                if missing:
                    change[shape.topic_id] = InitValue(name, missing, now)
        if not change:
            return {}
        initializing = _combine(group.initializing, change)
        deleting = {t: n for t, n in group.deleting.items() if t not in initializing}
        records.append(
            SgStatePartitions(group.group_id, group.state_value(initializing, group.initialized, deleting))
        )
        return {t: v.partitions for t, v in change.items()}

    def _init_values(self, topics: TopicPartitions) -> dict[uuid.UUID, InitValue]:
        """The topics' partitions as initialized now, with their names ("<UNKNOWN>" for a topic
        that no longer exists)."""
        names = self._topic_names()
        now = self.clock.wall_ms()
        return {t: InitValue(names.get(t, "<UNKNOWN>"), frozenset(ps), now) for t, ps in topics.items()}

    def partitions_initialized(self, group_id: str, topics: TopicPartitions) -> Operation[None]:
        """The share coordinator has state for these share-partitions: make them assignable
        (record 15) and let the next assignment include them (Kafka's
        initializeShareGroupState)."""
        group = self.groups.get(group_id)
        if group is None or not topics:
            return
        initialized = _combine(group.initialized, self._init_values(topics))
        initializing = _without(group.initializing, topics)
        value = group.state_value(initializing, initialized, group.deleting)
        yield from self._write(group_id, [SgStatePartitions(group_id, value)])

    def partitions_uninitialized(self, group_id: str, topics: TopicPartitions) -> Operation[None]:
        """Initializing these share-partitions failed in the share coordinator: they leave the
        initializing topics (record 15), so the next heartbeat asks for them again at once
        (Kafka's uninitializeShareGroupState) instead of after the retry interval."""
        group = self.groups.get(group_id)
        if group is None or not group.initializing or not topics:
            return
        initializing = _without(group.initializing, topics)
        value = group.state_value(initializing, group.initialized, group.deleting)
        yield from self._write(group_id, [SgStatePartitions(group_id, value)])

    def on_topics_changed(self, created: Iterable[str], changed: Iterable[str]) -> None:
        """Topics were created, or changed partition counts or were deleted: groups subscribed
        to one refresh their metadata at their next heartbeat (a new hash bumps the epoch; new
        partitions are initialized and assigned)."""
        touched = set(created) | set(changed)
        for group in self.groups.values():
            if not touched.isdisjoint(group.subscribed_names):
                group.metadata_refresh_deadline_ms = 0  # Kafka's requestMetadataRefresh
                group.metadata_refresh_epoch = -1

    def topics_deleted(self, topic_ids: Iterable[uuid.UUID]) -> Operation[None]:
        """Deleted topics leave every share group's record 15 (Kafka's
        maybeCleanupShareGroupState); their share state is the share coordinator's to delete."""
        gone = set(topic_ids)
        for group_id, group in list(self.groups.items()):
            if gone.isdisjoint(group.initializing) and gone.isdisjoint(group.initialized):
                if gone.isdisjoint(group.deleting):
                    continue
            value = group.state_value(
                {t: v for t, v in group.initializing.items() if t not in gone},
                {t: v for t, v in group.initialized.items() if t not in gone},
                {t: n for t, n in group.deleting.items() if t not in gone},
            )
            yield from self._write(group_id, [SgStatePartitions(group_id, value)])

    def initialized_partitions(self, group_id: str) -> dict[uuid.UUID, frozenset[int]]:
        """The group's share-partitions with share state (record 15's initialized topics)."""
        group = self.groups.get(group_id)
        return group.initialized_partitions() if group is not None else {}

    # =========================================================================================
    # Leaving and fencing
    # =========================================================================================
    def _leave(self, group_id: str, member_id: str) -> list[ShareGroupRecord]:
        """Kafka's shareGroupLeave: the member's records go and the group epoch moves on."""
        group = self._share_group(group_id)
        member = group.members.get(member_id)
        if member is None:
            raise Refused(E.unknown_member_id, f"Member {member_id} is not a member of group {group_id}.")
        log.info("member left the share group", group=group_id, member=member_id)
        return self._fence(group, member)

    def _fence(self, group: ShareGroup, member: ShareGroupMember) -> list[ShareGroupRecord]:
        """Kafka's shareGroupFenceMember: tombstones of the member's 14, 13, 10; a group epoch
        bump (with the hash of the subscriptions left); an empty group's target metadata."""
        gid, mid = group.group_id, member.member_id
        records: list[ShareGroupRecord] = [
            SgCurrent(gid, mid, None),
            SgTarget(gid, mid, None),
            SgMember(gid, mid, None),
        ]
        metadata_hash = self._metadata_hash(group.compute_subscribed_names(member, None))
        epoch = group.group_epoch + 1
        records.append(SgEpoch(gid, ShareEpochValue(epoch, metadata_hash)))
        if len(group.members) == 1:
            records.append(SgTargetMeta(gid, ShareTargetMetaValue(epoch, 0)))
        self._cancel(gid, mid)
        log.info("share group epoch bumped: member removed", group=gid, epoch=epoch, member=mid)
        return records

    def _removed(self, group_id: str, member_id: str) -> None:
        if self.on_member_removed is not None:
            self.on_member_removed(group_id, member_id)

    # =========================================================================================
    # Admin: describe, offsets, deletion
    # =========================================================================================
    def describe(self, group_ids: Sequence[str]) -> list[dict[str, Any]]:
        """ShareGroupDescribe's Groups entries (GROUP_ID_NOT_FOUND with Kafka's messages for
        unknown ids and groups of another type). Topic names are filled from the topic
        catalog (a topic that no longer exists is left out, as Kafka does); the handler
        adds authorized_operations and filters by authorization."""
        names = self._topic_names()
        out: list[dict[str, Any]] = []
        for group_id in group_ids:
            try:
                group = self._share_group(group_id)
            except Refused as exc:
                out.append(
                    {
                        "error_code": exc.code,
                        "error_message": exc.message,
                        "group_id": group_id,
                        "group_state": "",
                        "group_epoch": 0,
                        "assignment_epoch": 0,
                        "assignor_name": "",
                        "members": [],
                    }
                )
                continue
            out.append(group.describe(names))
        return out

    def _empty_group(self, group_id: str, create: bool = False) -> ShareGroup:
        group = self._get_or_create(group_id, create) if create else self._share_group(group_id)
        if group.members:
            raise Refused(E.non_empty_group, NON_EMPTY_MESSAGE)
        return group

    def alter_offsets(self, group_id: str, topics: TopicPartitions) -> Operation[tuple[int, str | None]]:
        """AlterShareGroupOffsets's group part: NON_EMPTY_GROUP unless Empty (a group that does
        not exist is created, as Kafka's alterShareGroupOffsets creates it), else records the
        topics as initialized (the broker then re-initializes their state with the new start
        offsets and a new state epoch). Returns (error code, message)."""
        try:
            group = self._empty_group(group_id, create=True)
        except Refused as exc:
            return exc.code, exc.message
        if not topics:
            return 0, None
        given = self._init_values(topics)
        initialized = _combine(group.initialized, given)
        initializing = _without(group.initializing, topics)
        deleting = {t: n for t, n in group.deleting.items() if t not in given}
        value = group.state_value(initializing, initialized, deleting)
        error = yield from self._write(group_id, [SgStatePartitions(group_id, value)])
        return (error, None) if error else (0, None)

    def delete_offsets(
        self, group_id: str, topic_ids: Sequence[uuid.UUID]
    ) -> Operation[tuple[int, str | None]]:
        """DeleteShareGroupOffsets's group part: NON_EMPTY_GROUP unless Empty, else forgets the
        topics' share-partitions (the broker deletes their state): record 15 without them."""
        try:
            group = self._empty_group(group_id)
        except Refused as exc:
            return exc.code, exc.message
        gone = set(topic_ids)
        if not gone & (set(group.initialized) | set(group.initializing) | set(group.deleting)):
            return 0, None
        value = group.state_value(
            {t: v for t, v in group.initializing.items() if t not in gone},
            {t: v for t, v in group.initialized.items() if t not in gone},
            {t: n for t, n in group.deleting.items() if t not in gone},
        )
        error = yield from self._write(group_id, [SgStatePartitions(group_id, value)])
        return (error, None) if error else (0, None)

    def delete_group(self, group_id: str) -> Operation[int]:
        """DeleteGroups of a share group: NON_EMPTY_GROUP unless Empty; its tombstones (every
        record type of the group, Kafka's createGroupTombstoneRecords order)."""
        try:
            group = self._empty_group(group_id)
        except Refused as exc:
            return exc.code
        error = yield from self._write(group_id, group.tombstones())
        if not error:
            log.info("share group deleted", group=group_id)
        return error

    # =========================================================================================
    # Timers
    # =========================================================================================
    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        self._cancel(group_id, member_id)
        self._timers[(group_id, member_id)] = self.scheduler.call_later(
            self.session_timeout_ms(group_id), lambda: self._session_expired(group_id, member_id)
        )

    def _cancel(self, group_id: str, member_id: str) -> None:
        handle = self._timers.pop((group_id, member_id), None)
        if handle is not None:
            handle.cancel()

    def has_timer(self, group_id: str, member_id: str) -> bool:
        return (group_id, member_id) in self._timers

    def _session_expired(self, group_id: str, member_id: str) -> Operation[None]:
        self._timers.pop((group_id, member_id), None)
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return
        log.info("share group member fenced: its session expired", group=group_id, member=member_id)
        error = yield from self._write(group_id, self._fence(group, member))
        if not error:
            self._removed(group_id, member_id)

    def on_loaded(self) -> None:
        """After a load: a session timer for every member (Kafka's onLoaded)."""
        for group_id, group in self.groups.items():
            log.info("share group loaded", group=group_id, members=len(group.members))
            for member_id in group.members:
                self._schedule_session_timeout(group_id, member_id)


def _check_epoch(member: ShareGroupMember, epoch: int) -> None:
    """Kafka's throwIfShareGroupMemberEpochIsInvalid."""
    if epoch == JOIN_EPOCH:
        return
    if epoch > member.member_epoch:
        raise Refused(
            E.fenced_member_epoch,
            f"The share group member has a greater member epoch ({epoch}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions "
            "and rejoin.",
        )
    if epoch < member.member_epoch and epoch != member.previous_member_epoch:
        raise Refused(
            E.fenced_member_epoch,
            f"The share group member has a smaller member epoch ({epoch}) than the one known by the "
            f"group coordinator ({member.member_epoch}), and it does not match the previous member "
            f"epoch ({member.previous_member_epoch}). The member must abandon all its partitions and "
            "rejoin.",
        )


def _combine(
    base: Mapping[uuid.UUID, InitValue], added: Mapping[uuid.UUID, InitValue]
) -> dict[uuid.UUID, InitValue]:
    """Kafka's combineInitMaps: the union per topic; an added topic's name and time win."""
    out: dict[uuid.UUID, InitValue] = {}
    for topic_id in {**base, **added}:
        old = base.get(topic_id)
        partitions = set(old.partitions) if old is not None else set()
        name = old.name if old is not None else "UNKNOWN"
        timestamp = old.timestamp_ms if old is not None else -1
        new = added.get(topic_id)
        if new is not None:
            partitions.update(new.partitions)
            name, timestamp = new.name, new.timestamp_ms
        out[topic_id] = InitValue(name, frozenset(partitions), timestamp)
    return out


def _without(
    initializing: Mapping[uuid.UUID, InitValue], topics: TopicPartitions
) -> dict[uuid.UUID, InitValue]:
    """The initializing topics less the given partitions (a topic left with none drops out)."""
    out: dict[uuid.UUID, InitValue] = {}
    for topic_id, init in initializing.items():
        left = init.partitions - frozenset(topics.get(topic_id, ()))
        if left:
            out[topic_id] = init._replace(partitions=left)
    return out


def _normalized(assignment: Mapping[uuid.UUID, Iterable[int]]) -> dict[uuid.UUID, frozenset[int]]:
    return {t: frozenset(ps) for t, ps in assignment.items() if ps}
