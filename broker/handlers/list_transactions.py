"""ListTransactions (66), versions 0-2 (`kafka-transactions.sh list`, Admin listTransactions):
every transactional id this coordinator knows (Dead ones excluded), filtered by state names,
producer ids, (v1) by running longer than duration_filter ms and (v2, KIP-1152) by a
transactional-id pattern. Unknown state names are echoed in unknown_state_filters.

The pattern is a regular expression in Kafka's dialect, RE2J, matched against the whole id; an
empty or null one filters nothing, and one that does not compile is INVALID_REGULAR_EXPRESSION
with nothing listed. Python's `re` would accept what RE2 refuses (lookaround, backreferences)
and refuse what it accepts (`\\Q...\\E`), so patterns go through google-re2 (docs/features.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import re2
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ListTransactionsRequest, ListTransactionsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 66

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a client's bad pattern is its answer, not a broker log line


async def handle(ctx: RequestContext, req: ListTransactionsRequest) -> ListTransactionsResponse:
    pattern_text = field(req, "transactional_id_pattern", None)
    pattern = None
    if pattern_text:
        try:
            pattern = re2.compile(pattern_text, options=_RE2_OPTIONS)
        except re2.error:
            return ctx.response(
                throttle_time_ms=0,
                error_code=ErrorCode.invalid_regular_expression,
                unknown_state_filters=[],
                transaction_states=[],
            )
    txns = ctx.broker.txns
    unknown, states = txns.list_transactions(
        req.state_filters, req.producer_id_filters, field(req, "duration_filter", -1)
    )
    if pattern is not None:
        states = [s for s in states if pattern.fullmatch(s["transactional_id"]) is not None]
    # authorization (Kafka: only the transactional ids the principal may DESCRIBE)
    states = [s for s in states if ctx.allowed(Op.DESCRIBE, Res.TRANSACTIONAL_ID, s["transactional_id"])]
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.none,
        unknown_state_filters=unknown,
        transaction_states=states,
    )
