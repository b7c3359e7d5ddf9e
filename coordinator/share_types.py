"""The values KIP-932 share groups pass between their parts (issue 26), in Kafka 4.4's terms.

Three parts keep a share group, as in Kafka:
- the share *group* coordinator (coordinator/share_groups.py, a part of the group coordinator
  shard, records 10-15 in __consumer_offsets): members, their heartbeats, which partitions each
  member is given (several members per partition) and which partitions have share state;
- the share *state* coordinator (coordinator/share_coordinator.py, its own shard on
  __share_group_state): the persisted state of every share-partition (ShareSnapshot /
  ShareUpdate records), what survives a restart;
- the share-partitions (coordinator/share_partition.py, one sans-I/O state machine per
  (group, topic, partition), driven by broker/share_partitions.py): the in-flight records,
  their acquisition locks, delivery counts and acknowledgements.

Nothing here does I/O; everything is a plain value. Offsets are inclusive ranges as in Kafka.
"""

from __future__ import annotations

import uuid
from enum import IntEnum
from typing import NamedTuple

__all__ = [
    "AckBatch",
    "AckType",
    "AcquireMode",
    "AcquiredRange",
    "LogBatch",
    "PartitionState",
    "ReadStateResult",
    "RecordState",
    "SharePartitionConfig",
    "SharePartitionKey",
    "StateBatch",
    "StateSummary",
    "WriteStateRequest",
]


class RecordState(IntEnum):
    """A record's delivery state (Kafka's RecordState; the ids are the persisted DeliveryState)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3  # share.version 2 with a dead-letter queue: on its way to the DLQ
    ARCHIVED = 4


class AckType(IntEnum):
    """AcknowledgeTypes of ShareFetch/ShareAcknowledge (GAP: offsets with no record for the client,
    control records; RENEW: v2, extends the acquisition lock)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class AcquireMode(IntEnum):
    """ShareFetch v2 ShareAcquireMode (KIP-1206)."""

    BATCH_OPTIMIZED = 0
    RECORD_LIMIT = 1


class SharePartitionKey(NamedTuple):
    group_id: str
    topic_id: uuid.UUID
    partition: int


class StateBatch(NamedTuple):
    """A persisted range of records in one state (ShareSnapshot/ShareUpdate StateBatches)."""

    first_offset: int
    last_offset: int
    delivery_state: int  # RecordState
    delivery_count: int


class PartitionState(NamedTuple):
    """A share-partition's persisted state, as ReadShareGroupState answers it.
    start_offset -1: initialized without a start yet (share.auto.offset.reset decides at the
    share-partition's first load)."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int = -1  # ACKNOWLEDGED/ARCHIVED records at or above start_offset; -1 unknown
    batches: tuple[StateBatch, ...] = ()


class ReadStateResult(NamedTuple):
    """The share coordinator's answer to a read: error_code 0 and the state, or an error
    (UNKNOWN_TOPIC_OR_PARTITION: never initialized; the share-partition cannot be fetched)."""

    error_code: int
    error_message: str | None = None
    state: PartitionState | None = None


class StateSummary(NamedTuple):
    """ReadShareGroupStateSummary: what DescribeShareGroupOffsets shows (start -1: none)."""

    error_code: int
    start_offset: int = -1
    leader_epoch: int = 0
    state_epoch: int = 0
    delivery_complete_count: int = -1


class WriteStateRequest(NamedTuple):
    """WriteShareGroupState: the changed ranges of one share-partition (a ShareUpdate), its
    start offset (-1: unchanged) and epochs."""

    key: SharePartitionKey
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    batches: tuple[StateBatch, ...]


class AcquiredRange(NamedTuple):
    """ShareFetch's AcquiredRecords: offsets handed to one member, with their delivery count."""

    first_offset: int
    last_offset: int
    delivery_count: int


class AckBatch(NamedTuple):
    """One AcknowledgementBatch as the client sent it (validated by the handler: ascending,
    first <= last, one type for the whole range or one per offset)."""

    first_offset: int
    last_offset: int
    ack_types: tuple[int, ...]


class LogBatch(NamedTuple):
    """What a share-partition needs to know of one log batch read for a ShareFetch (acquisition
    follows log-batch boundaries; read_committed archives aborted batches). `size` is its length
    in bytes, for the MaxBytes budget."""

    base_offset: int
    last_offset: int
    producer_id: int = -1
    is_transactional: bool = False
    is_control: bool = False
    size: int = 0


class SharePartitionConfig(NamedTuple):
    """The group's effective share.* settings (GROUP config resource over the broker's
    group.share.* properties), read when a share-partition is loaded and on every fetch."""

    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2_000
    read_committed: bool = False  # share.isolation.level
    renew_enabled: bool = True  # share.renew.acknowledge.enable
    auto_offset_reset: str = "latest"  # earliest | latest | by_duration:<ISO-8601 duration>
