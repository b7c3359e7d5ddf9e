"""Named crash points: where a test can make the broker die as a SIGKILL would.

Production code calls `faults.crash_point(name, key)` at the few places where a crash is worth
testing (docs/control-plane/crash-points.md lists them with what recovery does). With nothing
armed the call is one attribute test; an armed point that is reached writes one WARNING line
naming it, flushes stdout and stderr and sends the process SIGKILL: no cleanup, no flush of
anything the broker holds, exit status -9, exactly what `kill -9` leaves behind.

A point is armed (`Faults.arm`) with, all optional:
- `key`: only reaches with this key count (a transactional id for the txn.* points, a group id
  for offsets.after_write, "topic-partition" for the storage points; produce.after_append takes
  either the transactional id or a "topic-partition" it appended to);
- `after` (txn.after_markers only): the number of partitions whose markers are written when it
  fires (default 1);
- `hits`: die the Nth time the point is reached (default 1).
An armed point fires once; `disarm()` forgets them all. The control plane arms them at run time
(broker/control/crash.py: `POST /v1/crash`, on the broker's loop), the property
`minibroker.test.fault` at startup (comma separated `point` or `point@key`).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Collection, Iterable

import structlog

__all__ = ["CRASH_POINTS", "ArmedPoint", "Faults", "UnknownCrashPoint"]

log = structlog.get_logger("minibroker.faults")

#: Every crash point production code has, with what is durable (written) when it fires.
CRASH_POINTS: dict[str, str] = {
    "produce.after_append": (
        "a Produce request's batches appended to their logs (and fsynced if a flush policy asks), "
        "its answer not sent"
    ),
    "txn.after_prepare": "PrepareCommit/PrepareAbort written to __transaction_state, no marker written",
    "txn.after_markers": (
        "the markers of `after` (default 1) of the transaction's partitions written, the others not"
    ),
    "txn.before_complete": (
        "every marker written and the group offsets applied, CompleteCommit/CompleteAbort not written"
    ),
    "offsets.after_write": (
        "an OffsetCommit's or TxnOffsetCommit's records written to __consumer_offsets, its answer not sent"
    ),
    "log.mid_roll": (
        "a segment roll half done: the new segment's files created, the old segment neither fsynced "
        "nor given its producer-state snapshot, the recovery point not moved"
    ),
    "cleaner.mid_swap": "compaction: one cleaned segment installed, the others not",
    "checkpoint.mid_write": (
        "the recovery-point checkpoint half done: producer-state snapshots written, the new "
        "recovery-point-offset-checkpoint written to its temporary file, not renamed over the old one"
    ),
}

#: The points that take `after`.
_COUNTED = frozenset({"txn.after_markers"})


class UnknownCrashPoint(ValueError):
    """A name that is not in CRASH_POINTS, or an argument the point does not take."""


def _kill_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class ArmedPoint:
    """One armed crash point and how many times it has been reached."""

    __slots__ = ("point", "key", "after", "hits", "reached")

    def __init__(self, point: str, key: str | None = None, after: int | None = None, hits: int = 1) -> None:
        if point not in CRASH_POINTS:
            raise UnknownCrashPoint(
                f"unknown crash point {point!r}; the known ones: {', '.join(CRASH_POINTS)}"
            )
        if after is not None and point not in _COUNTED:
            raise UnknownCrashPoint(f"`after` is for {', '.join(sorted(_COUNTED))}, not {point}")
        if point in _COUNTED:
            after = 1 if after is None else after
            if after < 1:
                raise UnknownCrashPoint(f"`after` must be 1 or more, not {after}")
        if hits < 1:
            raise UnknownCrashPoint(f"`hits` must be 1 or more, not {hits}")
        self.point = point
        self.key = key or None
        self.after = after
        self.hits = hits
        self.reached = 0

    @classmethod
    def parse(cls, spec: str) -> ArmedPoint:
        """`point` or `point@key` (the property's form)."""
        point, _, key = spec.strip().partition("@")
        return cls(point, key or None)

    def matches(self, key: str | Collection[str] | None, done: int | None) -> bool:
        if self.key is not None:
            if key is None:
                return False
            if isinstance(key, str) and key != self.key:
                return False
            if not isinstance(key, str) and self.key not in key:
                return False
        return self.after is None or done == self.after

    def to_json(self) -> dict[str, object]:
        return {
            "point": self.point,
            "key": self.key,
            "after": self.after,
            "hits": self.hits,
            "reached": self.reached,
        }

    def __repr__(self) -> str:
        key = f"@{self.key}" if self.key else ""
        after = f" after={self.after}" if self.after is not None else ""
        return f"<{self.point}{key}{after} {self.reached}/{self.hits}>"


class Faults:
    """The armed crash points of one broker. `crash` is what a reached point does (SIGKILL of
    this process; unit tests pass a function that raises instead). Armed and reached on the
    broker's loop (the log cleaner's and checkpoint's points included: their crash is decided
    there)."""

    __slots__ = ("armed", "_crash")

    def __init__(self, armed: Iterable[str] = (), *, crash: Callable[[], None] = _kill_now) -> None:
        #: The armed points, in arming order (read-only: replaced, never changed in place, so
        #: `if faults.armed` is the whole cost of a point when nothing is armed).
        self.armed: tuple[ArmedPoint, ...] = ()
        self._crash = crash
        for spec in armed:
            try:
                self._add(ArmedPoint.parse(spec))
            except UnknownCrashPoint as exc:
                log.warning("crash point ignored", spec=spec, problem=str(exc))

    @classmethod
    def from_property(cls, value: str | None) -> Faults:
        """From `minibroker.test.fault`'s value (comma separated `point` or `point@key`)."""
        return cls(p.strip() for p in (value or "").split(",") if p.strip())

    def arm(self, point: str, key: str | None = None, after: int | None = None, hits: int = 1) -> ArmedPoint:
        """Arm `point` (raises UnknownCrashPoint for a name or argument it does not take)."""
        armed = ArmedPoint(point, key, after, hits)
        self._add(armed)
        return armed

    def _add(self, armed: ArmedPoint) -> None:
        self.armed = (*self.armed, armed)
        log.info("crash point armed", point=armed.point, key=armed.key, after=armed.after, hits=armed.hits)

    def disarm(self) -> None:
        self.armed = ()

    def reach(self, name: str, key: str | Collection[str] | None = None, *, done: int | None = None) -> bool:
        """Count one reach of `name` with `key` (a key or the keys it has, e.g. a transactional
        id and partitions) and `done` (txn.after_markers: partitions done); True if an armed
        point fires now (it is disarmed: it fires once). Callers that die elsewhere (another
        thread) decide with this, then call `crash(name)`; the others call `crash_point`."""
        if not self.armed:
            return False
        for armed in self.armed:
            if armed.point == name and armed.matches(key, done):
                armed.reached += 1
                if armed.reached >= armed.hits:
                    self.armed = tuple(a for a in self.armed if a is not armed)
                    return True
        return False

    def crash(self, name: str, key: str | Collection[str] | None = None) -> None:
        """Die now (the WARNING line first)."""
        shown = key if key is None or isinstance(key, str) else sorted(key)
        log.warning("crash point reached: killing the process (SIGKILL)", point=name, key=shown)
        self._crash()

    def crash_point(
        self, name: str, key: str | Collection[str] | None = None, *, done: int | None = None
    ) -> None:
        """Die here if an armed point `name` (for `key`, `done`) is reached for its `hits`th time."""
        if self.armed and self.reach(name, key, done=done):
            self.crash(name, key)
