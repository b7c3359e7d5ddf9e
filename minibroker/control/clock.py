"""The control plane's clock from Python (docs/control-plane/clock.md).

With `minibroker.testing.broker(control=True, clock="manual")` (or "offset"):
`b.clock.advance(61)` moves the broker's clock 61 seconds on and returns once everything that
fell due (transaction timeouts, session expiry, retention, producer id expiry, ...) has run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minibroker.control.client import ControlClient

__all__ = ["ClockAPI"]

#: How long an advance may take to run what fell due before the client gives up.
ADVANCE_TIMEOUT_S = 120.0


class ClockAPI:
    """`GET /v1/clock` and `POST /v1/clock/advance` of one broker."""

    def __init__(self, client: ControlClient) -> None:
        self._client = client

    def info(self) -> dict[str, Any]:
        """{"mode", "wall_ms", "offset_ms"}."""
        return dict(self._client.get("/v1/clock"))

    @property
    def mode(self) -> str:
        """ "system", "manual" or "offset"."""
        return str(self.info()["mode"])

    def now_ms(self) -> int:
        """The broker's clock: milliseconds since the epoch."""
        return int(self.info()["wall_ms"])

    def advance(self, seconds: float) -> dict[str, Any]:
        """Move the clock `seconds` on; returns once what fell due has run:
        {"mode", "wall_ms", "offset_ms", "fired"}. ControlError 409 on the system clock."""
        return self._advance({"seconds": seconds})

    def advance_ms(self, ms: int) -> dict[str, Any]:
        """`advance` in milliseconds."""
        return self._advance({"ms": ms})

    def _advance(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self._client.request("POST", "/v1/clock/advance", body, timeout=ADVANCE_TIMEOUT_S))

    def __repr__(self) -> str:
        return f"ClockAPI({self._client.base!r})"
