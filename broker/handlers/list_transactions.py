"""ListTransactions (66), versions 0-1 (`kafka-transactions.sh --list`): every transactional id
this coordinator knows (Dead ones excluded), filtered by state names, producer ids and (v1) by
running longer than duration_filter ms. Unknown state names are echoed in unknown_state_filters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ListTransactionsRequest, ListTransactionsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 66


async def handle(ctx: RequestContext, req: ListTransactionsRequest) -> ListTransactionsResponse:
    txns = ctx.broker.txns
    unknown, states = txns.list_transactions(
        req.state_filters, req.producer_id_filters, field(req, "duration_filter", -1)
    )
    # authorization (Kafka: only the transactional ids the principal may DESCRIBE)
    states = [s for s in states if ctx.allowed(Op.DESCRIBE, Res.TRANSACTIONAL_ID, s["transactional_id"])]
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.none,
        unknown_state_filters=unknown,
        transaction_states=states,
    )
