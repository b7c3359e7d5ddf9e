"""ApiVersions (18): advertise exactly the handler table in broker/dispatch.py.

No `transaction.version` feature is finalized (epoch -1), so clients use the classic (KIP-98)
transaction flow; KIP-890 v2 is not offered.
"""

from protocol.codec import build, encode_response, response_class
from protocol.errors import ErrorCode

API_KEY = 18
MIN_VERSION, MAX_VERSION = 0, 4


def _api_keys() -> list[dict]:
    from broker.dispatch import HANDLERS  # the table imports this module

    return [
        dict(api_key=key, min_version=m.MIN_VERSION, max_version=m.MAX_VERSION)
        for key, m in sorted(HANDLERS.items())
    ]


def unsupported_version_body() -> bytes:
    """A v0 body with UNSUPPORTED_VERSION, for requests above our max: clients retry with the
    max they find for key 18 in the list."""
    return encode_response(
        build(response_class(API_KEY, 0), dict(error_code=ErrorCode.unsupported_version, api_keys=_api_keys()))
    )


async def handle(ctx, req):
    return ctx.response(
        error_code=ErrorCode.none,
        api_keys=_api_keys(),
        throttle_time_ms=0,
        finalized_features_epoch=-1,
    )
