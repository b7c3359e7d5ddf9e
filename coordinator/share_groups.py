"""The share group coordinator (Kafka's GroupMetadataManager for share groups): members join
and heartbeat (ShareGroupHeartbeat), the SimpleAssignor gives each subscribed partition to
several members, and share-partitions get share state (InitializeShareGroupState in the share
coordinator) before they are assignable. Part of the group coordinator shard: records 10-15 in
__consumer_offsets (coordinator/share_group_records.py), groups in `manager.share_groups`
(coordinator/share_group.py). Contract for issue 26 (WP3 fills it in).

Reached as `GroupCoordinator.share`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from minibroker.common.clock import Clock
from minibroker.coordinator.collaborators import GroupConfigSource, Scheduler
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.runtime import Operation

if TYPE_CHECKING:
    from minibroker.coordinator.group_metadata_manager import GroupMetadataManager

__all__ = [
    "ShareGroupCoordinator",
    "ShareHeartbeat",
    "ShareHeartbeatAnswer",
    "TopicPartitions",
]

#: topic id -> partitions
TopicPartitions = Mapping[uuid.UUID, frozenset[int]]


class ShareHeartbeat(NamedTuple):
    """A validated ShareGroupHeartbeat (the handler checks ids, authorization, share.version)."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None
    client_id: str
    client_host: str


class ShareHeartbeatAnswer(NamedTuple):
    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None = None
    #: share-partitions the broker must initialize in the share coordinator (state epoch, start
    #: offset -1) and then report with `partitions_initialized`: only then are they assignable
    initialize: Mapping[uuid.UUID, frozenset[int]] = {}
    state_epoch: int = 0  # the state epoch to initialize them with (the group epoch)


class ShareGroupCoordinator:
    def __init__(
        self,
        settings: GroupSettings,
        *,
        manager: GroupMetadataManager,
        group_configs: GroupConfigSource,
        clock: Clock,
        scheduler: Scheduler,
    ) -> None:
        self.settings = settings
        self.manager = manager
        self.group_configs = group_configs
        self.clock = clock
        self.scheduler = scheduler
        #: called with (group id, member id) when a member leaves or is removed (the broker
        #: releases the records it holds)
        self.on_member_removed: Callable[[str, str], None] | None = None

    def heartbeat(self, request: ShareHeartbeat) -> Operation[ShareHeartbeatAnswer]:
        raise NotImplementedError

    def partitions_initialized(self, group_id: str, topics: TopicPartitions) -> Operation[None]:
        """The share coordinator has state for these share-partitions: make them assignable
        (record 15) and let the next assignment include them."""
        raise NotImplementedError

    def describe(self, group_ids: Sequence[str]) -> list[dict[str, Any]]:
        """ShareGroupDescribe's Groups entries (GROUP_ID_NOT_FOUND with Kafka's messages for
        unknown ids and groups of another type); the handler fills topic names and filters."""
        raise NotImplementedError

    def initialized_partitions(self, group_id: str) -> dict[uuid.UUID, frozenset[int]]:
        """The group's share-partitions with share state (record 15's initialized topics)."""
        raise NotImplementedError

    def alter_offsets(self, group_id: str, topics: TopicPartitions) -> Operation[tuple[int, str | None]]:
        """AlterShareGroupOffsets's group part: NON_EMPTY_GROUP unless Empty, else records the
        topics as initialized (the broker then re-initializes their state with the new start
        offsets and a new state epoch). Returns (error code, message)."""
        raise NotImplementedError

    def delete_offsets(
        self, group_id: str, topic_ids: Sequence[uuid.UUID]
    ) -> Operation[tuple[int, str | None]]:
        """DeleteShareGroupOffsets's group part: NON_EMPTY_GROUP unless Empty, else forgets the
        topics' share-partitions (the broker deletes their state)."""
        raise NotImplementedError

    def delete_group(self, group_id: str) -> Operation[int]:
        """DeleteGroups of a share group: NON_EMPTY_GROUP unless Empty; tombstones."""
        raise NotImplementedError

    def on_loaded(self) -> None:
        """After a load: members' session timers."""

    def close(self) -> None:
        """Cancel the timers."""
