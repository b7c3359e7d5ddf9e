"""EndTxn (26), versions 0-4 (v5 is KIP-890 transaction version 2, not offered): commit or abort.
Answered once the outcome is durable and, normally, after every marker is written and the
CompleteCommit/CompleteAbort state is durable. A retry after completion with the same outcome
gets NONE, the opposite outcome INVALID_TXN_STATE; PRODUCER_FENCED becomes
INVALID_PRODUCER_EPOCH below v2."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.txn_answers import answer_when_durable
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import EndTxnRequest, EndTxnResponse
    from minibroker.broker.context import RequestContext

API_KEY = 26


async def handle(ctx: RequestContext, req: EndTxnRequest) -> EndTxnResponse:
    # authorization (Kafka: WRITE on the transactional id)
    if not ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, req.transactional_id):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.transactional_id_authorization_failed)
    end = ctx.broker.txns.end_txn(
        req.transactional_id, req.producer_id, req.producer_epoch, bool(req.committed)
    )
    return await answer_when_durable(ctx, end, fenced_since=2)
