"""Issue 26: a share group's GROUP configs (share.*) are bounded by the broker's group.share.*
properties, as Kafka's GroupConfig.validate/evaluate bound them, and give the share-partitions
their effective settings (ShareGroupConfigProvider: the group's override, else the broker's)."""

from __future__ import annotations

import json

import pytest
from minibroker.broker.dynamic_config import DELETE, SET
from minibroker.broker.group_configs import GroupConfigs, parse_duration_ms
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.share_types import SharePartitionConfig
from minibroker.protocol.errors import ErrorCode as E
from minibroker.storage.errors import KafkaStorageError

pytestmark = pytest.mark.timeout(20)

DEFAULT, STATIC, GROUP_CONFIG = 5, 4, 8  # ConfigSource

#: a broker started with fast-test group.share.* properties
FAST = GroupSettings(
    share_session_timeout_ms=1500,
    share_min_session_timeout_ms=1000,
    share_heartbeat_interval_ms=100,
    share_min_heartbeat_interval_ms=100,
    share_record_lock_duration_ms=1000,
    share_min_record_lock_duration_ms=1000,
    share_max_record_lock_duration_ms=40000,
    share_delivery_count_limit=3,
    share_max_delivery_count_limit=6,
    share_partition_max_record_locks=150,
    share_min_partition_max_record_locks=120,
    share_max_assignment_interval_ms=5000,
)


@pytest.fixture
def store_dir(tmp_path) -> str:
    return str(tmp_path)


def alter(store, configs: dict, group="g") -> None:
    ops = [(k, DELETE if v is None else SET, v) for k, v in configs.items()]
    store.alter(group, ops, incremental=True, validate_only=False)


def refused(store, configs) -> tuple[int, str]:
    with pytest.raises(KafkaStorageError) as info:
        alter(store, configs)
    return info.value.error_code, info.value.message


@pytest.mark.parametrize(
    ("settings", "configs", "message"),
    [
        # Kafka's default bounds
        (GroupSettings(), {"share.record.lock.duration.ms": "10000"}, "in the range 15000 to 60000"),
        (GroupSettings(), {"share.delivery.count.limit": "11"}, "in the range 2 to 10"),
        (GroupSettings(), {"share.partition.max.record.locks": "4001"}, "in the range 100 to 4000"),
        (GroupSettings(), {"share.heartbeat.interval.ms": "4999"}, "in the range 5000 to 15000"),
        (GroupSettings(), {"share.session.timeout.ms": "60001"}, "in the range 45000 to 60000"),
        (GroupSettings(), {"share.assignment.interval.ms": "15001"}, "in the range 0 to 15000"),
        # the broker's properties move them
        (FAST, {"share.record.lock.duration.ms": "40001"}, "in the range 1000 to 40000"),
        (FAST, {"share.delivery.count.limit": "7"}, "in the range 2 to 6"),
        (FAST, {"share.partition.max.record.locks": "119"}, "in the range 120 to 4000"),
        (FAST, {"share.heartbeat.interval.ms": "99"}, "in the range 100 to 15000"),
        (FAST, {"share.session.timeout.ms": "999"}, "in the range 1000 to 60000"),
        (FAST, {"share.assignment.interval.ms": "5001"}, "in the range 0 to 5000"),
    ],
)
def test_share_configs_are_bounded_by_the_broker_properties(tmp_path, settings, configs, message):
    (name,) = configs
    assert refused(GroupConfigs(str(tmp_path), settings), configs) == (
        E.invalid_config,
        f"{name} must be {message} inclusive.",
    )


def test_values_only_the_broker_properties_allow_are_accepted(tmp_path):
    store = GroupConfigs(str(tmp_path), FAST)
    alter(store, {"share.record.lock.duration.ms": "1000", "share.delivery.count.limit": "6"})
    assert store.group_config("g") == {"share.record.lock.duration.ms": 1000, "share.delivery.count.limit": 6}
    # a session must still exceed the heartbeat, the broker's default standing in for the other
    assert refused(store, {"share.session.timeout.ms": "1000", "share.heartbeat.interval.ms": "1000"}) == (
        E.invalid_config,
        "share.session.timeout.ms must be greater than share.heartbeat.interval.ms",
    )
    alter(store, {"share.session.timeout.ms": "1000"})  # > the broker's 100 ms heartbeat
    assert store.group_config("g")["share.session.timeout.ms"] == 1000


def test_share_values_are_clamped_into_the_current_broker_ranges(tmp_path):
    alter(GroupConfigs(str(tmp_path), FAST), {"share.record.lock.duration.ms": "1000"})
    alter(GroupConfigs(str(tmp_path), FAST), {"share.delivery.count.limit": "6"})
    narrow = GroupConfigs(str(tmp_path), GroupSettings())  # restarted with Kafka's defaults
    assert narrow.group_config("g") == {
        "share.record.lock.duration.ms": 15000,
        "share.delivery.count.limit": 6,
    }
    narrower = GroupConfigs(str(tmp_path), GroupSettings(share_max_delivery_count_limit=5))
    assert narrower.share_partition_config("g").delivery_count_limit == 5
    assert narrower.share_partition_config("g").record_lock_duration_ms == 15000


def test_share_partition_config_is_the_override_else_the_broker_property(tmp_path):
    store = GroupConfigs(str(tmp_path), FAST)
    broker_defaults = SharePartitionConfig(
        record_lock_duration_ms=1000,
        delivery_count_limit=3,
        max_record_locks=150,
        read_committed=False,
        renew_enabled=True,
        auto_offset_reset="latest",
    )
    assert store.share_partition_config("g") == broker_defaults
    assert GroupConfigs(str(tmp_path / "other"), GroupSettings()).share_partition_config("g") == (
        SharePartitionConfig()
    )
    alter(
        store,
        {
            "share.record.lock.duration.ms": "2500",
            "share.delivery.count.limit": "4",
            "share.partition.max.record.locks": "200",
            "share.isolation.level": "read_committed",
            "share.renew.acknowledge.enable": "false",
            "share.auto.offset.reset": "earliest",
        },
    )
    assert store.share_partition_config("g") == SharePartitionConfig(
        record_lock_duration_ms=2500,
        delivery_count_limit=4,
        max_record_locks=200,
        read_committed=True,
        renew_enabled=False,
        auto_offset_reset="earliest",
    )
    assert store.share_partition_config("another") == broker_defaults  # per group
    alter(store, {"share.auto.offset.reset": "by_duration:pt1h", "share.isolation.level": "read_uncommitted"})
    config = store.share_partition_config("g")
    assert (config.auto_offset_reset, config.read_committed) == ("by_duration:pt1h", False)
    # a deleted override falls back to the broker's property again
    alter(store, {"share.record.lock.duration.ms": None, "share.delivery.count.limit": None})
    config = store.share_partition_config("g")
    assert (config.record_lock_duration_ms, config.delivery_count_limit) == (1000, 3)


def test_describe_shows_the_broker_property_a_share_config_falls_back_to(tmp_path):
    store = GroupConfigs(str(tmp_path), FAST)

    def broker_levels(name: str) -> list[dict]:
        if name == "group.share.record.lock.duration.ms":
            return [
                dict(name=name, value="1000", source=STATIC),
                dict(name=name, value="30000", source=DEFAULT),
            ]
        return []

    alter(store, {"share.delivery.count.limit": "4"})
    entries = {
        e["name"]: e
        for e in store.describe("g", synonyms=True, documentation=False, broker_levels=broker_levels)
    }
    lock = entries["share.record.lock.duration.ms"]
    assert (lock["value"], lock["config_source"]) == ("1000", STATIC)
    limit = entries["share.delivery.count.limit"]
    assert (limit["value"], limit["config_source"]) == ("4", GROUP_CONFIG)
    assert limit["synonyms"] == [
        dict(name="share.delivery.count.limit", value="4", source=GROUP_CONFIG),
        dict(name="group.share.delivery.count.limit", value="3", source=DEFAULT),
    ]
    locks = entries["share.partition.max.record.locks"]
    assert (locks["value"], locks["config_source"]) == ("150", DEFAULT)


@pytest.mark.parametrize(
    "value",
    ["earliest", "latest", "by_duration:PT1H", "by_duration:P1DT2H3M4.5S", "by_duration:pt0s", " latest "],
)
def test_share_auto_offset_reset_accepts_what_kafka_accepts(store_dir, value):
    store = GroupConfigs(store_dir, GroupSettings())
    alter(store, {"share.auto.offset.reset": value})
    assert store.share_partition_config("g").auto_offset_reset == value.strip()


@pytest.mark.parametrize(
    "value",
    # case-sensitive, as Kafka's AutoOffsetResetStrategy.fromString; no "none" for share groups;
    # by_duration needs a non-negative ISO-8601 duration
    ["Earliest", "LATEST", "none", "by_duration", "by_duration:", "BY_DURATION:PT1H", "by_duration:1h"]
    + ["by_duration:-PT1S", "by_duration:PT-1S", "by_duration:P", "by_duration:P1DT", "soon"],
)
def test_share_auto_offset_reset_refuses_what_kafka_refuses(store_dir, value):
    store = GroupConfigs(store_dir, GroupSettings())
    assert refused(store, {"share.auto.offset.reset": value}) == (
        E.invalid_config,
        f"Invalid value {value} for configuration share.auto.offset.reset: Invalid value `{value}` for "
        "configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the "
        "format 'by_duration:<PnDTnHnMn.nS>'.",
    )


def test_a_stored_value_this_broker_refuses_is_left_out(tmp_path):
    (tmp_path / "group-configs.json").write_text(
        json.dumps(
            {"groups": {"g": {"share.auto.offset.reset": "Earliest", "share.delivery.count.limit": "4"}}}
        )
    )
    store = GroupConfigs(str(tmp_path), GroupSettings())
    assert store.group_config("g") == {"share.delivery.count.limit": 4}
    assert store.share_partition_config("g").auto_offset_reset == "latest"


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("PT1H", 3_600_000),
        ("P1D", 86_400_000),
        ("PT0.5S", 500),
        ("PT1,5S", 1500),
        ("P2DT3H4M5.006S", 183_845_006),
        ("-PT1S", -1000),
        ("PT-1.5S", -1500),
        ("PT+3S", 3000),
        ("pt1m", 60_000),
        ("P", None),
        ("PT", None),
        ("P1DT", None),
        ("1H", None),
        ("PT1.0000000001S", None),
    ],
)
def test_durations_parse_as_javas_duration(text, ms):
    assert parse_duration_ms(text) == ms
