"""broker/quotas.py without a broker: Kafka's quota arithmetic (Rate over samples, throttle time),
which quota applies to a (user, client-id), and the store's rules and persistence."""

from __future__ import annotations

import pytest
from minibroker.broker.quotas import ByteRateQuota, QuotaRequestError, QuotaStore, java_round
from minibroker.protocol.errors import ErrorCode


def test_rate_and_throttle_follow_kafkas_sampled_rate():
    q = ByteRateQuota("producer_byte_rate", samples=2, window_s=1)
    q.update((("client-id", "c"),), 1000.0)
    # 3000 bytes at once: the window is at least (samples - 1) windows, so 3000 B/s: 2 s to catch up
    assert q.record("u", "c", 3000, 0) == 2000
    # a second sample 1.5 s later: 3500 bytes over 1.5 s -> (2333.3 - 1000) / 1000 * 1500
    assert q.record("u", "c", 500, 1500) == 2000
    # the first sample has expired (2 windows after its last event): 500 bytes over 1.6 s
    assert q.record("u", "c", 0, 2100) == 0


def test_default_samples_spread_a_burst_over_ten_windows():
    q = ByteRateQuota("producer_byte_rate", samples=11, window_s=1)
    q.update((("user", None),), 1024.0)
    assert q.record("alice", "app", 2048, 0) == 0  # 2048 B over the 10 s Kafka assumes
    # 1 ms later: the window is 10 s + the 1 ms elapsed
    assert q.record("alice", "app", 20000, 1) == java_round((22048 / 10.001 - 1024) / 1024 * 10001)


def test_unrecord_takes_a_throttled_fetch_back():
    q = ByteRateQuota("consumer_byte_rate", samples=2, window_s=1)
    q.update((("client-id", "c"),), 1000.0)
    assert q.record("u", "c", 1500, 0) > 0
    q.unrecord("u", "c", 1500, 0)
    assert q.record("u", "c", 900, 10) == 0


def test_precedence_of_the_eight_levels():
    q = ByteRateQuota("producer_byte_rate", samples=11, window_s=1)
    levels = [
        ((("client-id", None),), 8.0),
        ((("client-id", "c"),), 7.0),
        ((("user", None),), 6.0),
        ((("client-id", None), ("user", None)), 5.0),
        ((("client-id", "c"), ("user", None)), 4.0),
        ((("user", "u"),), 3.0),
        ((("client-id", None), ("user", "u")), 2.0),
        ((("client-id", "c"), ("user", "u")), 1.0),
    ]
    for entity, bound in levels:
        q.update(entity, bound)
    for entity, bound in reversed(levels):  # the most specific one applies; remove it, the next
        assert q._limit(q._tags("u", "c")) == bound
        q.update(entity, None)
    assert q._limit(q._tags("u", "c")) is None
    assert q.max_value_in_window("u", "c") is None


def test_one_rate_per_user_when_only_user_quotas_exist():
    q = ByteRateQuota("producer_byte_rate", samples=2, window_s=1)
    q.update((("user", "u"),), 1000.0)
    assert q.record("u", "a", 600, 0) == 0
    assert q.record("u", "b", 600, 0) > 0  # another client id of the same user shares the rate
    assert q.record("v", "a", 600, 0) == 0  # no quota for user v
    assert q.max_value_in_window("u", "x") == 1000


def test_store_rules_and_persistence(tmp_path):
    writes = []

    def write(path, data):
        writes.append(path)
        with open(path, "wb") as f:
            f.write(data)

    store = QuotaStore(str(tmp_path), write)
    results, changes = store.alter(
        [
            ([("user", "u")], [("producer_byte_rate", 100.0), ("request_percentage", 1.5)]),
            ([("user", "v")], [("producer_byte_rate", 1.5)]),
            ([("ip", "nowhere.invalid")], [("connection_creation_rate", 1.0)]),
        ],
        validate_only=False,
        unresolvable={"nowhere.invalid"},
    )
    assert [code for _, code, _ in results] == [
        ErrorCode.none,
        ErrorCode.invalid_request,
        ErrorCode.invalid_request,
    ]
    assert [message for _, _, message in results][1:] == [
        "producer_byte_rate cannot be a fractional value.",
        "nowhere.invalid is not a valid IP or resolvable host.",
    ]
    assert len(changes) == 2 and len(writes) == 1
    again = QuotaStore(str(tmp_path))  # what a restart reads
    assert again.entities == {(("user", "u"),): {"producer_byte_rate": 100.0, "request_percentage": 1.5}}
    assert again.describe([("user", 0, "u")], strict=True) == [
        ((("user", "u"),), {"producer_byte_rate": 100.0, "request_percentage": 1.5})
    ]
    with pytest.raises(QuotaRequestError) as refused:
        again.describe([("group", 2, None)], strict=False)
    assert refused.value.code == ErrorCode.unsupported_version


def test_idle_rates_are_forgotten_after_an_hour():
    q = ByteRateQuota("producer_byte_rate", samples=11, window_s=1)
    q.update((("client-id", None),), 1000.0)
    q.record("u", "gone", 10, 0)
    q.record("u", "stays", 10, 3_000_000)
    assert set(q.rates) == {("", "gone"), ("", "stays")}
    q.record("u", "stays", 10, 3_600_000)
    assert set(q.rates) == {("", "stays")}
