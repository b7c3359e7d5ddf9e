"""The conformance suite's own logic: pairing list entries, normalising broker-chosen values,
matching deviations (issue 11)."""

from pathlib import Path

import pytest
from minibroker.protocol.records import build_batch

from conformance.compare import MISSING, diff
from conformance.normalise import Normaliser
from conformance.runner import Deviation, Mismatch, classify, glob, load_deviations


def test_list_entries_pair_by_their_identifying_field():
    a = {"topics": [{"name": "x", "error_code": 0}, {"name": "y", "error_code": 0}]}
    b = {"topics": [{"name": "y", "error_code": 3}, {"name": "x", "error_code": 0}]}
    assert diff(a, b) == [("topics[name=y].error_code", 0, 3)]
    assert diff({"topics": [{"name": "x"}]}, {"topics": []}) == [("topics[name=x]", {"name": "x"}, MISSING)]


def test_plain_value_lists_compare_as_sets_but_records_keep_their_order():
    assert diff({"isr_nodes": [1, 2]}, {"isr_nodes": [2, 1]}) == []
    assert (
        diff(
            {"records": [{"base_offset": 0}, {"base_offset": 1}]},
            {"records": [{"base_offset": 1}, {"base_offset": 0}]},
        )
        != []
    )


def test_normaliser_hides_what_brokers_choose():
    norm = Normaliser()
    answer = {
        "throttle_time_ms": 5,
        "cluster_id": "abc",
        "topic_id": "00000000-0000-0000-0000-000000000000",
        "producer_id": 4000,
        "member_id": "c-1-uuid",
        "leader": "c-1-uuid",
        "error_message": "text",
        "log_append_time_ms": 1_795_000_000_000,
        "timestamp": 5,
    }
    assert norm(answer) == {
        "cluster_id": "<cluster_id>",
        "topic_id": "00000000-0000-0000-0000-000000000000",
        "producer_id": "<producer_id>",
        "member_id": "<member#1>",
        "leader": "<member#1>",
        "log_append_time_ms": "<wall-clock>",
        "timestamp": 5,
    }


def test_record_batches_are_compared_by_header_without_producer_id_or_crc():
    one = build_batch([(b"k", b"v", [], 1000)], producer_id=7, producer_epoch=0, base_sequence=0)
    other = build_batch([(b"k", b"v", [], 1000)], producer_id=9, producer_epoch=0, base_sequence=0)
    norm = Normaliser()
    assert norm({"records": one.hex()}) == norm({"records": other.hex()})
    (batch,) = norm({"records": one.hex()})["records"]
    assert batch["producer_id"] == "<producer_id>" and batch["record_count"] == 1


def test_deviation_globs_take_brackets_literally():
    assert glob("api_keys[api_key=*].max_version", "api_keys[api_key=1].max_version")
    assert not glob("api_keys[api_key=*]", "api_keys[api_key=1].max_version")
    assert not glob("a[bc]", "ab")


def test_deviations_need_a_reason_and_may_pin_values(tmp_path: Path):
    bad = tmp_path / "d.toml"
    bad.write_text('[[deviation]]\ncase = "x"\nreason = " "\n')
    with pytest.raises(ValueError, match="no reason"):
        load_deviations(bad)
    pinned = Deviation("c/*", "f", "why", {"minibroker": "<absent>"})
    hit, miss = Mismatch("c/1", "f", MISSING, 1), Mismatch("c/1", "f", 2, 1)
    classify([hit, miss], [pinned])
    assert hit.reason == "why" and miss.reason is None and pinned.used == 1


def test_the_shipped_deviations_file_loads():
    assert all(d.reason for d in load_deviations())
