"""The one clock the broker reads time from (Kafka's `Time`).

Every layer that needs the time takes a `Clock` in its constructor instead of calling `time`:
wall-clock milliseconds for what is written or answered (record timestamps, transaction start
times, expiry) and monotonic seconds for deadlines and durations. `SystemClock` is the real one;
`ManualClock` stands still until a test moves it, so time-based rules (transaction timeouts,
retention, session expiry) can be checked without waiting.

`ControlledClock` is the clock of a broker started with `minibroker.control.clock=manual` or
`offset` (issue 24, docs/control-plane/clock.md): its `wall_ms()` is the time the broker's rules
follow and only the control plane moves it on (manual: the wall time at startup plus what was
advanced; offset: the wall time plus what was advanced), while `monotonic()` stays the machine's,
so what measures real waiting (a Fetch's long poll, idle connections, throttles, fault delays)
goes on working with a clock that stands still. `clock_for_mode` builds the broker's clock.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "SystemClock", "ManualClock", "ControlledClock", "SYSTEM_CLOCK", "clock_for_mode"]


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


class ControlledClock:
    """The clock of a broker whose control plane moves time (`minibroker.control.clock`).

    `manual`: stands still at the wall time of startup until `move_to`/`move_by`; `offset`: the
    machine's wall time plus everything moved so far. `monotonic()` is the machine's in both: the
    rules of the broker (timeouts, expiry, retention, timestamps) read `wall_ms()`, durations of
    real waiting read `monotonic()`. The time never goes back. Moving it runs nothing: the
    broker's timers (broker/coordinator_runtime.py, `ClockTimers`) move it and fire what falls due.
    """

    __slots__ = ("mode", "_start_ms", "_offset_ms")

    def __init__(self, mode: str, *, start_ms: int | None = None) -> None:
        if mode not in ("manual", "offset"):
            raise ValueError(f"a controlled clock is manual or offset, not {mode!r}")
        self.mode = mode
        self._start_ms = time.time_ns() // 1_000_000 if start_ms is None else start_ms
        self._offset_ms = 0

    def wall_ms(self) -> int:
        if self.mode == "manual":
            return self._start_ms + self._offset_ms
        return time.time_ns() // 1_000_000 + self._offset_ms

    def monotonic(self) -> float:
        return time.monotonic()

    @property
    def offset_ms(self) -> int:
        """Everything moved so far (manual: the time since the start the clock shows)."""
        return self._offset_ms

    def move_by(self, ms: int) -> None:
        if ms < 0:
            raise ValueError(f"a clock cannot go back ({ms} ms)")
        self._offset_ms += ms

    def move_to(self, wall_ms: int) -> None:
        """On to `wall_ms` (nothing when the clock is there already: time does not go back)."""
        step = wall_ms - self.wall_ms()
        if step > 0:
            self._offset_ms += step

    def __repr__(self) -> str:
        return f"ControlledClock({self.mode!r}, wall_ms={self.wall_ms()}, offset_ms={self._offset_ms})"


def clock_for_mode(mode: str) -> Clock:
    """The broker's clock for `minibroker.control.clock`: the system's, or a controlled one."""
    return SYSTEM_CLOCK if mode == "system" else ControlledClock(mode)
