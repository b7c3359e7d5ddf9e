"""The one clock the broker reads time from (Kafka's `Time`).

Every layer that needs the time takes a `Clock` in its constructor instead of calling `time`:
wall-clock milliseconds for what is written or answered (record timestamps, transaction start
times, expiry) and monotonic seconds for deadlines and durations. `SystemClock` is the real one;
`ManualClock` stands still until a test moves it, so time-based rules (transaction timeouts,
retention, session expiry) can be checked without waiting.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "SystemClock", "ManualClock", "SYSTEM_CLOCK"]


class Clock(Protocol):
    def wall_ms(self) -> int:
        """Milliseconds since the epoch (Kafka's `time.milliseconds()`)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (deadlines, durations)."""
        ...


class SystemClock:
    """The machine's clocks."""

    __slots__ = ()

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()

    def __repr__(self) -> str:
        return "SystemClock()"


class ManualClock:
    """A clock that moves only when told: `advance(ms)` moves both readings together."""

    __slots__ = ("_wall_ms", "_monotonic")

    def __init__(self, wall_ms: int = 1_700_000_000_000, monotonic: float = 1_000.0) -> None:
        self._wall_ms = wall_ms
        self._monotonic = monotonic

    def wall_ms(self) -> int:
        return self._wall_ms

    def monotonic(self) -> float:
        return self._monotonic

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError(f"a clock cannot go back ({ms} ms)")
        self._wall_ms += ms
        self._monotonic += ms / 1000

    def __repr__(self) -> str:
        return f"ManualClock(wall_ms={self._wall_ms})"


#: The clock of a broker nobody gave another one.
SYSTEM_CLOCK: Clock = SystemClock()
