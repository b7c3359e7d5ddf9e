"""Crash points armed at run time (issue 24 part 2): STUB, filled in by the crash-points work.

The points themselves are common/faults.py's; production code reaches them through the `Faults`
collaborator its constructor takes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ROUTES"]

ROUTES: list[Any] = []
