"""The broker properties the group coordinator reads, read once into a frozen value
(broker/state.py builds it from the BrokerConfig; unit tests from a dict of the few they set)."""

from __future__ import annotations

from typing import Any, NamedTuple

from minibroker.coordinator.collaborators import Config

__all__ = ["GroupSettings"]


class GroupSettings(NamedTuple):
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    max_size: int = 2**31 - 1  # group.max.size
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    offsets_retention_ms: int = 10080 * 60_000  # offsets.retention.minutes
    # KIP-848 consumer groups (group.consumer.*)
    consumer_session_timeout_ms: int = 45_000
    consumer_min_session_timeout_ms: int = 45_000
    consumer_max_session_timeout_ms: int = 60_000
    consumer_heartbeat_interval_ms: int = 5_000
    consumer_min_heartbeat_interval_ms: int = 5_000
    consumer_max_heartbeat_interval_ms: int = 15_000
    consumer_max_size: int = 2**31 - 1
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    consumer_migration_policy: str = "bidirectional"  # bidirectional | upgrade | downgrade | disabled
    consumer_assignment_interval_ms: int = 1_000
    consumer_min_assignment_interval_ms: int = 0
    consumer_max_assignment_interval_ms: int = 15_000
    consumer_regex_refresh_interval_ms: int = 600_000

    @classmethod
    def from_config(cls, config: Config) -> GroupSettings:
        """Kafka's defaults where `config` lacks a property or leaves it unset."""
        defaults = cls()

        def value(name: str, default: int) -> int:
            try:
                found: Any = config[name]
            except (KeyError, TypeError):
                return default
            return default if found is None else int(found)

        return cls(
            initial_rebalance_delay_ms=value(
                "group.initial.rebalance.delay.ms", defaults.initial_rebalance_delay_ms
            ),
            min_session_timeout_ms=value("group.min.session.timeout.ms", defaults.min_session_timeout_ms),
            max_session_timeout_ms=value("group.max.session.timeout.ms", defaults.max_session_timeout_ms),
            max_size=value("group.max.size", defaults.max_size),
            offset_metadata_max_bytes=value("offset.metadata.max.bytes", defaults.offset_metadata_max_bytes),
            offsets_retention_ms=value("offsets.retention.minutes", defaults.offsets_retention_ms // 60_000)
            * 60_000,
        )
