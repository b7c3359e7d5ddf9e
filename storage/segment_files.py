"""A bounded pool of open segment files (`minibroker.max.open.segment.files`).

Kafka keeps every segment's .log open and relies on a large open-files limit; a partition with
thousands of segments (timestamps stepping ahead roll one per record) then exhausts the
descriptors and the broker cannot even start again. Here a segment opens its .log lazily on the
first read or write, and the files of inactive segments are closed least recently used first once
more than `max_open` of them are open. Segments that must stay open are not in the pool: each
partition's active segment, and segments already deleted from disk whose open file still serves
reads in flight (file.delete.delay.ms).

One pool per LogManager (built and configured by it, handed to its logs and their segments),
used only from the thread that runs the logs (the event loop): fsync in a worker thread opens
its own descriptor (LogSegment.sync) so closing never races it.
"""

from __future__ import annotations

from collections import OrderedDict
from types import ModuleType
from typing import Protocol

resource: ModuleType | None
try:
    import resource
except ImportError:  # not on Windows
    resource = None

__all__ = [
    "SegmentFilePool",
    "DEFAULT_MAX_OPEN_SEGMENT_FILES",
    "effective_max_open",
    "open_files_limit",
]

DEFAULT_MAX_OPEN_SEGMENT_FILES = 1000
# never fewer: a read may hold a couple of segments at once (compaction gaps)
_MIN_OPEN = 16


class _Closable(Protocol):
    def close(self) -> None: ...


class SegmentFilePool:
    def __init__(self, max_open: int = DEFAULT_MAX_OPEN_SEGMENT_FILES) -> None:
        self.max_open = max(max_open, _MIN_OPEN)
        self._lru: OrderedDict[_Closable, None] = OrderedDict()
        self.closed_count = 0  # files closed to stay under the bound (a metric for tests)

    def __len__(self) -> int:
        return len(self._lru)

    def configure(self, max_open: int) -> None:
        self.max_open = max(max_open, _MIN_OPEN)
        self._evict()

    def add(self, segment: _Closable) -> None:
        """An evictable segment's file is open (or was just used): most recently used now."""
        lru = self._lru
        if segment in lru:
            lru.move_to_end(segment)
            return
        lru[segment] = None
        self._evict()

    def remove(self, segment: _Closable) -> None:
        """The segment's file was closed, or it became one that must stay open."""
        self._lru.pop(segment, None)

    def _evict(self) -> None:
        lru = self._lru
        while len(lru) > self.max_open:
            victim = next(iter(lru))
            victim.close()  # LogSegment.close calls remove()
            lru.pop(victim, None)
            self.closed_count += 1


def effective_max_open(configured: int, open_files_limit: int | None) -> int:
    """The configured bound, but at most a quarter of the open-files limit: the rest stays for
    connections, active segments and the files startup and requests open briefly."""
    if open_files_limit is None:
        return configured
    return max(_MIN_OPEN, min(configured, open_files_limit // 4))


def open_files_limit() -> int | None:
    """This process's soft limit on open files, or None if unlimited or unknown."""
    if resource is None:
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else soft
