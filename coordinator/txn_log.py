"""Where the transaction coordinator's state goes: the internal topic `__transaction_state`.

The coordinator sees it through `coordinator.collaborators.TxnStore`, so its state machine can
be tested without disks. `LogTxnStore` is the real one over storage.LogManager (one record per
batch, coordinator/internal_topic.py). Records are keyed by transactional id, so compaction keeps
each id's latest state.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from coordinator.internal_topic import InternalTopic

if TYPE_CHECKING:
    from storage.log import PartitionLog
    from storage.log_manager import LogManager

__all__ = ["TXN_TOPIC", "LogTxnStore"]

TXN_TOPIC = "__transaction_state"


class LogTxnStore:
    """__transaction_state in the broker's own storage engine."""

    def __init__(self, logs: LogManager, configured_partitions: int) -> None:
        self.topic = InternalTopic(logs, TXN_TOPIC, configured_partitions,
                                   "transaction.state.log.segment.bytes")

    def num_partitions(self) -> int:
        return self.topic.num_partitions()

    def coordinator_epoch(self, partition: int) -> int:
        plog = self.topic.partition_log(partition, create=False)
        return max(plog.leader_epoch, 0) if plog is not None else 0

    def append(self, partition: int, key: bytes, value: bytes | None) -> PartitionLog:
        """Append one record; the log to fsync before the state change counts."""
        plog, _ = self.topic.append(partition, [(key, value)])
        return plog

    def replay(self) -> Iterator[tuple[bytes, bytes | None]]:
        for partition in range(self.num_partitions()):
            for batch in self.topic.batches(partition):
                if batch.is_control:
                    continue
                for _offset, key, value in batch.records:
                    if key is not None:
                        yield key, value
