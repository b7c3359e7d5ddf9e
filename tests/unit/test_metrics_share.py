"""Issue 26: the share-group metrics a scrape shows (broker/metrics.py), read from the broker's
state at scrape time: share groups' members and states beside the other kinds of groups, the
share-partitions' in-flight records, lock expiries, redeliveries and acknowledgements per type,
and the share sessions. The broker here is a stand-in with the state the collector reads."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from minibroker.broker.metrics import BrokerMetrics
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.timeout(10)


class _Partitions:
    """What SharePartitionManager offers the collector."""

    def __init__(self, in_flight: int, counters: dict[str, int]) -> None:
        self._in_flight = in_flight
        self.counters = counters

    def in_flight_records(self) -> int:
        return self._in_flight


def _broker(share_groups: dict, share_partitions: object, share_sessions: object) -> SimpleNamespace:
    return SimpleNamespace(
        clock=SimpleNamespace(wall_ms=lambda: 0),
        txns=SimpleNamespace(txns={}),
        logs=SimpleNamespace(all_logs=list, get_log=lambda topic, partition: None, topic_names={}),
        groups=SimpleNamespace(
            groups={},
            manager=SimpleNamespace(
                consumer_groups={"c": SimpleNamespace(state="Stable", members={"m": 1}, offsets={})},
                share_groups=share_groups,
            ),
        ),
        share_partitions=share_partitions,
        share_sessions=share_sessions,
        dynamic_configs=SimpleNamespace(telemetry=SimpleNamespace(instances={})),
        startup_seconds={},
    )


def scrape(broker) -> dict[tuple[str, tuple], float]:
    text = generate_latest(BrokerMetrics(broker).registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_share_groups_partitions_and_sessions_are_scraped():
    share_groups = {
        "s1": SimpleNamespace(state="Stable", members={"a": 1, "b": 2}),
        "s2": SimpleNamespace(state="Stable", members={"c": 3}),
        "s3": SimpleNamespace(state="Empty", members={}),
    }
    counters = {
        "lock_expiries": 2,
        "redeliveries": 7,
        "acknowledgements_accept": 40,
        "acknowledgements_release": 3,
        "acknowledgements_reject": 1,
        "acknowledgements_renew": 5,
    }
    sessions = SimpleNamespace(sessions={("s1", "a"): 1, ("s1", "b"): 2, ("s2", "c"): 3}, evictions=4)
    samples = scrape(_broker(share_groups, _Partitions(12, counters), sessions))

    def get(name: str, **labels: str) -> float:
        return samples[(name, tuple(sorted(labels.items())))]

    assert get("minibroker_group_members", group="s1", type="share") == 2
    assert get("minibroker_group_members", group="s3", type="share") == 0
    assert get("minibroker_group_members", group="c", type="consumer") == 1
    assert get("minibroker_groups", type="share", state="Stable") == 2
    assert get("minibroker_groups", type="share", state="Empty") == 1
    assert get("minibroker_groups", type="consumer", state="Stable") == 1
    assert get("minibroker_share_in_flight_records") == 12
    assert get("minibroker_share_acquisition_lock_timeouts_total") == 2
    assert get("minibroker_share_redeliveries_total") == 7
    assert {
        t: get("minibroker_share_record_acknowledgements_total", ack_type=t)
        for t in ("accept", "release", "reject", "renew")
    } == {
        "accept": 40,
        "release": 3,
        "reject": 1,
        "renew": 5,
    }
    assert get("minibroker_share_sessions") == 3
    assert get("minibroker_share_session_evictions_total") == 4
    # no share group has offset lag: its offsets are the share coordinator's
    assert not [key for key in samples if key[0] == "minibroker_group_offset_lag_messages"]


def test_share_metrics_are_zero_before_anything_happens():
    """The contract's stubs (no counters, no in_flight_records yet) scrape as zeros."""
    samples = scrape(_broker({}, object(), object()))
    for name in (
        "minibroker_share_in_flight_records",
        "minibroker_share_acquisition_lock_timeouts_total",
        "minibroker_share_redeliveries_total",
        "minibroker_share_sessions",
        "minibroker_share_session_evictions_total",
    ):
        assert samples[(name, ())] == 0, name
    assert samples[("minibroker_share_record_acknowledgements_total", (("ack_type", "accept"),))] == 0
    assert not [key for key in samples if ("type", "share") in key[1]]
