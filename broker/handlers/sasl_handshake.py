"""SaslHandshake (17): pick the SASL mechanism for this connection's SaslAuthenticate exchange.

After v0 the client sends the SASL tokens as bare length-prefixed frames instead of
SaslAuthenticate requests (Kafka before 1.0; broker/connection.py passes them to the session).
An unknown mechanism gets UNSUPPORTED_SASL_MECHANISM with the offered list and the connection is
closed (a failed authentication for Kafka: answered after connection.failed.authentication.delay.ms);
a handshake on a non-SASL listener or after authentication gets ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import SaslHandshakeRequest, SaslHandshakeResponse
    from minibroker.broker.context import RequestContext

API_KEY = 17


async def handle(ctx: RequestContext, req: SaslHandshakeRequest) -> SaslHandshakeResponse:
    session = ctx.session
    assert session is not None  # broker/connection.py gives every request its connection's
    offered = list(session.listener.mechanisms)
    if session.authenticated:
        return ctx.response(error_code=ErrorCode.illegal_sasl_state, mechanisms=offered)
    if req.mechanism not in offered:
        session.fail_authentication(f"unsupported SASL mechanism {req.mechanism!r}")
        return ctx.response(error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=offered)
    session.mechanism_server = ctx.broker.security.mechanisms.server(session.listener.name, req.mechanism)
    session.raw_tokens = ctx.api_version == 0
    return ctx.response(error_code=ErrorCode.none, mechanisms=offered)
