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

__all__: list[str] = []
