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

        def raw(name: str) -> Any:
            try:
                return config[name]
            except (KeyError, TypeError):
                return None

        def value(name: str, default: int) -> int:
            found = raw(name)
            return default if found is None else int(found)

        assignors = raw("group.consumer.assignors")
        policy = raw("group.consumer.migration.policy")
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
            consumer_session_timeout_ms=value(
                "group.consumer.session.timeout.ms", defaults.consumer_session_timeout_ms
            ),
            consumer_min_session_timeout_ms=value(
                "group.consumer.min.session.timeout.ms", defaults.consumer_min_session_timeout_ms
            ),
            consumer_max_session_timeout_ms=value(
                "group.consumer.max.session.timeout.ms", defaults.consumer_max_session_timeout_ms
            ),
            consumer_heartbeat_interval_ms=value(
                "group.consumer.heartbeat.interval.ms", defaults.consumer_heartbeat_interval_ms
            ),
            consumer_min_heartbeat_interval_ms=value(
                "group.consumer.min.heartbeat.interval.ms", defaults.consumer_min_heartbeat_interval_ms
            ),
            consumer_max_heartbeat_interval_ms=value(
                "group.consumer.max.heartbeat.interval.ms", defaults.consumer_max_heartbeat_interval_ms
            ),
            consumer_max_size=value("group.consumer.max.size", defaults.consumer_max_size),
            consumer_assignors=defaults.consumer_assignors
            if assignors is None
            else tuple(name.strip() for name in str(assignors).split(",") if name.strip()),
            consumer_migration_policy=defaults.consumer_migration_policy
            if policy is None
            else str(policy).strip().lower(),
            consumer_assignment_interval_ms=value(
                "group.consumer.assignment.interval.ms", defaults.consumer_assignment_interval_ms
            ),
            consumer_min_assignment_interval_ms=value(
                "group.consumer.min.assignment.interval.ms", defaults.consumer_min_assignment_interval_ms
            ),
            consumer_max_assignment_interval_ms=value(
                "group.consumer.max.assignment.interval.ms", defaults.consumer_max_assignment_interval_ms
            ),
            consumer_regex_refresh_interval_ms=value(
                "group.consumer.regex.refresh.interval.ms", defaults.consumer_regex_refresh_interval_ms
            ),
        )

    def problems(self) -> list[str]:
        """The group.consumer.* bounds that contradict each other, in Kafka's words (Kafka
        refuses to start with any: GroupCoordinatorConfig.verifyConsumerGroupConfigs)."""
        p = "group.consumer."
        rules = [
            (
                self.consumer_max_heartbeat_interval_ms >= self.consumer_min_heartbeat_interval_ms,
                f"{p}max.heartbeat.interval.ms must be greater than or equal to {p}min.heartbeat.interval.ms",
            ),
            (
                self.consumer_heartbeat_interval_ms >= self.consumer_min_heartbeat_interval_ms,
                f"{p}heartbeat.interval.ms must be greater than or equal to {p}min.heartbeat.interval.ms",
            ),
            (
                self.consumer_heartbeat_interval_ms <= self.consumer_max_heartbeat_interval_ms,
                f"{p}heartbeat.interval.ms must be less than or equal to {p}max.heartbeat.interval.ms",
            ),
            (
                self.consumer_max_session_timeout_ms >= self.consumer_min_session_timeout_ms,
                f"{p}max.session.timeout.ms must be greater than or equal to {p}min.session.timeout.ms",
            ),
            (
                self.consumer_session_timeout_ms >= self.consumer_min_session_timeout_ms,
                f"{p}session.timeout.ms must be greater than or equal to {p}min.session.timeout.ms",
            ),
            (
                self.consumer_session_timeout_ms <= self.consumer_max_session_timeout_ms,
                f"{p}session.timeout.ms must be less than or equal to {p}max.session.timeout.ms",
            ),
            (
                self.consumer_heartbeat_interval_ms < self.consumer_session_timeout_ms,
                f"{p}heartbeat.interval.ms must be less than {p}session.timeout.ms",
            ),
            (
                self.consumer_max_assignment_interval_ms >= self.consumer_min_assignment_interval_ms,
                f"{p}max.assignment.interval.ms must be greater than or equal to "
                f"{p}min.assignment.interval.ms",
            ),
            (
                self.consumer_assignment_interval_ms >= self.consumer_min_assignment_interval_ms,
                f"{p}assignment.interval.ms must be greater than or equal to {p}min.assignment.interval.ms",
            ),
            (
                self.consumer_assignment_interval_ms <= self.consumer_max_assignment_interval_ms,
                f"{p}assignment.interval.ms must be less than or equal to {p}max.assignment.interval.ms",
            ),
        ]
        return [message for ok, message in rules if not ok]
