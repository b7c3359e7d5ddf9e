"""broker/features.py: the `minibroker.features` property, the feature file and UpdateFeatures'
rules (the messages are Kafka 4.4's controller's)."""

from __future__ import annotations

import json

import pytest
from minibroker.broker.features import (
    SAFE_DOWNGRADE,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    FeatureStore,
    FeatureUpdate,
    parse_features,
)
from minibroker.protocol.errors import ErrorCode


def test_parse_features_property():
    assert parse_features("") == {}
    assert parse_features(" transaction.version = 1 , group.version=0") == {
        "transaction.version": 1,
        "group.version": 0,
    }
    for bad in ("transaction.version", "transaction.version=x", "foo.version=1", "transaction.version=3"):
        with pytest.raises(ValueError):
            parse_features(bad)


def test_defaults_overrides_and_persistence(tmp_path):
    store = FeatureStore(str(tmp_path))
    store.load({})
    assert store.transaction_version() == 2 and store.epoch == 1
    assert store.finalized() == [
        dict(name="group.version", min_version_level=1, max_version_level=1),
        dict(name="share.version", min_version_level=1, max_version_level=1),
        dict(name="transaction.version", min_version_level=2, max_version_level=2),
    ]
    assert json.loads((tmp_path / "features.json").read_text())["levels"]["transaction.version"] == 2
    # the property wins over the file, and is kept
    again = FeatureStore(str(tmp_path))
    again.load({"transaction.version": 1})
    assert again.transaction_version() == 1 and again.epoch == 2
    third = FeatureStore(str(tmp_path))
    third.load({})
    assert third.transaction_version() == 1 and third.epoch == 2  # nothing changed: same epoch


def test_damaged_file_falls_back_to_defaults(tmp_path):
    (tmp_path / "features.json").write_text("{not json")
    store = FeatureStore(str(tmp_path))
    store.load({})
    assert store.transaction_version() == 2


def test_update_rules(tmp_path):
    writes = []
    store = FeatureStore(str(tmp_path), write=lambda path, data: writes.append(json.loads(data)))
    store.load({})
    tv = "transaction.version"
    err, msg = store.update([FeatureUpdate(tv, 1, UPGRADE)], False)
    assert err == ErrorCode.invalid_update_version and "Can't downgrade" in msg
    err, msg = store.update([FeatureUpdate(tv, 2, UPGRADE), FeatureUpdate("x.version", 1, UPGRADE)], False)
    assert (
        err == ErrorCode.invalid_update_version and "feature x.version" in msg and "does not support" in msg
    )
    assert store.update([FeatureUpdate(tv, 0, UNSAFE_DOWNGRADE)], True) == (ErrorCode.none, None)
    assert store.transaction_version() == 2 and writes == []  # validate only
    assert store.update([FeatureUpdate(tv, 1, SAFE_DOWNGRADE)], False) == (ErrorCode.none, None)
    assert store.transaction_version() == 1 and writes[-1]["levels"][tv] == 1 and writes[-1]["epoch"] == 2
    assert store.update([FeatureUpdate(tv, 1, UPGRADE)], False) == (ErrorCode.none, None)  # same level
    assert len(writes) == 1
    assert store.update([FeatureUpdate(tv, 0, SAFE_DOWNGRADE)], False) == (ErrorCode.none, None)
    assert store.finalized() == [
        dict(name="group.version", min_version_level=1, max_version_level=1),
        dict(name="share.version", min_version_level=1, max_version_level=1),
    ]
