"""Kafka's sparse offset index (``<base>.index``): offset -> file position of a batch.

Each entry is 8 bytes, big endian: ``int32 offset - segment base, int32 position``. An entry is
added when more than ``index.interval.bytes`` were appended since the previous one, so a lookup
finds a position at most about that many bytes before the wanted batch and reads forward from
there.

Unlike Kafka, entries point at the *base* offset of the batch at that position (Kafka stores the
batch's last offset). Both answer "where may I start reading to find offset X" correctly; the
base offset makes the answer exact when X is the first offset of an indexed batch.

Loading, lazy reads and writing at flush are the AbstractIndex's (storage/abstract_index.py).
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left, bisect_right

from minibroker.storage.abstract_index import AbstractIndex, CorruptIndexError

__all__ = ["OffsetIndex", "CorruptIndexError"]

_BIG_ENDIAN = sys.byteorder == "big"


class OffsetIndex(AbstractIndex):
    """Keys: offsets relative to the segment base; values: positions in the .log."""

    ENTRY_SIZE = 8
    __slots__ = ()

    @classmethod
    def _decode(cls, data: bytes) -> tuple[array[int], array[int]]:
        flat = array("i")
        flat.frombytes(data)
        if not _BIG_ENDIAN:
            flat.byteswap()
        return flat[0::2], flat[1::2]

    def _encode(self, keys: array[int], values: array[int]) -> bytes:
        flat = array("i", bytes(8 * len(keys)))
        flat[0::2] = keys
        flat[1::2] = values
        if not _BIG_ENDIAN:
            flat.byteswap()
        return flat.tobytes()

    def _entry(self, key: int, value: int) -> tuple[int, int]:
        """(absolute offset, position)."""
        return self.base_offset + key, value

    def _check_last(self, key: int, value: int, log_size: int | None) -> None:
        # the last entry must point inside the log
        if key < 0 or value < 0 or (log_size is not None and value >= log_size):
            raise CorruptIndexError(
                f"{self.path}: last entry (offset {self.base_offset + key}, position {value}) "
                f"is outside the log ({log_size} bytes)"
            )

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or below ``offset``; (base, 0) if none."""
        offsets, positions = self._loaded()
        i = bisect_right(offsets, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + offsets[i], positions[i]

    def lookup_position(self, position: int) -> tuple[int, int]:
        """(offset, position) of the last entry whose position is <= ``position``."""
        offsets, positions = self._loaded()
        i = bisect_right(positions, position) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + offsets[i], positions[i]

    def _entries_below(self, offset: int) -> int:
        return bisect_left(self._loaded()[0], offset - self.base_offset)

    def append(self, offset: int, position: int) -> None:
        self._append(offset - self.base_offset, position)
