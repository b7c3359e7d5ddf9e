"""InitProducerId (22), versions 0-5: a producer id and epoch for an idempotent producer (fresh id,
epoch 0) or a transactional id (coordinator/transactions.py: epoch bump, fencing, KIP-360
producer id/epoch fields from v3, INVALID_TRANSACTION_TIMEOUT, CONCURRENT_TRANSACTIONS while the
previous instance's transaction is being aborted). PRODUCER_FENCED exists from v4; older versions
get INVALID_PRODUCER_EPOCH, as Kafka answers them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.txn_answers import client_error
from minibroker.protocol.codec import field, millis
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import InitProducerIdRequest, InitProducerIdResponse
    from minibroker.broker.context import RequestContext

API_KEY = 22


async def handle(ctx: RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse:
    broker = ctx.broker
    pid = field(req, "producer_id", -1)
    epoch = field(req, "producer_epoch", -1)
    timeout_ms = millis(req.transaction_timeout)
    # authorization (Kafka: WRITE on the transactional id; without one IDEMPOTENT_WRITE on the
    # cluster or WRITE on some topic)
    if req.transactional_id is not None:
        if not ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, req.transactional_id):
            return ctx.response(
                throttle_time_ms=0,
                error_code=ErrorCode.transactional_id_authorization_failed,
                producer_id=-1,
                producer_epoch=-1,
            )
    elif not (
        ctx.allowed(Op.IDEMPOTENT_WRITE, Res.CLUSTER, CLUSTER_NAME) or ctx.allowed_any(Op.WRITE, Res.TOPIC)
    ):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.cluster_authorization_failed,
            producer_id=-1,
            producer_epoch=-1,
        )
    error, pid, epoch = await broker.coordinators.run(
        broker.txns, broker.txns.init_producer_id(req.transactional_id, timeout_ms, pid, epoch)
    )
    return ctx.response(
        throttle_time_ms=0,
        producer_id=pid,
        producer_epoch=epoch,
        error_code=client_error(error, ctx.api_version, fenced_since=4),
    )
