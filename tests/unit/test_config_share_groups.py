"""Issue 26: the group.share.* broker properties of KIP-932 share groups, under Kafka 4.4's names,
defaults and ranges (GroupCoordinatorConfig, ShareGroupConfig), read into GroupSettings, and the
bounds between them checked as Kafka checks them before it starts."""

from __future__ import annotations

import pytest
from minibroker.broker.config import PROPERTIES, BrokerConfig, ConfigError
from minibroker.coordinator.group_settings import _INT_PROPERTIES, GroupSettings

pytestmark = pytest.mark.timeout(10)

SHARE_FIELDS = {field: prop for field, prop in _INT_PROPERTIES.items() if prop.startswith("group.share.")}

#: Kafka 4.4's defaults (GroupCoordinatorConfig.java, ShareGroupConfig.java)
KAFKA_DEFAULTS = {
    "group.share.session.timeout.ms": 45000,
    "group.share.min.session.timeout.ms": 45000,
    "group.share.max.session.timeout.ms": 60000,
    "group.share.heartbeat.interval.ms": 5000,
    "group.share.min.heartbeat.interval.ms": 5000,
    "group.share.max.heartbeat.interval.ms": 15000,
    "group.share.max.size": 200,
    "group.share.assignment.interval.ms": 1000,
    "group.share.min.assignment.interval.ms": 0,
    "group.share.max.assignment.interval.ms": 15000,
    "group.share.record.lock.duration.ms": 30000,
    "group.share.min.record.lock.duration.ms": 15000,
    "group.share.max.record.lock.duration.ms": 60000,
    "group.share.delivery.count.limit": 5,
    "group.share.min.delivery.count.limit": 2,
    "group.share.max.delivery.count.limit": 10,
    "group.share.partition.max.record.locks": 2000,
    "group.share.min.partition.max.record.locks": 100,
    "group.share.max.partition.max.record.locks": 4000,
    "group.share.max.share.sessions": 2000,
}

#: what a fast test sets (the brief's timing properties), all within Kafka's ranges
FAST = {
    "group.share.session.timeout.ms": "1500",
    "group.share.min.session.timeout.ms": "1000",
    "group.share.heartbeat.interval.ms": "100",
    "group.share.min.heartbeat.interval.ms": "100",
    "group.share.assignment.interval.ms": "0",
    "group.share.record.lock.duration.ms": "1000",
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.delivery.count.limit": "3",
    "group.share.partition.max.record.locks": "150",
    "group.share.max.share.sessions": "300",
    "group.share.max.size": "20",
}


def problems_of(values: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        BrokerConfig(values)
    return info.value.problems


def test_every_share_setting_is_a_declared_property_with_kafkas_default():
    assert sorted(SHARE_FIELDS.values()) == sorted(KAFKA_DEFAULTS)
    defaults = GroupSettings()
    for field, prop in SHARE_FIELDS.items():
        assert PROPERTIES[prop].type == "int", prop
        assert PROPERTIES[prop].default == KAFKA_DEFAULTS[prop], prop
        assert getattr(defaults, field) == KAFKA_DEFAULTS[prop], field
    assert GroupSettings.from_config(BrokerConfig()) == defaults
    assert defaults.problems() == []
    assert BrokerConfig()["group.share.assignors"] == "simple"
    assert BrokerConfig()["group.share.assignor.offload.enable"] is True


def test_from_config_reads_the_fast_test_settings():
    settings = GroupSettings.from_config(BrokerConfig(FAST))
    assert settings.problems() == []
    for field, prop in SHARE_FIELDS.items():
        expected = int(FAST[prop]) if prop in FAST else KAFKA_DEFAULTS[prop]
        assert getattr(settings, field) == expected, prop
    # the consumer-protocol settings are untouched
    assert settings.consumer_session_timeout_ms == 45000


@pytest.mark.parametrize(
    ("prop", "bad", "rule"),
    [
        ("group.share.session.timeout.ms", "0", "> 0"),
        ("group.share.heartbeat.interval.ms", "0", "> 0"),
        ("group.share.assignment.interval.ms", "-1", ">= 0"),
        ("group.share.max.size", "1001", "in [1, 1000]"),
        ("group.share.record.lock.duration.ms", "999", "in [1000, 3600000]"),
        ("group.share.min.record.lock.duration.ms", "30001", "in [1000, 30000]"),
        ("group.share.max.record.lock.duration.ms", "29999", "in [30000, 3600000]"),
        ("group.share.delivery.count.limit", "1", "in [2, 10]"),
        ("group.share.delivery.count.limit", "11", "in [2, 10]"),
        ("group.share.min.delivery.count.limit", "6", "in [2, 5]"),
        ("group.share.max.delivery.count.limit", "26", "in [5, 25]"),
        ("group.share.partition.max.record.locks", "99", "in [100, 10000]"),
        ("group.share.min.partition.max.record.locks", "2001", "in [100, 2000]"),
        ("group.share.max.partition.max.record.locks", "1999", "in [2000, 10000]"),
        ("group.share.max.share.sessions", "0", "> 0"),
        ("group.share.assignors", "uniform", "simple"),
    ],
)
def test_values_outside_kafkas_ranges_are_refused(prop, bad, rule):
    assert problems_of({prop: bad}) == [f"{prop}: invalid value {bad!r} (must be {rule})"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"group.share.heartbeat.interval.ms": "4000"},
            "group.share.heartbeat.interval.ms must be greater than or equal to "
            "group.share.min.heartbeat.interval.ms",
        ),
        (
            {"group.share.heartbeat.interval.ms": "20000"},
            "group.share.heartbeat.interval.ms must be less than or equal to "
            "group.share.max.heartbeat.interval.ms",
        ),
        (
            {"group.share.session.timeout.ms": "70000"},
            "group.share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms",
        ),
        (
            {"group.share.min.session.timeout.ms": "1000", "group.share.session.timeout.ms": "5000"},
            "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms",
        ),
        (
            {
                "group.share.min.assignment.interval.ms": "20000",
                "group.share.max.assignment.interval.ms": "10000",
                "group.share.assignment.interval.ms": "10000",
            },
            [
                "group.share.max.assignment.interval.ms must be greater than or equal to "
                "group.share.min.assignment.interval.ms",
                "group.share.assignment.interval.ms must be greater than or equal to "
                "group.share.min.assignment.interval.ms",
            ],
        ),
        (
            {"group.share.max.delivery.count.limit": "6", "group.share.delivery.count.limit": "8"},
            "group.share.max.delivery.count.limit must be greater than or equal to "
            "group.share.delivery.count.limit",
        ),
        (
            {"group.share.min.delivery.count.limit": "4", "group.share.delivery.count.limit": "3"},
            "group.share.delivery.count.limit must be greater than or equal to "
            "group.share.min.delivery.count.limit",
        ),
        (
            {"group.share.partition.max.record.locks": "5000"},
            "group.share.max.partition.max.record.locks must be greater than or equal to "
            "group.share.partition.max.record.locks",
        ),
        (
            {
                "group.share.partition.max.record.locks": "100",
                "group.share.min.partition.max.record.locks": "200",
            },
            "group.share.partition.max.record.locks must be greater than or equal to "
            "group.share.min.partition.max.record.locks",
        ),
        (
            {"group.share.record.lock.duration.ms": "10000"},
            "group.share.record.lock.duration.ms must be greater than or equal to "
            "group.share.min.record.lock.duration.ms",
        ),
        (
            {"group.share.record.lock.duration.ms": "90000"},
            "group.share.max.record.lock.duration.ms must be greater than or equal to "
            "group.share.record.lock.duration.ms",
        ),
        (
            {"group.share.max.share.sessions": "100"},
            "group.share.max.share.sessions must be greater than or equal to group.share.max.size",
        ),
    ],
)
def test_contradicting_bounds_are_problems_in_kafkas_words(values, message):
    expected = message if isinstance(message, list) else [message]
    assert GroupSettings.from_config(BrokerConfig(values)).problems() == expected


def test_every_contradiction_is_reported_at_once():
    settings = GroupSettings(share_delivery_count_limit=1, share_record_lock_duration_ms=100)
    assert settings.problems() == [
        "group.share.delivery.count.limit must be greater than or equal to "
        "group.share.min.delivery.count.limit",
        "group.share.record.lock.duration.ms must be greater than or equal to "
        "group.share.min.record.lock.duration.ms",
    ]
