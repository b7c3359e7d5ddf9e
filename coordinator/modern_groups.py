"""What the coordinators of the two "modern" group kinds (KIP-848 consumer groups and KIP-932
share groups) do the same way: their per-group settings (the group's own `<kind>.*` config, else
the broker's `group.<kind>.*`), KIP-1101's metadata hash, the assignment interval check and
their timers' shutdown. Kafka keeps these in GroupMetadataManager once for both kinds."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, Protocol

from minibroker.coordinator.collaborators import GroupConfigSource, TimerHandle, TopicCatalog
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.metadata_hash import group_hash, topic_hash


class _AssignedGroup(Protocol):
    @property
    def group_id(self) -> str: ...

    @property
    def assignment_timestamp_ms(self) -> int: ...


class ModernGroupCoordinator:
    """The base of ConsumerGroupCoordinator and ShareGroupCoordinator."""

    #: the kind's config prefix: "consumer" (consumer.session.timeout.ms, and the broker's
    #: GroupSettings.consumer_session_timeout_ms) or "share"
    KIND: ClassVar[str]

    settings: GroupSettings
    group_configs: GroupConfigSource
    topics: TopicCatalog
    _timers: dict[Any, TimerHandle]

    # =========================================================================================
    # Settings (a group's own config, else the broker's)
    # =========================================================================================
    def _group_setting(self, group_id: str, name: str) -> int:
        """The group's `<kind>.<name>` config, else the broker's group.<kind>.<name>."""
        value = self.group_configs.group_config(group_id).get(f"{self.KIND}.{name}")
        if value is None:
            return int(getattr(self.settings, f"{self.KIND}_{name.replace('.', '_')}"))
        return int(value)

    def session_timeout_ms(self, group_id: str) -> int:
        return self._group_setting(group_id, "session.timeout.ms")

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self._group_setting(group_id, "heartbeat.interval.ms")

    def assignment_interval_ms(self, group_id: str) -> int:
        return self._group_setting(group_id, "assignment.interval.ms")

    # =========================================================================================
    # Assignment
    # =========================================================================================
    def _metadata_hash(self, names: Iterable[str]) -> int:
        """KIP-1101's hash over the subscribed topics that exist."""
        hashes: dict[str, int] = {}
        catalog = self.topics.topics
        for name in names:
            shape = catalog.get(name)
            if shape is not None:
                hashes[name] = topic_hash(shape.topic_id, name, shape.num_partitions)
        return group_hash(hashes)

    def _can_assign(self, group: _AssignedGroup, now: int) -> bool:
        """Kafka's canComputeNextTargetAssignment: whether group.<kind>.assignment.interval.ms
        has passed since the last assignment."""
        if group.assignment_timestamp_ms == 0:
            return True
        interval = self.assignment_interval_ms(group.group_id)
        return interval == 0 or now >= group.assignment_timestamp_ms + interval

    # =========================================================================================
    # Timers
    # =========================================================================================
    def close(self) -> None:
        """Cancel every timer (broker shutdown)."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
