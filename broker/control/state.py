"""The broker's state as tests read it, and waits on it (issue 24 part 4): STUB."""

from __future__ import annotations

from typing import Any

__all__ = ["ROUTES"]

ROUTES: list[Any] = []
