"""Request faults and observers (issue 24 part 1): STUB, filled in by the faults work.

`RequestFaults.handle(ctx, request, handle)` is what broker/connection.py calls for every request
when the control plane is on; `handle(ctx, request)` runs the API's handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minibroker.broker.context import RequestContext
    from minibroker.common.clock import Clock

__all__ = ["ROUTES", "RequestFaults"]


class RequestFaults:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def handle(
        self,
        ctx: RequestContext,
        request: Any,
        handle: Callable[[RequestContext, Any], Awaitable[object]],
    ) -> object:
        return await handle(ctx, request)

    def clear(self) -> None:
        pass

    def close(self) -> None:
        pass


ROUTES: list[Any] = []
