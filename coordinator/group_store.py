"""Where the group coordinator's records go: the internal topic __consumer_offsets.

The coordinator sees the topic through `coordinator.collaborators.OffsetsStore`, so its state
machine can be tested without disks. `LogOffsetsStore` is the real one over storage.LogManager
(coordinator/internal_topic.py), compacted by key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.common.clock import Clock
from minibroker.coordinator.internal_topic import InternalBatch, InternalTopic, StoredBatch
from minibroker.storage.log import disk_free_bytes

if TYPE_CHECKING:
    from minibroker.storage.log_manager import LogManager

__all__ = ["OFFSETS_TOPIC", "StoredBatch", "LogOffsetsStore"]

OFFSETS_TOPIC = "__consumer_offsets"


class LogOffsetsStore(InternalTopic):
    """__consumer_offsets in the broker's own storage engine (`batches` replays it)."""

    def __init__(self, logs: LogManager, configured_partitions: int, *, clock: Clock) -> None:
        super().__init__(logs, OFFSETS_TOPIC, configured_partitions, "offsets.topic.segment.bytes", clock)

    def append(self, partition: int, batch: InternalBatch) -> int:
        """Append one batch; the offset of its first record."""
        return self.append_batch(partition, batch)[1]

    def space(self, partition: int) -> tuple[str | None, int | None]:
        """(directory, bytes free on its file system) where the partition is written: what a
        coordinator that could not write there reports, and checks before trying again."""
        plog = self.partition_log(partition, create=False)
        path = plog.dir if plog is not None else self.logs.data_dir
        return path, disk_free_bytes(path)
