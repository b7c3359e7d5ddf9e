"""Helpers of the storage unit tests: a settable clock, a LogManager or a PartitionLog in a temp
dir, a SIGKILL and a damaged byte."""

from __future__ import annotations

from minibroker.storage.config import LogConfig
from minibroker.storage.log import PartitionLog
from minibroker.storage.log_manager import LogManager


class Clock:
    """The clock of storage objects (common.clock.Clock); tests set ``now`` (wall ms) by hand,
    the monotonic reading follows it."""

    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def wall_ms(self) -> int:
        return self.now

    def monotonic(self) -> float:
        return self.now / 1000


def open_manager(path, clock: Clock, segment_bytes: int) -> LogManager:
    """An opened LogManager with fsyncs on the caller's thread (no flusher: InlineFlusher).
    Small segments come from the broker default: a topic may not ask for less than 1 MiB (Kafka 4)."""
    m = LogManager(str(path), {"log.segment.bytes": segment_bytes}, clock=clock)
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


def new_topic(path, segment_bytes: int, configs: dict, now: int):
    """(clock, manager, log of "t"-0) of a fresh data dir."""
    clock = Clock(now)
    m, plog = manager_with_topic(path, clock, segment_bytes, configs)
    return clock, m, plog


def open_partition_log(path, *, clean=False, recovery_point=0, **cfg) -> PartitionLog:
    """PartitionLog.open of "t"-0 in ``path`` with ``LogConfig(**cfg)`` and a fresh Clock."""
    return PartitionLog.open(
        str(path),
        "t",
        0,
        LogConfig(**cfg),
        clean_shutdown=clean,
        recovery_point=recovery_point,
        clock=Clock(),
    )


def crash_log(plog: PartitionLog) -> None:
    """What a SIGKILL leaves of one log: the files as written so far (page cache); in-memory
    state and pending index entries are lost."""
    for seg in plog.segments:
        seg.close()


def flip_byte(path, at: int, mask: int) -> int:
    """XOR the byte at ``at`` of the file with ``mask``; returns the byte as it was."""
    with open(path, "r+b") as f:
        f.seek(at)
        old = f.read(1)[0]
        f.seek(at)
        f.write(bytes([old ^ mask]))
    return old
