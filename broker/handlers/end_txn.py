"""EndTxn (26), versions 0-5: commit or abort.

Answered once the outcome is durable and, normally, after every marker is written and the
CompleteCommit/CompleteAbort state is durable. v5 is KIP-890 part 2 (transaction.version 2): the
coordinator bumps the producer epoch at every end (and moves to a new producer id when the epoch
would overflow), answers the producer id and epoch to continue with, recognises a retry of a
completed end by its previous epoch, and lets a client abort a transaction no partition was added
to. Up to v4 a retry after completion with the same outcome gets NONE, the opposite outcome
INVALID_TXN_STATE; PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH below v2."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.txn_answers import client_error
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import EndTxnRequest, EndTxnResponse
    from minibroker.broker.context import RequestContext

API_KEY = 26


async def handle(ctx: RequestContext, req: EndTxnRequest) -> EndTxnResponse:
    # authorization (Kafka: WRITE on the transactional id)
    if not ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, req.transactional_id):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.transactional_id_authorization_failed,
            producer_id=-1,
            producer_epoch=-1,
        )
    broker = ctx.broker
    client_version = 2 if ctx.api_version >= 5 else 0  # Kafka: TV_2 from v5, else TV_0
    end = broker.txns.end_txn(
        req.transactional_id, req.producer_id, req.producer_epoch, bool(req.committed), client_version
    )
    error, producer_id, producer_epoch = await broker.coordinators.run(broker.txns, end)
    return ctx.response(
        throttle_time_ms=0,
        error_code=client_error(error, ctx.api_version, fenced_since=2),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )
