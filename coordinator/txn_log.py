"""Where the transaction coordinator's state goes: the internal topic `__transaction_state`.

The coordinator sees it through `coordinator.collaborators.TxnStore`, so its state machine can
be tested without disks. `LogTxnStore` is the real one over storage.LogManager (one record per
batch, coordinator/internal_topic.py). Records are keyed by transactional id, so compaction keeps
each id's latest state.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

import structlog
from minibroker.common.clock import Clock
from minibroker.coordinator.internal_topic import InternalBatch, InternalTopic
from minibroker.coordinator.txn_state import (
    TransactionMetadata,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

if TYPE_CHECKING:
    from minibroker.storage.log import PartitionLog
    from minibroker.storage.log_manager import LogManager

__all__ = ["TXN_TOPIC", "LogTxnStore", "TxnRecord", "replay_states", "state_record"]

TXN_TOPIC = "__transaction_state"

log = structlog.get_logger("minibroker.coordinator.transactions")

_UNREADABLE = (ValueError, UnicodeDecodeError, struct.error)


class TxnRecord(NamedTuple):
    """One record of the transaction coordinator (the runtime's record type): a transition of a
    transactional id, or its tombstone."""

    meta: TransactionMetadata
    tombstone: bool = False


def state_record(meta: TransactionMetadata, tombstone: bool = False) -> tuple[bytes, bytes | None]:
    """The (key, value) of a state change in Kafka's TransactionLog format."""
    return encode_key(meta.transactional_id), None if tombstone else encode_value(meta)


def replay_states(records: Iterable[tuple[bytes, bytes | None]]) -> tuple[list[TransactionMetadata], int]:
    """The latest state of every transactional id in replayed records (ids whose latest record
    is a tombstone are gone), and how many records there were. Unreadable records are skipped
    with a log line."""
    latest: dict[str, bytes | None] = {}
    count = 0
    for key, value in records:
        count += 1
        try:
            latest[decode_key(key)] = value
        except _UNREADABLE as exc:
            log.warning("skipping unreadable transaction log key", error=str(exc))
    states = []
    for txn_id, value in latest.items():
        if value is None:
            continue
        try:
            states.append(decode_value(txn_id, value))
        except _UNREADABLE as exc:
            log.error("skipping unreadable transaction state", transactional_id=txn_id, error=str(exc))
    return states, count


class LogTxnStore(InternalTopic):
    """__transaction_state in the broker's own storage engine."""

    def __init__(self, logs: LogManager, configured_partitions: int, *, clock: Clock) -> None:
        super().__init__(logs, TXN_TOPIC, configured_partitions, "transaction.state.log.segment.bytes", clock)

    def coordinator_epoch(self, partition: int) -> int:
        plog = self.partition_log(partition, create=False)
        return max(plog.leader_epoch, 0) if plog is not None else 0

    def append(self, partition: int, key: bytes, value: bytes | None) -> PartitionLog:
        """Append one record; the log to fsync before the state change counts."""
        plog, _ = self.append_batch(partition, InternalBatch([(key, value)]))
        return plog

    def replay(self) -> Iterator[tuple[bytes, bytes | None]]:
        for partition in range(self.num_partitions()):
            for batch in self.batches(partition):
                if batch.is_control:
                    continue
                for _offset, key, value in batch.records:
                    if key is not None:
                        yield key, value
