"""ExpireDelegationToken (40): sets a token's expiry to now + the period (a negative period
removes it at once); owner or renewers only (broker/security/delegation_tokens.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.delegation_tokens import (
    ERROR_TIMESTAMP,
    principal_of,
    requests_allowed,
    timestamp,
)
from minibroker.protocol.codec import millis
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ExpireDelegationTokenRequest, ExpireDelegationTokenResponse
    from minibroker.broker.context import RequestContext

API_KEY = 40


async def handle(ctx: RequestContext, req: ExpireDelegationTokenRequest) -> ExpireDelegationTokenResponse:
    if not requests_allowed(ctx.session):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.delegation_token_request_not_allowed,
            expiry_timestamp=timestamp(ERROR_TIMESTAMP),
        )
    tokens = ctx.broker.security.tokens
    error, expiry = tokens.expire(principal_of(ctx.session), req.hmac, millis(req.expiry_time_period))
    return ctx.response(throttle_time_ms=0, error_code=error, expiry_timestamp=timestamp(expiry))
