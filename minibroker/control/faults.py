"""The control plane's faults from Python: STUB, filled in by the faults work."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minibroker.control.client import ControlClient

__all__ = ["FaultsAPI"]


class FaultsAPI:
    def __init__(self, client: ControlClient) -> None:
        self._client = client
