"""DescribeTransactions (65), version 0 (`kafka-transactions.sh --describe`): state, timeout,
start time, producer id/epoch and partitions of each transactional id;
TRANSACTIONAL_ID_NOT_FOUND for unknown (or expiring) ids."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DescribeTransactionsRequest, DescribeTransactionsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 65

_UTC = datetime.UTC


def _timestamp(ms: int) -> datetime.datetime:
    # kio's field is a datetime; -1 (no transaction) must still encode as -1
    return datetime.datetime.fromtimestamp(ms / 1000, tz=_UTC)


async def handle(ctx: RequestContext, req: DescribeTransactionsRequest) -> DescribeTransactionsResponse:
    txns = ctx.broker.txns
    states = []
    for txn_id in req.transactional_ids:
        # authorization (Kafka: DESCRIBE on the transactional id)
        if not ctx.allowed(Op.DESCRIBE, Res.TRANSACTIONAL_ID, txn_id):
            entry: dict[str, Any] = dict(
                transactional_id=txn_id,
                transaction_state="",
                transaction_timeout_ms=0,
                transaction_start_time_ms=-1,
                producer_id=-1,
                producer_epoch=-1,
                topics=[],
                error_code=ErrorCode.transactional_id_authorization_failed,
            )
        else:
            entry = txns.describe_transaction(txn_id)
        entry["transaction_start_time"] = _timestamp(entry.pop("transaction_start_time_ms"))
        states.append(entry)
    return ctx.response(throttle_time_ms=0, transaction_states=states)
