"""Named crash points: where a test can make the broker die as if SIGKILLed.

Production code calls `faults.crash_point(name, key)` at the few places where a crash is worth
testing (between the steps of a transaction's completion, in the middle of a compaction swap).
With nothing armed the call is one attribute test; armed, the process exits with code 137 at once
(no cleanup, no flush of anything the broker holds: exactly what a SIGKILL leaves), after one
WARNING line naming the point.

Points are armed from the property `minibroker.test.fault` (comma separated; `point@key` limits a
point to one key, for transactions the transactional id). The control plane will arm them at run
time through the same object.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable

import structlog

__all__ = ["CRASH_POINTS", "Faults"]

log = structlog.get_logger("minibroker.faults")

#: Every crash point production code has, with where it is.
CRASH_POINTS: dict[str, str] = {
    "crash-after-prepare-commit": "PrepareCommit durable, no marker written",
    "crash-after-prepare-abort": "PrepareAbort durable, no marker written",
    "crash-after-first-marker": "the first of the transaction's markers written",
    "crash-before-complete": "all markers written and offsets applied, CompleteCommit/Abort not",
    "crash-mid-clean-swap": "compaction: one cleaned segment installed, the others not",
}


def _exit_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(137)


class Faults:
    """The armed crash points of one broker. `crash` is what a reached point does (exit 137;
    unit tests pass a function that raises instead)."""

    __slots__ = ("_armed", "_crash")

    def __init__(self, armed: Iterable[str] = (), *, crash: Callable[[], None] = _exit_now) -> None:
        self._armed: frozenset[str] = frozenset()
        self._crash = crash
        self.arm(armed)

    @classmethod
    def from_property(cls, value: str | None) -> Faults:
        """From `minibroker.test.fault`'s value (comma separated)."""
        return cls(p.strip() for p in (value or "").split(",") if p.strip())

    def arm(self, points: Iterable[str]) -> None:
        """Arm more points; unknown names are logged and ignored."""
        points = set(points)
        unknown = {p for p in points if p.partition("@")[0] not in CRASH_POINTS}
        if unknown:
            log.warning("unknown crash points ignored", points=sorted(unknown), known=sorted(CRASH_POINTS))
        self._armed = self._armed | (points - unknown)

    def disarm(self) -> None:
        self._armed = frozenset()

    @property
    def armed(self) -> frozenset[str]:
        return self._armed

    def crash_point(self, name: str, key: str | None = None) -> None:
        """Die here if `name` (or `name@key`) is armed."""
        if not self._armed:
            return
        if name in self._armed or (key is not None and f"{name}@{key}" in self._armed):
            log.warning("crash point reached: exiting now as if killed", point=name, key=key)
            self._crash()
