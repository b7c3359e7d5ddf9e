"""The request log: one structured line per request served (Kafka's kafka.request.logger).

On when the broker logs at debug level (lines at debug) or when `minibroker.request.log.enable`
is true (lines at info, so they show without the rest of the debug output). Off, it costs the
server one `is None` check per request: no observer is installed at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
from minibroker.broker.dispatch import HANDLERS
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.config import BrokerConfig
    from minibroker.broker.context import RequestContext

log = structlog.get_logger("broker.requests")


def _api_name(handler_name: str) -> str:
    # offset_for_leader_epoch -> OffsetForLeaderEpoch (Kafka's ApiKeys name)
    return "".join(part.title() for part in handler_name.split("_"))


API_NAMES: dict[int, str] = {key: _api_name(handler.name) for key, handler in HANDLERS.items()}


def error_counts(codes: list[int]) -> dict[str, int]:
    """{"UNKNOWN_TOPIC_OR_PARTITION": 2, ...} for a response's non-zero error codes."""
    counts: dict[str, int] = {}
    for code in codes:
        try:
            name = ErrorCode(code).name.upper()
        except ValueError:
            name = str(code)
        counts[name] = counts.get(name, 0) + 1
    return counts


class RequestLog:
    def __init__(self, at_info: bool) -> None:
        self._emit = log.info if at_info else log.debug

    @classmethod
    def from_config(cls, config: BrokerConfig) -> RequestLog | None:
        if config["minibroker.request.log.enable"]:
            return cls(at_info=True)
        if log.is_enabled_for(10):  # logging.DEBUG
            return cls(at_info=False)
        return None

    def record(self, ctx: RequestContext, seconds: float, errors: list[int]) -> None:
        fields: dict[str, Any] = dict(
            api=API_NAMES.get(ctx.api_key, str(ctx.api_key)),
            api_version=ctx.api_version,
            client_id=ctx.client_id,
            correlation_id=ctx.correlation_id,
            connection=ctx.peer,
            latency_ms=round(seconds * 1000, 3),
        )
        if errors:
            fields["errors"] = error_counts(errors)
        self._emit("request", **fields)
