"""The clock tests move (issue 24 part 3; docs/control-plane/clock.md).

A broker started with `minibroker.control.clock=manual` (stands still at the wall time of
startup) or `offset` (wall time plus what was advanced) reads a `common.clock.ControlledClock`;
its coordinator timers and periodic duties are due at clock times
(broker/coordinator_runtime.py `ClockTimers`). `POST /v1/clock/advance` moves it, fires what fell
due in due order and answers once all of it has run to its end. With the system clock the routes
read the time and refuse to move it (409).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minibroker.broker.control.http import ControlError, route
from minibroker.common.clock import ControlledClock

if TYPE_CHECKING:
    from minibroker.broker.control import ControlPlane
    from minibroker.broker.coordinator_runtime import ClockTimers
    from minibroker.broker.state import Broker

__all__ = ["ROUTES", "ClockControl"]

SYSTEM_CLOCK_REFUSAL = "the broker runs on the system clock (minibroker.control.clock=system)"


class ClockControl:
    """The broker's clock as the control plane reads and moves it."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.mode: str = broker.config["minibroker.control.clock"]

    @property
    def _controlled(self) -> ControlledClock | None:
        clock = self._broker.clock
        return clock if isinstance(clock, ControlledClock) else None

    @property
    def _timers(self) -> ClockTimers | None:
        return self._broker.coordinators.clock_timers

    def info(self) -> dict[str, Any]:
        controlled = self._controlled
        return {
            "mode": self.mode,
            "wall_ms": self._broker.clock.wall_ms(),
            "offset_ms": controlled.offset_ms if controlled is not None else 0,
        }

    async def advance(self, ms: int) -> dict[str, Any]:
        """Move the clock `ms` on; answers once everything that fell due has run."""
        timers = self._timers
        if self._controlled is None or timers is None:
            raise ControlError(409, SYSTEM_CLOCK_REFUSAL)
        if ms < 0:
            raise ControlError(400, f"the clock does not go back: {ms} ms")
        fired = await timers.advance(ms)
        return {**self.info(), "fired": fired}


def _ms_of(body: Any) -> int:
    if not isinstance(body, dict) or ("ms" in body) == ("seconds" in body):
        raise ControlError(400, 'give {"ms": n} or {"seconds": s}')
    value = body["ms"] if "ms" in body else body["seconds"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ControlError(400, f"not a number of {'ms' if 'ms' in body else 'seconds'}: {value!r}")
    ms = round(value * 1000) if "seconds" in body else round(value)
    if ms < 0:
        raise ControlError(400, f"the clock does not go back: {value} {'ms' if 'ms' in body else 'seconds'}")
    return int(ms)


@route("GET", "/v1/clock", "the broker's clock: mode, wall_ms, offset_ms")
async def _get_clock(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    return plane.clock.info()


@route(
    "POST",
    "/v1/clock/advance",
    'move the clock {"ms"} or {"seconds"} on; answers after what fell due has run (409 on the system clock)',
)
async def _advance(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    if plane.clock.mode == "system":
        raise ControlError(409, SYSTEM_CLOCK_REFUSAL)
    return await plane.clock.advance(_ms_of(body))


ROUTES = [_get_clock, _advance]
