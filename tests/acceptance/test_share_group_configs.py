"""Issue 26: a broker starts with the group.share.* properties fast share-group tests set, describes
them as it was given them, and refuses to start with contradicting bounds (Kafka's words)."""

from __future__ import annotations

import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from tests.support.broker import BrokerStartError
from tests.support.helpers import admin_client

pytestmark = pytest.mark.timeout(60)

FAST = {
    "group.share.session.timeout.ms": 1500,
    "group.share.min.session.timeout.ms": 1000,
    "group.share.heartbeat.interval.ms": 100,
    "group.share.min.heartbeat.interval.ms": 100,
    "group.share.assignment.interval.ms": 0,
    "group.share.record.lock.duration.ms": 1000,
    "group.share.min.record.lock.duration.ms": 1000,
    "group.share.delivery.count.limit": 3,
    "group.share.max.share.sessions": 300,
}


def test_a_broker_starts_with_fast_share_group_settings_and_describes_them(broker_factory):
    broker = broker_factory(FAST)
    admin = admin_client(broker.bootstrap)
    try:
        names = [*FAST, "group.share.max.delivery.count.limit", "group.share.partition.max.record.locks"]
        response = admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, "1", names)], config_filter="all"
        )
        described = {name: entry["value"] for name, entry in response["broker"]["1"].items()}
    finally:
        admin.close()
    assert described == {
        **{name: str(value) for name, value in FAST.items()},
        "group.share.max.delivery.count.limit": "10",  # Kafka's defaults where not set
        "group.share.partition.max.record.locks": "2000",
    }


def test_a_broker_refuses_contradicting_share_group_bounds(broker_factory):
    broker = broker_factory(
        {"group.share.record.lock.duration.ms": 90000, "group.share.max.share.sessions": 100}, start=False
    )
    with pytest.raises(BrokerStartError) as failed:
        broker.start()
    message = str(failed.value)
    assert "invalid configuration" in message, message
    assert (
        "group.share.max.record.lock.duration.ms must be greater than or equal to "
        "group.share.record.lock.duration.ms" in message
    ), message
    assert "group.share.max.share.sessions must be greater than or equal to group.share.max.size" in message
