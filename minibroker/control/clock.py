"""The control plane's clock from Python: STUB, filled in by the clock work."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minibroker.control.client import ControlClient

__all__ = ["ClockAPI"]


class ClockAPI:
    def __init__(self, client: ControlClient) -> None:
        self._client = client
