"""CreateDelegationToken (38): a token for the requester or, with CREATE_TOKENS on the owner, for
another user (broker/security/delegation_tokens.py); refused where Kafka refuses token requests."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.security.delegation_tokens import (
    ERROR_TIMESTAMP,
    Token,
    principal_of,
    requests_allowed,
    split_principal,
    timestamp,
)
from minibroker.protocol.codec import field, millis
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import CreateDelegationTokenRequest, CreateDelegationTokenResponse
    from minibroker.broker.context import RequestContext

API_KEY = 38


async def handle(ctx: RequestContext, req: CreateDelegationTokenRequest) -> CreateDelegationTokenResponse:
    requester = principal_of(ctx.session)
    owner_name = field(req, "owner_principal_name", None)
    owner = f"{field(req, 'owner_principal_type', None)}:{owner_name}" if owner_name else requester
    renewers = [f"{r.principal_type}:{r.principal_name}" for r in req.renewers]

    def answer(error: ErrorCode, token: Token | None = None) -> CreateDelegationTokenResponse:
        owner_type, name = split_principal(owner)
        requester_type, requester_name = split_principal(requester)
        tokens = ctx.broker.security.tokens
        return ctx.response(
            throttle_time_ms=0,
            error_code=error,
            principal_type=owner_type,
            principal_name=name,
            token_requester_principal_type=requester_type,
            token_requester_principal_name=requester_name,
            issue_timestamp=timestamp(token.issue_ms if token else ERROR_TIMESTAMP),
            expiry_timestamp=timestamp(token.expiry_ms if token else ERROR_TIMESTAMP),
            max_timestamp=timestamp(token.max_ms if token else ERROR_TIMESTAMP),
            token_id=token.token_id if token else "",
            hmac=tokens.hmac(token.token_id) if token else b"",
        )

    if not requests_allowed(ctx.session):
        return answer(ErrorCode.delegation_token_request_not_allowed)
    # authorization: a token for someone else needs CREATE_TOKENS on that user
    if owner != requester and not ctx.allowed(Op.CREATE_TOKENS, Res.USER, owner):
        return answer(ErrorCode.delegation_token_authorization_failed)
    error, token = ctx.broker.security.tokens.create(owner, requester, renewers, millis(req.max_lifetime))
    return answer(error, token)
