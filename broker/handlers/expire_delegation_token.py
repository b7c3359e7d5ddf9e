"""ExpireDelegationToken (40): sets a token's expiry to now + the period (a negative period
removes it at once); owner or renewers only (broker/security/delegation_tokens.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.delegation_tokens import expiry_answer
from minibroker.protocol.codec import millis

if TYPE_CHECKING:
    from minibroker.broker.api_types import ExpireDelegationTokenRequest, ExpireDelegationTokenResponse
    from minibroker.broker.context import RequestContext

API_KEY = 40


async def handle(ctx: RequestContext, req: ExpireDelegationTokenRequest) -> ExpireDelegationTokenResponse:
    tokens = ctx.broker.security.tokens
    return ctx.response(**expiry_answer(ctx.session, tokens.expire, req.hmac, millis(req.expiry_time_period)))
