"""The order event and its validation rules, in Python (generator, verifier).

The Spark job applies the same rules with Spark SQL expressions (pipelines/job.py); the verifier
re-derives every outcome here, so the two implementations check each other."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeGuard

CURRENCY = re.compile(r"^[A-Z]{3}$")

# rejection reasons (the dead-letter `reason` column)
MALFORMED_JSON = "malformed_json"
MISSING_ORDER_ID = "missing_order_id"
MISSING_CUSTOMER_ID = "missing_customer_id"
BAD_AMOUNT = "bad_amount"  # absent or not an integer
NEGATIVE_AMOUNT = "non_positive_amount"
BAD_CURRENCY = "bad_currency"
BAD_TIMESTAMP = "bad_ts"


@dataclass(frozen=True)
class Order:
    order_id: str
    customer_id: str
    amount_cents: int
    currency: str
    ts: int  # epoch milliseconds

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "order_id": self.order_id,
                "customer_id": self.customer_id,
                "amount_cents": self.amount_cents,
                "currency": self.currency,
                "ts": self.ts,
            },
            separators=(",", ":"),
        ).encode()

    @property
    def day(self) -> str:
        return datetime.fromtimestamp(self.ts / 1000, tz=UTC).strftime("%Y-%m-%d")


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _non_empty_str(v: Any) -> TypeGuard[str]:
    return isinstance(v, str) and v != ""


def classify(value: bytes | None) -> Order | str:
    """An Order if the event is valid, else the rejection reason (first failing rule)."""
    try:
        doc = json.loads(value) if value is not None else None
    except (ValueError, UnicodeDecodeError):
        return MALFORMED_JSON
    if not isinstance(doc, dict):
        return MALFORMED_JSON
    if not _non_empty_str(doc.get("order_id")):
        return MISSING_ORDER_ID
    if not _non_empty_str(doc.get("customer_id")):
        return MISSING_CUSTOMER_ID
    amount = doc.get("amount_cents")
    if not _is_int(amount):
        return BAD_AMOUNT
    if amount <= 0:
        return NEGATIVE_AMOUNT
    currency = doc.get("currency")
    if not (isinstance(currency, str) and CURRENCY.match(currency)):
        return BAD_CURRENCY
    ts = doc.get("ts")
    if not _is_int(ts) or ts < 0:
        return BAD_TIMESTAMP
    return Order(doc["order_id"], doc["customer_id"], amount, currency, ts)
