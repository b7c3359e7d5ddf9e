"""AddOffsetsToTxn (25), versions 0-4: adds the group's __consumer_offsets partition to the
transaction, so TxnOffsetCommit may stage offsets there and EndTxn writes a marker to it.
PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH below v2."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.txn_answers import answer_when_durable
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
    from minibroker.broker.context import RequestContext

API_KEY = 25


async def handle(ctx: RequestContext, req: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    # authorization (Kafka: WRITE on the transactional id, then READ on the group)
    if not ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, req.transactional_id):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.transactional_id_authorization_failed)
    if not ctx.allowed(Op.READ, Res.GROUP, req.group_id):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.group_authorization_failed)
    add = ctx.broker.txns.add_offsets(req.transactional_id, req.producer_id, req.producer_epoch, req.group_id)
    return await answer_when_durable(ctx, add, fenced_since=2)
