"""The classic group coordinator: the one object the broker talks to for groups (JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, offsets, transactional offsets, group administration).

A port of Apache Kafka's GroupCoordinator (the 3.x `kafka.coordinator.group` design), in three
parts by job:
- this module: which groups this broker answers for (`coordinates`), the gate every group
  request passes first (INVALID_GROUP_ID, NOT_COORDINATOR), offsets (OffsetCommit/Fetch/Delete,
  TxnOffsetCommit) and administration (ListGroups, DescribeGroups, DeleteGroups), loading and
  shutdown;
- coordinator/group_join.py (`GroupMembership`): the membership state machine, Empty ->
  PreparingRebalance -> CompletingRebalance -> Stable, and its timers; JoinGroup and SyncGroup
  arrive as the values of coordinator/group_requests.py; their answers are parked responses of
  the coordinator runtime (coordinator/runtime.py `Deferred`), completed now or when the
  rebalance gets there;
- coordinator/group_metadata_manager.py (`GroupMetadataManager`, Kafka's seam): the groups both
  work on and __consumer_offsets. It appends group metadata and offsets before a request is
  answered, stages transactional offsets until their marker, expires offsets and replays the
  topic at startup.

It knows nothing about sockets: time comes from an injected `common.clock.Clock` and timers from a
`coordinator.collaborators.Scheduler` (the coordinator runtime's, broker/coordinator_runtime.py,
on the event loop; a fake clock in unit tests); its settings are a frozen `GroupSettings`. A partition of
__consumer_offsets that cannot be written (a full disk) is given up as Kafka gives up a partition
of a failed log dir: its groups are unloaded and answer NOT_COORDINATOR until it has room again
(`coordinates`), instead of rebalancing to a new generation on every failed write.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

import structlog
from minibroker.common.clock import Clock
from minibroker.common.faults import Faults
from minibroker.coordinator.collaborators import NO_GROUP_CONFIGS, GroupConfigSource, Scheduler
from minibroker.coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember, ConsumerGroupState
from minibroker.coordinator.consumer_groups import ConsumerGroupCoordinator
from minibroker.coordinator.group_join import GroupMembership, current_member_error
from minibroker.coordinator.group_metadata import (
    Group,
    GroupState,
    JoinAnswer,
    JoinResult,
    SyncAnswer,
    SyncResult,
)
from minibroker.coordinator.group_metadata_manager import (
    GroupMetadataManager,
    GroupRecord,
    OffsetsRecord,
    TopicPartition,
    storage_error_for_commit,
    storage_error_for_group,
)
from minibroker.coordinator.group_requests import JoinRequest, SyncRequest
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.group_store import OFFSETS_TOPIC
from minibroker.coordinator.runtime import CoordinatorResult, Deferred, Operation, Write
from minibroker.coordinator.share_groups import ShareGroupCoordinator
from minibroker.protocol.errors import ErrorCode

__all__ = ["GroupCoordinator", "JoinRequest", "OFFSETS_TOPIC", "SyncRequest"]

log = structlog.get_logger("minibroker.coordinator.groups")

E = ErrorCode


class GroupCoordinator:
    def __init__(
        self,
        settings: GroupSettings,
        *,
        manager: GroupMetadataManager,
        clock: Clock,
        scheduler: Scheduler,
        faults: Faults | None = None,
        group_configs: GroupConfigSource | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.scheduler = scheduler  # the coordinator runtime's timers
        # the crash point offsets.after_write (common/faults.py); none armed in unit tests
        self.faults = faults if faults is not None else Faults()
        self.manager = manager  # the groups, their offsets and __consumer_offsets
        self.groups = manager.groups  # the one cache of groups, shared with the manager
        # KIP-848 consumer groups (ConsumerGroupHeartbeat), on the same shard and groups cache
        self.consumer = ConsumerGroupCoordinator(
            settings,
            manager=manager,
            group_configs=group_configs if group_configs is not None else NO_GROUP_CONFIGS,
            clock=clock,
            scheduler=scheduler,
        )
        # KIP-932 share groups (ShareGroupHeartbeat), on the same shard and groups cache
        self.share = ShareGroupCoordinator(
            settings,
            manager=manager,
            group_configs=group_configs if group_configs is not None else NO_GROUP_CONFIGS,
            clock=clock,
            scheduler=scheduler,
        )
        # classic members of consumer groups are reconciled by the consumer group coordinator
        self.membership = GroupMembership(
            settings, manager=manager, clock=clock, scheduler=scheduler, consumer=self.consumer
        )
        manager.on_unwritable = self._partition_given_up

    def partition_for(self, group_id: str) -> int:
        """The __consumer_offsets partition that holds this group (Kafka's formula)."""
        return self.manager.partition_for(group_id)

    # --- the coordinator runtime's shard (coordinator/runtime.py) -------------------------------
    def write(self, records: Sequence[GroupRecord]) -> Sequence[Any]:
        return self.manager.write(records)

    def replay(self, record: GroupRecord) -> None:
        self.manager.replay(record)

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
        self.membership.start_sessions(self.manager.reload_partition(partition))
        return True

    def _partition_given_up(self, partition: int) -> None:
        """The manager gave up a partition: unload its groups once the operation whose write
        failed has answered (it may still hold one of them)."""
        self.membership.timer(0, lambda: self._unload_partition(partition))

    def _unload_partition(self, partition: int) -> None:
        if self.manager.is_writable(partition):
            return  # already loaded again
        groups = self.manager.unload_partition(partition)
        for group in groups:
            self.membership.stop_group(group, E.not_coordinator)
            group.transition_to(GroupState.DEAD, self.clock.wall_ms())
        log.info("groups unloaded", partition=partition, groups=len(groups))

    def _refusal(self, group_id: str) -> int | None:
        """What a JoinGroup, SyncGroup, Heartbeat or LeaveGroup is answered before its group is
        looked at: INVALID_GROUP_ID for an empty id, NOT_COORDINATOR for a group of a partition
        given up (asking may load it again)."""
        if not group_id:
            return E.invalid_group_id
        if not self.coordinates(group_id):
            return E.not_coordinator
        return None

    # ===========================================================================================
    # Membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup (coordinator/group_join.py)
    # ===========================================================================================
    # Each is an operation of the coordinator runtime: the group records it queues are written
    # through the driver (GroupMembership.written) before what waits for them is answered.
    def join_group(self, request: JoinRequest) -> Operation[JoinAnswer]:
        """The JoinGroup's answer: completed now, or parked until the rebalance completes."""
        answer: JoinAnswer = Deferred()
        error = self._refusal(request.group_id)
        if error is not None:
            answer.complete(JoinResult(error, request.member_id))
        else:
            self.membership.join(request, answer)
        yield from self.membership.written()
        return answer

    def sync_group(self, request: SyncRequest) -> Operation[SyncAnswer]:
        """The SyncGroup's answer: completed now, or (a follower's, in CompletingRebalance)
        parked until the leader's assignment is stored; the leader's once it is written."""
        answer: SyncAnswer = Deferred()
        error = self._refusal(request.group_id)
        if error is not None:
            answer.complete(SyncResult(error))
        else:
            self.membership.sync(request, answer)
        yield from self.membership.written()
        return answer

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> CoordinatorResult[GroupRecord, int]:
        """Heartbeat: it only restarts the member's session timer, so it writes nothing."""
        error = self._refusal(group_id)
        if error is None:
            error = self.membership.heartbeat(group_id, member_id, group_instance_id, generation_id)
        return CoordinatorResult(error)

    def leave_group(
        self, group_id: str, members: Iterable[tuple[str, str | None]]
    ) -> Operation[tuple[int, list[tuple[str, str | None, int]]]]:
        """Remove members (member_id, group_instance_id); an empty member id with an instance id
        removes that static member (admin removal). Returns (top-level error, per member)."""
        members = list(members)
        error = self._refusal(group_id)
        if error is not None:
            return error, []
        result = self.membership.leave(group_id, members)
        yield from self.membership.written()
        return result

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
    ) -> Operation[dict[TopicPartition, int]]:
        """OffsetCommit: offsets are (topic, partition, offset, leader_epoch, metadata). An
        operation of the coordinator runtime; its response is the error code of every
        partition. A consumer group's members commit with their member epoch (v9+)."""
        offsets = list(offsets)
        if not self.coordinates(group_id):
            return {(t, p): E.not_coordinator for t, p, *_ in offsets}
        if self.manager.group_type(group_id) == "share":  # ShareGroup.validateOffsetCommit
            return {(t, p): E.group_id_not_found for t, p, *_ in offsets}
        if self.manager.group_type(group_id) == "consumer":
            return (
                yield from self._commit_consumer_offsets(
                    self.manager.consumer_groups[group_id],
                    member_id,
                    group_instance_id,
                    generation_id,
                    offsets,
                    api_version,
                )
            )
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
            self.membership.schedule_heartbeat(group, group.members[member_id])
        return (yield from self._store_offsets(self.manager.offsets_record(group_id, valid), results))

    def _commit_consumer_offsets(
        self,
        group: ConsumerGroup,
        member_id: str,
        group_instance_id: str | None,
        member_epoch: int,
        offsets: list[tuple[str, int, int, int, str | None]],
        api_version: int,
        producer: tuple[int, int] | None = None,
    ) -> Operation[dict[TopicPartition, int]]:
        """OffsetCommit (or, with a producer, TxnOffsetCommit) to a KIP-848 consumer group:
        Kafka's ConsumerGroup.validateOffsetCommit, then the per-partition assignment-epoch
        check of a member committing with an older epoch. A refusal fails the whole request:
        every partition of a topic that exists gets its error."""
        results: dict[TopicPartition, int] = {}
        valid = self.manager.check_offsets(offsets, results)
        known = [(t, p) for t, p, *_ in offsets if results.get((t, p)) != E.unknown_topic_or_partition]
        transactional = producer is not None
        try:
            check = consumer_commit_check(
                group,
                member_id,
                group_instance_id,
                member_epoch,
                transactional=transactional,
                api_version=api_version,
            )
            if check is not None:
                for (topic, partition), *_ in valid:
                    check(topic, self._topic_id(topic), partition)
        except OffsetCommitRefused as refused:
            error = refused.code
            if transactional and error == E.stale_member_epoch and api_version < 6:
                error = E.illegal_generation  # TxnOffsetCommit below v6 has no STALE_MEMBER_EPOCH
            log.debug("offset commit refused", group=group.group_id, member=member_id, error=refused.message)
            results.update((tp, error) for tp in known)
            return results
        if not valid:
            return results
        if producer is None:
            record = self.manager.offsets_record(group.group_id, valid)
        else:
            record = self.manager.offsets_record(group.group_id, valid, producer[0], producer[1])
        return (yield from self._store_offsets(record, results))

    def _topic_id(self, topic: str) -> UUID | None:
        shape = self.manager.topics.topics.get(topic)
        return shape.topic_id if shape is not None else None

    def _store_offsets(
        self, record: OffsetsRecord, results: dict[TopicPartition, int]
    ) -> Operation[dict[TopicPartition, int]]:
        """Have the runtime append the offsets and apply them (`replay`); a storage failure
        answers its retriable error for each of them."""
        try:
            yield Write((record,), durable=False)
        except Exception as exc:  # noqa: BLE001 - storage failure -> retriable error
            error = storage_error_for_commit(exc)
            log.warning(
                "offset commit append failed",
                group=record.group_id,
                transactional=record.transactional,
                error=str(exc),
            )
            results.update((tp, error) for tp, _ in record.offsets)
            return results
        self.faults.crash_point("offsets.after_write", record.group_id)
        results.update((tp, E.none) for tp, _ in record.offsets)
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
            return current_member_error(group, member_id, group_instance_id, generation_id)
        if not transactional and not group.is_state(GroupState.EMPTY):
            # while the group has members, only members may commit
            return E.unknown_member_id
        return None

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None,
        require_stable: bool = False,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> tuple[int, list[tuple[str, int, int, int, str, int]]]:
        """OffsetFetch: (group error, [(topic, partition, offset, leader_epoch, metadata, error)]).
        `partitions=None` means every partition the group has an offset for. A member of a
        KIP-848 consumer group (v9+: `member_id` given or `member_epoch` >= 0) must be one,
        at its current epoch (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH: a group error, no
        offsets)."""
        if not self.coordinates(group_id):
            # per requested partition too: OffsetFetch v0-1 has no group-level error code
            return E.not_coordinator, [(t, p, -1, -1, "", E.not_coordinator) for t, p in partitions or ()]
        if self.manager.group_type(group_id) == "share":
            # ShareGroup.validateOffsetFetch refuses, and OffsetMetadataManager answers that as
            # no group error and no committed offsets (offset -1 per partition asked for)
            return E.none, [(t, p, -1, -1, "", E.none) for t, p in partitions or ()]
        if self.manager.group_type(group_id) == "consumer":
            try:
                consumer_fetch_check(self.manager.consumer_groups[group_id], member_id, member_epoch)
            except OffsetCommitRefused as refused:
                return refused.code, []
        return self.manager.fetch_offsets(group_id, partitions, require_stable)

    def delete_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition]
    ) -> Operation[tuple[int, dict[TopicPartition, int]]]:
        """OffsetDelete, an operation of the coordinator runtime: (group error, per-partition
        errors)."""
        partitions = list(partitions)
        if not group_id:
            return E.invalid_group_id, {}
        if not self.coordinates(group_id):
            return E.not_coordinator, {}
        if self.manager.group_type(group_id) == "share":  # ShareGroup.validateOffsetDelete
            return E.group_id_not_found, {}
        if self.manager.group_type(group_id) == "consumer":
            return (
                yield from self._delete_consumer_offsets(self.manager.consumer_groups[group_id], partitions)
            )
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
        error, deleted = yield from self.manager.delete_offsets(group, eligible)
        if error != E.none:
            return error, {}
        results.update(deleted)
        return E.none, results

    def _delete_consumer_offsets(
        self, group: ConsumerGroup, partitions: list[TopicPartition]
    ) -> Operation[tuple[int, dict[TopicPartition, int]]]:
        """OffsetDelete on a KIP-848 consumer group, in any state: the partitions of a topic
        the group subscribes to (by name or through a resolved regex) are refused with
        GROUP_SUBSCRIBED_TO_TOPIC, the others' offsets go."""
        results: dict[TopicPartition, int] = {}
        eligible: list[TopicPartition] = []
        for tp in partitions:
            if group.is_subscribed_to_topic(tp[0]):
                results[tp] = E.group_subscribed_to_topic
            else:
                eligible.append(tp)
        error, deleted = yield from self.manager.delete_offsets(group, eligible)
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
        api_version: int = 0,
    ) -> Operation[dict[TopicPartition, int]]:
        """TxnOffsetCommit (an operation of the coordinator runtime): offsets are (topic,
        partition, offset, leader_epoch, metadata),
        appended inside the producer's transaction; they stay pending (invisible to OffsetFetch,
        UNSTABLE_OFFSET_COMMIT with require_stable) until `complete_txn`. Pass generation_id=-1,
        member_id="", group_instance_id=None for requests below v3. A member of a group this
        coordinator does not know (generation or member epoch >= 0) gets GROUP_ID_NOT_FOUND from
        v6, ILLEGAL_GENERATION before; a KIP-848 consumer group checks the member epoch
        (STALE_MEMBER_EPOCH from v6, ILLEGAL_GENERATION before). Returns the error code of
        every partition."""
        offsets = list(offsets)
        if not group_id:
            return {(t, p): E.invalid_group_id for t, p, *_ in offsets}
        if not self.coordinates(group_id):
            return {(t, p): E.not_coordinator for t, p, *_ in offsets}
        if self.manager.group_type(group_id) == "share":  # ShareGroup.validateOffsetCommit
            return {(t, p): E.group_id_not_found for t, p, *_ in offsets}
        if self.manager.group_type(group_id) == "consumer":
            return (
                yield from self._commit_consumer_offsets(
                    self.manager.consumer_groups[group_id],
                    member_id,
                    group_instance_id,
                    generation_id,
                    offsets,
                    api_version,
                    producer=(producer_id, producer_epoch),
                )
            )
        group = self.groups.get(group_id)
        if group is None and generation_id >= 0:
            error: int | None = E.group_id_not_found if api_version >= 6 else E.illegal_generation
        else:
            # an unknown group is validated as an empty one (Kafka creates it first)
            error = self._validate_offset_commit(
                group or Group(group_id), generation_id, member_id, group_instance_id, transactional=True
            )
        if error is not None:
            return {(t, p): error for t, p, *_ in offsets}
        results: dict[TopicPartition, int] = {}
        valid = self.manager.check_offsets(offsets, results)
        if not valid:
            return results
        if group is None:
            self.manager.add_group(group_id)
        record = self.manager.offsets_record(group_id, valid, producer_id, producer_epoch)
        return (yield from self._store_offsets(record, results))

    def complete_txn(self, producer_id: int, commit: bool, partition: int | None = None) -> None:
        """The marker for `producer_id` was written to __consumer_offsets (`partition`, or every
        partition if None): apply (commit) or drop (abort) its pending offsets there."""
        self.manager.complete_txn(producer_id, commit, partition)

    def has_pending_txn_offsets(self, producer_id: int) -> bool:
        return self.manager.has_pending_txn_offsets(producer_id)

    # ===========================================================================================
    # Group administration
    # ===========================================================================================
    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[dict[str, Any]]:
        """ListGroups: classic and KIP-848 consumer groups; `states` match case-insensitively
        (Kafka lower-cases the filter and each group's state), `types` are parsed as Kafka's
        GroupType (classic, consumer, share, streams; any other matches nothing)."""
        wanted_states = {s.lower().strip() for s in states}
        wanted_types = {t.lower() for t in types}
        out = []
        if not wanted_types or "classic" in wanted_types:
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
        if not wanted_types or "consumer" in wanted_types:
            for cg in self.manager.consumer_groups.values():
                state = cg.state
                if wanted_states and state.lower() not in wanted_states:
                    continue
                out.append(
                    dict(
                        group_id=cg.group_id,
                        protocol_type="consumer",
                        group_state=state,
                        group_type="consumer",
                    )
                )
        return out

    def group_type(self, group_id: str) -> str | None:
        """ "classic", "consumer", "share" or None (no such group)."""
        return self.manager.group_type(group_id)

    def describe_group(self, group_id: str) -> tuple[int, dict[str, Any]]:
        """(error, summary) as Kafka's handleDescribeGroup; an unknown group is Dead, and so is a
        KIP-848 consumer group (DescribeGroups describes classic groups only: Kafka's
        `classicGroup()`; ConsumerGroupDescribe describes the others)."""
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

    def describe_consumer_groups(
        self, group_ids: Iterable[str], topic_names: Mapping[UUID, str]
    ) -> list[dict[str, Any]]:
        """ConsumerGroupDescribe (69): each group as Kafka's ConsumerGroup.asDescribedGroup
        shows it (state, epochs, preferred assignor, members with their current assignment,
        pending revocations included, and their target; topics `topic_names` cannot name are
        left out), or GROUP_ID_NOT_FOUND with Kafka's message; INVALID_GROUP_ID for "" and
        NOT_COORDINATOR for a group of a partition given up."""
        out: list[dict[str, Any]] = []
        for group_id in group_ids:
            entry = described_group(group_id)
            if not group_id:
                entry["error_code"] = E.invalid_group_id
            elif not self.coordinates(group_id):
                entry["error_code"] = E.not_coordinator
            elif self.manager.group_type(group_id) != "consumer":
                kind = self.manager.group_type(group_id)
                entry["error_code"] = E.group_id_not_found
                entry["error_message"] = (
                    f"Group {group_id} not found."
                    if kind is None
                    else f"Group {group_id} is not a consumer group."
                )
            else:
                default = (
                    self.settings.consumer_assignors[0] if self.settings.consumer_assignors else "uniform"
                )
                entry = dict(self.manager.consumer_groups[group_id].describe(default, topic_names))
            out.append(entry)
        return out

    def delete_groups(self, group_ids: Iterable[str]) -> Operation[dict[str, int]]:
        """DeleteGroups, an operation of the coordinator runtime: the error of each group. A
        KIP-848 consumer group must be Empty (NON_EMPTY_GROUP); its offsets and records get
        their tombstones (Kafka's deleteAllOffsets then createGroupTombstoneRecords)."""
        results: dict[str, int] = {}
        for group_id in group_ids:
            if not self.coordinates(group_id):
                results[group_id] = E.not_coordinator
                continue
            if self.manager.group_type(group_id) == "consumer":
                results[group_id] = yield from self._delete_consumer_group(
                    self.manager.consumer_groups[group_id]
                )
                continue
            group = self.groups.get(group_id)
            if group is None or group.is_state(GroupState.DEAD):
                results[group_id] = E.group_id_not_found
                continue
            if not group.is_state(GroupState.EMPTY):
                results[group_id] = E.non_empty_group
                continue
            results[group_id] = yield from self.manager.delete_group(group)
            if results[group_id] == E.none:
                log.info("group deleted", group=group_id)
        return results

    def _delete_consumer_group(self, group: ConsumerGroup) -> Operation[int]:
        if group.state != ConsumerGroupState.EMPTY:
            return E.non_empty_group
        try:
            yield Write(tuple(self.manager.consumer_group_tombstones(group.group_id)), durable=False)
        except Exception as exc:  # noqa: BLE001 - storage failure -> retriable error
            log.warning("group delete append failed", group=group.group_id, error=str(exc))
            return storage_error_for_group(exc)
        log.info("group deleted", group=group.group_id, type="consumer")
        return E.none

    def expire_offsets(self, now_ms: int | None = None) -> Operation[int]:
        """Offsets past offsets.retention.minutes go (GroupMetadataManager.expire_offsets), a
        duty of the coordinator runtime."""
        return (yield from self.manager.expire_offsets(now_ms))

    def remove_topic_offsets(self, topic: str, topic_id: UUID | None = None) -> Operation[int]:
        """A topic was deleted: its committed offsets go too, and share groups forget its
        share-partitions (record 15; the share coordinator deletes their state). An operation of
        the coordinator runtime, as DeleteTopics runs it; how many offsets were removed."""
        removed = yield from self.manager.remove_topic_offsets(topic)
        if topic_id is not None:
            yield from self.share.topics_deleted((topic_id,))
        return removed

    def on_topics_changed(self, created: Collection[str] = (), changed: Collection[str] = ()) -> None:
        """Topics were created, or changed partition counts or were deleted: KIP-848 regexes are
        resolved again, consumer and share groups subscribed to one refresh their metadata at
        their next heartbeat (a rebalance; new share-partitions are initialized)."""
        self.consumer.on_topics_changed(created=created, changed=changed)
        self.share.on_topics_changed(created=created, changed=changed)

    # ===========================================================================================
    # Startup and shutdown
    # ===========================================================================================
    def load(self) -> None:
        """Rebuild the groups from __consumer_offsets; restored members' sessions start now."""
        self.manager.load()
        self.membership.start_sessions(self.groups.values())
        self.consumer.on_loaded()  # KIP-848 members' session (and rebalance) timers
        self.share.on_loaded()  # KIP-932 members' session timers

    def close(self) -> None:
        """Answer every waiting JoinGroup/SyncGroup (NOT_COORDINATOR, so clients rediscover the
        coordinator) and cancel all timers; for broker shutdown."""
        self.membership.close()
        self.consumer.close()
        self.share.close()


# ===============================================================================================
# KIP-848 consumer groups: who may commit and fetch offsets (Kafka 4.4's ConsumerGroup
# validateOffsetCommit / validateOffsetFetch)
# ===============================================================================================
class OffsetCommitRefused(Exception):
    """A commit or fetch refused as a whole: its error code and Kafka's message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


#: Checks one partition of a commit: (topic name, topic id or None, partition); raises
#: OffsetCommitRefused.
PartitionCheck = Callable[[str, "UUID | None", int], None]


def consumer_commit_check(
    group: ConsumerGroup,
    member_id: str,
    instance_id: str | None,
    member_epoch: int,
    *,
    transactional: bool,
    api_version: int,
) -> PartitionCheck | None:
    """Kafka's ConsumerGroup.validateOffsetCommit: None when every partition may be committed,
    a per-partition check for a member committing with an epoch older than its current one
    (each partition must be assigned or pending revocation to it since that epoch or before).
    Raises OffsetCommitRefused: UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION (a consumer-protocol
    member below OffsetCommit v9), STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for a member that
    joined with the classic protocol)."""
    if member_epoch < 0 and not group.members:
        return None  # an admin's or a simple commit to an empty group
    if transactional and member_epoch == -1 and member_id == "" and instance_id is None:
        return None  # a producer without the consumer's group metadata
    member = group.members.get(member_id)
    if member is None:
        raise OffsetCommitRefused(
            E.unknown_member_id, f"Member {member_id} is not a member of group {group.group_id}."
        )
    classic = member.uses_classic_protocol
    if not transactional and not classic and api_version < 9:
        raise OffsetCommitRefused(
            E.unsupported_version,
            "OffsetCommit version 9 or above must be used by members using the consumer group protocol",
        )
    if member_epoch == member.member_epoch:
        return None
    if member_epoch > member.member_epoch:
        what = "generation id" if classic else "member epoch"
        raise OffsetCommitRefused(
            E.illegal_generation if classic else E.stale_member_epoch,
            f"Received {what} {member_epoch} is newer than current member epoch {member.member_epoch}.",
        )
    return _assignment_epoch_check(member, member_epoch)


def _assignment_epoch_check(member: ConsumerGroupMember, member_epoch: int) -> PartitionCheck:
    """Kafka 4.4's createAssignmentEpochValidator."""
    classic = member.uses_classic_protocol
    code = E.illegal_generation if classic else E.stale_member_epoch
    what = "generation id" if classic else "member epoch"

    def check(topic: str, topic_id: UUID | None, partition: int) -> None:
        epoch = None
        if topic_id is not None:
            epoch = member.assigned.get(topic_id, {}).get(partition)
            if epoch is None:
                epoch = member.pending_revocation.get(topic_id, {}).get(partition)
        if epoch is None:
            raise OffsetCommitRefused(
                code, f"Partition {topic}-{partition} is not assigned or pending revocation for member."
            )
        if member_epoch < epoch:
            raise OffsetCommitRefused(
                code,
                f"Received {what} {member_epoch} is older than assignment epoch {epoch} "
                f"for partition {topic}-{partition}.",
            )

    return check


def consumer_fetch_check(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> None:
    """Kafka's ConsumerGroup.validateOffsetFetch: a fetch naming a member (OffsetFetch v9+:
    a member id, or an epoch >= 0) must come from a member at its current epoch. An admin
    sends no member id and epoch -1. Raises OffsetCommitRefused."""
    if member_id is None and member_epoch < 0:
        return
    member = group.members.get(member_id) if member_id is not None else None
    if member is None:
        raise OffsetCommitRefused(
            E.unknown_member_id, f"Member {member_id} is not a member of group {group.group_id}."
        )
    if member_epoch != member.member_epoch:
        if member.uses_classic_protocol:
            raise OffsetCommitRefused(
                E.illegal_generation,
                f"The received generation id {member_epoch} does not match the expected member epoch "
                f"{member.member_epoch}.",
            )
        raise OffsetCommitRefused(
            E.stale_member_epoch,
            f"The received member epoch {member_epoch} does not match the expected member epoch "
            f"{member.member_epoch}.",
        )


def described_group(
    group_id: str, error_code: int = E.none, error_message: str | None = None
) -> dict[str, Any]:
    """A group of ConsumerGroupDescribe or ShareGroupDescribe with nothing described: the answer
    of a group refused (with its error), or the start of one described."""
    return dict(
        error_code=error_code,
        error_message=error_message,
        group_id=group_id,
        group_state="",
        group_epoch=0,
        assignment_epoch=0,
        assignor_name="",
        members=[],
    )
