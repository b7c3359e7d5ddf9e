"""The classic group coordinator (JoinGroup/SyncGroup/Heartbeat/LeaveGroup and offsets).

A port of Apache Kafka's GroupCoordinator (the 3.x `kafka.coordinator.group` design): one state
machine per group, Empty -> PreparingRebalance -> CompletingRebalance -> Stable (-> Dead when
deleted). It knows nothing about sockets: requests arrive as method calls, delayed answers
(JoinGroup waiting for the rebalance, SyncGroup waiting for the leader) are given to callbacks,
and time comes from an injected `coordinator.collaborators.Scheduler` (`now_ms()`,
`call_later(delay_ms, fn) -> handle`): broker/scheduler.py on the event loop, a fake clock in
unit tests.

Kafka's purgatories map to timers here:
- initial rebalance delay (`group.initial.rebalance.delay.ms`, an Empty group's first rebalance
  waits this long, extended while new members keep arriving, up to the rebalance timeout),
- the rebalance (join) timeout: members that have not rejoined by then are removed,
- the pending-sync timeout: members that do not SyncGroup within the rebalance timeout after the
  join phase are removed and the group rebalances,
- per member session timeout (heartbeat expiry), and for members admitted by MEMBER_ID_REQUIRED
  but not yet rejoined, a pending-member expiry of one session timeout.

Durability is the GroupMetadataManager's (coordinator/group_metadata_manager.py, Kafka's seam):
it holds the groups this state machine works on and appends group metadata and offsets to
__consumer_offsets before a request is answered, stages transactional offsets until their marker,
expires offsets and replays the topic at startup. This class validates requests against the
group's state and decides; the manager persists. A partition of __consumer_offsets that cannot
be written (a full disk) is given up as Kafka gives up a partition of a failed log dir: its
groups are unloaded and answer NOT_COORDINATOR until it has room again (`coordinates`), instead
of rebalancing to a new generation on every failed write.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

import structlog
from minibroker.coordinator.collaborators import Config, Scheduler
from minibroker.coordinator.group_metadata import (
    Group,
    GroupState,
    JoinCallback,
    JoinResult,
    Member,
    SyncCallback,
    SyncResult,
)
from minibroker.coordinator.group_metadata_manager import GroupMetadataManager, TopicPartition, config_value
from minibroker.coordinator.group_store import OFFSETS_TOPIC
from minibroker.protocol.errors import ErrorCode

__all__ = ["GroupCoordinator", "OFFSETS_TOPIC"]

log = structlog.get_logger("minibroker.coordinator.groups")

E = ErrorCode
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs


class GroupCoordinator:
    def __init__(self, config: Config, *, manager: GroupMetadataManager, scheduler: Scheduler) -> None:
        self.config = config
        self.scheduler = scheduler
        self.manager = manager  # the groups, their offsets and __consumer_offsets
        self.groups = manager.groups  # the one cache of groups, shared with the manager
        manager.on_unwritable = self._partition_given_up

    # --- configuration -------------------------------------------------------------------------
    @property
    def initial_rebalance_delay_ms(self) -> int:
        return config_value(self.config, "group.initial.rebalance.delay.ms", 3000)

    @property
    def min_session_timeout_ms(self) -> int:
        return config_value(self.config, "group.min.session.timeout.ms", 6000)

    @property
    def max_session_timeout_ms(self) -> int:
        return config_value(self.config, "group.max.session.timeout.ms", 1800000)

    @property
    def max_group_size(self) -> int:
        return config_value(self.config, "group.max.size", 2**31 - 1)

    def _now(self) -> int:
        return self.scheduler.now_ms()

    def partition_for(self, group_id: str) -> int:
        """The __consumer_offsets partition that holds this group (Kafka's formula)."""
        return self.manager.partition_for(group_id)

    # --- __consumer_offsets partitions that cannot be written -----------------------------------
    def coordinates(self, group_id: str) -> bool:
        """Whether this broker coordinates the group now. Not while the group's partition of
        __consumer_offsets is given up after a storage failure (a full disk): its groups are
        unloaded, group requests answer NOT_COORDINATOR and FindCoordinator
        COORDINATOR_NOT_AVAILABLE, as Kafka answers for a partition of a failed log dir, so
        clients back off instead of rebalancing (a new generation) on every failed write.
        Asking loads the partition again once its file system has room."""
        if not self.manager.unwritable:  # the usual case: one test of an empty dict
            return True
        partition = self.partition_for(group_id)
        if self.manager.is_writable(partition):
            return True
        if not self.manager.room_again(partition):
            return False
        # the groups as last written: the generation and members of the last stored sync
        for group in self.manager.reload_partition(partition):
            for member in group.members.values():
                self._schedule_heartbeat(group, member)
        return True

    def _partition_given_up(self, partition: int) -> None:
        """The manager gave up a partition: unload its groups once the operation whose write
        failed has answered (it may still hold one of them)."""
        self.scheduler.call_later(0, lambda: self._unload_partition(partition))

    def _unload_partition(self, partition: int) -> None:
        if self.manager.is_writable(partition):
            return  # already loaded again
        groups = self.manager.unload_partition(partition)
        for group in groups:
            self._stop_group(group, E.not_coordinator)
            group.transition_to(GroupState.DEAD, self._now())
        log.info("groups unloaded", partition=partition, groups=len(groups))

    # ===========================================================================================
    # JoinGroup
    # ===========================================================================================
    def join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
        *,
        require_known_member_id: bool = True,
        supports_skip_assignment: bool = False,
        reason: str | None = None,
    ) -> None:
        """Answer through `callback(JoinResult)`, now or when the rebalance completes."""
        protocols = [(name, bytes(meta)) for name, meta in protocols]
        if not group_id:
            callback(JoinResult(E.invalid_group_id, member_id))
            return
        if not self.coordinates(group_id):
            callback(JoinResult(E.not_coordinator, member_id))
            return
        if not self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms:
            callback(JoinResult(E.invalid_session_timeout, member_id))
            return
        require_known = require_known_member_id and group_instance_id is None
        is_unknown = member_id == ""
        group = self.groups.get(group_id)
        if group is None:
            if not is_unknown:
                callback(JoinResult(E.unknown_member_id, member_id))
                return
            group = self.manager.add_group(group_id)
        if not self._accept_joining_member(group, member_id):
            existing = group.members.get(member_id)
            if existing is not None:
                self._remove_member_and_update_group(group, existing, "group max size reached")
            callback(JoinResult(E.group_max_size_reached, ""))
        elif is_unknown:
            self._new_member_join(
                group,
                group_instance_id,
                require_known,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                callback,
                supports_skip_assignment,
                reason,
            )
        else:
            self._current_member_join(
                group,
                member_id,
                group_instance_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                callback,
                reason,
            )
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
            ) or group.num_awaiting_join < self.max_group_size
        return group.has(member_id) or group.size < self.max_group_size

    def _new_member_join(
        self,
        group,
        group_instance_id,
        require_known,
        client_id,
        client_host,
        rebalance_timeout_ms,
        session_timeout_ms,
        protocol_type,
        protocols,
        callback,
        supports_skip_assignment,
        reason,
    ) -> None:
        if group.is_state(GroupState.DEAD):
            callback(JoinResult(E.coordinator_not_available, ""))
            return
        if not group.supports_protocols(protocol_type, [n for n, _ in protocols]):
            callback(JoinResult(E.inconsistent_group_protocol, ""))
            return
        prefix = group_instance_id if group_instance_id is not None else (client_id or "")
        new_member_id = f"{prefix}-{uuid.uuid4()}"
        if group_instance_id is not None:
            old_member_id = group.static_member_id(group_instance_id)
            if old_member_id is not None:
                log.info(
                    "static member rejoined with a new member id",
                    group=group.group_id,
                    instance=group_instance_id,
                    old=old_member_id,
                    new=new_member_id,
                )
                self._update_static_member_and_rebalance(
                    group,
                    old_member_id,
                    new_member_id,
                    group_instance_id,
                    protocols,
                    rebalance_timeout_ms,
                    session_timeout_ms,
                    callback,
                    supports_skip_assignment,
                )
            else:
                self._add_member_and_rebalance(
                    group,
                    new_member_id,
                    group_instance_id,
                    client_id,
                    client_host,
                    rebalance_timeout_ms,
                    session_timeout_ms,
                    protocol_type,
                    protocols,
                    callback,
                    reason,
                )
        elif require_known:
            # KIP-394: hand out the id, expect the member to come back with it
            self._add_pending_member(group, new_member_id, session_timeout_ms)
            callback(JoinResult(E.member_id_required, new_member_id))
        else:
            self._add_member_and_rebalance(
                group,
                new_member_id,
                None,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                callback,
                reason,
            )

    def _current_member_join(
        self,
        group,
        member_id,
        group_instance_id,
        client_id,
        client_host,
        rebalance_timeout_ms,
        session_timeout_ms,
        protocol_type,
        protocols,
        callback,
        reason,
    ) -> None:
        if group.is_state(GroupState.DEAD):
            callback(JoinResult(E.coordinator_not_available, member_id))
            return
        if not group.supports_protocols(protocol_type, [n for n, _ in protocols]):
            callback(JoinResult(E.inconsistent_group_protocol, member_id))
            return
        if group.is_pending_member(member_id):
            if group_instance_id is not None:
                # a pending member is always dynamic; a static join with its id is a mismatch
                callback(JoinResult(E.unknown_member_id, member_id))
                return
            self._add_member_and_rebalance(
                group,
                member_id,
                None,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                callback,
                reason,
            )
            return
        instance_not_found = (
            group_instance_id is not None and group.static_member_id(group_instance_id) is None
        )
        if group.is_static_member_fenced(group_instance_id, member_id):
            callback(JoinResult(E.fenced_instance_id, member_id))
            return
        if not group.has(member_id) or instance_not_found:
            callback(JoinResult(E.unknown_member_id, member_id))
            return
        self._known_member_rejoin(
            group, group.members[member_id], rebalance_timeout_ms, session_timeout_ms, protocols, callback
        )

    def _known_member_rejoin(
        self,
        group: Group,
        member: Member,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
    ) -> None:
        """JoinGroup of a current member: what it means depends on the group's state."""
        member_id = member.member_id
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(
                group,
                member,
                protocols,
                rebalance_timeout_ms,
                session_timeout_ms,
                callback,
                "member joining during rebalance",
            )
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # it missed the join response: send the current generation again
                callback(self._join_result_for(group, member))
            else:
                self._update_member_and_rebalance(
                    group,
                    member,
                    protocols,
                    rebalance_timeout_ms,
                    session_timeout_ms,
                    callback,
                    "metadata changed",
                )
        elif state is GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                # the leader's rejoin forces a rebalance (topic metadata changes, KIP-?),
                # as does a follower whose metadata changed
                self._update_member_and_rebalance(
                    group,
                    member,
                    protocols,
                    rebalance_timeout_ms,
                    session_timeout_ms,
                    callback,
                    "leader rejoined" if group.is_leader(member_id) else "metadata changed",
                )
            else:
                callback(
                    JoinResult(
                        E.none,
                        member_id,
                        group.generation_id,
                        group.protocol_type,
                        group.protocol_name,
                        group.leader_id or "",
                        False,
                        [],
                    )
                )
        else:  # Empty/Dead: the member must reset and rejoin
            callback(JoinResult(E.unknown_member_id, member_id))

    def _join_result_for(self, group: Group, member: Member, skip_assignment: bool = False) -> JoinResult:
        return JoinResult(
            E.none,
            member.member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            skip_assignment,
            group.current_member_metadata() if group.is_leader(member.member_id) else [],
        )

    def _add_pending_member(self, group: Group, member_id: str, session_timeout_ms: int) -> None:
        def expire() -> None:
            if self.groups.get(group.group_id) is not group or member_id not in group.pending_members:
                return
            log.info("pending member expired", group=group.group_id, member=member_id)
            self._remove_pending_member_and_update_group(group, member_id)

        group.pending_members[member_id] = self.scheduler.call_later(session_timeout_ms, expire)

    def _remove_pending_member_and_update_group(self, group: Group, member_id: str) -> None:
        handle = group.pending_members.pop(member_id, None)
        _cancel(handle)
        if group.is_state(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _add_member_and_rebalance(
        self,
        group,
        member_id,
        group_instance_id,
        client_id,
        client_host,
        rebalance_timeout_ms,
        session_timeout_ms,
        protocol_type,
        protocols,
        callback,
        reason,
    ) -> None:
        member = Member(
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            protocol_type,
            list(protocols),
        )
        member.is_new = True
        member.join_callback = callback
        if group.is_state(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        pending = group.pending_members.pop(member_id, None)
        _cancel(pending)
        group.add(member)
        # A new member cannot heartbeat while its JoinGroup waits; expire abandoned joins.
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        log.info(
            "member added", group=group.group_id, member=member_id, instance=group_instance_id, reason=reason
        )
        self._maybe_prepare_rebalance(group, f"adding new member {member_id}")

    def _update_member_and_rebalance(
        self, group, member, protocols, rebalance_timeout_ms, session_timeout_ms, callback, reason
    ) -> None:
        self._replace_join_callback(member)
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        self._maybe_prepare_rebalance(group, reason)

    @staticmethod
    def _replace_join_callback(member: Member) -> None:
        # a second JoinGroup from the same member supersedes the first; answer the old one so
        # its request does not hang (Kafka drops it silently)
        old = member.join_callback
        if old is not None:
            member.join_callback = None
            old(JoinResult(E.rebalance_in_progress, member.member_id))

    def _update_static_member_and_rebalance(
        self,
        group,
        old_member_id,
        new_member_id,
        group_instance_id,
        protocols,
        rebalance_timeout_ms,
        session_timeout_ms,
        callback,
        supports_skip_assignment,
    ) -> None:
        current_leader = group.leader_id
        old = group.members[old_member_id]
        # the previous incarnation is fenced: answer its outstanding requests
        if old.join_callback is not None:
            cb, old.join_callback = old.join_callback, None
            cb(JoinResult(E.fenced_instance_id, old_member_id))
        if old.sync_callback is not None:
            cb, old.sync_callback = old.sync_callback, None
            cb(SyncResult(E.fenced_instance_id))
        old_protocols = list(old.protocols)
        old_rebalance, old_session = old.rebalance_timeout_ms, old.session_timeout_ms
        member = group.replace_static_member(group_instance_id, old_member_id, new_member_id)
        self._schedule_heartbeat(group, member)
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        state = group.state
        if state is GroupState.STABLE:
            if group.protocol_name == group.select_protocol():
                # no change of protocol: persist the new member id and answer without a rebalance
                assignment = {m.member_id: m.assignment for m in group.members.values()}
                error = self.manager.store_group(group, assignment)
                if error != E.none:
                    # revert to the old member id and protocols
                    group.replace_static_member(group_instance_id, new_member_id, old_member_id)
                    group.update_member(member, old_protocols, old_rebalance, old_session, None)
                    if current_leader == old_member_id:
                        group.leader_id = old_member_id
                    callback(JoinResult(error, ""))
                    return
                member.join_callback = None
                if supports_skip_assignment:
                    is_leader = group.is_leader(new_member_id)
                    callback(self._join_result_for(group, member, skip_assignment=is_leader))
                else:
                    # the old leader id: the member must not think it leads and re-assign
                    callback(
                        JoinResult(
                            E.none,
                            new_member_id,
                            group.generation_id,
                            group.protocol_type,
                            group.protocol_name,
                            current_leader or "",
                            False,
                            [],
                        )
                    )
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
            delay = self.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
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

        handle = self.scheduler.call_later(delay_ms, expire)
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
            error = self.manager.store_group(group, {})
            if error != E.none:
                log.warning("failed to store empty group", group=group.group_id, error=error.name)
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
            callback, member.join_callback = member.join_callback, None
            if callback is not None:
                callback(self._join_result_for(group, member))
            self._schedule_heartbeat(group, member)
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

        handle = self.scheduler.call_later(group.rebalance_timeout_ms(), expire)
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
            callback, member.sync_callback = member.sync_callback, None
            if callback is not None:
                callback(
                    SyncResult(
                        error,
                        group.protocol_type if ok else None,
                        group.protocol_name if ok else None,
                        member.assignment,
                    )
                )
                self._schedule_heartbeat(group, member)

    # --- members leaving ------------------------------------------------------------------------
    def _drop_member(self, group: Group, member: Member) -> None:
        """Take a member out of the group, answering whatever it is waiting for."""
        _cancel(member.heartbeat_timer)
        member.heartbeat_timer = None
        if member.join_callback is not None:
            join_cb, member.join_callback = member.join_callback, None
            join_cb(JoinResult(E.unknown_member_id, ""))
        if member.sync_callback is not None:
            sync_cb, member.sync_callback = member.sync_callback, None
            sync_cb(SyncResult(E.unknown_member_id))
        group.remove(member.member_id)
        if not group.pending_sync_members:
            self._cancel_sync_timer(group)

    def _remove_member_and_update_group(self, group: Group, member: Member, reason: str) -> None:
        self._drop_member(group, member)
        log.info("member removed", group=group.group_id, member=member.member_id, reason=reason)
        state = group.state
        if state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif state is GroupState.PREPARING_REBALANCE:
            self._try_complete_join(group)

    # --- heartbeats / session expiry ------------------------------------------------------------
    def _schedule_heartbeat(self, group: Group, member: Member, timeout_ms: int | None = None) -> None:
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
                self._remove_member_and_update_group(group, member, "session timeout")

        handle = self.scheduler.call_later(timeout, expire)
        member.heartbeat_timer = handle

    def _validate_current_member(
        self, group: Group, member_id: str, group_instance_id: str | None
    ) -> int | None:
        if group.is_static_member_fenced(group_instance_id, member_id):
            return E.fenced_instance_id
        if not group.has(member_id):
            return E.unknown_member_id
        return None

    # ===========================================================================================
    # SyncGroup
    # ===========================================================================================
    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
        callback: SyncCallback,
    ) -> None:
        if group_id and not self.coordinates(group_id):  # before the lookup: it may reload the group
            callback(SyncResult(E.not_coordinator))
            return
        group = self.groups.get(group_id) if group_id else None
        error = self._sync_error(
            group_id, group, generation_id, member_id, group_instance_id, protocol_type, protocol_name
        )
        if error is not None:
            callback(SyncResult(error))
            return
        assert group is not None  # _sync_error answers for a missing group
        state = group.state
        if state is GroupState.EMPTY:
            callback(SyncResult(E.unknown_member_id))
        elif state is GroupState.PREPARING_REBALANCE:
            callback(SyncResult(E.rebalance_in_progress))
        elif state is GroupState.COMPLETING_REBALANCE:
            self._await_assignment(group, member_id, generation_id, assignments, callback)
        elif state is GroupState.STABLE:
            self._remove_pending_sync_member(group, member_id)
            member = group.members[member_id]
            callback(SyncResult(E.none, group.protocol_type, group.protocol_name, member.assignment))
            self._schedule_heartbeat(group, member)
        else:  # pragma: no cover - Dead handled above
            callback(SyncResult(E.coordinator_not_available))

    def _sync_error(
        self,
        group_id: str,
        group: Group | None,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> int | None:
        """What SyncGroup answers before looking at the group's state (Kafka's order)."""
        error = self._member_error(group_id, group, generation_id, member_id, group_instance_id)
        if error is not None:
            return error
        assert group is not None  # _member_error answers for a missing group
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return E.inconsistent_group_protocol
        return None

    def _member_error(
        self,
        group_id: str,
        group: Group | None,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
    ) -> int | None:
        """SyncGroup's and Heartbeat's checks of the group, the member and its generation."""
        if not group_id:
            return E.invalid_group_id
        if not self.coordinates(group_id):
            return E.not_coordinator
        if group is None:
            return E.unknown_member_id
        if group.is_state(GroupState.DEAD):
            return E.coordinator_not_available
        error = self._validate_current_member(group, member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return E.illegal_generation
        return None

    def _await_assignment(
        self,
        group: Group,
        member_id: str,
        generation_id: int,
        assignments: dict[str, bytes],
        callback: SyncCallback,
    ) -> None:
        """SyncGroup in CompletingRebalance: members wait for the leader's assignment, which is
        stored before anyone gets it."""
        member = group.members[member_id]
        if member.sync_callback is not None:
            cb, member.sync_callback = member.sync_callback, None
            cb(SyncResult(E.rebalance_in_progress))
        member.sync_callback = callback
        self._remove_pending_sync_member(group, member_id)
        if not group.is_leader(member_id):
            return
        log.info(
            "assignment received from leader",
            group=group.group_id,
            generation=group.generation_id,
            members=len(group.members),
        )
        assignment = {mid: bytes(assignments.get(mid, b"")) for mid in group.members}
        store_error = self.manager.store_group(group, assignment)
        if not group.is_state(GroupState.COMPLETING_REBALANCE) or generation_id != group.generation_id:
            return  # the group moved on while the assignment was stored
        if store_error != E.none:
            self._reset_and_propagate_assignment_error(group, store_error)
            if self.manager.is_writable(self.partition_for(group.group_id)):
                self._maybe_prepare_rebalance(group, "failed to store group assignment")
            # else the partition was given up: the group is unloaded, not rebalanced (a new
            # generation for every failed write was the rebalance storm of a full disk)
            return
        for mid, member_assignment in assignment.items():
            group.members[mid].assignment = member_assignment
        self._propagate_assignment(group, E.none)
        group.transition_to(GroupState.STABLE, self._now())

    # ===========================================================================================
    # Heartbeat / LeaveGroup
    # ===========================================================================================
    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> int:
        if group_id and not self.coordinates(group_id):  # before the lookup: it may reload the group
            return E.not_coordinator
        group = self.groups.get(group_id) if group_id else None
        error = self._member_error(group_id, group, generation_id, member_id, group_instance_id)
        if error is not None:
            return error
        assert group is not None  # _member_error answers for a missing group
        state = group.state
        if state is GroupState.EMPTY:
            return E.unknown_member_id
        member = group.members[member_id]
        self._schedule_heartbeat(group, member)
        if state is GroupState.PREPARING_REBALANCE:
            return E.rebalance_in_progress
        return E.none

    def leave_group(
        self, group_id: str, members: Iterable[tuple[str, str | None]]
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        """Remove members (member_id, group_instance_id); an empty member id with an instance id
        removes that static member (admin removal). Returns (top-level error, per member)."""
        members = list(members)
        if not group_id:
            return E.invalid_group_id, []
        if not self.coordinates(group_id):
            return E.not_coordinator, []
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
                    self._remove_member_and_update_group(
                        group, group.members[current], "static member removed by LeaveGroup"
                    )
                    results.append((member_id, instance_id, E.none))
                else:
                    results.append((member_id, instance_id, E.unknown_member_id))
            elif group.is_pending_member(member_id):
                self._remove_pending_member_and_update_group(group, member_id)
                results.append((member_id, instance_id, E.none))
            else:
                error = self._validate_current_member(group, member_id, instance_id)
                if error is None:
                    self._remove_member_and_update_group(
                        group, group.members[member_id], "member left the group"
                    )
                    error = E.none
                results.append((member_id, instance_id, error))
        return E.none, results

    # ===========================================================================================
    # Offsets
    # ===========================================================================================
    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Iterable[tuple[str, int, int, int, str | None]],
        api_version: int = 0,
    ) -> dict[TopicPartition, int]:
        """OffsetCommit: offsets are (topic, partition, offset, leader_epoch, metadata).
        Returns the error code of every partition."""
        offsets = list(offsets)
        if not self.coordinates(group_id):
            return {(t, p): E.not_coordinator for t, p, *_ in offsets}
        results: dict[TopicPartition, int] = {}
        group = self.groups.get(group_id)
        error: int | None = None
        if group is None:
            if generation_id >= 0:
                # A member of a group this coordinator does not know: Kafka says so from v9 on,
                # and calls it a stale generation before.
                error = E.group_id_not_found if api_version >= 9 else E.illegal_generation
            else:
                error = self._validate_offset_commit(
                    Group(group_id), generation_id, member_id, group_instance_id, transactional=False
                )
        else:
            error = self._validate_offset_commit(
                group, generation_id, member_id, group_instance_id, transactional=False
            )
            if error is None and group.is_state(GroupState.COMPLETING_REBALANCE):
                error = E.rebalance_in_progress
        if error is not None:
            return {(t, p): error for t, p, *_ in offsets}
        valid = self.manager.check_offsets(offsets, results)
        if not valid:
            return results
        if group is None:
            group = self.manager.add_group(group_id)
        elif group.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE) and group.has(member_id):
            self._schedule_heartbeat(group, group.members[member_id])
        self.manager.store_offsets(group, valid, results)
        return results

    def _validate_offset_commit(
        self,
        group: Group,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        transactional: bool,
    ) -> int | None:
        """Kafka's validateOffsetCommit."""
        if group.is_state(GroupState.DEAD):
            return E.coordinator_not_available
        if generation_id >= 0 or member_id != "" or group_instance_id is not None:
            error = self._validate_current_member(group, member_id, group_instance_id)
            if error is not None:
                return error
            if generation_id != group.generation_id:
                return E.illegal_generation
            return None
        if not transactional and not group.is_state(GroupState.EMPTY):
            # while the group has members, only members may commit
            return E.unknown_member_id
        return None

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None, require_stable: bool = False
    ) -> tuple[int, list[tuple[str, int, int, int, str, int]]]:
        """OffsetFetch: (group error, [(topic, partition, offset, leader_epoch, metadata, error)]).
        `partitions=None` means every partition the group has an offset for."""
        if not self.coordinates(group_id):
            # per requested partition too: OffsetFetch v0-1 has no group-level error code
            return E.not_coordinator, [(t, p, -1, -1, "", E.not_coordinator) for t, p in partitions or ()]
        return self.manager.fetch_offsets(group_id, partitions, require_stable)

    def delete_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]:
        """OffsetDelete: (group error, per-partition errors)."""
        partitions = list(partitions)
        if not group_id:
            return E.invalid_group_id, {}
        if not self.coordinates(group_id):
            return E.not_coordinator, {}
        group = self.groups.get(group_id)
        if group is None or group.is_state(GroupState.DEAD):
            return E.group_id_not_found, {}
        results: dict[TopicPartition, int] = {}
        eligible: list[TopicPartition] = []
        if group.is_state(GroupState.EMPTY):
            eligible = list(partitions)
        elif group.is_consumer_group():
            for tp in partitions:
                if group.is_subscribed_to_topic(tp[0]):
                    results[tp] = E.group_subscribed_to_topic
                else:
                    eligible.append(tp)
        else:
            return E.non_empty_group, {}
        error, deleted = self.manager.delete_offsets(group, eligible)
        if error != E.none:
            return error, {}
        results.update(deleted)
        return E.none, results

    # ===========================================================================================
    # Transactional offsets (KIP-447), used by TxnOffsetCommit and the transaction coordinator
    # ===========================================================================================
    def stage_txn_offsets(
        self,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: Iterable[tuple[str, int, int, int, str | None]],
    ) -> dict[TopicPartition, int]:
        """TxnOffsetCommit: offsets are (topic, partition, offset, leader_epoch, metadata),
        appended inside the producer's transaction; they stay pending (invisible to OffsetFetch,
        UNSTABLE_OFFSET_COMMIT with require_stable) until `complete_txn`. Pass generation_id=-1,
        member_id="", group_instance_id=None for requests below v3. Returns the error code of
        every partition."""
        offsets = list(offsets)
        if not group_id:
            return {(t, p): E.invalid_group_id for t, p, *_ in offsets}
        if not self.coordinates(group_id):
            return {(t, p): E.not_coordinator for t, p, *_ in offsets}
        group = self.groups.get(group_id)
        # an unknown group is validated as an empty one (Kafka creates it first)
        error = self._validate_offset_commit(
            group or Group(group_id), generation_id, member_id, group_instance_id, transactional=True
        )
        if error is not None:
            return {(t, p): error for t, p, *_ in offsets}
        results: dict[TopicPartition, int] = {}
        valid = self.manager.check_offsets(offsets, results)
        if valid:
            if group is None:
                group = self.manager.add_group(group_id)
            self.manager.store_txn_offsets(group, producer_id, producer_epoch, valid, results)
        return results

    def complete_txn(self, producer_id: int, commit: bool, partition: int | None = None) -> None:
        """The marker for `producer_id` was written to __consumer_offsets (`partition`, or every
        partition if None): apply (commit) or drop (abort) its pending offsets there."""
        self.manager.complete_txn(producer_id, commit, partition)

    def has_pending_txn_offsets(self, producer_id: int) -> bool:
        return self.manager.has_pending_txn_offsets(producer_id)

    # ===========================================================================================
    # Group administration
    # ===========================================================================================
    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[dict]:
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        if wanted_types and "classic" not in wanted_types:
            return []
        out = []
        for group in self.groups.values():
            if group.is_state(GroupState.DEAD):
                continue
            if wanted_states and group.state.value.lower() not in wanted_states:
                continue
            out.append(
                dict(
                    group_id=group.group_id,
                    protocol_type=group.protocol_type or "",
                    group_state=group.state.value,
                    group_type="classic",
                )
            )
        return out

    def describe_group(self, group_id: str) -> tuple[int, dict]:
        """(error, summary) as Kafka's handleDescribeGroup; an unknown group is Dead."""
        if not self.coordinates(group_id):
            return E.not_coordinator, dict(group_state="", protocol_type="", protocol_data="", members=[])
        group = self.groups.get(group_id)
        if group is None:
            return E.none, dict(
                group_state=GroupState.DEAD.value, protocol_type="", protocol_data="", members=[]
            )
        stable = group.is_state(GroupState.STABLE)
        members = []
        for m in group.members.values():
            members.append(
                dict(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    member_metadata=m.metadata(group.protocol_name)
                    if stable and group.protocol_name
                    else b"",
                    # Kafka shows the last assignment in every state (describeNoMetadata)
                    member_assignment=m.assignment,
                )
            )
        return E.none, dict(
            group_state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=members,
        )

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, int]:
        results: dict[str, int] = {}
        for group_id in group_ids:
            if not self.coordinates(group_id):
                results[group_id] = E.not_coordinator
                continue
            group = self.groups.get(group_id)
            if group is None or group.is_state(GroupState.DEAD):
                results[group_id] = E.group_id_not_found
                continue
            if not group.is_state(GroupState.EMPTY):
                results[group_id] = E.non_empty_group
                continue
            results[group_id] = self.manager.delete_group(group)
            if results[group_id] == E.none:
                log.info("group deleted", group=group_id)
        return results

    def expire_offsets(self, now_ms: int | None = None) -> int:
        """Offsets past offsets.retention.minutes go (GroupMetadataManager.expire_offsets)."""
        return self.manager.expire_offsets(now_ms)

    def remove_topic_offsets(self, topic: str) -> int:
        """A topic was deleted: its committed offsets go too."""
        return self.manager.remove_topic_offsets(topic)

    # ===========================================================================================
    # Startup and shutdown
    # ===========================================================================================
    def load(self) -> None:
        """Rebuild the groups from __consumer_offsets; restored members' sessions start now."""
        self.manager.load()
        for group in self.groups.values():
            for member in group.members.values():
                self._schedule_heartbeat(group, member)

    def close(self) -> None:
        """Answer every waiting JoinGroup/SyncGroup (NOT_COORDINATOR, so clients rediscover the
        coordinator) and cancel all timers; for broker shutdown."""
        for group in self.groups.values():
            self._stop_group(group, E.not_coordinator)

    def _stop_group(self, group: Group, error: int) -> None:
        """Cancel the group's timers and answer every waiting JoinGroup/SyncGroup with `error`."""
        _cancel(group.join_timer)
        _cancel(group.sync_timer)
        group.join_timer = group.sync_timer = None
        for handle in group.pending_members.values():
            _cancel(handle)
        for member in group.members.values():
            _cancel(member.heartbeat_timer)
            member.heartbeat_timer = None
            if member.join_callback is not None:
                join_cb, member.join_callback = member.join_callback, None
                join_cb(JoinResult(error, member.member_id))
            if member.sync_callback is not None:
                sync_cb, member.sync_callback = member.sync_callback, None
                sync_cb(SyncResult(error))


def _cancel(handle) -> None:
    if handle is not None:
        handle.cancel()
