"""How the transactional APIs answer once the transaction coordinator has decided."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minibroker.coordinator.runtime import Operation
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.context import RequestContext

__all__ = ["answer_when_durable", "client_error"]


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
