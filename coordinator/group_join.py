"""The classic group membership protocol: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, the
rebalance they drive and its timers.

A port of Apache Kafka's classic group state machine (GroupCoordinator of `kafka.coordinator.group`
in 3.x, the classic-group half of GroupMetadataManager in 4.x): one state machine per group,
Empty -> PreparingRebalance -> CompletingRebalance -> Stable (-> Dead when deleted). Requests
arrive as values (coordinator/group_requests.py) after coordinator/groups.py has checked that
this broker coordinates the group. Delayed answers (JoinGroup waiting for the rebalance,
SyncGroup waiting for the leader) are parked `Deferred`s of the coordinator runtime
(coordinator/runtime.py), completed by a later request or timer. Time comes from an injected
`common.clock.Clock`, timers from a `coordinator.collaborators.Scheduler` (`call_later(delay_ms,
fn) -> handle`, the coordinator runtime's), limits from `GroupSettings`.

Kafka's purgatories map to timers here:
- initial rebalance delay (`group.initial.rebalance.delay.ms`, an Empty group's first rebalance
  waits this long, extended while new members keep arriving, up to the rebalance timeout),
- the rebalance (join) timeout: members that have not rejoined by then are removed,
- the pending-sync timeout: members that do not SyncGroup within the rebalance timeout after the
  join phase are removed and the group rebalances,
- per member session timeout (heartbeat expiry), and for members admitted by MEMBER_ID_REQUIRED
  but not yet rejoined, a pending-member expiry of one session timeout.

What a rebalance decides is stored before anyone is answered, as in Kafka's classic group
(`CoordinatorResult` with records and an `appendFuture` to complete once they are written): a
path that persists the group queues its metadata record with what to do once it is written
(`_store`), and every entry point is an operation of the coordinator runtime
(coordinator/runtime.py) that ends with `written()`: the driver appends the queued records
(`Write(..., replay=False)`: the state is already changed here, the record persists it; a load
replays it) and the continuations answer, revert or rebalance. Timers fire such operations too
(`timer`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import structlog
from minibroker.common.clock import Clock
from minibroker.coordinator.collaborators import Scheduler, TimerHandle
from minibroker.coordinator.group_metadata import (
    Group,
    GroupState,
    JoinAnswer,
    JoinResult,
    Member,
    SyncAnswer,
    SyncResult,
)
from minibroker.coordinator.group_metadata_manager import (
    GroupMetadataManager,
    GroupRecord,
    storage_error_for_group,
)
from minibroker.coordinator.group_migration import ClassicMembers
from minibroker.coordinator.group_requests import JoinRequest, SyncRequest
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.runtime import Operation, Write
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.coordinator.group_migration import ConsumerSide

__all__ = ["GroupMembership", "current_member_error"]

log = structlog.get_logger("minibroker.coordinator.groups")

E = ErrorCode
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs
#: The least an initial rebalance's join phase lasts, with group.initial.rebalance.delay.ms=0
#: too. Kafka never ends that phase inside the JoinGroup that began it: the delay is a task of
#: its timer thread that, once due, queues a write event back onto the coordinator thread, and
#: each extension round (a member joined meanwhile) is another such hop. Measured on Kafka 4.4
#: (warm, loopback, delay 0): a lone member's rejoin is answered 2.4-6 ms after it arrives, and
#: a second member rejoining up to ~1.5 ms after the first usually lands in the same generation;
#: librdkafka's test 0089 starts two consumers together and expects one generation. An asyncio
#: timer of 0 ms fires ~0.15 ms later, too soon for a consumer started alongside; each round of
#: the initial delay lasts at least this long instead (Kafka's few milliseconds, without its
#: jitter).
INITIAL_JOIN_MIN_DELAY_MS = 5


def current_member_error(
    group: Group, member_id: str, group_instance_id: str | None, generation_id: int | None = None
) -> int | None:
    """FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID unless `member_id` is a current member (with
    its instance id, if static), then ILLEGAL_GENERATION unless `generation_id` (if given) is
    the group's; None if all match."""
    if group.is_static_member_fenced(group_instance_id, member_id):
        return E.fenced_instance_id
    if not group.has(member_id):
        return E.unknown_member_id
    if generation_id is not None and generation_id != group.generation_id:
        return E.illegal_generation
    return None


class GroupMembership:
    """Joins, syncs, heartbeats and leaves of the groups the manager holds. Every public method
    expects GroupCoordinator to have checked the group id and that this broker coordinates it.

    A group id that names a KIP-848 consumer group (the manager's `consumer_groups`) is served by
    coordinator/group_migration.py `ClassicMembers`: classic members inside a consumer group,
    reconciled by the consumer group coordinator (`consumer`) as its own members are. Besides the
    writes of the running operation, an instance keeps no state: the groups and their timers
    hold it."""

    def __init__(
        self,
        settings: GroupSettings,
        *,
        manager: GroupMetadataManager,
        clock: Clock,
        scheduler: Scheduler,
        consumer: ConsumerSide | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.scheduler = scheduler
        self.manager = manager
        self.groups = manager.groups  # the one cache of groups, shared with the manager
        # records the running operation writes (replayed or not), each with what to do once
        # they are written (E.NONE) or failed (its error): Kafka's appendFuture.whenComplete
        self._unwritten: list[tuple[Sequence[GroupRecord], bool, Callable[[ErrorCode], None]]] = []
        # classic members of consumer groups (online migration); None: no consumer groups here
        self.classic_members = (
            ClassicMembers(consumer, self._write_replayed) if consumer is not None else None
        )

    def _now(self) -> int:
        return self.clock.wall_ms()

    # --- writing through the coordinator runtime ------------------------------------------------
    def _store(self, group: Group, assignment: dict[str, bytes], then: Callable[[ErrorCode], None]) -> None:
        """Persist the group (Kafka's storeGroup) when the running operation ends (`written`);
        `then(error)` once the append is done."""
        self._unwritten.append(((self.manager.group_record(group, assignment),), False, then))

    def _write_replayed(self, records: Sequence[GroupRecord], then: Callable[[ErrorCode], None]) -> None:
        """Records that change the state by their replay (a consumer group's), written when the
        running operation ends; `then(error)` once they are written and replayed."""
        self._unwritten.append((tuple(records), True, then))

    def written(self) -> Operation[None]:
        """The end of every membership operation: have the runtime append the group records it
        queued, in order, and run what waits for each (which may queue more)."""
        while self._unwritten:
            records, replay, then = self._unwritten.pop(0)
            if not records:
                then(E.none)
                continue
            try:
                yield Write(records, durable=False, replay=replay)
            except Exception as exc:  # noqa: BLE001 - a storage failure answers its error
                log.warning("group metadata append failed", group=records[0].group_id, error=str(exc))
                then(storage_error_for_group(exc))
            else:
                then(E.none)

    def timer(self, delay_ms: int, fn: Callable[[], None]) -> TimerHandle:
        """A timer that fires `fn` as an operation of the coordinator runtime (its writes go
        through the driver like a request's)."""

        def operation() -> Operation[None]:
            fn()
            yield from self.written()

        return self.scheduler.call_later(delay_ms, operation)

    # ===========================================================================================
    # JoinGroup
    # ===========================================================================================
    def join(self, request: JoinRequest, answer: JoinAnswer) -> None:
        """Complete `answer` now, or park it on the member until the rebalance completes."""
        member_id = request.member_id
        if (
            not self.settings.min_session_timeout_ms
            <= request.session_timeout_ms
            <= self.settings.max_session_timeout_ms
        ):
            answer.complete(JoinResult(E.invalid_session_timeout, member_id))
            return
        if request.group_id in self.manager.share_groups:  # Kafka's classicGroupJoin (KIP-932)
            answer.complete(JoinResult(E.inconsistent_group_protocol, ""))
            return
        consumer_group = self.manager.consumer_groups.get(request.group_id)
        if consumer_group is None:
            self._join_classic(request, answer)
        elif self.classic_members is None:
            answer.complete(JoinResult(E.coordinator_not_available, member_id))
        elif not consumer_group.is_empty():
            self.classic_members.join(consumer_group, request, answer)
        else:
            # an empty consumer group gives way to a classic group (its offsets stay: they
            # belong to the group id), as Kafka's maybeDeleteEmptyConsumerGroup
            log.info("converting the empty consumer group to a classic group", group=request.group_id)

            def deleted(error: ErrorCode) -> None:
                if error != E.none:
                    answer.complete(JoinResult(error, member_id))
                else:
                    self._join_classic(request, answer)

            self._write_replayed(consumer_group.tombstones(), deleted)

    def _join_classic(self, request: JoinRequest, answer: JoinAnswer) -> None:
        member_id = request.member_id
        group = self.groups.get(request.group_id)
        if group is None:
            if member_id:
                answer.complete(JoinResult(E.unknown_member_id, member_id))
                return
            group = self.manager.add_group(request.group_id)
        if not self._accept_joining_member(group, member_id):
            existing = group.members.get(member_id)
            if existing is not None:
                self.remove_member_and_update_group(group, existing, "group max size reached")
            answer.complete(JoinResult(E.group_max_size_reached, ""))
        elif member_id == "":
            self._new_member_join(group, request, answer)
        else:
            self._current_member_join(group, request, answer)
        if group.is_state(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        state = group.state
        if state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if state is GroupState.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (
                member is not None and member.awaiting_join
            ) or group.num_awaiting_join < self.settings.max_size
        return group.has(member_id) or group.size < self.settings.max_size

    def _new_member_join(self, group: Group, request: JoinRequest, answer: JoinAnswer) -> None:
        if group.is_state(GroupState.DEAD):
            answer.complete(JoinResult(E.coordinator_not_available, ""))
            return
        if not group.supports_protocols(request.protocol_type, request.protocol_names()):
            answer.complete(JoinResult(E.inconsistent_group_protocol, ""))
            return
        instance_id = request.group_instance_id
        prefix = instance_id if instance_id is not None else (request.client_id or "")
        new_member_id = f"{prefix}-{uuid.uuid4()}"
        if instance_id is not None:
            old_member_id = group.static_member_id(instance_id)
            if old_member_id is not None:
                log.info(
                    "static member rejoined with a new member id",
                    group=group.group_id,
                    instance=instance_id,
                    old=old_member_id,
                    new=new_member_id,
                )
                self._update_static_member_and_rebalance(group, request, old_member_id, new_member_id, answer)
            else:
                self._add_member_and_rebalance(group, request, new_member_id, answer)
        elif request.require_known_member_id:
            # KIP-394: hand out the id, expect the member to come back with it
            self._add_pending_member(group, new_member_id, request.session_timeout_ms)
            answer.complete(JoinResult(E.member_id_required, new_member_id))
        else:
            self._add_member_and_rebalance(group, request, new_member_id, answer)

    def _current_member_join(self, group: Group, request: JoinRequest, answer: JoinAnswer) -> None:
        member_id = request.member_id
        instance_id = request.group_instance_id
        if group.is_state(GroupState.DEAD):
            answer.complete(JoinResult(E.coordinator_not_available, member_id))
            return
        if not group.supports_protocols(request.protocol_type, request.protocol_names()):
            answer.complete(JoinResult(E.inconsistent_group_protocol, member_id))
            return
        if group.is_pending_member(member_id):
            if instance_id is not None:
                # a pending member is always dynamic; a static join with its id is a mismatch
                answer.complete(JoinResult(E.unknown_member_id, member_id))
                return
            self._add_member_and_rebalance(group, request, member_id, answer)
            return
        instance_not_found = instance_id is not None and group.static_member_id(instance_id) is None
        if group.is_static_member_fenced(instance_id, member_id):
            answer.complete(JoinResult(E.fenced_instance_id, member_id))
            return
        if not group.has(member_id) or instance_not_found:
            answer.complete(JoinResult(E.unknown_member_id, member_id))
            return
        self._known_member_rejoin(group, group.members[member_id], request, answer)

    def _known_member_rejoin(
        self, group: Group, member: Member, request: JoinRequest, answer: JoinAnswer
    ) -> None:
        """JoinGroup of a current member: what it means depends on the group's state."""
        member_id = member.member_id
        protocols = list(request.protocols)
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(
                group, member, request, answer, "member joining during rebalance"
            )
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # it missed the join response: send the current generation again
                answer.complete(self._join_result_for(group, member))
            else:
                self._update_member_and_rebalance(group, member, request, answer, "metadata changed")
        elif state is GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                # the leader's rejoin forces a rebalance (topic metadata changes, KIP-?),
                # as does a follower whose metadata changed
                reason = "leader rejoined" if group.is_leader(member_id) else "metadata changed"
                self._update_member_and_rebalance(group, member, request, answer, reason)
            else:
                answer.complete(self._join_result_for(group, member, members=False))
        else:  # Empty/Dead: the member must reset and rejoin
            answer.complete(JoinResult(E.unknown_member_id, member_id))

    def _join_result_for(
        self,
        group: Group,
        member: Member,
        skip_assignment: bool = False,
        *,
        members: bool = True,
        leader_id: str | None = None,
    ) -> JoinResult:
        """The current generation as `member` is told it: the members' metadata for the leader
        (unless `members=False`), the group's leader unless `leader_id` names another."""
        return JoinResult(
            E.none,
            member.member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            (group.leader_id if leader_id is None else leader_id) or "",
            skip_assignment,
            group.current_member_metadata() if members and group.is_leader(member.member_id) else [],
        )

    def _add_pending_member(self, group: Group, member_id: str, session_timeout_ms: int) -> None:
        def expire() -> None:
            if self.groups.get(group.group_id) is not group or member_id not in group.pending_members:
                return
            log.info("pending member expired", group=group.group_id, member=member_id)
            self.remove_pending_member_and_update_group(group, member_id)

        group.pending_members[member_id] = self.timer(session_timeout_ms, expire)

    def remove_pending_member_and_update_group(self, group: Group, member_id: str) -> None:
        handle = group.pending_members.pop(member_id, None)
        _cancel(handle)
        if group.is_state(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _add_member_and_rebalance(
        self, group: Group, request: JoinRequest, member_id: str, answer: JoinAnswer
    ) -> None:
        member = Member(
            member_id,
            request.group_instance_id,
            request.client_id,
            request.client_host,
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            request.protocol_type,
            list(request.protocols),
        )
        member.is_new = True
        member.join_answer = answer
        if group.is_state(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        pending = group.pending_members.pop(member_id, None)
        _cancel(pending)
        group.add(member)
        # A new member cannot heartbeat while its JoinGroup waits; expire abandoned joins.
        self.schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        log.info(
            "member added",
            group=group.group_id,
            member=member_id,
            instance=request.group_instance_id,
            reason=request.reason,
        )
        self._maybe_prepare_rebalance(group, f"adding new member {member_id}")

    def _update_member_and_rebalance(
        self, group: Group, member: Member, request: JoinRequest, answer: JoinAnswer, reason: str
    ) -> None:
        self._replace_join_answer(member)
        self._update_member(group, member, request, answer)
        self._maybe_prepare_rebalance(group, reason)

    @staticmethod
    def _update_member(group: Group, member: Member, request: JoinRequest, answer: JoinAnswer | None) -> None:
        """The member's protocols and timeouts as `request` gives them; `answer` awaits the
        join."""
        group.update_member(
            member,
            list(request.protocols),
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            answer,
        )

    @staticmethod
    def _replace_join_answer(member: Member) -> None:
        # a second JoinGroup from the same member supersedes the first; answer the old one so
        # its request does not hang (Kafka drops it silently)
        old = member.join_answer
        if old is not None:
            member.join_answer = None
            old.complete(JoinResult(E.rebalance_in_progress, member.member_id))

    def _update_static_member_and_rebalance(
        self,
        group: Group,
        request: JoinRequest,
        old_member_id: str,
        new_member_id: str,
        answer: JoinAnswer,
    ) -> None:
        instance_id = request.group_instance_id
        assert instance_id is not None  # a static member's join
        current_leader = group.leader_id
        old = group.members[old_member_id]
        # the previous incarnation is fenced: answer its outstanding requests
        if old.join_answer is not None:
            join_cb, old.join_answer = old.join_answer, None
            join_cb.complete(JoinResult(E.fenced_instance_id, old_member_id))
        if old.sync_answer is not None:
            sync_cb, old.sync_answer = old.sync_answer, None
            sync_cb.complete(SyncResult(E.fenced_instance_id))
        old_protocols = list(old.protocols)
        old_rebalance, old_session = old.rebalance_timeout_ms, old.session_timeout_ms
        member = group.replace_static_member(instance_id, old_member_id, new_member_id)
        self.schedule_heartbeat(group, member)
        self._update_member(group, member, request, answer)
        state = group.state
        if state is GroupState.STABLE:
            if group.protocol_name == group.select_protocol():
                # no change of protocol: persist the new member id and answer without a rebalance
                assignment = {m.member_id: m.assignment for m in group.members.values()}

                def stored(error: ErrorCode) -> None:
                    if error != E.none:
                        # revert to the old member id and protocols
                        group.replace_static_member(instance_id, new_member_id, old_member_id)
                        group.update_member(member, old_protocols, old_rebalance, old_session, None)
                        if current_leader == old_member_id:
                            group.leader_id = old_member_id
                        answer.complete(JoinResult(error, ""))
                        return
                    member.join_answer = None
                    if request.supports_skip_assignment:
                        is_leader = group.is_leader(new_member_id)
                        answer.complete(self._join_result_for(group, member, skip_assignment=is_leader))
                    else:
                        # the old leader id: the member must not think it leads and re-assign
                        answer.complete(
                            self._join_result_for(
                                group, member, members=False, leader_id=current_leader or ""
                            )
                        )

                self._store(group, assignment, stored)
            else:
                self._maybe_prepare_rebalance(group, "static member changed protocols")
        elif state is GroupState.COMPLETING_REBALANCE:
            # the leader may have seen the old member id: rebalance so assignments line up
            self._prepare_rebalance(group, "static member rejoined during CompletingRebalance")
        # PreparingRebalance: the member simply waits for the join to complete

    # --- rebalance machinery --------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def prepare_rebalance(self, group: Group, reason: str) -> None:
        """Start a rebalance of a group that can rebalance (a group just made classic again by an
        online downgrade, coordinator/group_migration.py)."""
        self._maybe_prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_state(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, E.rebalance_in_progress)
        self._cancel_sync_timer(group)
        was_empty = group.is_state(GroupState.EMPTY)
        group.transition_to(GroupState.PREPARING_REBALANCE, self._now())
        log.info(
            "preparing to rebalance", group=group.group_id, generation=group.generation_id, reason=reason
        )
        if was_empty:
            configured = self.settings.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - configured, 0)  # as Kafka: the configured delay
            delay = max(configured, INITIAL_JOIN_MIN_DELAY_MS)
            self._schedule_initial_join(group, delay, delay, remaining)
        else:
            self._schedule_join(group, group.rebalance_timeout_ms())
            self._try_complete_join(group)

    def _schedule_join(self, group: Group, timeout_ms: int) -> None:
        """The rebalance (join) timeout: members that have not rejoined by then are removed."""
        group.initial_join = False
        self._set_join_timer(group, timeout_ms, lambda: self._complete_join(group))

    def _schedule_initial_join(self, group: Group, configured_delay: int, delay: int, remaining: int) -> None:
        """group.initial.rebalance.delay.ms, extended while members keep arriving, up to the
        rebalance timeout (`remaining`)."""
        group.initial_join = True

        def expire() -> None:
            if group.new_member_added and remaining != 0:
                group.new_member_added = False
                next_delay = min(configured_delay, remaining)
                self._schedule_initial_join(group, configured_delay, next_delay, max(remaining - delay, 0))
            else:
                self._complete_join(group)

        self._set_join_timer(group, delay, expire)

    def _set_join_timer(self, group: Group, delay_ms: int, on_expiry: Callable[[], None]) -> None:
        """Replace the group's join timer; it fires only if still current while the group is
        PreparingRebalance."""
        _cancel(group.join_timer)

        def expire() -> None:
            if group.join_timer is not handle or not group.is_state(GroupState.PREPARING_REBALANCE):
                return
            group.join_timer = None
            on_expiry()

        handle = self.timer(delay_ms, expire)
        group.join_timer = handle

    def _try_complete_join(self, group: Group) -> None:
        """Kafka's DelayedJoin.tryComplete: done early when every member has rejoined (the
        initial delay never completes early)."""
        if not group.is_state(GroupState.PREPARING_REBALANCE) or group.initial_join:
            return
        if group.has_all_members_joined():
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        """Kafka's onCompleteJoin."""
        _cancel(group.join_timer)
        group.join_timer = None
        group.initial_join = False
        for member in group.not_yet_rejoined_members():
            if not member.is_static:
                log.info(
                    "member did not rejoin in time, removing it",
                    group=group.group_id,
                    member=member.member_id,
                )
                self._drop_member(group, member)
        if group.is_state(GroupState.DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # only static members that have not rejoined remain: wait for them (or their session
            # timeouts)
            log.warning("no member rejoined, waiting another rebalance timeout", group=group.group_id)
            self._schedule_join(group, group.rebalance_timeout_ms())
            return
        group.init_next_generation(self._now())
        if group.is_state(GroupState.EMPTY):
            log.info("group is now empty", group=group.group_id, generation=group.generation_id)

            def stored(error: ErrorCode) -> None:
                if error != E.none:
                    log.warning("failed to store empty group", group=group.group_id, error=error.name)

            self._store(group, {}, stored)
            return
        log.info(
            "group stabilized, awaiting sync",
            group=group.group_id,
            generation=group.generation_id,
            protocol=group.protocol_name,
            members=len(group.members),
            leader=group.leader_id,
        )
        for member in list(group.members.values()):
            answer, member.join_answer = member.join_answer, None
            if answer is not None:
                answer.complete(self._join_result_for(group, member))
            self.schedule_heartbeat(group, member)
            member.is_new = False
        self._schedule_pending_sync(group)

    def _schedule_pending_sync(self, group: Group) -> None:
        self._cancel_sync_timer(group)
        generation = group.generation_id

        def expire() -> None:
            if group.sync_timer is not handle:
                return
            group.sync_timer = None
            if generation != group.generation_id or group.state not in (
                GroupState.COMPLETING_REBALANCE,
                GroupState.STABLE,
            ):
                return
            if not group.pending_sync_members:
                return
            missing = sorted(group.pending_sync_members)
            log.info("members did not sync in time, removing them", group=group.group_id, members=missing)
            for member_id in missing:
                member = group.members.get(member_id)
                if member is not None:
                    self._drop_member(group, member)
            self._prepare_rebalance(group, "pending sync expired")

        handle = self.timer(group.rebalance_timeout_ms(), expire)
        group.sync_timer = handle

    def _cancel_sync_timer(self, group: Group) -> None:
        _cancel(group.sync_timer)
        group.sync_timer = None

    def _remove_pending_sync_member(self, group: Group, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self._cancel_sync_timer(group)

    def _reset_and_propagate_assignment_error(self, group: Group, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: Group, error: int) -> None:
        ok = error == E.none
        for member in list(group.members.values()):
            answer, member.sync_answer = member.sync_answer, None
            if answer is not None:
                answer.complete(
                    SyncResult(
                        error,
                        group.protocol_type if ok else None,
                        group.protocol_name if ok else None,
                        member.assignment,
                    )
                )
                self.schedule_heartbeat(group, member)

    # --- members leaving ------------------------------------------------------------------------
    def _drop_member(self, group: Group, member: Member) -> None:
        """Take a member out of the group, answering whatever it is waiting for."""
        _cancel(member.heartbeat_timer)
        member.heartbeat_timer = None
        if member.join_answer is not None:
            join_cb, member.join_answer = member.join_answer, None
            join_cb.complete(JoinResult(E.unknown_member_id, ""))
        if member.sync_answer is not None:
            sync_cb, member.sync_answer = member.sync_answer, None
            sync_cb.complete(SyncResult(E.unknown_member_id))
        group.remove(member.member_id)
        if not group.pending_sync_members:
            self._cancel_sync_timer(group)

    def remove_member_and_update_group(self, group: Group, member: Member, reason: str) -> None:
        self._drop_member(group, member)
        log.info("member removed", group=group.group_id, member=member.member_id, reason=reason)
        state = group.state
        if state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif state is GroupState.PREPARING_REBALANCE:
            self._try_complete_join(group)

    # --- heartbeats / session expiry ------------------------------------------------------------
    def schedule_heartbeat(self, group: Group, member: Member, timeout_ms: int | None = None) -> None:
        """Kafka's completeAndScheduleNextExpiration: the member must heartbeat (or be waiting
        in a join/sync) within its session timeout from now."""
        _cancel(member.heartbeat_timer)
        member.heartbeat_satisfied = False
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms

        def expire() -> None:
            if member.heartbeat_timer is not handle:
                return
            member.heartbeat_timer = None
            if (
                self.groups.get(group.group_id) is not group
                or group.members.get(member.member_id) is not member
            ):
                return
            if not member.has_satisfied_heartbeat():
                log.info(
                    "member session expired, removing it",
                    group=group.group_id,
                    member=member.member_id,
                    session_timeout_ms=member.session_timeout_ms,
                )
                self.remove_member_and_update_group(group, member, "session timeout")

        handle = self.timer(timeout, expire)
        member.heartbeat_timer = handle

    def start_sessions(self, groups: Iterable[Group]) -> None:
        """Loaded groups' members get their session timeout from now (Kafka starts a loaded
        member's heartbeat expiration when its group is loaded)."""
        for group in groups:
            for member in group.members.values():
                self.schedule_heartbeat(group, member)

    # ===========================================================================================
    # SyncGroup
    # ===========================================================================================
    def sync(self, request: SyncRequest, answer: SyncAnswer) -> None:
        """Complete `answer` now, or (a follower's, in CompletingRebalance) park it on the member
        until the leader's assignment is stored."""
        consumer_group = self.manager.consumer_groups.get(request.group_id)
        if consumer_group is not None:
            if consumer_group.is_empty() or self.classic_members is None:
                answer.complete(SyncResult(E.unknown_member_id))
            else:
                self.classic_members.sync(consumer_group, request, answer)
            return
        group = self.groups.get(request.group_id)
        error = self._sync_error(group, request)
        if error is not None:
            answer.complete(SyncResult(error))
            return
        assert group is not None  # _sync_error answers for a missing group
        state = group.state
        if state is GroupState.EMPTY:
            answer.complete(SyncResult(E.unknown_member_id))
        elif state is GroupState.PREPARING_REBALANCE:
            answer.complete(SyncResult(E.rebalance_in_progress))
        elif state is GroupState.COMPLETING_REBALANCE:
            self._await_assignment(group, request, answer)
        elif state is GroupState.STABLE:
            self._remove_pending_sync_member(group, request.member_id)
            member = group.members[request.member_id]
            answer.complete(SyncResult(E.none, group.protocol_type, group.protocol_name, member.assignment))
            self.schedule_heartbeat(group, member)
        else:  # pragma: no cover - Dead handled above
            answer.complete(SyncResult(E.coordinator_not_available))

    def _sync_error(self, group: Group | None, request: SyncRequest) -> int | None:
        """What SyncGroup answers before looking at the group's state (Kafka's order)."""
        error = self._member_error(group, request.generation_id, request.member_id, request.group_instance_id)
        if error is not None:
            return error
        assert group is not None  # _member_error answers for a missing group
        if (request.protocol_type is not None and request.protocol_type != group.protocol_type) or (
            request.protocol_name is not None and request.protocol_name != group.protocol_name
        ):
            return E.inconsistent_group_protocol
        return None

    @staticmethod
    def _member_error(
        group: Group | None, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int | None:
        """SyncGroup's and Heartbeat's checks of the group, the member and its generation."""
        if group is None:
            return E.unknown_member_id
        if group.is_state(GroupState.DEAD):
            return E.coordinator_not_available
        return current_member_error(group, member_id, group_instance_id, generation_id)

    def _await_assignment(self, group: Group, request: SyncRequest, answer: SyncAnswer) -> None:
        """SyncGroup in CompletingRebalance: members wait for the leader's assignment, which is
        stored before anyone gets it."""
        member_id = request.member_id
        member = group.members[member_id]
        if member.sync_answer is not None:
            cb, member.sync_answer = member.sync_answer, None
            cb.complete(SyncResult(E.rebalance_in_progress))
        member.sync_answer = answer
        self._remove_pending_sync_member(group, member_id)
        if not group.is_leader(member_id):
            return
        log.info(
            "assignment received from leader",
            group=group.group_id,
            generation=group.generation_id,
            members=len(group.members),
        )
        assignments = request.assignments
        assignment = {mid: bytes(assignments.get(mid, b"")) for mid in group.members}

        def stored(error: ErrorCode) -> None:
            if (
                not group.is_state(GroupState.COMPLETING_REBALANCE)
                or request.generation_id != group.generation_id
            ):
                return  # the group moved on while the assignment was stored
            if error != E.none:
                self._reset_and_propagate_assignment_error(group, error)
                if self.manager.is_writable(self.manager.partition_for(group.group_id)):
                    self._maybe_prepare_rebalance(group, "failed to store group assignment")
                # else the partition was given up: the group is unloaded, not rebalanced (a new
                # generation for every failed write was the rebalance storm of a full disk)
                return
            for mid, member_assignment in assignment.items():
                group.members[mid].assignment = member_assignment
            self._propagate_assignment(group, E.none)
            group.transition_to(GroupState.STABLE, self._now())

        # the leader and the followers are answered once the assignment is written
        self._store(group, assignment, stored)

    # ===========================================================================================
    # Heartbeat / LeaveGroup
    # ===========================================================================================
    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> int:
        consumer_group = self.manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            if self.classic_members is None:
                return E.unknown_member_id
            return self.classic_members.heartbeat(consumer_group, member_id, group_instance_id, generation_id)
        group = self.groups.get(group_id)
        error = self._member_error(group, generation_id, member_id, group_instance_id)
        if error is not None:
            return error
        assert group is not None  # _member_error answers for a missing group
        state = group.state
        if state is GroupState.EMPTY:
            return E.unknown_member_id
        member = group.members[member_id]
        self.schedule_heartbeat(group, member)
        if state is GroupState.PREPARING_REBALANCE:
            return E.rebalance_in_progress
        return E.none

    def leave(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        """Remove members (member_id, group_instance_id); an empty member id with an instance id
        removes that static member (admin removal). Returns (top-level error, per member)."""
        consumer_group = self.manager.consumer_groups.get(group_id)
        if consumer_group is not None and self.classic_members is not None:
            return E.none, self.classic_members.leave(consumer_group, members)
        group = self.groups.get(group_id)
        if group is None:
            return E.none, [(m, i, E.unknown_member_id) for m, i in members]
        if group.is_state(GroupState.DEAD):
            return E.coordinator_not_available, []
        results: list[tuple[str, str | None, int]] = []
        for member_id, instance_id in members:
            if member_id == "":
                current = group.static_member_id(instance_id)
                if current is not None:
                    self.remove_member_and_update_group(
                        group, group.members[current], "static member removed by LeaveGroup"
                    )
                    results.append((member_id, instance_id, E.none))
                else:
                    results.append((member_id, instance_id, E.unknown_member_id))
            elif group.is_pending_member(member_id):
                self.remove_pending_member_and_update_group(group, member_id)
                results.append((member_id, instance_id, E.none))
            else:
                error = current_member_error(group, member_id, instance_id)
                if error is None:
                    self.remove_member_and_update_group(
                        group, group.members[member_id], "member left the group"
                    )
                    error = E.none
                results.append((member_id, instance_id, error))
        return E.none, results

    # ===========================================================================================
    # Unloading and shutdown
    # ===========================================================================================
    def stop_group(self, group: Group, error: int) -> None:
        """Cancel the group's timers and answer every waiting JoinGroup/SyncGroup with `error`."""
        group.stop(error)

    def close(self) -> None:
        """Broker shutdown: every waiting JoinGroup/SyncGroup answered NOT_COORDINATOR (clients
        rediscover the coordinator), every timer cancelled, those of classic members of consumer
        groups too."""
        for group in self.groups.values():
            self.stop_group(group, E.not_coordinator)
        if self.classic_members is not None:
            self.classic_members.close()


def _cancel(handle: TimerHandle | None) -> None:
    if handle is not None:
        handle.cancel()
