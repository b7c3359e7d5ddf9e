"""RenewDelegationToken (39): moves a token's expiry up to `delegation.token.expiry.time.ms` (at
most the asked period) from now, never past its max lifetime; owner or renewers only
(broker/security/delegation_tokens.py)."""

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
    from minibroker.broker.api_types import RenewDelegationTokenRequest, RenewDelegationTokenResponse
    from minibroker.broker.context import RequestContext

API_KEY = 39


async def handle(ctx: RequestContext, req: RenewDelegationTokenRequest) -> RenewDelegationTokenResponse:
    if not requests_allowed(ctx.session):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.delegation_token_request_not_allowed,
            expiry_timestamp=timestamp(ERROR_TIMESTAMP),
        )
    tokens = ctx.broker.security.tokens
    error, expiry = tokens.renew(principal_of(ctx.session), req.hmac, millis(req.renew_period))
    return ctx.response(throttle_time_ms=0, error_code=error, expiry_timestamp=timestamp(expiry))
