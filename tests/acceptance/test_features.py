"""Feature levels (broker/features.py): ApiVersions tags 0-2, UpdateFeatures (57) with Kafka's
validation, `kafka-features.sh` describe/upgrade/downgrade, the levels kept across a SIGKILL, and
the startup property `minibroker.features`."""

from __future__ import annotations

import shutil

import pytest

from conformance.wire import Connection, to_plain
from tests.acceptance.test_kafka_cli import kafka_tool  # noqa: F401 - the fixture

pytestmark = pytest.mark.timeout(180)

API_VERSIONS, UPDATE_FEATURES = 18, 57
INVALID_UPDATE_VERSION = 95


def features(broker) -> dict:
    conn = Connection((broker.host, broker.port))
    try:
        answer = to_plain(
            conn.call(API_VERSIONS, 4, dict(client_software_name="t", client_software_version="1"))
        )
    finally:
        conn.close()
    return dict(
        supported={f["name"]: (f["min_version"], f["max_version"]) for f in answer["supported_features"]},
        finalized={
            f["name"]: (f["min_version_level"], f["max_version_level"]) for f in answer["finalized_features"]
        },
        epoch=answer["finalized_features_epoch"],
    )


def update(broker, version: int, name: str, level: int, upgrade_type: int = 1, validate_only: bool = False):
    conn = Connection((broker.host, broker.port))
    try:
        item = dict(
            feature=name, max_version_level=level, upgrade_type=upgrade_type, allow_downgrade=upgrade_type > 1
        )
        fields = dict(timeout_ms=60000, feature_updates=[item], validate_only=validate_only)
        return to_plain(conn.call(UPDATE_FEATURES, version, fields))
    finally:
        conn.close()


def test_api_versions_finalizes_transaction_version_2(broker):
    got = features(broker)
    assert got["finalized"] == {
        "group.version": (1, 1),
        "share.version": (1, 1),
        "transaction.version": (2, 2),
    }
    assert got["supported"] == {
        "group.version": (0, 1),
        "share.version": (0, 1),
        "streams.version": (0, 0),
        "transaction.version": (0, 2),
    }
    assert got["epoch"] >= 1


def test_update_features_validation_as_kafka(broker):
    epoch = features(broker)["epoch"]
    refused = {
        (
            "transaction.version",
            1,
            1,
        ): "Can't downgrade the version of this feature without setting the upgrade type",
        ("transaction.version", 3, 1): "Local controller 1 only supports versions 0-2",
        ("foo.version", 1, 1): "Local controller 1 does not support this feature.",
        ("transaction.version", -1, 2): "A feature version cannot be less than 0.",
        ("transaction.version", 1, 4): "The controller does not support the given upgrade type.",
        ("group.version", 2, 1): "Local controller 1 only supports versions 0-1",
    }
    for (name, level, kind), message in refused.items():
        answer = update(broker, 1, name, level, kind)
        assert answer["error_code"] == INVALID_UPDATE_VERSION and message in answer["error_message"], answer
        assert answer["results"] == []
    # validate_only checks without changing
    ok = update(broker, 1, "transaction.version", 0, 3, validate_only=True)
    assert ok["error_code"] == 0 and ok["results"] == [
        {"feature": "transaction.version", "error_code": 0, "error_message": "NONE"}
    ]
    assert features(broker) == {**features(broker), "epoch": epoch}
    assert features(broker)["finalized"] == {
        "group.version": (1, 1),
        "share.version": (1, 1),
        "transaction.version": (2, 2),
    }
    # v2 answers the top level only; a level of 0 removes the feature from the finalized list
    assert update(broker, 2, "transaction.version", 0, 2) == {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
    }
    after = features(broker)
    assert (
        after["finalized"] == {"group.version": (1, 1), "share.version": (1, 1)}
        and after["epoch"] == epoch + 1
    )
    assert update(broker, 0, "transaction.version", 2)["error_code"] == 0  # v0: an upgrade
    assert features(broker)["finalized"] == {
        "group.version": (1, 1),
        "share.version": (1, 1),
        "transaction.version": (2, 2),
    }


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)")
def test_kafka_features_cli_downgrade_survives_sigkill(kafka_tool, broker):  # noqa: F811
    cli = ("org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", broker.bootstrap)
    described = kafka_tool(*cli, "describe")
    assert "Feature: transaction.version" in described and "FinalizedVersionLevel: 2" in described
    kafka_tool(*cli, "downgrade", "--feature", "transaction.version=1")
    assert features(broker)["finalized"] == {
        "group.version": (1, 1),
        "share.version": (1, 1),
        "transaction.version": (1, 1),
    }
    broker.restart(kill=True)
    assert features(broker)["finalized"] == {
        "group.version": (1, 1),
        "share.version": (1, 1),
        "transaction.version": (1, 1),
    }
    cli = (*cli[:2], broker.bootstrap)  # the port may change
    kafka_tool(*cli, "upgrade", "--feature", "transaction.version=2")
    line = next(x for x in kafka_tool(*cli, "describe").splitlines() if "transaction.version" in x)
    assert "SupportedMaxVersion: 2" in line and "FinalizedVersionLevel: 2" in line


def test_startup_property_sets_levels(broker_factory):
    broker = broker_factory({"minibroker.features": "transaction.version=1"})
    assert features(broker)["finalized"] == {
        "group.version": (1, 1),
        "share.version": (1, 1),
        "transaction.version": (1, 1),
    }
    # without the property the level the data directory holds stays
    broker.restart(overrides={"minibroker.features": ""})
    assert features(broker)["finalized"] == {
        "group.version": (1, 1),
        "share.version": (1, 1),
        "transaction.version": (1, 1),
    }
    broker.restart(overrides={"minibroker.features": "transaction.version=0"})
    assert features(broker)["finalized"] == {"group.version": (1, 1), "share.version": (1, 1)}


def test_startup_property_refuses_unknown_levels(broker_factory):
    from tests.support.broker import BrokerStartError

    with pytest.raises(BrokerStartError):
        broker_factory({"minibroker.features": "transaction.version=3"})
