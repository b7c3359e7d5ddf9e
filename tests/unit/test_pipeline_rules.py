"""The pipeline's Python validation rules and the verifier's totals check, without Spark."""

from __future__ import annotations

import json

import pytest
from minibroker.pipelines import orders as rules
from minibroker.pipelines.orders import Order, classify
from minibroker.pipelines.verifier import VerificationFailed, check_totals, expected_from

VALID = {"order_id": "o-1", "customer_id": "c1", "amount_cents": 250, "currency": "EUR", "ts": 1767225600000}

# (event, expected outcome); shared with the Spark test that checks the job's SQL rules agree
CASES = [
    (json.dumps(VALID).encode(), None),
    (json.dumps(VALID).encode()[:-5], rules.MALFORMED_JSON),
    (b"[1, 2]", rules.MALFORMED_JSON),
    (b"null", rules.MALFORMED_JSON),
    (json.dumps({**VALID, "order_id": ""}).encode(), rules.MISSING_ORDER_ID),
    (json.dumps({k: v for k, v in VALID.items() if k != "customer_id"}).encode(), rules.MISSING_CUSTOMER_ID),
    (json.dumps({k: v for k, v in VALID.items() if k != "amount_cents"}).encode(), rules.BAD_AMOUNT),
    (json.dumps({**VALID, "amount_cents": -5}).encode(), rules.NEGATIVE_AMOUNT),
    (json.dumps({**VALID, "amount_cents": 0}).encode(), rules.NEGATIVE_AMOUNT),
    (json.dumps({**VALID, "currency": "eur"}).encode(), rules.BAD_CURRENCY),
    (json.dumps({**VALID, "ts": -1}).encode(), rules.BAD_TIMESTAMP),
]


@pytest.mark.parametrize("event,reason", CASES)
def test_classify(event, reason):
    outcome = classify(event)
    if reason is None:
        assert outcome == Order("o-1", "c1", 250, "EUR", 1767225600000)
        assert outcome.day == "2026-01-01"
    else:
        assert outcome == reason


def totals_record(offset: int, customer: str, total: int, orders: int, batch: int):
    value = json.dumps({"customer_id": customer, "total_cents": total, "orders": orders, "batch_id": batch})
    return (0, offset, customer.encode(), value.encode())


def test_totals_check_takes_the_last_record_per_customer():
    events = [
        (0, 0, b"o-1", json.dumps(VALID).encode()),
        (0, 1, b"o-2", json.dumps({**VALID, "order_id": "o-2", "amount_cents": 100}).encode()),
    ]
    expected = expected_from(events)
    assert expected.totals == {"c1": (350, 2)}
    assert check_totals([totals_record(0, "c1", 250, 1, 0), totals_record(1, "c1", 350, 2, 1)], expected) == 1
    with pytest.raises(VerificationFailed, match="expected"):
        check_totals([totals_record(0, "c1", 250, 1, 0)], expected)


def test_totals_check_names_a_batch_written_twice():
    expected = expected_from([(0, 0, b"o-1", json.dumps(VALID).encode())])
    with pytest.raises(VerificationFailed, match="batch 0 for c1 twice"):
        check_totals([totals_record(0, "c1", 250, 1, 0), totals_record(1, "c1", 250, 1, 0)], expected)
