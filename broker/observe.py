"""The one hook the server calls after answering a request, shared by the request log and the
request metrics; None (nothing to call) when both are off."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from minibroker.broker.request_log import RequestLog
from minibroker.broker.response_errors import error_codes

if TYPE_CHECKING:
    from minibroker.broker.config import BrokerConfig
    from minibroker.broker.context import RequestContext
    from minibroker.broker.metrics import BrokerMetrics

#: observe(ctx, request, response, seconds): called once the response is written (the response
#: is a kio entity, a RawResponse or NO_RESPONSE).
RequestObserver = Callable[["RequestContext", object, object, float], None]


def build_request_observer(config: BrokerConfig, metrics: BrokerMetrics | None) -> RequestObserver | None:
    request_log = RequestLog.from_config(config)
    if request_log is None and metrics is None:
        return None

    def observe(ctx: RequestContext, request: object, result: object, seconds: float) -> None:
        errors = error_codes(result)
        if request_log is not None:
            request_log.record(ctx, seconds, errors)
        if metrics is not None:
            metrics.on_request(ctx, request, result, seconds, errors)

    return observe
