"""GROUP config resources (broker/group_configs.py): Kafka 4.4's GroupConfig validation and its
messages, the store's file across a restart, what DescribeConfigs lists, and the values the
consumer group coordinator reads (clamped into the broker's current ranges)."""

from __future__ import annotations

import json

import pytest
from minibroker.broker.dynamic_config import DELETE, SET
from minibroker.broker.group_configs import GROUP_CONFIG, GROUP_CONFIGS, GroupConfigs
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.protocol.errors import ErrorCode as E
from minibroker.storage.errors import KafkaStorageError

pytestmark = pytest.mark.timeout(20)

DEFAULT = 5  # ConfigSource DEFAULT_CONFIG


@pytest.fixture
def store(tmp_path):
    return GroupConfigs(str(tmp_path), GroupSettings())


def refused(store, configs, *, incremental=True) -> tuple[int, str]:
    with pytest.raises(KafkaStorageError) as info:
        store.alter(
            "g", [(k, SET, v) for k, v in configs.items()], incremental=incremental, validate_only=False
        )
    return info.value.error_code, info.value.message


@pytest.mark.parametrize(
    "configs, message",
    [
        ({"consumer.nope.ms": "1"}, "Unknown group config name: consumer.nope.ms"),
        (
            {"consumer.heartbeat.interval.ms": "1000"},
            "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
        ),
        (
            {"consumer.session.timeout.ms": "60001"},
            "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
        ),
        (
            {"consumer.assignment.interval.ms": "15001"},
            "consumer.assignment.interval.ms must be in the range 0 to 15000 inclusive.",
        ),
        (
            {"consumer.session.timeout.ms": "soon"},
            "Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT",
        ),
        (
            {"consumer.assignment.interval.ms": "-1"},
            "Invalid value -1 for configuration consumer.assignment.interval.ms: Value must be at least 0",
        ),
        (
            {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "50000"},
            "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
        ),
        (
            {"share.isolation.level": "maybe"},
            "Invalid value maybe for configuration share.isolation.level: "
            "String must be one of: read_committed, read_uncommitted",
        ),
        (
            {"streams.num.standby.replicas": "3"},
            "streams.num.standby.replicas must be less than or equal to 2",
        ),
        (
            {"errors.deadletterqueue.topic.name": "__dlq"},
            "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'",
        ),
        (
            {"streams.rack.aware.assignment.tags": "a, b,a"},
            "streams.rack.aware.assignment.tags must not contain duplicate tag keys.",
        ),
    ],
)
def test_validation_messages(store, configs, message):
    assert refused(store, configs) == (E.invalid_config, message)
    assert store.group_config("g") == {}


def test_session_must_exceed_heartbeat_with_the_broker_ranges_lowered(tmp_path):
    settings = GroupSettings(consumer_min_session_timeout_ms=1000, consumer_min_heartbeat_interval_ms=500)
    store = GroupConfigs(str(tmp_path), settings)
    assert refused(store, {"consumer.session.timeout.ms": "5000"}) == (
        E.invalid_config,
        "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms",
    )
    store.alter("g", [("consumer.session.timeout.ms", SET, "6000")], incremental=True, validate_only=False)
    assert store.group_config("g") == {"consumer.session.timeout.ms": 6000}


def test_empty_group_name(store):
    with pytest.raises(KafkaStorageError) as info:
        store.alter(
            "", [("consumer.session.timeout.ms", SET, "50000")], incremental=True, validate_only=False
        )
    assert (info.value.error_code, info.value.message) == (E.invalid_request, "Group name can't be empty.")
    with pytest.raises(KafkaStorageError) as info:
        store.describe("", synonyms=False, documentation=False, broker_levels=lambda name: [])
    assert info.value.error_code == E.invalid_request


def test_set_delete_replace_and_restart(tmp_path, store):
    ops = [("consumer.session.timeout.ms", SET, "50000"), ("consumer.heartbeat.interval.ms", SET, "6000")]
    store.alter("g", ops, incremental=True, validate_only=True)
    assert store.group_config("g") == {}
    store.alter("g", ops, incremental=True, validate_only=False)
    store.alter(
        "g", [("consumer.heartbeat.interval.ms", DELETE, None)], incremental=True, validate_only=False
    )
    assert store.group_config("g") == {"consumer.session.timeout.ms": 50000}
    reopened = GroupConfigs(str(tmp_path), GroupSettings())
    assert reopened.group_config("g") == {"consumer.session.timeout.ms": 50000}
    assert json.loads((tmp_path / "group-configs.json").read_text()) == {
        "groups": {"g": {"consumer.session.timeout.ms": "50000"}}
    }
    # AlterConfigs replaces the whole set
    reopened.alter(
        "g", [("consumer.assignment.interval.ms", SET, "0")], incremental=False, validate_only=False
    )
    assert reopened.group_config("g") == {"consumer.assignment.interval.ms": 0}
    reopened.alter("g", [], incremental=False, validate_only=False)
    assert GroupConfigs(str(tmp_path), GroupSettings()).group_config("g") == {}


def test_a_damaged_file_leaves_the_broker_settings(tmp_path):
    (tmp_path / "group-configs.json").write_text("{not json")
    assert GroupConfigs(str(tmp_path), GroupSettings()).group_config("g") == {}


def test_values_are_clamped_into_the_current_broker_ranges(tmp_path):
    wide = GroupSettings(consumer_min_session_timeout_ms=1000, consumer_min_heartbeat_interval_ms=500)
    GroupConfigs(str(tmp_path), wide).alter(
        "g",
        [("consumer.session.timeout.ms", SET, "2000"), ("consumer.heartbeat.interval.ms", SET, "600")],
        incremental=True,
        validate_only=False,
    )
    narrow = GroupConfigs(str(tmp_path), GroupSettings())
    assert narrow.group_config("g") == {
        "consumer.session.timeout.ms": 45000,
        "consumer.heartbeat.interval.ms": 5000,
    }


def test_describe_lists_every_public_name_with_its_sources(store):
    store.alter("g", [("consumer.session.timeout.ms", SET, "50000")], incremental=True, validate_only=False)
    entries = {
        e["name"]: e
        for e in store.describe("g", synonyms=True, documentation=False, broker_levels=lambda n: [])
    }
    assert set(entries) == {n for n, d in GROUP_CONFIGS.items() if not d.internal}
    assert len(entries) == 21
    session = entries["consumer.session.timeout.ms"]
    assert (session["value"], session["config_source"]) == ("50000", GROUP_CONFIG)
    assert session["synonyms"] == [
        dict(name="consumer.session.timeout.ms", value="50000", source=GROUP_CONFIG),
        dict(name="group.consumer.session.timeout.ms", value="45000", source=DEFAULT),
    ]
    heartbeat = entries["consumer.heartbeat.interval.ms"]
    assert (heartbeat["value"], heartbeat["config_source"]) == ("5000", DEFAULT)
    assert entries["share.isolation.level"]["synonyms"] == [
        dict(name="share.isolation.level", value="read_uncommitted", source=DEFAULT)
    ]
    assert entries["streams.assignor.name"]["synonyms"] == [
        dict(name="group.streams.assignors", value="sticky", source=DEFAULT)
    ]
    # an internal config is listed once it is set
    store.alter(
        "g", [("consumer.assignor.offload.enable", SET, "false")], incremental=True, validate_only=False
    )
    listed = {
        e["name"]: e
        for e in store.describe("g", synonyms=False, documentation=False, broker_levels=lambda n: [])
    }
    assert listed["consumer.assignor.offload.enable"]["value"] == "false"
    assert listed["consumer.assignor.offload.enable"]["synonyms"] == []
