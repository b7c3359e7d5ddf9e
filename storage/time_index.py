"""Kafka's sparse time index (``<base>.timeindex``): timestamp -> where to start looking.

Each entry is 12 bytes, big endian: ``int64 timestamp, int32 offset - segment base``. An entry
``(T, O)`` says: the largest batch timestamp in this segment first reached T in the batch whose
base offset is O, so every batch before that one has a max timestamp below T. To find the first
record with timestamp >= ts, take the last entry with T <= ts and read forward from the batch
at O (through the offset index). Timestamps strictly increase from entry to entry.

Entries are appended together with offset-index entries (every ``index.interval.bytes``) when the
maximum has grown, plus one final entry when the segment stops being active, so the last entry
of a closed segment holds its largest timestamp (read at open without a scan). Like the offset
index (both are AbstractIndexes), entries reach the file at flush, roll or close, and the file
is loaded lazily.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right

from minibroker.storage.abstract_index import AbstractIndex, CorruptIndexError

__all__ = ["TimeIndex"]

_ENTRY = struct.Struct(">qi")


class TimeIndex(AbstractIndex):
    """Keys: timestamps; values: offsets relative to the segment base."""

    ENTRY_SIZE = _ENTRY.size
    KEY_TYPE = "q"
    __slots__ = ()

    @classmethod
    def _decode(cls, data: bytes) -> tuple[array[int], array[int]]:
        ts, offs = array("q"), array("i")
        for t, o in _ENTRY.iter_unpack(data):
            ts.append(t)
            offs.append(o)
        return ts, offs

    def _encode(self, keys: array[int], values: array[int]) -> bytes:
        return b"".join(_ENTRY.pack(t, o) for t, o in zip(keys, values, strict=True))

    def _entry(self, key: int, value: int) -> tuple[int, int]:
        """(timestamp, absolute offset)."""
        return key, self.base_offset + value

    def _check_last(self, key: int, value: int, log_size: int | None) -> None:
        if value < 0:
            raise CorruptIndexError(f"{self.path}: last entry has a negative offset")

    def lookup(self, timestamp: int) -> tuple[int, int] | None:
        """(timestamp, absolute offset) of the last entry with timestamp <= ``timestamp``."""
        timestamps, offsets = self._loaded()
        i = bisect_right(timestamps, timestamp) - 1
        if i < 0:
            return None
        return timestamps[i], self.base_offset + offsets[i]

    def _entries_below(self, offset: int) -> int:
        # offsets grow with the timestamps: an entry is added only for a larger timestamp
        return bisect_left(self._loaded()[1], offset - self.base_offset)

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add (timestamp, offset) if the timestamp is larger than the last entry's."""
        timestamps, _ = self._loaded()
        if (timestamps and timestamp <= timestamps[-1]) or timestamp < 0:
            return
        self._append(timestamp, offset - self.base_offset)
