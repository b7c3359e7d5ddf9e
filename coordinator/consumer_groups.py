"""The KIP-848 consumer group coordinator: ConsumerGroupHeartbeat as Kafka 4.4's
GroupMetadataManager runs it (join, heartbeat, leave; group epoch bumps on subscription and
metadata changes; the target assignment by the server-side assignors; each member's
reconciliation toward it; session and rebalance timeouts; static membership; broker-side regex
subscriptions, resolved with RE2).

An operation of the coordinator runtime (coordinator/runtime.py): a heartbeat reads the groups,
computes the records (coordinator/consumer_group_records.py) and yields them in one `Write`; the
state changes only when they are replayed (coordinator/consumer_group.py `replay`), and the
answer is built after. The groups live in the group metadata manager's `consumer_groups` (a
group id names a classic group or a consumer group, never both); their offsets are served by
coordinator/groups.py as a classic group's are.

Only two things change outside replay, as in Kafka: each group's metadata refresh deadline (when
the subscribed topics' metadata is looked at again) and the coordinator's timers; neither is
persisted.
"""

from __future__ import annotations

import base64
import dataclasses
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import NamedTuple
from uuid import UUID

import re2
import structlog
from minibroker.common.clock import Clock
from minibroker.coordinator import group_migration
from minibroker.coordinator.assignors import ASSIGNORS, GroupSpec, MemberSpec, PartitionAssignorError
from minibroker.coordinator.collaborators import GroupConfigSource, Scheduler, TimerHandle
from minibroker.coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState
from minibroker.coordinator.consumer_group_records import (
    CgCurrent,
    CgEpoch,
    CgMember,
    CgPartitionMetadataTombstone,
    CgRegex,
    CgTarget,
    CgTargetMeta,
    ConsumerGroupRecord,
    EpochValue,
    ResolvedRegexValue,
    TargetMetaValue,
    TopicPartitions,
)
from minibroker.coordinator.group_metadata import GroupState
from minibroker.coordinator.group_metadata_manager import (
    ClassicGroupTombstone,
    GroupMetadataManager,
    GroupRecord,
    storage_error_for_group,
)
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.java_order import hash_string, hash_uuid, java_hash_order
from minibroker.coordinator.modern_groups import ModernGroupCoordinator
from minibroker.coordinator.reconciliation import FencedMemberEpoch, next_member
from minibroker.coordinator.runtime import Operation, Write
from minibroker.protocol.errors import ErrorCode

__all__ = [
    "ConsumerGroupCoordinator",
    "ConsumerHeartbeat",
    "HeartbeatAnswer",
    "REGEX_MIN_REFRESH_MS",
    "TopicFilter",
]

log = structlog.get_logger("minibroker.coordinator.consumer_groups")

E = ErrorCode
INT_MAX = 2**31 - 1
#: Kafka's hard floor between two resolutions of a group's regexes (not configurable)
REGEX_MIN_REFRESH_MS = 10_000
#: the topics (of those given) the member may describe: the regex resolution keeps only these
#: when an authorizer is on (Kafka's TopicRegexResolver); None = no authorizer
TopicFilter = Callable[[Collection[str]], Collection[str]]

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # the error is answered to the client, not logged by RE2

#: RE2's error texts as RE2J (Kafka's regex library) words them (PatternSyntaxException
#: getDescription): the two are ports of one parser, so the causes map one to one
_RE2J_DESCRIPTIONS = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "unexpected )": "regexp/syntax: internal error",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
}

#: ConsumerGroupHeartbeat epochs with a meaning of their own
JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH = 0, -1, -2

_NO_CHANGE, _REGEX_UPDATED, _REGEX_UPDATED_AND_RESOLVED = range(3)


class ConsumerHeartbeat(NamedTuple):
    """A ConsumerGroupHeartbeat request as the handler hands it over (validated already)."""

    api_version: int
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: tuple[tuple[UUID, tuple[int, ...]], ...] | None = None  # TopicPartitions; None = not sent
    client_id: str = ""
    client_host: str = ""
    #: the topics this member may see, for its regex (None: no authorizer)
    topic_filter: TopicFilter | None = None


class HeartbeatAnswer(NamedTuple):
    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: the member's assigned partitions (never those pending revocation); None = not sent
    assignment: tuple[tuple[UUID, tuple[int, ...]], ...] | None = None


class Refused(Exception):
    """A heartbeat answered with an error (Kafka's ApiException): code and message."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Counts(NamedTuple):
    """Kafka's SubscriptionCount per topic name: members subscribed by name, and regexes
    (distinct, resolved) whose topics include it."""

    by_name: int = 0
    by_regex: int = 0


class _Heartbeat(NamedTuple):
    """What a heartbeat (not a leave) computed: its records and what to do once written."""

    records: list[GroupRecord]
    member_id: str
    before: ConsumerGroupMember  # the member as the heartbeat found it (a new one: the default)
    computed: ConsumerGroupMember  # the member after it, as the records say
    send_assignment: bool
    rebalance_timer: bool | None  # True: (re)schedule it, False: cancel it, None: leave it
    regexes_to_resolve: frozenset[str] | None


def random_member_id() -> str:
    """Kafka's `Uuid.randomUuid().toString()`: 16 random bytes, URL-safe base64 without padding
    (never starting with "-")."""
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def regex_problem(regex: str) -> str | None:
    """Why `regex` is not a valid RE2J expression (RE2J's description), or None."""
    try:
        re2.compile(regex, options=_RE2_OPTIONS)
    except re2.error as exc:
        raw = exc.args[0] if exc.args else ""
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        cause = text.split(": ", 1)[0]
        return _RE2J_DESCRIPTIONS.get(cause, cause)
    return None


def _non_empty(regex: str | None) -> str | None:
    return regex if regex else None


class ConsumerGroupCoordinator(ModernGroupCoordinator):
    KIND = "consumer"

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
        self.manager = manager  # the groups (consumer_groups) and __consumer_offsets
        self.groups = manager.consumer_groups
        self.topics = manager.topics  # topic names, ids and partition counts
        self.group_configs = group_configs  # per-group overrides (GROUP config resources)
        self.clock = clock
        self.scheduler = scheduler  # the coordinator runtime's timers
        #: the topic metadata's version as a regex resolution records it, moved on when a topic
        #: is created (Kafka's lastMetadataImageWithNewTopics): a regex resolved before it is
        #: resolved again. Wall time at start, so regexes resolved before a restart are too
        #: (Kafka: the image version at load is newer than the stored ones).
        self.topics_version = clock.wall_ms()
        self.default_assignor = settings.consumer_assignors[0] if settings.consumer_assignors else "uniform"
        self._timers: dict[tuple[str, str, str], TimerHandle] = {}  # (kind, group, member)
        self._regex_scheduled: set[str] = set()  # groups whose regex resolution is pending

    # =========================================================================================
    # ConsumerGroupHeartbeat
    # =========================================================================================
    def heartbeat(self, request: ConsumerHeartbeat) -> Operation[HeartbeatAnswer]:
        """ConsumerGroupHeartbeat: join (epoch 0), heartbeat, leave (-1), static leave (-2)."""
        group_id = request.group_id
        try:
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                records, answer = self._leave(request)
                error = yield from self._write(group_id, records)
                return answer if not error else HeartbeatAnswer(error_code=error)
            # a join of a non-empty classic group converts it first (online upgrade); the
            # heartbeat then runs against the replayed consumer group
            upgrade = self._maybe_upgrade(request)
        except _REFUSALS as exc:
            return _refused(exc)
        error = yield from self._write(group_id, upgrade)
        if error:
            return HeartbeatAnswer(error_code=error)
        try:
            plan = self._heartbeat(request)
        except _REFUSALS as exc:
            return _refused(exc)
        error = yield from self._write(group_id, plan.records)
        if error:
            return HeartbeatAnswer(error_code=error)
        return self._written(request, plan)

    @staticmethod
    def _write(group_id: str, records: list[GroupRecord]) -> Operation[int]:
        """Write and replay the records (one batch, page cache: Kafka's default flush policy);
        0, or the error code of a failed write."""
        if not records:
            return 0
        try:
            yield Write(records, durable=False)
        except Exception as exc:  # noqa: BLE001 - a failed write answers its error
            log.warning("consumer group write failed", group=group_id, error=str(exc))
            return storage_error_for_group(exc)
        return 0

    def _written(self, request: ConsumerHeartbeat, plan: _Heartbeat) -> HeartbeatAnswer:
        """After the heartbeat's records are replayed: its timers, and the answer from the group
        as it now is."""
        group_id, member_id = request.group_id, plan.member_id
        group = self.groups.get(group_id)
        member = group.members.get(member_id, plan.computed) if group is not None else plan.computed
        if plan.rebalance_timer is True:
            self._schedule_rebalance_timeout(
                group_id, member_id, member.member_epoch, member.rebalance_timeout_ms
            )
        elif plan.rebalance_timer is False:
            self._cancel(("rebalance", group_id, member_id))
        self._schedule_session_timeout(group_id, member_id)
        if plan.regexes_to_resolve:
            self._schedule_regex_resolution(group_id, plan.regexes_to_resolve, request.topic_filter)
        assignment = None
        if plan.send_assignment or dict(plan.before.assigned) != dict(member.assigned):
            assignment = tuple(
                (topic_id, tuple(sorted(partitions))) for topic_id, partitions in member.assigned.items()
            )
        return HeartbeatAnswer(
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group_id),
            assignment=assignment,
        )

    # --- the group ---------------------------------------------------------------------------
    def _maybe_upgrade(self, request: ConsumerHeartbeat) -> list[GroupRecord]:
        """A join of a non-empty classic group converts it (online upgrade): its records."""
        if request.member_epoch != JOIN_EPOCH:
            return []
        classic = self.manager.groups.get(request.group_id)
        if classic is None or classic.state is GroupState.EMPTY:
            return []
        return group_migration.upgrade(self, classic)

    def _get_or_create_group(self, group_id: str, create: bool, records: list[GroupRecord]) -> ConsumerGroup:
        """Kafka's getOrMaybeCreateConsumerGroup: a new group exists once its records replay."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if group_id in self.manager.share_groups:  # one id namespace (KIP-932)
            raise Refused(E.group_id_not_found, f"Group {group_id} is not a consumer group.")
        classic = self.manager.groups.get(group_id)
        if classic is None:
            if not create:
                raise Refused(E.group_id_not_found, f"Consumer group {group_id} not found.")
            return ConsumerGroup(group_id)
        if create and classic.state is GroupState.EMPTY:
            # an empty classic group (offsets only, or every member gone) is replaced
            records.append(ClassicGroupTombstone(group_id))
            log.info("empty classic group converted to a consumer group", group=group_id)
            return ConsumerGroup(group_id)
        raise Refused(E.group_id_not_found, f"Group {group_id} is not a consumer group.")

    def _consumer_group(self, group_id: str) -> ConsumerGroup:
        """Kafka's consumerGroup(id): the group must exist and be a consumer group."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if group_id in self.manager.groups or group_id in self.manager.share_groups:
            raise Refused(E.group_id_not_found, f"Group {group_id} is not a consumer group.")
        raise Refused(E.group_id_not_found, f"Group {group_id} not found.")

    # --- join and heartbeat --------------------------------------------------------------------
    def _heartbeat(self, request: ConsumerHeartbeat) -> _Heartbeat:
        """Kafka's consumerGroupHeartbeat (GMM), in its order; raises Refused."""
        now = self.clock.wall_ms()
        records: list[GroupRecord] = []
        group_id, epoch, instance_id = request.group_id, request.member_epoch, request.instance_id
        joining = epoch == JOIN_EPOCH
        group = self._get_or_create_group(group_id, joining, records)
        self._check_not_full(group, request.member_id, instance_id)
        member_id = request.member_id or random_member_id()  # v0 lets the coordinator choose
        if instance_id is None:
            member = self._dynamic_member(group, member_id, epoch, request.owned, joining)
        else:
            member = self._static_member(
                group, member_id, epoch, instance_id, request.owned, joining, records
            )
        updated = dataclasses.replace(
            member,
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms
            if request.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms,
            server_assignor=request.server_assignor
            if request.server_assignor is not None
            else member.server_assignor,
            subscribed_topic_names=frozenset(request.subscribed_topic_names)
            if request.subscribed_topic_names is not None
            else member.subscribed_topic_names,
            subscribed_topic_regex=request.subscribed_topic_regex
            if request.subscribed_topic_regex is not None
            else member.subscribed_topic_regex,
            client_id=request.client_id,
            client_host=request.client_host,
            classic=None,
        )
        reconciled, rebalance_timer, to_resolve = self._update_member(
            group, member, updated, owned=request.owned, records=records, classic=False, now=now
        )
        full_request = (
            request.rebalance_timeout_ms != -1
            and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
            and request.owned is not None
        )
        return _Heartbeat(
            records=records,
            member_id=member_id,
            before=member,
            computed=reconciled,
            send_assignment=joining or full_request,
            rebalance_timer=rebalance_timer,
            regexes_to_resolve=to_resolve,
        )

    def update_member(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        *,
        owned: Mapping[UUID, Collection[int]] | None,
        records: list[GroupRecord],
        classic: bool = False,
        topic_filter: TopicFilter | None = None,
        downgrade: bool = False,
    ) -> ConsumerGroupMember:
        """A member's change once its new fields are known (Kafka's consumerGroupHeartbeat and
        classicGroupJoinToConsumerGroup share it): its metadata record, its regex, the group
        epoch bump, the target assignment and the member's reconciliation. Appends the records
        and returns the reconciled member; a regex resolution it needs is scheduled. `classic`:
        a classic member's JoinGroup (a regex change bumps the epoch, the preferred assignor is
        not looked at); `downgrade`: the group becomes classic (no new target, and no
        reconciliation if the target is stale). Raises Refused or FencedMemberEpoch."""
        owned_partitions = None if owned is None else tuple((t, tuple(sorted(p))) for t, p in owned.items())
        reconciled, _, to_resolve = self._update_member(
            group,
            member,
            updated,
            owned=owned_partitions,
            records=records,
            classic=classic,
            now=self.clock.wall_ms(),
            downgrade=downgrade,
        )
        if to_resolve:
            self._schedule_regex_resolution(group.group_id, to_resolve, topic_filter)
        return reconciled

    def _update_member(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        *,
        owned: tuple[tuple[UUID, tuple[int, ...]], ...] | None,
        records: list[GroupRecord],
        classic: bool,
        now: int,
        downgrade: bool = False,
    ) -> tuple[ConsumerGroupMember, bool | None, frozenset[str] | None]:
        """Steps 6-11 of Kafka's heartbeat: (the reconciled member, what to do with its
        rebalance timer, the group's regexes to resolve)."""
        names_changed = False
        if updated != member:
            records.append(CgMember(group.group_id, updated.member_id, updated.metadata_value()))
            names_changed = updated.subscribed_topic_names != member.subscribed_topic_names
        status, to_resolve = self._update_regex(group, member, updated, records, now)
        subscription_changed = names_changed or status != _NO_CHANGE
        if classic:
            bump = subscription_changed
        else:
            assignor_changed = self._preferred_assignor(group) != self._preferred_assignor(
                group, member, updated
            )
            bump = names_changed or status == _REGEX_UPDATED_AND_RESOLVED or assignor_changed
        group_epoch, subscription_type = group.group_epoch, group.subscription_type()
        if bump or self._metadata_expired(group, now):
            group_epoch, subscription_type = self._update_subscription_metadata(
                group, bump, member, updated, records, now
            )
        if downgrade and group.assignment_epoch < group_epoch:
            return updated, None, to_resolve  # the classic group's rebalance assigns
        if downgrade:
            target_epoch = group.assignment_epoch
            target: Mapping[UUID, frozenset[int]] = group.target_of(updated.member_id, updated.instance_id)
        else:
            target_epoch, target = self._maybe_update_target(
                group, group_epoch, member, updated, subscription_type, records, now
            )
        reconciled, rebalance_timer = self._maybe_reconcile(
            group, updated, target_epoch, target, subscription_changed, owned, records
        )
        return reconciled, rebalance_timer, to_resolve

    def _check_not_full(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> None:
        if group.static_member(instance_id) is not None:
            return
        limit = self.settings.consumer_max_size
        if len(group.members) >= limit and (not member_id or member_id not in group.members):
            raise Refused(
                E.group_max_size_reached,
                f"The consumer group has reached its maximum capacity of {limit} members.",
            )

    def _dynamic_member(
        self,
        group: ConsumerGroup,
        member_id: str,
        epoch: int,
        owned: tuple[tuple[UUID, tuple[int, ...]], ...] | None,
        joining: bool,
    ) -> ConsumerGroupMember:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise Refused(
                    E.unknown_member_id, f"Member {member_id} is not a member of group {group.group_id}."
                )
            log.info("member joins the consumer group", group=group.group_id, member=member_id)
            return ConsumerGroupMember(member_id)
        self._check_epoch(member, epoch, owned)
        return member

    def _static_member(
        self,
        group: ConsumerGroup,
        member_id: str,
        epoch: int,
        instance_id: str,
        owned: tuple[tuple[UUID, tuple[int, ...]], ...] | None,
        joining: bool,
        records: list[GroupRecord],
    ) -> ConsumerGroupMember:
        existing = group.static_member(instance_id)
        if joining:
            if existing is None:
                log.info(
                    "static member joins the consumer group",
                    group=group.group_id,
                    member=member_id,
                    instance=instance_id,
                )
                return group.members.get(member_id) or ConsumerGroupMember(member_id)
            if not existing.uses_classic_protocol and existing.member_epoch != STATIC_LEAVE_EPOCH:
                raise Refused(
                    E.unreleased_instance_id,
                    f"Static member {member_id} with instance id {instance_id} cannot join the group "
                    f"because the instance id is owned by {existing.member_id} member.",
                )
            # the rejoining instance takes the old member's place and keeps its assignment
            new = dataclasses.replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
            gid = group.group_id
            records.extend(self._member_tombstones(gid, existing.member_id))
            records.append(CgMember(gid, member_id, new.metadata_value()))
            old_target = group.target.get(existing.member_id, {})
            records.append(CgTarget(gid, member_id, _target_value(old_target)))
            records.append(CgCurrent(gid, member_id, new.current_value()))
            log.info(
                "static member rejoins the consumer group",
                group=gid,
                instance=instance_id,
                member=member_id,
                replaced=existing.member_id,
            )
            return new
        if existing is None:
            raise Refused(E.unknown_member_id, f"Instance id {instance_id} is unknown.")
        self._check_instance_owner(existing, member_id, instance_id)
        self._check_epoch(existing, epoch, owned)
        return existing

    @staticmethod
    def _check_instance_owner(member: ConsumerGroupMember, member_id: str, instance_id: str) -> None:
        if member.member_id != member_id:
            raise Refused(
                E.fenced_instance_id,
                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                f"{member.member_id}.",
            )

    @staticmethod
    def _check_epoch(
        member: ConsumerGroupMember, epoch: int, owned: tuple[tuple[UUID, tuple[int, ...]], ...] | None
    ) -> None:
        """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a member a bump behind may retry
        with its previous epoch if it owns nothing outside its assignment."""
        if epoch == JOIN_EPOCH:
            return
        if epoch > member.member_epoch:
            raise Refused(
                E.fenced_member_epoch,
                f"The consumer group member has a greater member epoch ({epoch}) than the one known "
                f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                "partitions and rejoin.",
            )
        if epoch < member.member_epoch and (
            epoch != member.previous_member_epoch or not _is_subset(owned, member.assigned)
        ):
            raise Refused(
                E.fenced_member_epoch,
                f"The consumer group member has a smaller member epoch ({epoch}) than the one known "
                f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                "partitions and rejoin.",
            )

    # --- subscriptions -------------------------------------------------------------------------
    @staticmethod
    def _members_with(
        group: ConsumerGroup, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
    ) -> list[ConsumerGroupMember]:
        """The group's members with `old` replaced by `new` (either may be None)."""
        members = dict(group.members)
        if old is not None:
            members.pop(old.member_id, None)
        if new is not None:
            members[new.member_id] = new
        return list(members.values())

    @staticmethod
    def _regex_counts(members: Iterable[ConsumerGroupMember]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for member in members:
            regex = _non_empty(member.subscribed_topic_regex)
            if regex is not None:
                counts[regex] = counts.get(regex, 0) + 1
        return counts

    @staticmethod
    def _name_counts(
        group: ConsumerGroup, members: Iterable[ConsumerGroupMember], regexes: Iterable[str]
    ) -> dict[str, _Counts]:
        """Topic name -> its SubscriptionCount over `members` and the resolved `regexes`."""
        counts: dict[str, _Counts] = {}
        for member in members:
            for name in member.subscribed_topic_names:
                by_name, by_regex = counts.get(name, (0, 0))
                counts[name] = _Counts(by_name + 1, by_regex)
        for regex in regexes:
            resolved = group.resolved_regexes.get(regex)
            if resolved is None:
                continue
            for name in resolved.topics:
                by_name, by_regex = counts.get(name, (0, 0))
                counts[name] = _Counts(by_name, by_regex + 1)
        return counts

    @staticmethod
    def _type_of(regexes: Mapping[str, int], names: Mapping[str, _Counts], num_members: int) -> str:
        """Kafka's ConsumerGroup.subscriptionType."""
        if not regexes:
            if all(c.by_name == num_members for c in names.values()):
                return "HOMOGENEOUS"
            return "HETEROGENEOUS"
        if next(iter(regexes.values())) != num_members:
            return "HETEROGENEOUS"
        if all(c.by_regex == 1 and c.by_name == 0 for c in names.values()):
            return "HOMOGENEOUS"
        return "HETEROGENEOUS"

    @staticmethod
    def _metadata_expired(group: ConsumerGroup, now: int) -> bool:
        return now >= group.metadata_refresh_deadline_ms or group.group_epoch < group.metadata_refresh_epoch

    @staticmethod
    def _refreshed(group: ConsumerGroup, now: int, epoch: int) -> None:
        """The subscribed topics' metadata was looked at for this epoch (not persisted: Kafka's
        setMetadataRefreshDeadline)."""
        group.metadata_refresh_deadline_ms = now + INT_MAX
        group.metadata_refresh_epoch = epoch

    def _update_subscription_metadata(
        self,
        group: ConsumerGroup,
        bump: bool,
        old: ConsumerGroupMember,
        new: ConsumerGroupMember,
        records: list[GroupRecord],
        now: int,
    ) -> tuple[int, str]:
        """Kafka's updateSubscriptionMetadata: the group epoch (bumped on a subscription change
        or a new metadata hash) and the subscription type, with `new` in place of `old`."""
        group_id = group.group_id
        members = self._members_with(group, old, new)
        if new.instance_id is not None:
            owner = group.static_members.get(new.instance_id)
            if owner is not None and owner != new.member_id:  # a static member replaced
                members = [m for m in members if m.member_id != owner]
        regexes = self._regex_counts(members)
        names = self._name_counts(group, members, regexes)
        metadata_hash = self._metadata_hash(names)
        subscription_type = self._type_of(regexes, names, len(members))
        epoch = group.group_epoch
        if metadata_hash != group.metadata_hash:
            bump = True
        if bump:
            epoch += 1
            records.append(CgEpoch(group_id, EpochValue(epoch, metadata_hash)))
            log.info("consumer group epoch bumped", group=group_id, epoch=epoch, metadata_hash=metadata_hash)
        self._refreshed(group, now, epoch)
        if group.has_legacy_partition_metadata:
            records.append(CgPartitionMetadataTombstone(group_id))
        return epoch, subscription_type

    def _preferred_assignor(
        self,
        group: ConsumerGroup,
        old: ConsumerGroupMember | None = None,
        new: ConsumerGroupMember | None = None,
    ) -> str:
        """The most frequent server assignor among the members (`new` in place of `old`), ties
        to the first in Java's HashMap order (Kafka's computePreferredServerAssignor); else the
        default (the first of group.consumer.assignors)."""
        counts: dict[str, int] = {}
        for member in group.members.values():
            if member.server_assignor is not None:
                counts[member.server_assignor] = counts.get(member.server_assignor, 0) + 1
        for changed, step in ((old, -1), (new, 1)):
            if changed is not None and changed.server_assignor is not None:
                counts[changed.server_assignor] = counts.get(changed.server_assignor, 0) + step
        counts = {name: count for name, count in counts.items() if count > 0}
        best: str | None = None
        for name in java_hash_order(counts, hash_string):
            if best is None or counts[name] > counts[best]:
                best = name
        return best if best is not None else self.default_assignor

    def _topic_ids(self, group: ConsumerGroup, member: ConsumerGroupMember) -> frozenset[UUID]:
        """The ids of the topics the member subscribes to (names and its resolved regex) that exist."""
        names: set[str] = set(member.subscribed_topic_names)
        regex = _non_empty(member.subscribed_topic_regex)
        if regex is not None:
            resolved = group.resolved_regexes.get(regex)
            if resolved is not None:
                names.update(resolved.topics)
        catalog = self.topics.topics
        return frozenset(shape.topic_id for name in names if (shape := catalog.get(name)) is not None)

    # --- regexes -------------------------------------------------------------------------------
    def _update_regex(
        self,
        group: ConsumerGroup,
        old: ConsumerGroupMember,
        new: ConsumerGroupMember,
        records: list[GroupRecord],
        now: int,
    ) -> tuple[int, frozenset[str] | None]:
        """Kafka's maybeUpdateRegularExpressions: the status of the member's regex change, and
        the group's regexes to resolve again (None: no resolution now)."""
        group_id = group.group_id
        old_regex, new_regex = old.subscribed_topic_regex, new.subscribed_topic_regex
        counts = group.subscribed_regexes  # regex -> members using it
        status = _NO_CHANGE
        require_refresh = False
        if old_regex != new_regex:
            status = _REGEX_UPDATED
            if old_regex and counts.get(old_regex, 0) == 1:
                records.append(CgRegex(group_id, old_regex, None))
            if new_regex:
                if counts.get(new_regex, 0) == 0:
                    problem = regex_problem(new_regex)
                    if problem is not None:
                        raise Refused(
                            E.invalid_regular_expression,
                            f"SubscribedTopicRegex `{new_regex}` is not a valid regular expression: "
                            f"{problem}.",
                        )
                    require_refresh = True
                elif new_regex in group.resolved_regexes:
                    status = _REGEX_UPDATED_AND_RESOLVED
            elif old_regex:
                status = _REGEX_UPDATED_AND_RESOLVED
        if not require_refresh and not counts:
            return status, None
        if group_id in self._regex_scheduled:
            return status, None
        last_refresh = min((r.timestamp_ms for r in group.resolved_regexes.values()), default=None)
        if last_refresh is not None and now <= last_refresh + REGEX_MIN_REFRESH_MS:
            return status, None
        subscribed = dict(counts)
        if old_regex:
            subscribed[old_regex] = subscribed.get(old_regex, 0) - 1
            if subscribed[old_regex] <= 0:
                del subscribed[old_regex]
        if new_regex:
            subscribed[new_regex] = subscribed.get(new_regex, 0) + 1
        last_version = min((r.version for r in group.resolved_regexes.values()), default=0)
        require_refresh = (
            require_refresh
            or len(subscribed) != len(group.resolved_regexes)
            or last_version < self.topics_version
            or last_refresh is None
            or now > last_refresh + self.settings.consumer_regex_refresh_interval_ms
        )
        if require_refresh and subscribed:
            return status, frozenset(subscribed)
        return status, None

    def _schedule_regex_resolution(
        self, group_id: str, regexes: frozenset[str], topic_filter: TopicFilter | None
    ) -> None:
        """Resolve the regexes in an operation of its own, right after this one (Kafka resolves
        them on an executor, then writes the result in a later operation)."""
        self._regex_scheduled.add(group_id)
        self.scheduler.call_later(0, lambda: self._resolve_regexes(group_id, regexes, topic_filter))

    def _resolve_regexes(
        self, group_id: str, regexes: frozenset[str], topic_filter: TopicFilter | None
    ) -> Operation[None]:
        """Match every topic against the group's regexes (RE2, full match) and record the
        result; bump the group epoch if a regex's topics or the metadata hash changed."""
        self._regex_scheduled.discard(group_id)
        started = self.clock.wall_ms()
        version = self.topics_version
        compiled = []
        resolved: dict[str, set[str]] = {}
        for regex in regexes:
            resolved[regex] = set()
            try:
                compiled.append((regex, re2.compile(regex, options=_RE2_OPTIONS)))
            except re2.error:
                log.warning("regex subscription ignored: not a valid expression", group=group_id, regex=regex)
        names = list(self.topics.topics)
        for name in names:
            for regex, pattern in compiled:
                if pattern.fullmatch(name):
                    resolved[regex].add(name)
        if topic_filter is not None:
            matched = {name for topics in resolved.values() for name in topics}
            allowed = set(topic_filter(matched)) if matched else set()
            for topics in resolved.values():
                topics &= allowed
        group = self.groups.get(group_id)
        if group is None:
            return
        records: list[GroupRecord] = []
        counts = self._regex_counts(group.members.values())
        in_use = [regex for regex in java_hash_order(resolved, hash_string) if counts.get(regex, 0)]
        after = {
            regex: value.topics for regex, value in group.resolved_regexes.items() if counts.get(regex, 0)
        }
        bump = False
        for regex in in_use:
            topics = resolved[regex]
            old = group.resolved_regexes.get(regex)
            if old is None or set(old.topics) != topics:
                bump = True
            after[regex] = tuple(sorted(topics))
            records.append(
                CgRegex(group_id, regex, ResolvedRegexValue(tuple(sorted(topics)), version, started))
            )
        subscribed = {name for member in group.members.values() for name in member.subscribed_topic_names}
        subscribed.update(name for topics in after.values() for name in topics)
        metadata_hash = self._metadata_hash(subscribed)
        if metadata_hash != group.metadata_hash:
            bump = True
        if bump:
            epoch = group.group_epoch + 1
            records.append(CgEpoch(group_id, EpochValue(epoch, metadata_hash)))
            log.info("consumer group epoch bumped: regexes resolved", group=group_id, epoch=epoch)
            self._refreshed(group, self.clock.wall_ms(), epoch)
        log.debug(
            "regular expressions resolved",
            group=group_id,
            topics=len(names),
            regexes=sorted(in_use),
            ms=self.clock.wall_ms() - started,
        )
        if records:
            yield from self._timer_write(group_id, records)

    # --- target assignment ---------------------------------------------------------------------
    def _maybe_update_target(
        self,
        group: ConsumerGroup,
        group_epoch: int,
        old: ConsumerGroupMember,
        new: ConsumerGroupMember,
        subscription_type: str,
        records: list[GroupRecord],
        now: int,
    ) -> tuple[int, Mapping[UUID, frozenset[int]]]:
        """Kafka's maybeUpdateTargetAssignment: (target epoch, the member's target)."""
        group_id = group.group_id
        members = {m.member_id: m for m in group.members.values()}
        targets: dict[str, Mapping[UUID, frozenset[int]]] = dict(group.target)
        # the view with the updated member (a static member replaced takes its target over)
        members[new.member_id] = new
        if new.instance_id is not None:
            owner = group.static_members.get(new.instance_id)
            if owner is not None and owner != new.member_id:
                if owner in targets:
                    targets[new.member_id] = targets[owner]
                members.pop(owner, None)
                targets.pop(owner, None)
        if group.assignment_epoch >= group_epoch or not self._can_assign(group, now):
            return group.assignment_epoch, targets.get(new.member_id, {})
        assignor_name = self._preferred_assignor(group, old, new)
        assignor = ASSIGNORS[assignor_name]
        spec = GroupSpec(
            members=tuple(
                MemberSpec(
                    member_id,
                    member.instance_id,
                    member.rack_id,
                    self._topic_ids(group, member),
                    targets.get(member_id, {}),
                )
                for member_id, member in members.items()
            ),
            subscription_type=subscription_type,
        )
        partitions = {shape.topic_id: shape.num_partitions for shape in self.topics.topics.values()}
        try:
            result = assignor(spec, lambda topic_id: partitions.get(topic_id, -1))
        except PartitionAssignorError as exc:
            message = f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}"
            log.error("target assignment failed", group=group_id, error=message)
            raise Refused(E.unknown_server_error, message) from exc
        for member_id in java_hash_order(members, hash_string):
            assigned = _normalized(result.get(member_id, {}))
            if member_id not in targets or assigned != _normalized(targets[member_id]):
                records.append(CgTarget(group_id, member_id, _target_value(assigned)))
        records.append(CgTargetMeta(group_id, TargetMetaValue(group_epoch, now)))
        log.info(
            "consumer group target assignment computed",
            group=group_id,
            epoch=group_epoch,
            assignor=assignor_name,
            members=len(members),
        )
        return group_epoch, _normalized(result.get(new.member_id, {}))

    # --- reconciliation ------------------------------------------------------------------------
    def _maybe_reconcile(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        target_epoch: int,
        target: Mapping[UUID, frozenset[int]],
        subscription_changed: bool,
        owned: tuple[tuple[UUID, tuple[int, ...]], ...] | None,
        records: list[GroupRecord],
    ) -> tuple[ConsumerGroupMember, bool | None]:
        """Kafka's maybeReconcile: the member one step toward its target, and what to do with
        its rebalance timer (True schedule, False cancel, None leave)."""
        if not subscription_changed and member.is_reconciled_to(target_epoch):
            return member, None
        updated = next_member(
            member,
            target_epoch=target_epoch,
            target=target,
            subscribed_topic_ids=self._topic_ids(group, member),
            current_partition_epoch=group.current_partition_epoch,
            owned=None if owned is None else {topic_id: partitions for topic_id, partitions in owned},
            subscription_changed=subscription_changed,
        )
        if updated == member:
            return member, None
        records.append(CgCurrent(group.group_id, updated.member_id, updated.current_value()))
        log.debug(
            "consumer group member reconciled",
            group=group.group_id,
            member=updated.member_id,
            epoch=updated.member_epoch,
            previous_epoch=updated.previous_member_epoch,
            state=updated.state.label,
        )
        if updated.uses_classic_protocol:
            return updated, None
        return updated, updated.state is MemberState.UNREVOKED_PARTITIONS

    # =========================================================================================
    # Leaving and fencing
    # =========================================================================================
    def _leave(self, request: ConsumerHeartbeat) -> tuple[list[GroupRecord], HeartbeatAnswer]:
        """Kafka's consumerGroupLeave: epoch -1 (leave) or -2 (a static member's temporary leave)."""
        group_id, member_id, instance_id = request.group_id, request.member_id, request.instance_id
        group = self._consumer_group(group_id)
        answer = HeartbeatAnswer(member_id=member_id, member_epoch=request.member_epoch)
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise Refused(E.unknown_member_id, f"Member {member_id} is not a member of group {group_id}.")
            log.info("member left the consumer group", group=group_id, member=member_id)
            return self.fence_members(group, [member]), answer
        member = group.static_member(instance_id)
        if member is None:
            raise Refused(E.unknown_member_id, f"Instance id {instance_id} is unknown.")
        self._check_instance_owner(member, member_id, instance_id)
        if request.member_epoch == LEAVE_EPOCH:
            log.info(
                "static member left the consumer group",
                group=group_id,
                member=member_id,
                instance=instance_id,
            )
            return self.fence_members(group, [member]), answer
        # a temporary leave: the member keeps its partitions (no rebalance) until it rejoins or
        # its session expires
        log.info(
            "static member temporarily left the consumer group",
            group=group_id,
            member=member_id,
            instance=instance_id,
        )
        leaving = dataclasses.replace(
            member,
            member_epoch=STATIC_LEAVE_EPOCH,
            pending_revocation={},
            assigned={
                topic_id: dict.fromkeys(partitions, 0) for topic_id, partitions in member.assigned.items()
            },
        )
        records: list[GroupRecord] = [CgCurrent(group_id, member.member_id, leaving.current_value())]
        return records, HeartbeatAnswer(member_id=member.member_id, member_epoch=STATIC_LEAVE_EPOCH)

    @staticmethod
    def _member_tombstones(group_id: str, member_id: str) -> list[ConsumerGroupRecord]:
        """A member's removal, in the order replay requires: current assignment, target, metadata."""
        return [
            CgCurrent(group_id, member_id, None),
            CgTarget(group_id, member_id, None),
            CgMember(group_id, member_id, None),
        ]

    def fence_members(
        self, group: ConsumerGroup, members: Iterable[ConsumerGroupMember]
    ) -> list[GroupRecord]:
        """The records that remove these members (Kafka's fencing: their current assignment,
        target and metadata tombstones, regexes no one else uses, a group epoch bump), and
        cancel their timers. Used by leave, the timeouts and the online migration."""
        leaving = list(members)
        if not leaving:
            return []
        group_id = group.group_id
        for member in leaving:
            self.cancel_timers(group_id, member.member_id)
        downgrade = group_migration.maybe_downgrade(self, group, [m.member_id for m in leaving])
        if downgrade is not None:
            return downgrade  # the classic group's records
        records: list[GroupRecord] = []
        for member in leaving:
            records.extend(self._member_tombstones(group_id, member.member_id))
        # regexes only the leaving members use go too
        leaving_counts = self._regex_counts(leaving)
        counts = self._regex_counts(group.members.values())
        deleted = [
            r for r in java_hash_order(leaving_counts, hash_string) if counts.get(r) == leaving_counts[r]
        ]
        records.extend(CgRegex(group_id, regex, None) for regex in deleted)
        gone = {m.member_id for m in leaving}
        remaining = [m for m in group.members.values() if m.member_id not in gone]
        names = self._name_counts(
            group, remaining, [r for r in self._regex_counts(remaining) if r not in deleted]
        )
        metadata_hash = self._metadata_hash(names)
        epoch = group.group_epoch + 1
        records.append(CgEpoch(group_id, EpochValue(epoch, metadata_hash)))
        log.info(
            "consumer group epoch bumped: members removed", group=group_id, epoch=epoch, members=sorted(gone)
        )
        if not remaining:
            records.append(CgTargetMeta(group_id, TargetMetaValue(epoch, 0)))
        return records

    # =========================================================================================
    # Timers
    # =========================================================================================
    def _schedule(
        self, key: tuple[str, str, str], delay_ms: int, operation: Callable[[], Operation[None]]
    ) -> None:
        self._cancel(key)
        self._timers[key] = self.scheduler.call_later(delay_ms, operation)

    def _cancel(self, key: tuple[str, str, str]) -> None:
        handle = self._timers.pop(key, None)
        if handle is not None:
            handle.cancel()

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        """Cancel a member's session and rebalance timers."""
        self._cancel(("session", group_id, member_id))
        self._cancel(("rebalance", group_id, member_id))

    def has_timer(self, kind: str, group_id: str, member_id: str) -> bool:
        """Whether a member has a session ("session") or rebalance ("rebalance") timer."""
        return (kind, group_id, member_id) in self._timers

    def _schedule_session_timeout(self, group_id: str, member_id: str, timeout_ms: int | None = None) -> None:
        """Fence the member unless it heartbeats within its session timeout."""
        delay = self.session_timeout_ms(group_id) if timeout_ms is None else timeout_ms
        self._schedule(
            ("session", group_id, member_id), delay, lambda: self._session_expired(group_id, member_id)
        )

    def schedule_session_timeout(self, group_id: str, member_id: str, timeout_ms: int | None = None) -> None:
        """(Re)start a member's session timer (the online migration's members use their
        classic session timeout)."""
        self._schedule_session_timeout(group_id, member_id, timeout_ms)

    def _session_expired(self, group_id: str, member_id: str) -> Operation[None]:
        self._timers.pop(("session", group_id, member_id), None)
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return
        log.info("member fenced: its session expired", group=group_id, member=member_id)
        yield from self._timer_write(group_id, self.fence_members(group, [member]))

    def _schedule_rebalance_timeout(self, group_id: str, member_id: str, epoch: int, timeout_ms: int) -> None:
        """Fence the member unless it leaves `epoch` (revokes its partitions) in time."""
        self._schedule(
            ("rebalance", group_id, member_id),
            timeout_ms,
            lambda: self._rebalance_expired(group_id, member_id, epoch, timeout_ms),
        )

    def _rebalance_expired(
        self, group_id: str, member_id: str, epoch: int, timeout_ms: int
    ) -> Operation[None]:
        self._timers.pop(("rebalance", group_id, member_id), None)
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None or member.member_epoch != epoch:
            return
        log.info(
            "member fenced: it failed to transition from its epoch within the rebalance timeout",
            group=group_id,
            member=member_id,
            epoch=epoch,
            timeout_ms=timeout_ms,
        )
        yield from self._timer_write(group_id, self.fence_members(group, [member]))

    @staticmethod
    def _timer_write(group_id: str, records: Sequence[GroupRecord]) -> Operation[None]:
        if not records:
            return
        try:
            yield Write(records, durable=False)
        except Exception as exc:  # noqa: BLE001 - a timer's write failing is logged, not raised
            log.warning("consumer group write failed", group=group_id, error=str(exc))

    # =========================================================================================
    # Topic changes and loading
    # =========================================================================================
    def on_topics_changed(self, created: Collection[str], changed: Collection[str]) -> None:
        """Topics were created, or changed partition counts or were deleted: regexes are
        resolved again (after a creation) and groups subscribed to a changed topic refresh their
        metadata at their next heartbeat."""
        if created:
            self.topics_version = max(self.topics_version + 1, self.clock.wall_ms())
        touched = set(created) | set(changed)
        if not touched:
            return
        for group in self.groups.values():
            if self._subscribes_to_any(group, touched):
                group.metadata_refresh_deadline_ms = 0  # Kafka's requestMetadataRefresh
                group.metadata_refresh_epoch = -1

    @staticmethod
    def _subscribes_to_any(group: ConsumerGroup, names: set[str]) -> bool:
        for member in group.members.values():
            if not names.isdisjoint(member.subscribed_topic_names):
                return True
        return any(not names.isdisjoint(resolved.topics) for resolved in group.resolved_regexes.values())

    def on_loaded(self) -> None:
        """After a load: a session timer for every member, a rebalance timer for those still
        revoking (Kafka's onLoaded)."""
        for group_id, group in self.groups.items():
            log.info("consumer group loaded", group=group_id, members=len(group.members))
            for member_id, member in group.members.items():
                self._schedule_session_timeout(group_id, member_id)
                if member.state is MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_rebalance_timeout(
                        group_id, member_id, member.member_epoch, member.rebalance_timeout_ms
                    )


_REFUSALS = (Refused, FencedMemberEpoch, group_migration.MigrationRefused)


def _refused(exc: Exception) -> HeartbeatAnswer:
    """The answer to a heartbeat refused with `exc` (Kafka's ApiException: code and message)."""
    if isinstance(exc, Refused):
        return HeartbeatAnswer(error_code=exc.code, error_message=exc.message)
    if isinstance(exc, FencedMemberEpoch):
        return HeartbeatAnswer(error_code=E.fenced_member_epoch, error_message=str(exc))
    return HeartbeatAnswer(error_code=E.group_id_not_found, error_message=str(exc))


def _is_subset(
    owned: tuple[tuple[UUID, tuple[int, ...]], ...] | None, assigned: Mapping[UUID, Mapping[int, int]]
) -> bool:
    """Kafka's isSubset: every owned partition is assigned (None owned: not a subset)."""
    if owned is None:
        return False
    for topic_id, partitions in owned:
        mine = assigned.get(topic_id)
        if mine is None or any(p not in mine for p in partitions):
            return False
    return True


def _normalized(assignment: Mapping[UUID, Collection[int]]) -> dict[UUID, frozenset[int]]:
    """An assignment without empty topics (Kafka compares Assignment maps the same way)."""
    return {topic_id: frozenset(parts) for topic_id, parts in assignment.items() if parts}


def _target_value(assignment: Mapping[UUID, Collection[int]]) -> tuple[TopicPartitions, ...]:
    """A target as record type 7 lists it: topics in Java's HashMap order, partitions ascending."""
    return tuple(
        TopicPartitions(topic_id, tuple(sorted(assignment[topic_id])))
        for topic_id in java_hash_order([t for t, parts in assignment.items() if parts], hash_uuid)
    )
