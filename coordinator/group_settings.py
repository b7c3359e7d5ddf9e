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
    # KIP-932 share groups (group.share.*; ShareGroupConfig and GroupCoordinatorConfig of Kafka 4.4)
    share_session_timeout_ms: int = 45_000
    share_min_session_timeout_ms: int = 45_000
    share_max_session_timeout_ms: int = 60_000
    share_heartbeat_interval_ms: int = 5_000
    share_min_heartbeat_interval_ms: int = 5_000
    share_max_heartbeat_interval_ms: int = 15_000
    share_max_size: int = 200
    share_assignment_interval_ms: int = 1_000
    share_min_assignment_interval_ms: int = 0
    share_max_assignment_interval_ms: int = 15_000
    share_record_lock_duration_ms: int = 30_000
    share_min_record_lock_duration_ms: int = 15_000
    share_max_record_lock_duration_ms: int = 60_000
    share_delivery_count_limit: int = 5
    share_min_delivery_count_limit: int = 2
    share_max_delivery_count_limit: int = 10
    share_partition_max_record_locks: int = 2_000
    share_min_partition_max_record_locks: int = 100
    share_max_partition_max_record_locks: int = 4_000
    share_max_share_sessions: int = 2_000

    @classmethod
    def from_config(cls, config: Config) -> GroupSettings:
        """Kafka's defaults where `config` lacks a property or leaves it unset."""

        def raw(name: str) -> Any:
            try:
                return config[name]
            except (KeyError, TypeError):
                return None

        values: dict[str, Any] = {}
        for field, prop in _INT_PROPERTIES.items():
            found = raw(prop)
            if found is not None:
                values[field] = int(found)
        if (minutes := raw("offsets.retention.minutes")) is not None:
            values["offsets_retention_ms"] = int(minutes) * 60_000
        if (assignors := raw("group.consumer.assignors")) is not None:
            values["consumer_assignors"] = tuple(n.strip() for n in str(assignors).split(",") if n.strip())
        if (policy := raw("group.consumer.migration.policy")) is not None:
            values["consumer_migration_policy"] = str(policy).strip().lower()
        return cls(**values)

    def problems(self) -> list[str]:
        """The group.consumer.* and group.share.* bounds that contradict each other, in Kafka's
        words (Kafka refuses to start with any: GroupCoordinatorConfig.verifyConsumerGroupConfigs
        and verifyShareGroupConfigs, ShareGroupConfig.validate)."""
        return self._consumer_problems() + self._share_problems()

    def _consumer_problems(self) -> list[str]:
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

    def _share_problems(self) -> list[str]:
        p = "group.share."
        ge, le = "must be greater than or equal to", "must be less than or equal to"
        rules = [
            # GroupCoordinatorConfig.verifyShareGroupConfigs
            (
                self.share_max_heartbeat_interval_ms >= self.share_min_heartbeat_interval_ms,
                f"{p}max.heartbeat.interval.ms {ge} {p}min.heartbeat.interval.ms",
            ),
            (
                self.share_heartbeat_interval_ms >= self.share_min_heartbeat_interval_ms,
                f"{p}heartbeat.interval.ms {ge} {p}min.heartbeat.interval.ms",
            ),
            (
                self.share_heartbeat_interval_ms <= self.share_max_heartbeat_interval_ms,
                f"{p}heartbeat.interval.ms {le} {p}max.heartbeat.interval.ms",
            ),
            (
                self.share_max_session_timeout_ms >= self.share_min_session_timeout_ms,
                f"{p}max.session.timeout.ms {ge} {p}min.session.timeout.ms",
            ),
            (
                self.share_session_timeout_ms >= self.share_min_session_timeout_ms,
                f"{p}session.timeout.ms {ge} {p}min.session.timeout.ms",
            ),
            (
                self.share_session_timeout_ms <= self.share_max_session_timeout_ms,
                f"{p}session.timeout.ms {le} {p}max.session.timeout.ms",
            ),
            (
                self.share_heartbeat_interval_ms < self.share_session_timeout_ms,
                f"{p}heartbeat.interval.ms must be less than {p}session.timeout.ms",
            ),
            (
                self.share_max_assignment_interval_ms >= self.share_min_assignment_interval_ms,
                f"{p}max.assignment.interval.ms {ge} {p}min.assignment.interval.ms",
            ),
            (
                self.share_assignment_interval_ms >= self.share_min_assignment_interval_ms,
                f"{p}assignment.interval.ms {ge} {p}min.assignment.interval.ms",
            ),
            (
                self.share_assignment_interval_ms <= self.share_max_assignment_interval_ms,
                f"{p}assignment.interval.ms {le} {p}max.assignment.interval.ms",
            ),
            # ShareGroupConfig.validate
            (
                self.share_max_delivery_count_limit >= self.share_delivery_count_limit,
                f"{p}max.delivery.count.limit {ge} {p}delivery.count.limit",
            ),
            (
                self.share_delivery_count_limit >= self.share_min_delivery_count_limit,
                f"{p}delivery.count.limit {ge} {p}min.delivery.count.limit",
            ),
            (
                self.share_max_partition_max_record_locks >= self.share_partition_max_record_locks,
                f"{p}max.partition.max.record.locks {ge} {p}partition.max.record.locks",
            ),
            (
                self.share_partition_max_record_locks >= self.share_min_partition_max_record_locks,
                f"{p}partition.max.record.locks {ge} {p}min.partition.max.record.locks",
            ),
            (
                self.share_record_lock_duration_ms >= self.share_min_record_lock_duration_ms,
                f"{p}record.lock.duration.ms {ge} {p}min.record.lock.duration.ms",
            ),
            (
                self.share_max_record_lock_duration_ms >= self.share_record_lock_duration_ms,
                f"{p}max.record.lock.duration.ms {ge} {p}record.lock.duration.ms",
            ),
            (
                self.share_max_share_sessions >= self.share_max_size,
                f"{p}max.share.sessions {ge} {p}max.size",
            ),
        ]
        return [message for ok, message in rules if not ok]


#: GroupSettings field -> the integer broker property it is read from (Kafka's name)
_INT_PROPERTIES: dict[str, str] = {
    "initial_rebalance_delay_ms": "group.initial.rebalance.delay.ms",
    "min_session_timeout_ms": "group.min.session.timeout.ms",
    "max_session_timeout_ms": "group.max.session.timeout.ms",
    "max_size": "group.max.size",
    "offset_metadata_max_bytes": "offset.metadata.max.bytes",
    **{
        f"{kind}_{name.replace('.', '_')}": f"group.{kind}.{name}"
        for kind in ("consumer", "share")
        for name in (
            "session.timeout.ms",
            "min.session.timeout.ms",
            "max.session.timeout.ms",
            "heartbeat.interval.ms",
            "min.heartbeat.interval.ms",
            "max.heartbeat.interval.ms",
            "max.size",
            "assignment.interval.ms",
            "min.assignment.interval.ms",
            "max.assignment.interval.ms",
        )
    },
    "consumer_regex_refresh_interval_ms": "group.consumer.regex.refresh.interval.ms",
    **{
        f"share_{name.replace('.', '_')}": f"group.share.{name}"
        for name in (
            "record.lock.duration.ms",
            "min.record.lock.duration.ms",
            "max.record.lock.duration.ms",
            "delivery.count.limit",
            "min.delivery.count.limit",
            "max.delivery.count.limit",
            "partition.max.record.locks",
            "min.partition.max.record.locks",
            "max.partition.max.record.locks",
            "max.share.sessions",
        )
    },
}
