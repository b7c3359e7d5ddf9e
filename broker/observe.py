"""The one hook the server calls after answering a request, shared by the request log and the
request metrics; None (nothing to call) when both are off."""

from __future__ import annotations

from minibroker.broker.request_log import RequestLog
from minibroker.broker.response_errors import error_codes


def build_request_observer(config, metrics):
    request_log = RequestLog.from_config(config)
    if request_log is None and metrics is None:
        return None

    def observe(ctx, request, result, seconds: float) -> None:
        errors = error_codes(result)
        if request_log is not None:
            request_log.record(ctx, seconds, errors)
        if metrics is not None:
            metrics.on_request(ctx, request, result, seconds, errors)

    return observe
