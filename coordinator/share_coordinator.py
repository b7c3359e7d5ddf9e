"""The share coordinator (Kafka's ShareCoordinatorShard): the persisted state of every
share-partition, kept in `__share_group_state` as Kafka keeps it (coordinator/share_state_records.py:
ShareSnapshot type 0 / ShareUpdate type 1, tombstones on delete), one shard on the coordinator
runtime. Contract for issue 26 (WP1 fills it in).

Operations are generators (coordinator/runtime.py `Operation`): the broker runs them with
`coordinators.run(share_coordinator, op)`, another operation of this shard with `yield from`.
State changes only in `replay` (after the write, and at load)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import structlog
from minibroker.common.clock import Clock
from minibroker.coordinator.runtime import Operation
from minibroker.coordinator.share_types import (
    PartitionState,
    ReadStateResult,
    SharePartitionKey,
    StateSummary,
    WriteStateRequest,
)

if TYPE_CHECKING:
    from minibroker.coordinator.internal_topic import InternalTopic

__all__ = ["SHARE_STATE_TOPIC", "ShareCoordinator", "ShareCoordinatorSettings"]

log = structlog.get_logger("minibroker.coordinator.share")

SHARE_STATE_TOPIC = "__share_group_state"


class ShareCoordinatorSettings(NamedTuple):
    num_partitions: int = 50  # share.coordinator.state.topic.num.partitions
    snapshot_update_records_per_snapshot: int = 500  # share.coordinator.snapshot.update.records.per.snapshot


class ShareCoordinator:
    def __init__(self, settings: ShareCoordinatorSettings, *, store: InternalTopic, clock: Clock) -> None:
        self.settings = settings
        self.store = store  # __share_group_state
        self.clock = clock
        self.states: dict[SharePartitionKey, PartitionState] = {}  # replayed state per share-partition

    def partition_for(self, key: SharePartitionKey) -> int:
        """The __share_group_state partition of a share-partition (Kafka's SharePartitionKey
        "group:topicId:partition" hashed as Utils.abs(hashCode) % partitions)."""
        raise NotImplementedError

    # --- the coordinator runtime's shard ------------------------------------------------------------
    def write(self, records: Sequence[Any]) -> Sequence[Any]:
        raise NotImplementedError

    def replay(self, record: Any) -> None:
        raise NotImplementedError

    def load(self) -> None:
        """Replay __share_group_state (startup)."""

    # --- operations ---------------------------------------------------------------------------------
    def initialize_state(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> Operation[int]:
        """InitializeShareGroupState: a snapshot with this state epoch and start offset (-1: the
        share-partition resolves share.auto.offset.reset at its load), no in-flight batches.
        Returns an error code (0)."""
        raise NotImplementedError

    def read_state(self, key: SharePartitionKey, leader_epoch: int) -> Operation[ReadStateResult]:
        """ReadShareGroupState (a share-partition's load), recording the leader epoch."""
        raise NotImplementedError

    def write_state(self, request: WriteStateRequest) -> Operation[int]:
        """WriteShareGroupState: a ShareUpdate (a ShareSnapshot every
        snapshot_update_records_per_snapshot updates of the key); Kafka's error checks
        (FENCED_STATE_EPOCH, UNKNOWN_TOPIC_OR_PARTITION for an uninitialized key...)."""
        raise NotImplementedError

    def delete_state(self, keys: Iterable[SharePartitionKey]) -> Operation[int]:
        """DeleteShareGroupState: tombstones for the keys."""
        raise NotImplementedError

    def read_summary(self, key: SharePartitionKey) -> StateSummary:
        """ReadShareGroupStateSummary (no write): start offset, epochs, delivery-complete count."""
        raise NotImplementedError

    def keys_of_group(self, group_id: str) -> list[SharePartitionKey]:
        """The share-partitions with state of one group."""
        return [key for key in self.states if key.group_id == group_id]
