"""The pure parts of ShareFetch/ShareAcknowledge: Kafka 4.4's acknowledgement batch validation
(KafkaApis.validateAcknowledgementBatches), the member id rule, IsRenewAck's refusal, the
ISO-8601 durations of share.auto.offset.reset=by_duration and the slicing of the answered log
batches (ShareFetchUtils.maybeSliceFetchRecords)."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from minibroker.broker.handlers.share_acknowledge import member_id_valid, valid_batches
from minibroker.broker.handlers.share_fetch import _renew_problems
from minibroker.broker.share_partitions import _slice, parse_duration_ms
from minibroker.coordinator.share_types import AckBatch, AcquiredRange, LogBatch

A = AckBatch


@pytest.mark.parametrize(
    "batches",
    [
        [A(0, 9, (1,))],
        [A(0, 2, (1, 2, 3))],
        [A(0, 4, (1,)), A(4, 6, (2,))],  # a batch may start where the previous ended
        [A(0, 0, (0,)), A(5, 5, (3,))],
        [],
    ],
)
def test_valid_batches(batches: list[AckBatch]) -> None:
    assert valid_batches(batches, renew_supported=False, is_renew_ack=False)


@pytest.mark.parametrize(
    "batches",
    [
        [A(5, 4, (1,))],  # first > last
        [A(5, 9, (1,)), A(3, 4, (1,))],  # descending
        [A(0, 3, ())],  # no type
        [A(0, 3, (1, 1))],  # several types, not one per offset
        [A(0, 0, (-1,))],
        [A(0, 0, (4,))],  # RENEW before v2
        [A(0, 0, (5,))],
    ],
)
def test_invalid_batches(batches: list[AckBatch]) -> None:
    assert not valid_batches(batches, renew_supported=False, is_renew_ack=False)


def test_renew_needs_v2_and_is_renew_ack() -> None:
    renew = [A(0, 3, (4,))]
    assert valid_batches(renew, renew_supported=True, is_renew_ack=True)
    assert not valid_batches(renew, renew_supported=True, is_renew_ack=False)
    assert not valid_batches(renew, renew_supported=False, is_renew_ack=True)
    assert not valid_batches([A(0, 0, (5,))], renew_supported=True, is_renew_ack=True)


@pytest.mark.parametrize(
    ("member_id", "ok"),
    [(None, False), ("", False), ("x", True), ("a" * 36, True), ("a" * 37, False), ("not-a-uuid", True)],
)
def test_member_id_rule(member_id: str | None, ok: bool) -> None:
    assert member_id_valid(member_id) is ok


def test_renew_ack_problems_in_kafkas_words() -> None:
    req = SimpleNamespace(max_bytes=1, min_bytes=1, max_records=1, max_wait=timedelta(milliseconds=5))
    assert _renew_problems(req) == (
        "maxBytes must be set to 0, minBytes must be set to 0, "
        "maxRecords must be set to 0, maxWaitMs must be set to 0, "
    )
    quiet = SimpleNamespace(max_bytes=0, min_bytes=0, max_records=0, max_wait=timedelta(0))
    assert _renew_problems(quiet) == ""


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("PT1H", 3_600_000),
        ("P1D", 86_400_000),
        ("PT15M", 900_000),
        ("PT1.5S", 1_500),
        ("P1DT2H3M4S", 93_784_000),
        ("pt10s", 10_000),
        ("PT", None),
        ("1H", None),
        ("P", None),
        ("", None),
    ],
)
def test_iso_durations(text: str, ms: int | None) -> None:
    assert parse_duration_ms(text) == ms


def _log(*sizes_and_offsets: tuple[int, int, int]) -> tuple[bytes, list[LogBatch], list[int]]:
    """Fake log bytes: batches of (base, last, size); each batch's bytes are its index."""
    data = b""
    views, positions = [], []
    for i, (base, last, size) in enumerate(sizes_and_offsets):
        positions.append(len(data))
        views.append(LogBatch(base, last, size=size))
        data += bytes([i]) * size
    return data, views, positions


def test_slice_keeps_whole_batches_around_the_acquired_records() -> None:
    data, views, positions = _log((0, 4, 10), (5, 9, 20), (10, 14, 30), (15, 19, 40))
    # acquired 7..12: from the batch holding 7 to the last one starting at or before 12
    out = _slice(data, views, positions, [AcquiredRange(7, 9, 1), AcquiredRange(10, 12, 2)])
    assert out == bytes([1]) * 20 + bytes([2]) * 30
    assert _slice(data, views, positions, [AcquiredRange(0, 19, 1)]) == data
    assert _slice(data, views, positions, [AcquiredRange(15, 15, 1)]) == bytes([3]) * 40
    one = _log((0, 4, 10))
    assert _slice(*one, [AcquiredRange(2, 3, 1)]) == one[0]  # one batch: answered whole
