"""Kafka's sparse time index (``<base>.timeindex``): timestamp -> where to start looking.

Each entry is 12 bytes, big endian: ``int64 timestamp, int32 offset - segment base``. An entry
``(T, O)`` says: the largest batch timestamp in this segment first reached T in the batch whose
base offset is O, so every batch before that one has a max timestamp below T. To find the first
record with timestamp >= ts, take the last entry with T <= ts and read forward from the batch
at O (through the offset index). Timestamps strictly increase from entry to entry.

Entries are appended together with offset-index entries (every ``index.interval.bytes``) when the
maximum has grown, plus one final entry when the segment stops being active, so the last entry
of a closed segment holds its largest timestamp (read at open without a scan). Like the offset
index, entries reach the file at flush, roll or close, and the file is loaded lazily.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right

from storage.offset_index import CorruptIndexError, _fsync_path

__all__ = ["TimeIndex"]

_ENTRY = struct.Struct(">qi")
ENTRY_SIZE = _ENTRY.size


class TimeIndex:
    __slots__ = ("path", "base_offset", "_timestamps", "_offsets", "_on_disk", "_last", "_synced")

    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._timestamps: array | None = None  # None until loaded
        self._offsets: array | None = None  # relative
        self._on_disk = 0
        self._last: tuple[int, int] | None = None  # (timestamp, relative offset), when not loaded
        self._synced = -1  # _on_disk when the last fsync was planned; -1: unknown

    @classmethod
    def create(cls, path: str, base_offset: int) -> "TimeIndex":
        with open(path, "wb"):
            pass
        idx = cls(path, base_offset)
        idx._timestamps, idx._offsets = array("q"), array("i")
        return idx

    @classmethod
    def open(cls, path: str, base_offset: int) -> "TimeIndex":
        """Open an existing index: whole entries and a sane last entry, else CorruptIndexError."""
        try:
            size = os.path.getsize(path)
        except FileNotFoundError:
            raise CorruptIndexError(f"{path} is missing") from None
        if size % ENTRY_SIZE:
            raise CorruptIndexError(f"{path} has a partial entry ({size} bytes)")
        idx = cls(path, base_offset)
        idx._on_disk = size // ENTRY_SIZE
        if size:
            with open(path, "rb") as f:
                f.seek(size - ENTRY_SIZE)
                ts, rel = _ENTRY.unpack(f.read(ENTRY_SIZE))
            if rel < 0:
                raise CorruptIndexError(f"{path}: last entry has a negative offset")
            idx._last = (ts, rel)
        else:
            idx._timestamps, idx._offsets = array("q"), array("i")
        return idx

    def _load(self) -> None:
        with open(self.path, "rb") as f:
            data = f.read(self._on_disk * ENTRY_SIZE)
        ts, offs = array("q"), array("i")
        for t, o in _ENTRY.iter_unpack(data):
            ts.append(t)
            offs.append(o)
        self._timestamps, self._offsets = ts, offs
        self._last = None

    def __len__(self) -> int:
        return len(self._timestamps) if self._timestamps is not None else self._on_disk

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, absolute offset) of the last entry, None if empty."""
        if self._timestamps is None:
            if self._last is None:
                return None
            return self._last[0], self.base_offset + self._last[1]
        if not self._timestamps:
            return None
        return self._timestamps[-1], self.base_offset + self._offsets[-1]

    def lookup(self, timestamp: int) -> tuple[int, int] | None:
        """(timestamp, absolute offset) of the last entry with timestamp <= ``timestamp``."""
        if self._timestamps is None:
            self._load()
        i = bisect_right(self._timestamps, timestamp) - 1
        if i < 0:
            return None
        return self._timestamps[i], self.base_offset + self._offsets[i]

    def entries(self) -> list[tuple[int, int]]:
        if self._timestamps is None:
            self._load()
        return [(t, self.base_offset + o) for t, o in zip(self._timestamps, self._offsets)]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add (timestamp, offset) if the timestamp is larger than the last entry's."""
        if self._timestamps is None:
            self._load()
        if self._timestamps and timestamp <= self._timestamps[-1]:
            return
        if timestamp < 0:
            return
        self._timestamps.append(timestamp)
        self._offsets.append(offset - self.base_offset)

    def reset(self) -> None:
        with open(self.path, "wb"):
            pass
        self._timestamps, self._offsets = array("q"), array("i")
        self._on_disk = 0
        self._last = None

    def write_pending(self) -> None:
        if self._timestamps is None or len(self._timestamps) <= self._on_disk:
            return
        start = self._on_disk
        data = b"".join(_ENTRY.pack(t, o) for t, o in zip(self._timestamps[start:],
                                                           self._offsets[start:]))
        with open(self.path, "ab", buffering=0) as f:
            f.write(data)
        self._on_disk = len(self._timestamps)

    def take_unsynced(self) -> bool:
        """See OffsetIndex.take_unsynced."""
        changed, self._synced = self._on_disk != self._synced, self._on_disk
        return changed

    def sync(self) -> None:
        _fsync_path(self.path)
