"""The broker's share-partitions (Kafka's SharePartitionManager): one
coordinator/share_partition.py state machine per (share group, topic, partition), loaded from the
share coordinator on first use, persisting every transition through it (durable before the
acknowledgement is answered), acquisition-lock timers on the broker's clock, one fetch at a time
per share-partition, ShareFetch long-polls on the data waiters. Contract for issue 26 (WP4 fills
it in)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.common.clock import Clock

if TYPE_CHECKING:
    from minibroker.broker.coordinator_runtime import CoordinatorRuntime
    from minibroker.broker.group_configs import GroupConfigs
    from minibroker.broker.waiters import DataWaiters
    from minibroker.coordinator.group_settings import GroupSettings
    from minibroker.coordinator.share_coordinator import ShareCoordinator
    from minibroker.storage.log_manager import LogManager

__all__ = ["SharePartitionManager"]


class SharePartitionManager:
    def __init__(
        self,
        settings: GroupSettings,
        *,
        share_coordinator: ShareCoordinator,
        coordinators: CoordinatorRuntime,
        logs: LogManager,
        group_configs: GroupConfigs,
        data_waiters: DataWaiters,
        clock: Clock,
    ) -> None:
        self.settings = settings
        self.share_coordinator = share_coordinator
        self.coordinators = coordinators
        self.logs = logs
        self.group_configs = group_configs
        self.data_waiters = data_waiters
        self.clock = clock

    def release_member(self, group_id: str, member_id: str) -> None:
        """Release every record the member holds in the group's share-partitions (its share
        session closed, or the group coordinator removed it); persisted in the background."""
