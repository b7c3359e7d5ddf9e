"""The control plane's state from Python: STUB, filled in by the state work."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minibroker.control.client import ControlClient

__all__ = ["StateAPI"]


class StateAPI:
    def __init__(self, client: ControlClient) -> None:
        self._client = client
