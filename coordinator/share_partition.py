"""One share-partition: the in-flight records of a (share group, topic, partition), as Kafka's
SharePartition keeps them (sans-I/O; broker/share_partitions.py drives it). Contract for issue 26
(WP2 fills it in).

Start offset (SPSO) and end offset (SPEO), in-flight batches (batch-level state until a part of a
batch is acknowledged differently, then per-offset), each record AVAILABLE / ACQUIRED (by a member,
until its acquisition lock expires) / ACKNOWLEDGED / ARCHIVED, with its delivery count. Acquiring
writes nothing; every other change (acknowledge, release, lock expiry, start offset move) is a
`Transition`: staged here, persisted by the driver through the share coordinator
(`request`), then `commit()`ed, or `rollback()`ed when the write failed. Records in a staged
transition are neither acquired nor acknowledged by anyone else meanwhile."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from minibroker.coordinator.share_types import (
    AckBatch,
    AcquiredRange,
    AcquireMode,
    LogBatch,
    PartitionState,
    SharePartitionConfig,
    SharePartitionKey,
    WriteStateRequest,
)

__all__ = ["AckResult", "SharePartition", "Transition"]


class Transition:
    """A staged change: persist `request` (share coordinator write_state), then commit or roll back."""

    request: WriteStateRequest

    def commit(self) -> None:
        raise NotImplementedError

    def rollback(self) -> None:
        raise NotImplementedError


class AckResult(NamedTuple):
    """The outcome of acknowledging one partition's batches: an error for the partition (Kafka's
    code and message; nothing staged) or a transition to persist (None: nothing to write)."""

    error_code: int = 0
    error_message: str | None = None
    transition: Transition | None = None


class SharePartition:
    def __init__(
        self, key: SharePartitionKey, config: SharePartitionConfig, state: PartitionState, start_offset: int
    ) -> None:
        """Load from the persisted state; `start_offset` is used when `state.start_offset` is -1
        (the driver resolved share.auto.offset.reset against the log)."""
        self.key = key
        self.config = config  # replaced by the driver when the group's configs change
        raise NotImplementedError

    @property
    def start_offset(self) -> int:
        raise NotImplementedError

    @property
    def end_offset(self) -> int:
        raise NotImplementedError

    def next_fetch_offset(self) -> int:
        """Where the next ShareFetch reads the log from."""
        raise NotImplementedError

    def acquire(
        self,
        member_id: str,
        batches: Sequence[LogBatch],
        *,
        max_records: int,
        batch_size: int,
        mode: AcquireMode,
        now_ms: int,
        aborted: Sequence[tuple[int, int]] = (),
    ) -> list[AcquiredRange]:
        """Acquire for `member_id` from the log batches read at next_fetch_offset(): at most
        max_records (whole log batches in BATCH_OPTIMIZED), split at batch_size; locks until
        now_ms + record_lock_duration_ms. `aborted`: (producer id, first offset) of the aborted
        transactions in the range (read_committed: their records are archived, not handed out)."""
        raise NotImplementedError

    def acknowledge(self, member_id: str, batches: Sequence[AckBatch], now_ms: int) -> AckResult:
        raise NotImplementedError

    def release_member(self, member_id: str) -> Transition | None:
        """Every record `member_id` holds back to AVAILABLE (ARCHIVED at the delivery limit): its
        share session closed or it left the group."""
        raise NotImplementedError

    def expire_locks(self, now_ms: int) -> Transition | None:
        """Acquisition locks due at now_ms released as release_member does."""
        raise NotImplementedError

    def next_lock_deadline(self) -> int | None:
        """The earliest acquisition-lock deadline (ms), None when nothing is acquired."""
        raise NotImplementedError

    def in_flight_records(self) -> int:
        raise NotImplementedError
