"""DescribeDelegationToken (41): the tokens of the given owners (all when null) the requester owns,
renews, or may describe (DESCRIBE on the token, DESCRIBE_TOKENS on the owner), as Kafka's
filterToken (broker/security/delegation_tokens.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.security.delegation_tokens import describe_entry, principal_of, requests_allowed
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DescribeDelegationTokenRequest, DescribeDelegationTokenResponse
    from minibroker.broker.context import RequestContext

API_KEY = 41


async def handle(ctx: RequestContext, req: DescribeDelegationTokenRequest) -> DescribeDelegationTokenResponse:
    tokens = ctx.broker.security.tokens
    if not requests_allowed(ctx.session):
        return ctx.response(
            throttle_time_ms=0, error_code=ErrorCode.delegation_token_request_not_allowed, tokens=[]
        )
    if not tokens.enabled:
        return ctx.response(
            throttle_time_ms=0, error_code=ErrorCode.delegation_token_auth_disabled, tokens=[]
        )
    if req.owners is not None and not req.owners:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.none, tokens=[])
    owners = None if req.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in req.owners]
    # authorization: per token, as Kafka's filterToken
    found = tokens.describe(
        principal_of(ctx.session),
        owners,
        lambda token_id: ctx.allowed(Op.DESCRIBE, Res.DELEGATION_TOKEN, token_id),
        lambda owner: ctx.allowed(Op.DESCRIBE_TOKENS, Res.USER, owner),
    )
    return ctx.response(
        throttle_time_ms=0, error_code=ErrorCode.none, tokens=[describe_entry(tokens, t) for t in found]
    )
