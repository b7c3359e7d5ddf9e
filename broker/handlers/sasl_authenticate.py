"""SaslAuthenticate (36): one step of the mechanism chosen by SaslHandshake.

Success makes the connection's principal `User:<name>`; a failure answers
SASL_AUTHENTICATION_FAILED with the reason and closes the connection, as Kafka does, after
connection.failed.authentication.delay.ms (broker/connection.py waits before answering). No session
lifetime is set (KIP-368 re-authentication is not required).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog
from minibroker.broker.security.scram_store import AuthenticationFailed
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import SaslAuthenticateRequest, SaslAuthenticateResponse
    from minibroker.broker.context import RequestContext

API_KEY = 36

log = structlog.get_logger("minibroker.broker.security")


async def handle(ctx: RequestContext, req: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    session = ctx.session
    assert session is not None  # broker/connection.py gives every request its connection's
    if session.authenticated:
        return ctx.response(
            error_code=ErrorCode.illegal_sasl_state,
            auth_bytes=b"",
            error_message="SaslAuthenticate received after successful authentication",
        )
    server = session.mechanism_server
    assert server is not None  # Session.refusal lets SaslAuthenticate in only after a handshake
    try:
        challenge, finished = server.evaluate(req.auth_bytes)
    except AuthenticationFailed as exc:
        session.fail_authentication(f"authentication failed on listener {session.listener.name}: {exc}")
        return ctx.response(
            error_code=ErrorCode.sasl_authentication_failed, error_message=str(exc), auth_bytes=b""
        )
    if finished:
        session.logged_in(server)
        log.debug("authenticated", peer=ctx.peer, principal=session.principal)
    return ctx.response(
        error_code=ErrorCode.none, error_message=None, auth_bytes=challenge, session_lifetime_ms=0
    )
