"""Helpers of the storage unit tests: a settable clock and a LogManager in a temp dir."""

from __future__ import annotations

from minibroker.storage.log_manager import LogManager


class Clock:
    """time_ms for storage objects; tests move ``now`` by hand."""

    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def open_manager(path, clock: Clock, segment_bytes: int) -> LogManager:
    """An opened LogManager with fsyncs on the caller's thread. Small segments come from the
    broker default: a topic may not ask for less than 1 MiB (Kafka 4)."""
    m = LogManager(str(path), {"log.segment.bytes": segment_bytes}, time_ms=clock, background_flush=False)
    m.open()
    return m


def manager_with_topic(path, clock: Clock, segment_bytes: int, configs: dict):
    """(manager, log of partition 0) of a new one-partition topic "t"."""
    m = open_manager(path, clock, segment_bytes)
    m.create_topic("t", 1, configs)
    return m, m.get_log("t", 0)


def crash(m: LogManager) -> None:
    """Stop without close(): no flush, no snapshot, no clean-shutdown marker (the page cache
    survives, as after a SIGKILL)."""
    for plog in m.all_logs():
        plog._wait_pending_flushes()
        for seg in plog.segments:
            seg.close()
    if m._executor is not None:
        m._executor.shutdown(wait=True)


def new_topic(path, segment_bytes: int, configs: dict, now: int):
    """(clock, manager, log of "t"-0) of a fresh data dir."""
    clock = Clock(now)
    m, plog = manager_with_topic(path, clock, segment_bytes, configs)
    return clock, m, plog
