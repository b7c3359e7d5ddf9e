"""The controlled clock (issue 24 part 3): STUB, filled in by the clock work."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minibroker.broker.state import Broker

__all__ = ["ROUTES", "ClockControl"]


class ClockControl:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.mode: str = broker.config["minibroker.control.clock"]


ROUTES: list[Any] = []
