"""How the transactional APIs answer once the transaction coordinator has decided."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from minibroker.coordinator.runtime import Operation
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.context import HandlerServices, RequestContext

__all__ = ["answer_when_durable", "client_error", "add_implicitly"]

# Kafka's add.partitions.to.txn.retry.backoff.ms and .max.ms: how a leader retries a KIP-890
# implicit add that found the transaction busy (CONCURRENT_TRANSACTIONS) before answering it
ADD_RETRY_BACKOFF_S = 0.02
ADD_RETRIES = 5  # 100 ms / 20 ms


def client_error(error: ErrorCode, api_version: int, fenced_since: int) -> ErrorCode:
    """PRODUCER_FENCED exists for clients from request version `fenced_since` on; older ones
    are told INVALID_PRODUCER_EPOCH, as Kafka tells them."""
    if error == ErrorCode.producer_fenced and api_version < fenced_since:
        return ErrorCode.invalid_producer_epoch
    return error


async def answer_when_durable(ctx: RequestContext, op: Operation[ErrorCode], *, fenced_since: int) -> Any:
    """Run the transaction coordinator's operation through the coordinator runtime (its state
    changes durable before it returns) and answer with its error code."""
    error = await ctx.broker.coordinators.run(ctx.broker.txns, op)
    return ctx.response(throttle_time_ms=0, error_code=client_error(error, ctx.api_version, fenced_since))


async def add_implicitly(
    broker: HandlerServices, make_op: Callable[[], Operation[ErrorCode] | None]
) -> ErrorCode:
    """Run a TV2 implicit partition addition (Produce v12+, TxnOffsetCommit v5+; `make_op`
    gives None when nothing is to be added), retried a few times while the transaction is busy
    completing the previous one, as Kafka's leader retries it."""
    error = ErrorCode.none
    for attempt in range(ADD_RETRIES + 1):
        op = make_op()
        if op is None:
            return ErrorCode.none
        error = await broker.coordinators.run(broker.txns, op)
        if error != ErrorCode.concurrent_transactions or attempt == ADD_RETRIES:
            break
        await asyncio.sleep(ADD_RETRY_BACKOFF_S)
    return error
