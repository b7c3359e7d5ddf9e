"""The share coordinator (Kafka's ShareCoordinatorShard): the persisted state of every
share-partition, kept in `__share_group_state` as Kafka keeps it (coordinator/share_state_records.py:
ShareSnapshot type 0 / ShareUpdate type 1, tombstones on delete), one shard on the coordinator
runtime.

Operations are generators (coordinator/runtime.py `Operation`): the broker runs them with
`coordinators.run(share_coordinator, op)`, another operation of this shard with `yield from`.
State changes only in `replay` (after the write, and at load).

What is written and when (Kafka 4.4's rules, ShareCoordinatorShard.java):
- `initialize_state`: a ShareSnapshot (snapshot epoch 0, or the current one + 1), the request's
  state epoch and start offset, no batches; the delivery-complete count is 0 (-1 while the start
  offset is -1).
- `write_state`: a ShareUpdate carrying only the request's batches (pruned below the start
  offset), the start offset max(request, current); once a key has had
  `snapshot_update_records_per_snapshot` updates since its last snapshot, a full ShareSnapshot
  (snapshot epoch + 1, the merged batches) instead, which starts the count again.
- `read_state`: no write, unless the leader epoch differs from the recorded one: then the same
  record a write would make, with the new leader epoch.
- `delete_state`: a ShareSnapshotKey tombstone per share-partition with state.
Replay: a snapshot replaces the key's state; an update merges into it (coordinator/
share_state_combiner.py; start offset and leader epoch -1 keep the current ones).

Durability: every write is a `Write(durable=True)`: the operation resumes (and a
WriteShareGroupState is answered, so an acknowledgement is answered) only once its record is
appended and, where the log's flush policy asks for it, fsynced; with Kafka's default policy the
page cache holds it, as for every internal topic (a killed process loses nothing, a power loss
may; Kafka's equivalent is acks=all on __share_group_state). A failed append leaves the state as
it was and answers COORDINATOR_NOT_AVAILABLE (retriable).

`__share_group_state` is NOT compacted (Kafka: cleanup.policy=delete, retention.ms=-1): a
ShareUpdate's meaning depends on every record before it, so compaction (the latest snapshot and
the latest update of each key) would lose acknowledgements: the store is built with
`topic_configs=SHARE_STATE_TOPIC_CONFIGS` (broker/state.py).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple
from uuid import UUID

import structlog
from minibroker.common.clock import Clock
from minibroker.coordinator.internal_topic import InternalBatch, InternalTopic
from minibroker.coordinator.partitioning import partition_for
from minibroker.coordinator.runtime import Operation, Write
from minibroker.coordinator.share_state_combiner import combine_state_batches
from minibroker.coordinator.share_state_records import (
    ShareSnapshot,
    ShareSnapshotValue,
    ShareStateRecord,
    ShareUpdate,
    ShareUpdateValue,
    decode,
    encode,
)
from minibroker.coordinator.share_types import (
    PartitionState,
    ReadStateResult,
    SharePartitionKey,
    StateBatch,
    StateSummary,
    WriteStateRequest,
)
from minibroker.protocol.errors import ErrorCode

__all__ = [
    "SHARE_STATE_TOPIC",
    "SHARE_STATE_TOPIC_CONFIGS",
    "ShareCoordinator",
    "ShareCoordinatorSettings",
]

log = structlog.get_logger("minibroker.coordinator.share")

SHARE_STATE_TOPIC = "__share_group_state"
#: Kafka's ShareCoordinatorService.shareGroupStateTopicConfigs (segment.bytes from its property)
SHARE_STATE_TOPIC_CONFIGS = {"cleanup.policy": "delete", "retention.ms": "-1"}

_UNREADABLE = (ValueError, UnicodeDecodeError, struct.error)

# Kafka's messages (ShareCoordinatorShard's exceptions), logged with the error code
_NEGATIVE_PARTITION = "The partition id cannot be a negative number."
_NEGATIVE_LEADER_EPOCH = "The leader epoch cannot be a negative number."
_NEGATIVE_STATE_EPOCH = "The state epoch cannot be a negative number."
_WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
_READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."


class ShareCoordinatorSettings(NamedTuple):
    num_partitions: int = 50  # share.coordinator.state.topic.num.partitions
    snapshot_update_records_per_snapshot: int = 500  # share.coordinator.snapshot.update.records.per.snapshot
    # share.coordinator.cold.partition.snapshot.interval.ms
    cold_partition_snapshot_interval_ms: int = 300_000
    prune_interval_ms: int = 300_000  # share.coordinator.state.topic.prune.interval.ms


class ShareCoordinator:
    def __init__(self, settings: ShareCoordinatorSettings, *, store: InternalTopic, clock: Clock) -> None:
        self.settings = settings
        self.store = store  # __share_group_state
        self.clock = clock
        self.states: dict[SharePartitionKey, PartitionState] = {}  # replayed state per share-partition
        # Kafka's shareStateMap (the full value: snapshot epoch and timestamps too), leaderEpochMap
        # and stateEpochMap (the highest epochs seen, for fencing), snapshotUpdateCount
        self._offsets: dict[SharePartitionKey, ShareSnapshotValue] = {}
        self._leader_epochs: dict[SharePartitionKey, int] = {}
        self._state_epochs: dict[SharePartitionKey, int] = {}
        self._updates: dict[SharePartitionKey, int] = {}
        # where the records are, for pruning (Kafka's ShareCoordinatorOffsetsManager): per
        # __share_group_state partition, the offset of each live key's latest snapshot, and the
        # offset after the last tombstone that left a partition with no live key
        self._snapshot_offsets: dict[int, dict[SharePartitionKey, int]] = {}
        self._emptied_at: dict[int, int] = {}

    def partition_for(self, key: SharePartitionKey) -> int:
        """The __share_group_state partition of a share-partition (Kafka's SharePartitionKey
        "group:topicId:partition" hashed as Utils.abs(hashCode) % partitions)."""
        return partition_for(_coordinator_key(key), self.settings.num_partitions)

    # --- the coordinator runtime's shard ------------------------------------------------------------
    def write(self, records: Sequence[ShareStateRecord]) -> Sequence[Any]:
        """Append an operation's records, one batch per __share_group_state partition (all
        records of a key go to its partition, in order); the logs written, for the driver to
        fsync where their flush policy asks. Raises on a storage failure."""
        by_partition: dict[int, list[ShareStateRecord]] = {}
        for record in records:
            by_partition.setdefault(self.partition_for(record.key), []).append(record)
        written = []
        for partition, batch in by_partition.items():
            plog, base = self.store.append_batch(partition, InternalBatch([encode(r) for r in batch]))
            written.append(plog)
            for i, record in enumerate(batch):
                self._placed(partition, base + i, record)
        return written

    def _placed(self, partition: int, offset: int, record: ShareStateRecord) -> None:
        """Bookkeeping of the log (not share state: a record written is in the log whether or
        not it is replayed): a snapshot is where its key's history starts, a tombstone ends it."""
        if not isinstance(record, ShareSnapshot):
            return
        live = self._snapshot_offsets.setdefault(partition, {})
        if record.value is not None:
            live[record.key] = offset
        elif live.pop(record.key, None) is not None and not live:
            self._emptied_at[partition] = offset + 1

    def replay(self, record: ShareStateRecord) -> None:
        """Apply one record (Kafka's handleShareSnapshot / handleShareUpdate)."""
        key = record.key
        if isinstance(record, ShareSnapshot):
            snapshot = record.value
            if snapshot is None:
                self._offsets.pop(key, None)
                self.states.pop(key, None)
                self._leader_epochs.pop(key, None)
                self._state_epochs.pop(key, None)
                self._updates.pop(key, None)
                return
            self._raise_epochs(key, snapshot.leader_epoch, snapshot.state_epoch)
            self._put(key, snapshot)
            if self._updates.get(key, 0) >= self.settings.snapshot_update_records_per_snapshot:
                self._updates[key] = 0
            return
        update = record.value
        if update is None:  # Kafka never writes one
            return
        self._raise_epochs(key, update.leader_epoch, None)
        current = self._offsets.get(key)
        if current is None:  # an update without a snapshot (its snapshot pruned): Kafka's fromRecord
            merged = ShareSnapshotValue(
                update.snapshot_epoch,
                0,
                update.leader_epoch,
                update.start_offset,
                update.delivery_complete_count,
                0,
                0,
                update.batches,
            )
        else:
            start = current.start_offset if update.start_offset == -1 else update.start_offset
            merged = current._replace(
                start_offset=start,
                delivery_complete_count=update.delivery_complete_count,
                leader_epoch=current.leader_epoch if update.leader_epoch == -1 else update.leader_epoch,
                batches=combine_state_batches(current.batches, update.batches, start),
            )
        self._put(key, merged)
        self._updates[key] = self._updates.get(key, 0) + 1

    def _raise_epochs(self, key: SharePartitionKey, leader_epoch: int, state_epoch: int | None) -> None:
        if leader_epoch > self._leader_epochs.get(key, leader_epoch - 1):
            self._leader_epochs[key] = leader_epoch
        if state_epoch is not None and state_epoch > self._state_epochs.get(key, state_epoch - 1):
            self._state_epochs[key] = state_epoch

    def _put(self, key: SharePartitionKey, value: ShareSnapshotValue) -> None:
        self._offsets[key] = value
        self.states[key] = PartitionState(
            value.state_epoch,
            value.leader_epoch,
            value.start_offset,
            value.delivery_complete_count,
            value.batches,
        )

    def load(self) -> None:
        """Replay __share_group_state (startup): every partition's batches in log order, through
        `replay`; a record that cannot be read is skipped with a warning (InternalTopic skips a
        damaged batch the same way)."""
        started = self.clock.monotonic()
        count = 0
        for partition in range(self.store.num_partitions()):
            for batch in self.store.batches(partition):
                if batch.is_control:
                    continue
                for offset, key, value in batch.records:
                    if key is None:
                        continue
                    try:
                        record = decode(key, value)
                    except _UNREADABLE as exc:
                        log.warning(
                            "skipped an unreadable __share_group_state record; the share-partition "
                            "state change it held is lost",
                            partition=partition,
                            offset=offset,
                            error=str(exc),
                        )
                        continue
                    if record is None:
                        continue
                    self._placed(partition, offset, record)
                    self.replay(record)
                    count += 1
        log.info(
            "share coordinator loaded",
            share_partitions=len(self.states),
            records=count,
            ms=round((self.clock.monotonic() - started) * 1000, 1),
        )

    # --- operations ---------------------------------------------------------------------------------
    def initialize_state(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> Operation[int]:
        """InitializeShareGroupState: a snapshot with this state epoch and start offset (-1: the
        share-partition resolves share.auto.offset.reset at its load), no in-flight batches.
        Returns an error code (0): INVALID_REQUEST (negative partition or state epoch),
        FENCED_STATE_EPOCH (a higher state epoch is known), UNKNOWN_TOPIC_OR_PARTITION."""
        error = self._check_key(key, "initialize")
        if error is None and state_epoch < 0:
            error = self._invalid(key, "initialize", _NEGATIVE_STATE_EPOCH)
        if error is None and self._state_epochs.get(key, state_epoch) > state_epoch:
            log.info(
                "initialize request state epoch is smaller than the recorded one",
                key=_coordinator_key(key),
                current=self._state_epochs[key],
                requested=state_epoch,
            )
            error = ErrorCode.fenced_state_epoch
        if error is None:
            error = self._check_topic(key, "initialize")
        if error is not None:
            return int(error)
        current = self._offsets.get(key)
        now = self.clock.wall_ms()
        record = ShareSnapshot(
            key,
            ShareSnapshotValue(
                0 if current is None else current.snapshot_epoch + 1,
                state_epoch,
                0,
                start_offset,
                -1 if start_offset == -1 else 0,
                now,
                now,
                (),
            ),
        )
        return int((yield from self._append(record, "initialize")))

    def read_state(self, key: SharePartitionKey, leader_epoch: int) -> Operation[ReadStateResult]:
        """ReadShareGroupState (a share-partition's load), recording the leader epoch (a write
        only when it differs from the recorded one). Errors: INVALID_REQUEST (negative
        partition or leader epoch, a key never initialized), FENCED_LEADER_EPOCH (a higher
        leader epoch is recorded), UNKNOWN_TOPIC_OR_PARTITION."""
        error = self._check_key(key, "read")
        if error is None and leader_epoch < 0:
            error = self._invalid(key, "read", _NEGATIVE_LEADER_EPOCH)
        message: str | None = None
        if error is None and key not in self._offsets:
            error, message = self._invalid(key, "read", _READ_UNINITIALIZED), _READ_UNINITIALIZED
        if error is None and self._leader_epochs.get(key, leader_epoch) > leader_epoch:
            log.error(
                "read request leader epoch is smaller than the recorded one",
                key=_coordinator_key(key),
                current=self._leader_epochs[key],
                requested=leader_epoch,
            )
            error = ErrorCode.fenced_leader_epoch
        if error is None:
            error = self._check_topic(key, "read")
        if error is not None:
            return ReadStateResult(int(error), message)
        current = self._offsets[key]
        state = PartitionState(
            current.state_epoch,
            leader_epoch,
            current.start_offset,
            current.delivery_complete_count,
            current.batches,
        )
        if self._leader_epochs.get(key) == leader_epoch:
            return ReadStateResult(0, None, state)
        log.info("read with a leader epoch update", key=_coordinator_key(key), leader_epoch=leader_epoch)
        record = self._state_record(
            key, current.start_offset, current.delivery_complete_count, (), leader_epoch=leader_epoch
        )
        failed = yield from self._append(record, "read")
        if failed:
            return ReadStateResult(failed)
        return ReadStateResult(0, None, state)

    def write_state(self, request: WriteStateRequest) -> Operation[int]:
        """WriteShareGroupState: a ShareUpdate (a ShareSnapshot every
        snapshot_update_records_per_snapshot updates of the key). Errors (Kafka's
        maybeGetWriteStateError): INVALID_REQUEST (negative partition, leader or state epoch, a
        key never initialized), FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH (a higher epoch is
        recorded), UNKNOWN_TOPIC_OR_PARTITION (no such topic or partition); a failed append
        COORDINATOR_NOT_AVAILABLE."""
        key = request.key
        error = self._check_key(key, "write")
        if error is None and request.leader_epoch < 0:
            error = self._invalid(key, "write", _NEGATIVE_LEADER_EPOCH)
        if error is None and request.state_epoch < 0:
            error = self._invalid(key, "write", _NEGATIVE_STATE_EPOCH)
        if error is None and key not in self._offsets:
            error = self._invalid(key, "write", _WRITE_UNINITIALIZED)
        if error is None and self._leader_epochs.get(key, request.leader_epoch) > request.leader_epoch:
            log.error(
                "write request leader epoch is smaller than the recorded one",
                key=_coordinator_key(key),
                current=self._leader_epochs[key],
                requested=request.leader_epoch,
            )
            error = ErrorCode.fenced_leader_epoch
        if error is None and self._state_epochs.get(key, request.state_epoch) > request.state_epoch:
            log.info(
                "write request state epoch is smaller than the recorded one",
                key=_coordinator_key(key),
                current=self._state_epochs[key],
                requested=request.state_epoch,
            )
            error = ErrorCode.fenced_state_epoch
        if error is None:
            error = self._check_topic(key, "write")
        if error is not None:
            return int(error)
        record = self._state_record(
            key, request.start_offset, request.delivery_complete_count, request.batches
        )
        return int((yield from self._append(record, "write")))

    def delete_state(self, keys: Iterable[SharePartitionKey]) -> Operation[int]:
        """DeleteShareGroupState: a tombstone for each key with state, all in one write (a key
        without state is left alone, as Kafka does). Returns 0, or the first error: a key
        with a negative partition (INVALID_REQUEST) or of an unknown topic or partition
        (UNKNOWN_TOPIC_OR_PARTITION) is not deleted, the others are; a failed append
        COORDINATOR_NOT_AVAILABLE."""
        first_error = 0
        tombstones: list[ShareStateRecord] = []
        for key in keys:
            error = self._check_key(key, "delete")
            if error is None:
                error = self._check_topic(key, "delete")
            if error is not None:
                first_error = first_error or int(error)
                continue
            if key not in self._offsets:
                log.warning(
                    "attempted to delete the state of a share-partition that has none",
                    key=_coordinator_key(key),
                )
                continue
            tombstones.append(ShareSnapshot(key, None))
        if tombstones:
            failed = yield from self._append_all(tombstones, "delete")
            first_error = first_error or failed
        return first_error

    def delete_topics(self, topic_ids: Iterable[UUID]) -> Operation[int]:
        """Tombstones for every share-partition of deleted topics (Kafka's
        maybeCleanupShareState, run when topics are deleted). Returns an error code."""
        gone = set(topic_ids)
        tombstones: list[ShareStateRecord] = [
            ShareSnapshot(key, None) for key in self._offsets if key.topic_id in gone
        ]
        if not tombstones:
            return 0
        return int((yield from self._append_all(tombstones, "delete")))

    def read_summary(self, key: SharePartitionKey) -> StateSummary:
        """ReadShareGroupStateSummary (no write): start offset, epochs, delivery-complete count;
        a share-partition without state answers start offset -1 (no error), as Kafka does.
        Errors: INVALID_REQUEST (negative partition), UNKNOWN_TOPIC_OR_PARTITION."""
        error = self._check_key(key, "read summary")
        if error is None:
            error = self._check_topic(key, "read summary")
        if error is not None:
            return StateSummary(int(error))
        current = self._offsets.get(key)
        if current is None:
            return StateSummary(0)
        return StateSummary(
            0,
            current.start_offset,
            current.leader_epoch,
            current.state_epoch,
            current.delivery_complete_count,
        )

    def snapshot_cold_partitions(self) -> Operation[int]:
        """Kafka's snapshotColdPartitions (a duty every
        share.coordinator.cold.partition.snapshot.interval.ms): a fresh snapshot (the merged
        state, snapshot epoch + 1, write timestamp now) of every share-partition whose last
        snapshot is at least that old, so an idle share-partition does not keep the records
        before it from being pruned. Returns how many were written."""
        if all(v.create_timestamp != v.write_timestamp for v in self._offsets.values()):
            return 0  # every one was snapshotted cold already (Kafka's shortcut)
        now = self.clock.wall_ms()
        interval = self.settings.cold_partition_snapshot_interval_ms
        records: list[ShareStateRecord] = [
            ShareSnapshot(key, value._replace(snapshot_epoch=value.snapshot_epoch + 1, write_timestamp=now))
            for key, value in self._offsets.items()
            if now - value.write_timestamp >= interval
        ]
        if not records:
            return 0
        failed = yield from self._append_all(records, "cold snapshot")
        return 0 if failed else len(records)

    def last_redundant_offset(self, partition: int) -> int | None:
        """The offset below which a __share_group_state partition holds nothing a load needs
        (Kafka's lastRedundantOffset): its live keys' oldest latest snapshot; None if none."""
        live = self._snapshot_offsets.get(partition)
        offset = min(live.values()) if live else self._emptied_at.get(partition)
        return offset if offset is not None and offset > 0 else None

    def prune(self) -> int:
        """Delete the records no load needs (Kafka's performRecordPruning: DeleteRecords up to
        the last redundant offset; the log's retention then drops the segments below it). A
        duty every share.coordinator.state.topic.prune.interval.ms. Returns how many partitions'
        log start offsets moved."""
        moved = 0
        for partition in range(self.store.num_partitions()):
            offset = self.last_redundant_offset(partition)
            plog = self.store.partition_log(partition, create=False) if offset is not None else None
            if plog is None or offset is None:
                continue
            try:
                if plog.maybe_increment_log_start_offset(min(offset, plog.high_watermark)):
                    moved += 1
            except Exception as exc:  # noqa: BLE001 - retried by the next run
                log.warning("could not prune __share_group_state", partition=partition, error=repr(exc))
        return moved

    def keys_of_group(self, group_id: str) -> list[SharePartitionKey]:
        """The share-partitions with state of one group."""
        return [key for key in self.states if key.group_id == group_id]

    # --- helpers --------------------------------------------------------------------------------
    def _state_record(
        self,
        key: SharePartitionKey,
        start_offset: int,
        delivery_complete_count: int,
        batches: Sequence[StateBatch],
        *,
        leader_epoch: int | None = None,
    ) -> ShareStateRecord:
        """Kafka's generateShareStateRecord: an update with the request's batches, or a full
        snapshot once the key has had enough updates since its last one."""
        current = self._offsets[key]
        new_leader_epoch = current.leader_epoch if leader_epoch is None else leader_epoch
        new_start = max(start_offset, current.start_offset)
        count = delivery_complete_count
        if start_offset == current.start_offset:
            count = max(delivery_complete_count, current.delivery_complete_count)
        elif start_offset < current.start_offset:
            count = current.delivery_complete_count
        if self._updates.get(key, 0) >= self.settings.snapshot_update_records_per_snapshot:
            now = self.clock.wall_ms()
            return ShareSnapshot(
                key,
                ShareSnapshotValue(
                    current.snapshot_epoch + 1,
                    current.state_epoch,
                    new_leader_epoch,
                    new_start,
                    count,
                    now,
                    now,
                    combine_state_batches(current.batches, batches, new_start),
                ),
            )
        return ShareUpdate(
            key,
            ShareUpdateValue(
                current.snapshot_epoch,
                new_leader_epoch,
                new_start,
                count,
                combine_state_batches((), batches, new_start),
            ),
        )

    def _append(self, record: ShareStateRecord, what: str) -> Operation[int]:
        return (yield from self._append_all([record], what))

    def _append_all(self, records: Sequence[ShareStateRecord], what: str) -> Operation[int]:
        """Write, wait for the fsync the flush policy asks for, replay: 0, or
        COORDINATOR_NOT_AVAILABLE when the append or fsync failed (nothing applied)."""
        try:
            yield Write(tuple(records), durable=True)
        except Exception as exc:  # noqa: BLE001 - a storage failure: state unchanged, retriable
            log.error(
                "could not write share-partition state to __share_group_state",
                operation=what,
                share_partitions=sorted({_coordinator_key(r.key) for r in records}),
                error=repr(exc),
            )
            return int(ErrorCode.coordinator_not_available)
        return 0

    def _check_key(self, key: SharePartitionKey, what: str) -> ErrorCode | None:
        if key.partition < 0:
            return self._invalid(key, what, _NEGATIVE_PARTITION)
        return None

    @staticmethod
    def _invalid(key: SharePartitionKey, what: str, message: str) -> ErrorCode:
        log.debug("invalid share-state request", operation=what, key=_coordinator_key(key), reason=message)
        return ErrorCode.invalid_request

    def _check_topic(self, key: SharePartitionKey, what: str) -> ErrorCode | None:
        """UNKNOWN_TOPIC_OR_PARTITION unless the share-partition's topic exists with that
        partition (Kafka checks its metadata image)."""
        logs = self.store.logs
        name = logs.topic_names.get(key.topic_id)
        info = logs.topics.get(name) if name is not None else None
        if info is not None and key.partition < info.num_partitions:
            return None
        log.debug(
            "topic or partition not found when serving share state",
            operation=what,
            topic_id=str(key.topic_id),
            topic=name,
            partition=key.partition,
        )
        return ErrorCode.unknown_topic_or_partition


def _coordinator_key(key: SharePartitionKey) -> str:
    """Kafka's SharePartitionKey.asCoordinatorKey: "groupId:topicId:partition", the topic id
    in Kafka's base64 form (Uuid.toString)."""
    return f"{key.group_id}:{_kafka_uuid(key.topic_id)}:{key.partition}"


def _kafka_uuid(topic_id: UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")
