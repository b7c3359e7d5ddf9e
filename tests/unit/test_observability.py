"""Units behind the request log and metrics: response error extraction, record counting, the
test profile's precedence."""

from __future__ import annotations

import pytest
from minibroker.broker.cli import build_config, parse_args
from minibroker.broker.context import NO_RESPONSE, RawResponse
from minibroker.broker.metrics import _record_count
from minibroker.broker.request_log import API_NAMES, error_counts
from minibroker.broker.response_errors import error_codes
from minibroker.protocol.codec import build, response_class
from minibroker.protocol.fetch_response import PartitionData
from minibroker.protocol.records import build_batch


def test_error_codes_walk_nested_response_entities():
    produce = build(
        response_class(0, 9),
        {
            "responses": [
                {
                    "name": "a",
                    "partition_responses": [{"index": 0, "error_code": 0}, {"index": 1, "error_code": 3}],
                },
                {"name": "b", "partition_responses": [{"index": 0, "error_code": 10}]},
            ]
        },
    )
    assert error_codes(produce) == [3, 10]
    api_versions = build(response_class(18, 3), {"error_code": 35, "api_keys": []})
    assert error_codes(api_versions) == [35]
    assert error_codes(build(response_class(18, 3), {"api_keys": []})) == []


def test_error_codes_of_hand_encoded_and_absent_responses():
    summary = [("t", [PartitionData(0, error_code=0), PartitionData(1, error_code=1)])]
    assert error_codes(RawResponse([], 0, summary)) == [1]
    assert error_codes(RawResponse([], 0)) == []
    assert error_codes(NO_RESPONSE) == []


def test_error_counts_and_api_names():
    assert error_counts([3, 3, 10]) == {"UNKNOWN_TOPIC_OR_PARTITION": 2, "MESSAGE_TOO_LARGE": 1}
    assert error_counts([-12345]) == {"-12345": 1}
    assert (
        API_NAMES[0] == "Produce"
        and API_NAMES[23] == "OffsetForLeaderEpoch"
        and API_NAMES[18] == "ApiVersions"
    )


def test_record_count_sums_every_batch_header():
    one = build_batch([(b"k", b"v")] * 3)
    two = build_batch([(None, b"x")] * 5, compression=1)
    assert _record_count(one) == 3
    assert _record_count(one + two) == 8
    assert _record_count(b"") == 0 and _record_count(None) == 0


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], 3000),
        (["--profile", "test"], 0),
        (["--profile", "test", "--set", "group.initial.rebalance.delay.ms=250"], 250),
    ],
)
def test_profile_sets_defaults_beneath_explicit_values(argv, expected):
    config = build_config(parse_args(argv))
    assert config["group.initial.rebalance.delay.ms"] == expected


def test_profile_values_beneath_a_config_file(tmp_path):
    props = tmp_path / "b.properties"
    props.write_text("log.segment.bytes=2048\n")
    config = build_config(parse_args(["--profile", "test", "--config", str(props)]))
    assert config["log.segment.bytes"] == 2048
    assert config["transaction.abort.timed.out.transaction.cleanup.interval.ms"] == 1000
