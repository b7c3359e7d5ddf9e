"""The groups and what is persisted of them: Kafka's GroupMetadataManager for one broker.

It owns the cache of groups (shared with coordinator/groups.py, which runs the membership
protocol on them) and everything that goes to or comes from `__consumer_offsets`
(coordinator/group_records.py formats, through a `coordinator.collaborators.OffsetsStore`):
group metadata records, committed offsets, offset deletion and expiry, transactional offsets
(KIP-447: appended in a transactional batch, pending until the transaction coordinator writes the
marker and calls `complete_txn`), and the replay of the topic at startup. KIP-848 consumer
groups (`consumer_groups`, coordinator/consumer_group.py) are written and replayed here too,
their records in coordinator/consumer_group_records.py's format; offsets belong to the group id,
whichever kind of group holds it (`offsets_holder`).

Every change is appended before it is applied in memory; a failed append leaves the state as it
was and answers Kafka's error for it. A partition that cannot be written (a full disk, an I/O
error: KAFKA_STORAGE_ERROR from storage) is given up as Kafka gives up a partition of a failed
log dir: its groups are unloaded (`unload_partition`, the coordinator answers NOT_COORDINATOR for
them and FindCoordinator COORDINATOR_NOT_AVAILABLE, so clients back off instead of rebalancing on
every failed write), and loaded again from what was written (`reload_partition`) once its file
system has room (`room_again`, checked at most every `RETRY_INTERVAL_MS`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import structlog
from minibroker.common.clock import Clock
from minibroker.coordinator import (
    consumer_group,
    consumer_group_records,
    group_records,
    share_group,
    share_group_records,
)
from minibroker.coordinator.collaborators import OffsetsStore, TopicCatalog
from minibroker.coordinator.consumer_group import ConsumerGroup
from minibroker.coordinator.consumer_group_records import ConsumerGroupRecord
from minibroker.coordinator.group_metadata import Group, GroupState, Member, OffsetAndMetadata
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.internal_topic import InternalBatch, StoredBatch
from minibroker.coordinator.partitioning import partition_for
from minibroker.coordinator.runtime import Operation, Write
from minibroker.coordinator.share_group import ShareGroup
from minibroker.coordinator.share_group_records import ShareGroupRecord
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError

__all__ = [
    "ClassicGroupTombstone",
    "GroupMetadataManager",
    "TopicPartition",
    "storage_error_for_commit",
    "storage_error_for_group",
]

log = structlog.get_logger("minibroker.coordinator.groups")

E = ErrorCode
#: A partition that could not be written is tried again only with this much room on its file
#: system (a group metadata record is a few KiB; this leaves room for more than one write).
ROOM_TO_RESUME_BYTES = 1 << 20
#: ... and checked at most this often (clients retry FindCoordinator every 100 ms - 1 s).
RETRY_INTERVAL_MS = 1000

TopicPartition = tuple[str, int]
T = TypeVar("T")
#: (topic, partition), offset, leader epoch, metadata
OffsetEntry = tuple[TopicPartition, int, int, str | None]


class OffsetsRecord(NamedTuple):
    """The group coordinator's record for the coordinator runtime: one batch of a group's
    committed offsets, plain or (producer_id >= 0) inside that producer's transaction, pending
    until its marker. `write` appends it (and numbers its offsets), `replay` applies it."""

    group_id: str
    offsets: tuple[tuple[TopicPartition, OffsetAndMetadata], ...]
    producer_id: int = -1
    producer_epoch: int = -1

    @property
    def transactional(self) -> bool:
        return self.producer_id >= 0


class OffsetsRemoval(NamedTuple):
    """The group coordinator's other record: tombstones for a group's committed offsets of
    `partitions`, and for the group itself when `group_gone` (DeleteGroups, the expiry of an
    Empty group's last offsets)."""

    group_id: str
    partitions: tuple[TopicPartition, ...]
    group_gone: bool = False


class GroupMetadataRecord(NamedTuple):
    """A classic group's metadata (Kafka's GroupMetadataValue: generation, protocol, leader,
    members and their assignments), written when a rebalance decides it. The membership state
    machine changes the group itself and writes this without replay; a load replays it to
    rebuild the group."""

    group_id: str
    value: group_records.GroupValue


class ClassicGroupTombstone(NamedTuple):
    """The tombstone of a classic group's metadata record (key type 2) alone, its offsets kept:
    written when a classic group becomes a consumer group (online upgrade). Offsets belong to the
    group id, not to its type (Kafka keeps them apart from the groups): a replay that removes a
    group with offsets left leaves an empty classic group holding them, and a consumer group
    created over a classic group takes its offsets over."""

    group_id: str


class TxnMarker(NamedTuple):
    """A transaction marker in a partition of __consumer_offsets, as a load replays it: the
    producer's pending offsets there are applied (commit) or dropped. Written by the transaction
    coordinator (coordinator/transactions.py), never by this shard."""

    producer_id: int
    commit: bool
    partition: int


#: The record classes of consumer_group_records (written in one batch per group and operation).
_CONSUMER_RECORD_TYPES: frozenset[type] = frozenset(
    {
        consumer_group_records.CgEpoch,
        consumer_group_records.CgPartitionMetadataTombstone,
        consumer_group_records.CgMember,
        consumer_group_records.CgTargetMeta,
        consumer_group_records.CgTarget,
        consumer_group_records.CgCurrent,
        consumer_group_records.CgRegex,
    }
)

#: The record classes of share_group_records (KIP-932, types 10-15; batched as the above).
_SHARE_RECORD_TYPES: frozenset[type] = frozenset(
    {
        share_group_records.SgMember,
        share_group_records.SgEpoch,
        share_group_records.SgTargetMeta,
        share_group_records.SgTarget,
        share_group_records.SgCurrent,
        share_group_records.SgStatePartitions,
    }
)

#: What the group coordinator hands the coordinator runtime to write and replay.
GroupRecord = (
    OffsetsRecord
    | OffsetsRemoval
    | GroupMetadataRecord
    | ClassicGroupTombstone
    | ConsumerGroupRecord
    | ShareGroupRecord
)
#: ... and what a load replays besides.
LoadedRecord = GroupRecord | TxnMarker


@dataclass(slots=True)
class Unwritable:
    """A __consumer_offsets partition whose last append failed for want of storage."""

    error: str
    since_ms: int
    checked_ms: int


class GroupMetadataManager:
    def __init__(
        self, settings: GroupSettings, *, store: OffsetsStore, topics: TopicCatalog, clock: Clock
    ) -> None:
        self.settings = settings
        self.store = store  # __consumer_offsets
        self.topics = topics  # which topics exist (offsets for others are refused)
        self.clock = clock
        # the classic groups, and the KIP-848 consumer groups (coordinator/consumer_group.py):
        # a group id names one or the other, never both (`group_type`)
        self.groups: dict[str, Group] = {}
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        # KIP-932 share groups (coordinator/share_group.py): the same id namespace
        self.share_groups: dict[str, ShareGroup] = {}
        # producer id -> ids of groups holding its pending transactional offsets
        self._txn_groups: dict[int, set[str]] = {}
        self.loaded = False
        # partitions given up after a storage failure, and who to tell (the coordinator, which
        # unloads their groups once the operation that failed has answered)
        self.unwritable: dict[int, Unwritable] = {}
        self.on_unwritable: Callable[[int], None] | None = None

    def _now_ms(self) -> int:
        return self.clock.wall_ms()

    @property
    def metadata_max_bytes(self) -> int:
        return self.settings.offset_metadata_max_bytes

    def partition_for(self, group_id: str) -> int:
        """The __consumer_offsets partition that holds this group (Kafka's formula)."""
        return partition_for(group_id, self.store.num_partitions())

    def group_type(self, group_id: str) -> str | None:
        """ "classic", "consumer", "share" or None (no such group)."""
        if group_id in self.groups:
            return "classic"
        if group_id in self.consumer_groups:
            return "consumer"
        if group_id in self.share_groups:
            return "share"
        return None

    def offsets_holder(self, group_id: str) -> Group | ConsumerGroup | None:
        """The group holding the id's offsets, classic or consumer (offsets belong to the id)."""
        return self.groups.get(group_id) or self.consumer_groups.get(group_id)

    def add_group(self, group_id: str) -> Group:
        group = self.groups[group_id] = Group(group_id, GroupState.EMPTY, self._now_ms())
        return group

    # --- partitions that cannot be written ----------------------------------------------------------
    def _append(self, group_id: str, batch: InternalBatch) -> int:
        """Append to the group's partition; a storage failure gives the partition up (see the
        module docstring) and is raised for the caller to answer."""
        partition = self.partition_for(group_id)
        try:
            return self.store.append(partition, batch)
        except (KafkaStorageError, OSError) as exc:
            if isinstance(exc, OSError) or exc.error_code == E.kafka_storage_error:
                self._give_up(partition, exc)
            raise

    def _give_up(self, partition: int, exc: Exception) -> None:
        if partition in self.unwritable:
            return
        now = self._now_ms()
        self.unwritable[partition] = Unwritable(str(exc), now, now)
        path, free = self.space(partition)
        log.warning(
            "__consumer_offsets partition cannot be written: its groups are unloaded and answer "
            "NOT_COORDINATOR (FindCoordinator: COORDINATOR_NOT_AVAILABLE), so their clients back "
            "off; they are loaded again from what was written once there is room",
            partition=partition,
            path=path,
            free_bytes=free,
            room_needed_bytes=ROOM_TO_RESUME_BYTES,
            error=str(exc),
        )
        if self.on_unwritable is not None:
            self.on_unwritable(partition)

    def space(self, partition: int) -> tuple[str | None, int | None]:
        """(directory, bytes free) of the partition, where the store can tell."""
        return self.store.space(partition)

    def is_writable(self, partition: int) -> bool:
        return partition not in self.unwritable

    def room_again(self, partition: int) -> bool:
        """For a partition given up: True (and no longer given up) once its file system has
        room again, asked at most every RETRY_INTERVAL_MS; the caller reloads it then."""
        state = self.unwritable.get(partition)
        if state is None:
            return True
        now = self._now_ms()
        if now - state.checked_ms < RETRY_INTERVAL_MS:
            return False
        state.checked_ms = now
        _, free = self.space(partition)
        if free is not None and free < ROOM_TO_RESUME_BYTES:
            return False
        del self.unwritable[partition]
        log.info(
            "__consumer_offsets partition has room again: loading its groups",
            partition=partition,
            free_bytes=free,
            unavailable_ms=now - state.since_ms,
        )
        return True

    def unload_partition(self, partition: int) -> list[Group]:
        """Take the partition's groups out of the cache (Kafka's removeGroupsForPartition); the
        caller answers what they were waiting for and cancels their timers."""
        gone = [g for gid, g in self.groups.items() if self.partition_for(gid) == partition]
        gone_ids = {g.group_id for g in gone}
        for group in gone:
            del self.groups[group.group_id]
        # consumer groups go too (returned are the classic ones, whose sessions the caller ends)
        for group_id in [gid for gid in self.consumer_groups if self.partition_for(gid) == partition]:
            del self.consumer_groups[group_id]
            gone_ids.add(group_id)
        for group_id in [gid for gid in self.share_groups if self.partition_for(gid) == partition]:
            del self.share_groups[group_id]
        for producer_id in list(self._txn_groups):
            ids = self._txn_groups[producer_id]
            ids -= gone_ids
            if not ids:
                del self._txn_groups[producer_id]
        return gone

    def reload_partition(self, partition: int) -> list[Group]:
        """Load the partition's groups again from what __consumer_offsets holds; returns them."""
        before = set(self.groups)
        records = self._load_partition(partition)
        loaded = [g for gid, g in self.groups.items() if self.partition_for(gid) == partition]
        log.info(
            "group coordinator partition loaded",
            partition=partition,
            groups=len(loaded),
            records=records,
            new=len(set(self.groups) - before),
        )
        return loaded

    # --- offsets ----------------------------------------------------------------------------------
    def check_offsets(
        self, offsets: Iterable[tuple[str, int, int, int, str | None]], results: dict[TopicPartition, int]
    ) -> list[OffsetEntry]:
        """The offsets that may be stored; the others get their error in `results`
        (UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE)."""
        valid = []
        for topic, partition, offset, leader_epoch, metadata in offsets:
            tp = (topic, partition)
            if not self.topic_exists(topic, partition):
                results[tp] = E.unknown_topic_or_partition
            elif metadata is not None and len(metadata.encode("utf-8")) > self.metadata_max_bytes:
                results[tp] = E.offset_metadata_too_large
            else:
                valid.append((tp, offset, leader_epoch, metadata))
        return valid

    def topic_exists(self, topic: str, partition: int) -> bool:
        info = self.topics.topics.get(topic)
        return info is not None and 0 <= partition < info.num_partitions

    def offsets_record(
        self, group_id: str, valid: list[OffsetEntry], producer_id: int = -1, producer_epoch: int = -1
    ) -> OffsetsRecord:
        """The record of an OffsetCommit (or, with a producer, a TxnOffsetCommit)."""
        now = self._now_ms()
        offsets = tuple(
            (tp, OffsetAndMetadata(offset, -1 if epoch is None else epoch, metadata or "", now))
            for tp, offset, epoch, metadata in valid
        )
        return OffsetsRecord(group_id, offsets, producer_id, producer_epoch)

    # --- the coordinator runtime's shard: write and replay ----------------------------------------
    def write(self, records: Sequence[GroupRecord]) -> Sequence[Any]:
        """Append the records to the group's partition (a transactional one inside its
        producer's transaction) and number committed offsets by their place in the log: each
        classic record as one batch; consecutive consumer group records (and classic group
        tombstones) of one group as ONE batch, as Kafka appends all records of an operation
        (a heartbeat's epoch, member, target and assignment records are applied together or not
        at all, at load too). Nothing to wait for here: the answer barrier
        (broker/connection.py) covers a log its flush policy made due, as for every record of
        __consumer_offsets."""
        pending: list[tuple[bytes, bytes | None]] = []
        pending_group: str | None = None
        for record in records:
            share = type(record) in _SHARE_RECORD_TYPES
            if isinstance(record, ClassicGroupTombstone) or share or type(record) in _CONSUMER_RECORD_TYPES:
                if pending and pending_group != record.group_id:
                    self._append(pending_group or "", InternalBatch(pending))
                    pending = []
                pending_group = record.group_id
                if isinstance(record, ClassicGroupTombstone):
                    pending.append((group_records.encode_group_key(record.group_id), None))
                elif share:
                    pending.append(share_group_records.encode(record))  # type: ignore[arg-type]
                else:
                    pending.append(consumer_group_records.encode(record))  # type: ignore[arg-type]
                continue
            if pending:
                self._append(pending_group or "", InternalBatch(pending))
                pending = []
            self._write_classic(record)
        if pending:
            self._append(pending_group or "", InternalBatch(pending))
        return ()

    def _write_classic(self, record: GroupRecord) -> None:
        if isinstance(record, GroupMetadataRecord):
            key = group_records.encode_group_key(record.group_id)
            self._append(
                record.group_id, InternalBatch([(key, group_records.encode_group_value(record.value))])
            )
            return
        if isinstance(record, OffsetsRemoval):
            tombstones: list[tuple[bytes, bytes | None]] = [
                (group_records.encode_offset_key(record.group_id, t, p), None) for t, p in record.partitions
            ]
            if record.group_gone:
                tombstones.append((group_records.encode_group_key(record.group_id), None))
            self._append(record.group_id, InternalBatch(tombstones))
            return
        assert isinstance(record, OffsetsRecord), record
        offsets = [
            (
                group_records.encode_offset_key(record.group_id, tp[0], tp[1]),
                group_records.encode_offset_value(
                    group_records.OffsetValue(om.offset, om.leader_epoch, om.metadata, om.commit_timestamp)
                ),
            )
            for tp, om in record.offsets
        ]
        batch = InternalBatch(offsets, record.producer_id, record.producer_epoch, record.transactional)
        base = self._append(record.group_id, batch)
        for i, (_, om) in enumerate(record.offsets):
            om.record_offset = base + i

    def replay(self, record: LoadedRecord) -> None:
        """Apply a written record, after its write and at load: make written offsets the
        group's (Kafka's storeOffsets), or its producer's pending ones until the marker; drop
        removed offsets (and the group, Dead); rebuild a group from its metadata (at load: the
        membership writes it without replay); apply or drop pending offsets at a marker."""
        if isinstance(record, OffsetsRemoval):
            self._remove(record)
            return
        if isinstance(record, GroupMetadataRecord):
            self._restore_group(record.group_id, record.value)
            return
        if isinstance(record, TxnMarker):
            self.complete_txn(record.producer_id, record.commit, record.partition)
            return
        if isinstance(record, ClassicGroupTombstone):
            self._drop_classic(record.group_id)
            return
        if type(record) in _SHARE_RECORD_TYPES:
            self._replay_share(record)  # type: ignore[arg-type]
            return
        if not isinstance(record, OffsetsRecord):
            self._replay_consumer(record)  # type: ignore[arg-type]
            return
        group = self.offsets_holder(record.group_id) or self.add_group(record.group_id)
        if not record.transactional:
            group.offsets.update(record.offsets)
            return
        group.pending_txn_offsets.setdefault(record.producer_id, {}).update(record.offsets)
        self._txn_groups.setdefault(record.producer_id, set()).add(record.group_id)

    def _remove(self, record: OffsetsRemoval) -> None:
        group = self.offsets_holder(record.group_id)
        if group is None:
            return
        for tp in record.partitions:
            group.offsets.pop(tp, None)
        if record.group_gone:
            self._drop_classic(record.group_id)

    def _drop_classic(self, group_id: str) -> None:
        """A classic group's metadata is gone (its key-type-2 tombstone: DeleteGroups and expiry
        after its offsets' tombstones, an online upgrade with its offsets kept). The group is
        Dead; offsets left (committed or pending in a transaction) belong to the id and stay in
        an empty classic group (Kafka keeps offsets apart from groups), which a consumer group
        created over it takes over. A load replays every type-2 tombstone this way: a deletion
        or expiry leaves no committed offsets, so it removes the group as before."""
        group = self.groups.pop(group_id, None)
        if group is None:
            return
        group.transition_to(GroupState.DEAD, self._now_ms())
        if group.offsets or group.pending_txn_offsets:
            holder = self.add_group(group_id)
            holder.offsets = group.offsets
            holder.pending_txn_offsets = group.pending_txn_offsets

    def _replay_consumer(self, record: ConsumerGroupRecord) -> None:
        """A consumer group record (types 3-8, 16) through `consumer_group.replay`. A consumer
        group created over a classic group of the id (an empty one, after its tombstone in the
        same batch: Kafka replaces a "simple" classic group) takes its offsets over; a consumer
        group removed with offsets left (its type-3 tombstone: an online downgrade, whose
        classic group metadata follows) leaves them in an empty classic group."""
        group_id = record.group_id
        classic = self.groups.get(group_id)
        if classic is not None and getattr(record, "value", None) is not None:
            if classic.members:
                log.warning(
                    "consumer group record for a classic group with members: the classic group is replaced",
                    group=group_id,
                    record=type(record).__name__,
                )
            del self.groups[group_id]
        before = self.consumer_groups.get(group_id)
        try:
            consumer_group.replay(self.consumer_groups, record)
        except consumer_group.IllegalGroupState as exc:
            # Kafka fails the partition's load on it; here the record is skipped (the group
            # stays as it was) so the other groups load: its members rejoin if it mattered
            if classic is not None and group_id not in self.groups:
                self.groups[group_id] = classic
            log.warning(
                "skipping a consumer group record out of order for its group",
                group=group_id,
                record=type(record).__name__,
                reason=str(exc),
            )
            return
        after = self.consumer_groups.get(group_id)
        if classic is not None and after is not None and group_id not in self.groups:
            after.offsets.update(classic.offsets)
            for producer_id, offsets in classic.pending_txn_offsets.items():
                after.pending_txn_offsets.setdefault(producer_id, {}).update(offsets)
        elif before is not None and after is None and (before.offsets or before.pending_txn_offsets):
            holder = self.groups.get(group_id) or self.add_group(group_id)
            holder.offsets.update(before.offsets)
            for producer_id, offsets in before.pending_txn_offsets.items():
                holder.pending_txn_offsets.setdefault(producer_id, {}).update(offsets)

    def _replay_share(self, record: ShareGroupRecord) -> None:
        """A share group record (types 10-15) through `share_group.replay`. Share groups share
        the id namespace: a record for an id held by a classic or consumer group is skipped (Kafka
        fails the load with an IllegalStateException), as is one out of order for its group."""
        group_id = record.group_id
        if group_id in self.groups or group_id in self.consumer_groups:
            log.warning(
                "skipping a share group record for a group of another type",
                group=group_id,
                record=type(record).__name__,
            )
            return
        try:
            share_group.replay(self.share_groups, record, self._now_ms())
        except consumer_group.IllegalGroupState as exc:
            log.warning(
                "skipping a share group record out of order for its group",
                group=group_id,
                record=type(record).__name__,
                reason=str(exc),
            )

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None, require_stable: bool = False
    ) -> tuple[int, list[tuple[str, int, int, int, str, int]]]:
        """OffsetFetch: (group error, [(topic, partition, offset, leader_epoch, metadata, error)]).
        `partitions=None` means every partition the group has an offset for."""
        group = self.offsets_holder(group_id)
        out: list[tuple[str, int, int, int, str, int]] = []
        if partitions is None:
            if group is None or (isinstance(group, Group) and group.is_state(GroupState.DEAD)):
                return E.none, []
            wanted = sorted(group.offsets)
        else:
            wanted = list(partitions)
        for tp in wanted:
            if group is not None and require_stable and _has_pending(group, tp):
                out.append((tp[0], tp[1], -1, -1, "", E.unstable_offset_commit))
                continue
            om = group.offsets.get(tp) if group is not None else None
            if om is None:
                out.append((tp[0], tp[1], -1, -1, "", E.none))
            else:
                out.append((tp[0], tp[1], om.offset, om.leader_epoch, om.metadata, E.none))
        return E.none, out

    def delete_offsets(
        self, group: Group | ConsumerGroup, partitions: list[TopicPartition]
    ) -> Operation[tuple[int, dict[TopicPartition, int]]]:
        """Tombstones for the group's offsets of existing partitions: (group error,
        per-partition errors)."""
        results: dict[TopicPartition, int] = {}
        checked = []
        for tp in partitions:
            if not self.topic_exists(*tp):
                results[tp] = E.unknown_topic_or_partition
            else:
                checked.append(tp)
        present = [tp for tp in checked if tp in group.offsets]
        if present:
            try:
                yield Write((OffsetsRemoval(group.group_id, tuple(present)),), durable=False)
            except Exception as exc:  # noqa: BLE001
                log.warning("offset delete append failed", group=group.group_id, error=str(exc))
                return storage_error_for_group(exc), {}
        for tp in checked:
            results[tp] = E.none
        return E.none, results

    # --- transactional offsets (KIP-447) ------------------------------------------------------------
    def complete_txn(self, producer_id: int, commit: bool, partition: int | None = None) -> None:
        """The marker for `producer_id` was written to __consumer_offsets (`partition`, or every
        partition if None): apply (commit) or drop (abort) its pending offsets there."""
        group_ids = self._txn_groups.get(producer_id)
        if not group_ids:
            return
        for group_id in list(group_ids):
            if partition is not None and self.partition_for(group_id) != partition:
                continue
            group_ids.discard(group_id)
            group = self.offsets_holder(group_id)
            if group is None:
                continue
            pending = group.pending_txn_offsets.pop(producer_id, None)
            if pending and commit:
                _apply_txn_offsets(group, pending)
        if not group_ids:
            self._txn_groups.pop(producer_id, None)

    def has_pending_txn_offsets(self, producer_id: int) -> bool:
        return bool(self._txn_groups.get(producer_id))

    # --- group metadata ----------------------------------------------------------------------------
    def group_record(self, group: Group, assignment: dict[str, bytes]) -> GroupMetadataRecord:
        """The group's metadata record (what Kafka's storeGroup appends)."""
        members = []
        if group.protocol_name is not None:
            for m in group.members.values():
                members.append(
                    group_records.MemberValue(
                        m.member_id,
                        m.group_instance_id,
                        m.client_id,
                        m.client_host,
                        m.rebalance_timeout_ms,
                        m.session_timeout_ms,
                        m.metadata(group.protocol_name),
                        assignment.get(m.member_id, b""),
                    )
                )
        value = group_records.GroupValue(
            group.protocol_type or "",
            group.generation_id,
            group.protocol_name,
            group.leader_id,
            self._now_ms(),
            tuple(members),
        )
        return GroupMetadataRecord(group.group_id, value)

    def consumer_group_tombstones(self, group_id: str) -> list[GroupRecord]:
        """The records that delete a consumer group (DeleteGroups of an Empty one, its expiry):
        its offsets' tombstones, then the group's own in Kafka's order (`tombstones()`). A
        transaction's pending offsets stay with the id (an empty classic group holds them)."""
        group = self.consumer_groups[group_id]
        records: list[GroupRecord] = []
        if group.offsets:
            records.append(OffsetsRemoval(group_id, tuple(group.offsets)))
        records.extend(group.tombstones())
        return records

    def delete_group(self, group: Group) -> Operation[int]:
        """Tombstones for an Empty group's offsets and metadata, then it is gone (Dead)."""
        try:
            yield Write(
                (OffsetsRemoval(group.group_id, tuple(group.offsets), group_gone=True),), durable=False
            )
        except Exception as exc:  # noqa: BLE001
            log.warning("group delete append failed", group=group.group_id, error=str(exc))
            return storage_error_for_group(exc)
        return E.none

    # --- expiry -----------------------------------------------------------------------------------
    def expire_offsets(self, now_ms: int | None = None) -> Operation[int]:
        """Kafka's cleanupGroupMetadata (every offsets.retention.check.interval.ms): committed
        offsets older than offsets.retention.minutes go, with tombstones in __consumer_offsets:
        all of an Empty group's offsets once it has been empty that long (KIP-211), each
        offset of a group that never had members (standalone commits) once it was committed
        that long ago; offsets waiting for a transaction stay. An Empty group left without
        offsets is removed (group tombstone). Returns how many offsets expired."""
        now = self._now_ms() if now_ms is None else now_ms
        retention_ms = self.settings.offsets_retention_ms
        expired_total = 0
        for group in list(self.groups.values()):
            if not group.is_state(GroupState.EMPTY):
                continue
            if group.protocol_type is not None:
                base = group.state_timestamp
                doomed = [
                    tp
                    for tp, om in group.offsets.items()
                    if max(base, om.commit_timestamp) + retention_ms <= now
                ]
            else:
                doomed = [
                    tp
                    for tp, om in group.offsets.items()
                    if (
                        om.expire_timestamp
                        if om.expire_timestamp is not None
                        else om.commit_timestamp + retention_ms
                    )
                    <= now
                ]
            doomed = [tp for tp in doomed if not group.has_pending_offsets(tp)]
            remove_group = len(doomed) == len(group.offsets) and not group.pending_txn_offsets
            removal = OffsetsRemoval(group.group_id, tuple(doomed), group_gone=remove_group)
            expired_total += yield from self._expire(group.group_id, doomed, remove_group, [removal])
        expired_total += yield from self._expire_consumer_groups(now, retention_ms)
        return expired_total

    def _expire_consumer_groups(self, now: int, retention_ms: int) -> Operation[int]:
        """Kafka's cleanupExpiredOffsets for consumer groups: an offset expires once committed
        offsets.retention ago, unless the group is subscribed to its topic (by name or through a
        resolved regex: never while an Empty group has no members) or a transaction holds a
        pending offset for it; an Empty group whose offsets all expired, with no transaction
        pending, is deleted (its full tombstone set)."""
        expired_total = 0
        for group in list(self.consumer_groups.values()):
            empty = group.is_empty()
            doomed = [
                tp
                for tp, om in group.offsets.items()
                if (empty or not group.is_subscribed_to_topic(tp[0]))
                and _expires_at(om, om.commit_timestamp, retention_ms) <= now
                and not _has_pending(group, tp)
            ]
            remove_group = empty and len(doomed) == len(group.offsets) and not group.pending_txn_offsets
            gid = group.group_id
            records = (
                self.consumer_group_tombstones(gid) if remove_group else [OffsetsRemoval(gid, tuple(doomed))]
            )
            expired_total += yield from self._expire(gid, doomed, remove_group, records)
        return expired_total

    def _expire(
        self,
        group_id: str,
        doomed: Sequence[TopicPartition],
        remove_group: bool,
        records: Sequence[GroupRecord],
    ) -> Operation[int]:
        """Write one group's expiry (`records`: its offsets' tombstones, or the group's) and
        log it; how many offsets expired (0: nothing to do, its partition given up after a
        storage failure, or the append failed: retried at the next check)."""
        if not doomed and not remove_group:
            return 0
        if not self.is_writable(self.partition_for(group_id)):
            return 0  # given up after a storage failure: retried once it is loaded again
        try:
            yield Write(tuple(records), durable=False)
        except Exception as exc:  # noqa: BLE001 - retried at the next check
            log.warning("offset expiration append failed", group=group_id, error=str(exc))
            return 0
        log.info("expired committed offsets", group=group_id, offsets=len(doomed), group_removed=remove_group)
        return len(doomed)

    def remove_topic_offsets(self, topic: str) -> Operation[int]:
        """A topic was deleted: drop every group's committed offsets for it (tombstones in
        __consumer_offsets, as Kafka's GroupMetadataManager.cleanupGroupMetadata does). Pending
        transactional offsets are left to their transaction's marker. Returns how many offsets
        were removed."""
        removed = 0
        holders: list[Group | ConsumerGroup] = [*self.groups.values(), *self.consumer_groups.values()]
        for group in holders:
            doomed = tuple(tp for tp in group.offsets if tp[0] == topic)
            if not doomed:
                continue
            try:
                yield Write((OffsetsRemoval(group.group_id, doomed),), durable=False)
            except Exception as exc:  # noqa: BLE001 - retried on the next deletion/restart
                log.warning("offset cleanup append failed", group=group.group_id, error=str(exc))
                continue
            removed += len(doomed)
        if removed:
            log.info("removed offsets of deleted topic", topic=topic, offsets=removed)
        return removed

    # --- loading ----------------------------------------------------------------------------------
    def load(self) -> None:
        """Rebuild groups and offsets from __consumer_offsets (called once at broker start)."""
        started = self.clock.monotonic()
        records = 0
        for partition in range(self.store.num_partitions()):
            records += self._load_partition(partition)
        self.loaded = True
        log.info(
            "group coordinator loaded",
            groups=len(self.groups),
            consumer_groups=len(self.consumer_groups),
            share_groups=len(self.share_groups),
            records=records,
            pending_txns=len(self._txn_groups),
            ms=round((self.clock.monotonic() - started) * 1000, 1),
        )

    def _load_partition(self, partition: int) -> int:
        """Replay one partition through `replay`, the path every write takes (Kafka's
        loadGroupsAndOffsets through the shard's replay); the number of records."""
        count = 0
        skipped: dict[int, int] = {}
        for batch in self.store.batches(partition):
            if batch.is_control:
                self.replay(TxnMarker(batch.producer_id, bool(batch.commit), partition))
                continue
            count += len(batch.records)
            for record in _loaded_records(batch, skipped):
                self.replay(record)
        if skipped:  # streams groups' records (Kafka's types 9, 17+): not served here
            log.debug(
                "skipped __consumer_offsets records of record types this broker does not serve",
                partition=partition,
                records_by_type=skipped,
            )
        # offsets-only groups whose offsets were all deleted and which never had metadata vanish
        for group in [g for gid, g in self.groups.items() if self.partition_for(gid) == partition]:
            if not group.members and not group.has_offsets() and group.protocol_type is None:
                if group.generation_id == 0:
                    del self.groups[group.group_id]
        return count

    def _restore_group(self, group_id: str, value: group_records.GroupValue) -> None:
        """The group as its metadata record says (a new Group, as Kafka builds a new
        ClassicGroup); the offsets and pending offsets replayed so far stay."""
        previous = self.groups.get(group_id)
        group = Group(group_id, GroupState.EMPTY, self._now_ms())
        if previous is not None:
            group.offsets = previous.offsets
            group.pending_txn_offsets = previous.pending_txn_offsets
        self.groups[group_id] = group
        group.generation_id = value.generation
        if value.current_state_timestamp >= 0:  # offsets of an empty group expire from it
            group.state_timestamp = value.current_state_timestamp
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        group.leader_id = value.leader
        for mv in value.members:
            member = Member(
                mv.member_id,
                mv.group_instance_id,
                mv.client_id,
                mv.client_host,
                mv.rebalance_timeout_ms,
                mv.session_timeout_ms,
                value.protocol_type,
                [(value.protocol or "", mv.subscription)],
                assignment=mv.assignment,
            )
            group.add(member)
        if group.members:
            group.state = GroupState.STABLE
            group.subscribed_topics = group._compute_subscribed_topics()
            if group.leader_id not in group.members:
                group.leader_id = next(iter(group.members))
        else:
            group.leader_id = None
            group.protocol_name = None


Offsets = dict[TopicPartition, OffsetAndMetadata]


def _apply_txn_offsets(group: Group | ConsumerGroup, pending: Offsets) -> None:
    _apply_newer(group.offsets, pending)


def _expires_at(om: OffsetAndMetadata, base_ms: int, retention_ms: int) -> int:
    """When an offset expires: its own expire timestamp (OffsetCommit v1), else base + retention."""
    return om.expire_timestamp if om.expire_timestamp is not None else base_ms + retention_ms


def _has_pending(group: Group | ConsumerGroup, tp: TopicPartition) -> bool:
    return any(tp in pending for pending in group.pending_txn_offsets.values())


def _apply_newer(offsets: Offsets, committed: Offsets) -> None:
    """Committed transactional offsets replace only offsets written before them."""
    for tp, om in committed.items():
        current = offsets.get(tp)
        if current is None or current.record_offset < om.record_offset:
            offsets[tp] = om


def _loaded_records(batch: StoredBatch, skipped: dict[int, int]) -> Iterator[LoadedRecord]:
    """The records of one stored batch of __consumer_offsets, as the shard replays them (one per
    stored record; an unreadable one is skipped with a warning, one of a record type this broker
    does not serve counted in `skipped` by type). A classic group's tombstone (key type 2) is
    replayed as `ClassicGroupTombstone`: what DeleteGroups and expiry write comes after the
    tombstones of all the group's committed offsets, so it removes the group as the write's
    replay did; after an online upgrade the offsets stay with the id."""
    transactional = batch.is_transactional
    for record_offset, key, value in batch.records:
        if key is None:
            continue
        record_type = int.from_bytes(key[:2], "big", signed=True) if len(key) >= 2 else -1
        if record_type in consumer_group_records.RECORD_TYPES:
            try:
                cg_record = consumer_group_records.decode(key, value)
            except (ValueError, UnicodeDecodeError) as exc:
                log.warning("skipping unreadable consumer group record", offset=record_offset, error=str(exc))
                continue
            if cg_record is not None:
                yield cg_record
            continue
        if record_type > 2:
            yield from _share_record(record_type, key, value, record_offset, skipped)
            continue
        parsed = _decoded(group_records.decode_key, key, "__consumer_offsets key", record_offset)
        if isinstance(parsed, group_records.OffsetKey):
            tp = (parsed.topic, parsed.partition)
            if value is None:
                if not transactional:  # the broker never writes a transactional tombstone
                    yield OffsetsRemoval(parsed.group, (tp,))
                continue
            ov = _decoded(group_records.decode_offset_value, value, "offset value", record_offset)
            if ov is not None:
                om = OffsetAndMetadata(
                    ov.offset,
                    ov.leader_epoch,
                    ov.metadata,
                    ov.commit_timestamp,
                    ov.expire_timestamp,
                    record_offset,
                )
                if transactional:
                    yield OffsetsRecord(parsed.group, ((tp, om),), batch.producer_id, batch.producer_epoch)
                else:
                    yield OffsetsRecord(parsed.group, ((tp, om),))
        elif isinstance(parsed, group_records.GroupKey):
            if value is None:
                yield ClassicGroupTombstone(parsed.group)
                continue
            group_value = _decoded(group_records.decode_group_value, value, "group value", record_offset)
            if group_value is not None:
                yield GroupMetadataRecord(parsed.group, group_value)


def _share_record(
    record_type: int, key: bytes, value: bytes | None, record_offset: int, skipped: dict[int, int]
) -> Iterator[ShareGroupRecord]:
    """The share group record (types 10-15) of a stored record; none if it is unreadable, or
    of another type this broker does not serve (counted in `skipped`)."""
    if record_type not in share_group_records.RECORD_TYPES:
        skipped[record_type] = skipped.get(record_type, 0) + 1
        return
    try:
        record = share_group_records.decode(key, value)
    except (ValueError, UnicodeDecodeError) as exc:
        log.warning("skipping unreadable share group record", offset=record_offset, error=str(exc))
        return
    if record is not None:
        yield record


def _decoded(decode: Callable[[bytes], T], data: bytes, what: str, record_offset: int) -> T | None:
    try:
        return decode(data)
    except (ValueError, UnicodeDecodeError):
        log.warning(f"skipping unreadable {what}", offset=record_offset)
        return None


def _append_error(exc: Exception, too_large: ErrorCode, timed_out: ErrorCode) -> ErrorCode:
    """Kafka's GroupMetadataManager mapping of a failed append to `__consumer_offsets`: a storage
    failure of the partition means this broker no longer coordinates it (NOT_COORDINATOR), a
    missing partition COORDINATOR_NOT_AVAILABLE; the two callers differ only in what a too-large
    append and a timeout become."""
    if isinstance(exc, OSError):
        return E.not_coordinator
    if not isinstance(exc, KafkaStorageError):
        return E.coordinator_not_available
    code = exc.error_code
    if code in (E.unknown_topic_or_partition, E.not_enough_replicas, E.not_enough_replicas_after_append):
        return E.coordinator_not_available
    if code in (E.not_leader_or_follower, E.kafka_storage_error):
        return E.not_coordinator
    if code in (E.message_too_large, E.record_list_too_large, E.invalid_fetch_size):
        return too_large
    if code == E.request_timed_out:
        return timed_out
    return code


def storage_error_for_group(exc: Exception) -> ErrorCode:
    """storeGroup's mapping (JoinGroup, SyncGroup, group deletion)."""
    return _append_error(exc, too_large=E.unknown_server_error, timed_out=E.rebalance_in_progress)


def storage_error_for_commit(exc: Exception) -> ErrorCode:
    """The mapping for offset commits (a timeout stays a timeout)."""
    return _append_error(exc, too_large=E.invalid_commit_offset_size, timed_out=E.request_timed_out)
