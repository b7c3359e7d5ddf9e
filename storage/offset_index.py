"""Kafka's sparse offset index (``<base>.index``): offset -> file position of a batch.

Each entry is 8 bytes, big endian: ``int32 offset - segment base, int32 position``. An entry is
added when more than ``index.interval.bytes`` were appended since the previous one, so a lookup
finds a position at most about that many bytes before the wanted batch and reads forward from
there.

Unlike Kafka, entries point at the *base* offset of the batch at that position (Kafka stores the
batch's last offset). Both answer "where may I start reading to find offset X" correctly; the
base offset makes the answer exact when X is the first offset of an indexed batch.

Entries live in memory (two compact arrays) and reach the file only at flush, roll or close.
That costs nothing on the append path, and nothing is lost by it: a segment that was not flushed
when the process died lies after the recovery point and has its index rebuilt from the .log.
Loading is lazy: opening a segment reads only the last entry (for a sanity check and to find
the tail of the active segment); the whole file is read the first time it is searched.
"""

from __future__ import annotations

import os
import sys
from array import array
from bisect import bisect_right

__all__ = ["OffsetIndex", "CorruptIndexError"]

ENTRY_SIZE = 8
_BIG_ENDIAN = sys.byteorder == "big"


class CorruptIndexError(Exception):
    """The index file is missing or fails its sanity check; rebuild it from the log."""


class OffsetIndex:
    __slots__ = ("path", "base_offset", "_offsets", "_positions", "_on_disk", "_last", "_synced")

    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._offsets: array | None = None  # relative offsets; None until loaded
        self._positions: array | None = None
        self._on_disk = 0  # entries already in the file
        self._last: tuple[int, int] | None = None  # (relative offset, position), when not loaded
        self._synced = -1  # _on_disk when the last fsync was planned; -1: unknown

    # -------------------------------------------------------------- construction
    @classmethod
    def create(cls, path: str, base_offset: int) -> "OffsetIndex":
        """A new, empty index; the (empty) file is created so that a missing file later means
        someone deleted it."""
        with open(path, "wb"):
            pass
        idx = cls(path, base_offset)
        idx._offsets, idx._positions = array("i"), array("i")
        return idx

    @classmethod
    def open(cls, path: str, base_offset: int, log_size: int) -> "OffsetIndex":
        """Open an existing index, checking only what is cheap (Kafka's sanityCheck): whole
        entries, and a last entry that points inside the log. Raises CorruptIndexError."""
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
                last = _decode(f.read(ENTRY_SIZE))
            rel, pos = last[0], last[1]
            if rel < 0 or pos < 0 or pos >= log_size:
                raise CorruptIndexError(
                    f"{path}: last entry (offset {base_offset + rel}, position {pos}) is outside "
                    f"the log ({log_size} bytes)")
            idx._last = (rel, pos)
        else:
            idx._offsets, idx._positions = array("i"), array("i")
        return idx

    def _load(self) -> None:
        with open(self.path, "rb") as f:
            data = f.read(self._on_disk * ENTRY_SIZE)
        flat = _decode(data)
        self._offsets = flat[0::2]
        self._positions = flat[1::2]
        self._last = None

    # -------------------------------------------------------------- queries
    def __len__(self) -> int:
        return len(self._offsets) if self._offsets is not None else self._on_disk

    def last_entry(self) -> tuple[int, int] | None:
        """(absolute offset, position) of the last entry, None if empty."""
        if self._offsets is None:
            if self._last is None:
                return None
            return self.base_offset + self._last[0], self._last[1]
        if not self._offsets:
            return None
        return self.base_offset + self._offsets[-1], self._positions[-1]

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or below ``offset``; (base, 0) if none."""
        if self._offsets is None:
            self._load()
        i = bisect_right(self._offsets, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._offsets[i], self._positions[i]

    def lookup_position(self, position: int) -> tuple[int, int]:
        """(offset, position) of the last entry whose position is <= ``position``."""
        if self._offsets is None:
            self._load()
        i = bisect_right(self._positions, position) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._offsets[i], self._positions[i]

    def entries(self) -> list[tuple[int, int]]:
        """All entries as (absolute offset, position) (tests and tools)."""
        if self._offsets is None:
            self._load()
        b = self.base_offset
        return [(b + o, p) for o, p in zip(self._offsets, self._positions)]

    # -------------------------------------------------------------- changes
    def append(self, offset: int, position: int) -> None:
        if self._offsets is None:
            self._load()
        self._offsets.append(offset - self.base_offset)
        self._positions.append(position)

    def reset(self) -> None:
        """Drop every entry (before a rebuild from the log)."""
        with open(self.path, "wb"):
            pass
        self._offsets, self._positions = array("i"), array("i")
        self._on_disk = 0
        self._last = None

    def write_pending(self) -> None:
        """Append the entries not yet in the file (page cache only; see ``sync``)."""
        if self._offsets is None or len(self._offsets) <= self._on_disk:
            return
        start = self._on_disk
        flat = array("i", bytes(8 * (len(self._offsets) - start)))
        flat[0::2] = self._offsets[start:]
        flat[1::2] = self._positions[start:]
        if not _BIG_ENDIAN:
            flat.byteswap()
        with open(self.path, "ab", buffering=0) as f:
            f.write(flat.tobytes())
        self._on_disk = len(self._offsets)

    def take_unsynced(self) -> bool:
        """On the event loop, when an fsync is planned: were entries written since the last
        plan? (An fsync of an unchanged file still costs 0.1-0.5 ms.)"""
        changed, self._synced = self._on_disk != self._synced, self._on_disk
        return changed

    def sync(self) -> None:
        """fsync the file (may run in a worker thread: touches no Python state)."""
        _fsync_path(self.path)


def _decode(data: bytes) -> array:
    flat = array("i")
    flat.frombytes(data)
    if not _BIG_ENDIAN:
        flat.byteswap()
    return flat


def _fsync_path(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
