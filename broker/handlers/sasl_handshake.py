"""SaslHandshake (17): pick the SASL mechanism for this connection's SaslAuthenticate exchange.

Only v1 is served (v0 sends the SASL tokens without Kafka framing, which no current client does).
An unknown mechanism gets UNSUPPORTED_SASL_MECHANISM with the offered list and the connection is
closed; a handshake on a non-SASL listener or after authentication gets ILLEGAL_SASL_STATE.
"""

from protocol.errors import ErrorCode

API_KEY = 17
MIN_VERSION, MAX_VERSION = 1, 1


async def handle(ctx, req):
    session = ctx.session
    offered = list(session.listener.mechanisms)
    if session.authenticated:
        return ctx.response(error_code=ErrorCode.illegal_sasl_state, mechanisms=offered)
    if req.mechanism not in offered:
        session.close_reason = f"unsupported SASL mechanism {req.mechanism!r}"
        return ctx.response(error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=offered)
    session.mechanism_server = ctx.broker.security.mechanisms.server(session.listener.name, req.mechanism)
    return ctx.response(error_code=ErrorCode.none, mechanisms=offered)
