"""The group coordinator's clock and timers on the running event loop
(coordinator.collaborators.Scheduler)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import structlog

__all__ = ["LoopScheduler"]

log = structlog.get_logger("minibroker.coordinator.groups")


class LoopScheduler:
    """Timers on the running asyncio loop; wall-clock milliseconds for timestamps."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def call_later(self, delay_ms: int, fn: Callable[[], None]) -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000, _guarded(fn))


def _guarded(fn: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001 - a timer must never take the loop down
            log.exception("group coordinator timer failed")

    return run
