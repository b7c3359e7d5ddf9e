"""RenewDelegationToken (39): moves a token's expiry up to `delegation.token.expiry.time.ms` (at
most the asked period) from now, never past its max lifetime; owner or renewers only
(broker/security/delegation_tokens.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.delegation_tokens import expiry_answer
from minibroker.protocol.codec import millis

if TYPE_CHECKING:
    from minibroker.broker.api_types import RenewDelegationTokenRequest, RenewDelegationTokenResponse
    from minibroker.broker.context import RequestContext

API_KEY = 39


async def handle(ctx: RequestContext, req: RenewDelegationTokenRequest) -> RenewDelegationTokenResponse:
    tokens = ctx.broker.security.tokens
    return ctx.response(**expiry_answer(ctx.session, tokens.renew, req.hmac, millis(req.renew_period)))
