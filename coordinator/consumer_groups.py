"""The KIP-848 consumer group coordinator: ConsumerGroupHeartbeat as Kafka 4.4's
GroupMetadataManager runs it (join, heartbeat, leave; group epoch bumps on subscription and
metadata changes; the target assignment by the server-side assignors; each member's
reconciliation toward it; session and rebalance timeouts; static membership; broker-side regex
subscriptions, resolved with RE2).

An operation of the coordinator runtime (coordinator/runtime.py): a heartbeat reads the groups,
computes the records (coordinator/consumer_group_records.py) and yields them in one `Write`; the
state changes only when they are replayed (coordinator/consumer_group.py `replay`), and the
answer is built after. The groups live in the group metadata manager's `consumer_groups` (a
group id names a classic group or a consumer group, never both); their offsets are served by
coordinator/groups.py as a classic group's are.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import NamedTuple
from uuid import UUID

from minibroker.common.clock import Clock
from minibroker.coordinator.collaborators import GroupConfigSource, Scheduler
from minibroker.coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember
from minibroker.coordinator.consumer_group_records import ConsumerGroupRecord
from minibroker.coordinator.group_metadata_manager import GroupMetadataManager
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.runtime import Operation

__all__ = ["ConsumerGroupCoordinator", "ConsumerHeartbeat", "HeartbeatAnswer"]


class ConsumerHeartbeat(NamedTuple):
    """A ConsumerGroupHeartbeat request as the handler hands it over (validated already)."""

    api_version: int
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: tuple[tuple[UUID, tuple[int, ...]], ...] | None = None  # TopicPartitions; None = not sent
    client_id: str = ""
    client_host: str = ""


class HeartbeatAnswer(NamedTuple):
    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: the member's assigned partitions (never those pending revocation); None = not sent
    assignment: tuple[tuple[UUID, tuple[int, ...]], ...] | None = None


class ConsumerGroupCoordinator:
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
        self.manager = manager  # the groups (consumer_groups) and __consumer_offsets
        self.groups = manager.consumer_groups
        self.topics = manager.topics  # topic names, ids and partition counts
        self.group_configs = group_configs  # per-group overrides (GROUP config resources)
        self.clock = clock
        self.scheduler = scheduler  # the coordinator runtime's timers
        #: bumped when a topic is created: a regex is resolved again after it (Kafka's
        #: lastMetadataImageWithNewTopics)
        self.topics_version = 0

    def heartbeat(self, request: ConsumerHeartbeat) -> Operation[HeartbeatAnswer]:
        """ConsumerGroupHeartbeat: join (epoch 0), heartbeat, leave (-1), static leave (-2)."""
        raise NotImplementedError
        yield  # pragma: no cover

    def fence_members(
        self, group: ConsumerGroup, members: Iterable[ConsumerGroupMember]
    ) -> list[ConsumerGroupRecord]:
        """The records that remove these members (Kafka's fencing: their current assignment,
        target and metadata tombstones, regexes no one else uses, a group epoch bump), and
        cancel their timers. Used by leave, the timeouts and the online migration."""
        raise NotImplementedError

    def on_topics_changed(self, created: Collection[str], changed: Collection[str]) -> None:
        """Topics were created, or changed partition counts or were deleted: regexes are
        resolved again (after a creation) and groups subscribed to a changed topic refresh their
        metadata at their next heartbeat."""
        raise NotImplementedError

    def on_loaded(self) -> None:
        """After a load: a session timer for every member, a rebalance timer for those still
        revoking (Kafka's onLoaded)."""
        raise NotImplementedError
