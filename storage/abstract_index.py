"""What Kafka's sparse segment indexes share (Kafka's ``AbstractIndex``).

An index is a file of fixed-size big-endian entries ``(key, value)`` that only ever grows at the
end, with keys strictly increasing. Entries live in memory (two compact arrays) and reach the
file only at flush, roll or close: that costs nothing on the append path and loses nothing,
because the flush that moves the recovery point writes them first, and after a crash the entries
from the recovery point on are cut (``truncate_to``) and rebuilt from the .log. Loading is
lazy: opening reads only the last entry (for a sanity check, and to find the tail of the
active segment); the whole file is read the first time the index is searched or extended.

A subclass says what an entry is: its byte format (``_decode``/``_encode``), how a raw entry
reads to callers (``_entry``) and what makes a last entry insane (``_check_last``).
"""

from __future__ import annotations

import contextlib
import os
from array import array
from typing import TypeVar

from minibroker.storage.durable_files import fsync_file

__all__ = ["AbstractIndex", "CorruptIndexError"]

_I = TypeVar("_I", bound="AbstractIndex")


class CorruptIndexError(Exception):
    """The index file is missing or fails its sanity check; rebuild it from the log."""


class AbstractIndex:
    ENTRY_SIZE = 0  # bytes per entry (subclasses)
    KEY_TYPE = "i"  # array typecodes of the keys and values
    VALUE_TYPE = "i"

    __slots__ = ("path", "base_offset", "_keys", "_values", "_on_disk", "_last", "_synced")

    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._keys: array[int] | None = None  # None until loaded
        self._values: array[int] | None = None
        self._on_disk = 0  # entries already in the file
        self._last: tuple[int, int] | None = None  # raw last entry, while not loaded
        self._synced = -1  # _on_disk when the last fsync was planned; -1: unknown

    # -------------------------------------------------------------- what an entry is
    @classmethod
    def _decode(cls, data: bytes) -> tuple[array[int], array[int]]:
        raise NotImplementedError

    def _encode(self, keys: array[int], values: array[int]) -> bytes:
        raise NotImplementedError

    def _entry(self, key: int, value: int) -> tuple[int, int]:
        """A raw entry as callers see it (relative offsets made absolute)."""
        raise NotImplementedError

    def _check_last(self, key: int, value: int, log_size: int | None) -> None:
        """Raise CorruptIndexError if the file's last entry cannot be right."""

    # -------------------------------------------------------------- construction
    @classmethod
    def create(cls: type[_I], path: str, base_offset: int) -> _I:
        """A new, empty index; the (empty) file is created so that a missing file later means
        someone deleted it."""
        with open(path, "wb"):
            pass
        idx = cls(path, base_offset)
        idx._set_empty()
        return idx

    @classmethod
    def open(cls: type[_I], path: str, base_offset: int, log_size: int | None = None) -> _I:
        """Open an existing index, checking only what is cheap (Kafka's sanityCheck): whole
        entries and a sane last entry. Raises CorruptIndexError."""
        try:
            size = os.path.getsize(path)
        except FileNotFoundError:
            raise CorruptIndexError(f"{path} is missing") from None
        if size % cls.ENTRY_SIZE:
            raise CorruptIndexError(f"{path} has a partial entry ({size} bytes)")
        idx = cls(path, base_offset)
        idx._on_disk = size // cls.ENTRY_SIZE
        if size:
            with open(path, "rb") as f:
                f.seek(size - cls.ENTRY_SIZE)
                keys, values = cls._decode(f.read(cls.ENTRY_SIZE))
            idx._check_last(keys[0], values[0], log_size)
            idx._last = (keys[0], values[0])
        else:
            idx._set_empty()
        return idx

    def _set_empty(self) -> None:
        self._keys, self._values = array(self.KEY_TYPE), array(self.VALUE_TYPE)

    def _loaded(self) -> tuple[array[int], array[int]]:
        """The entries, read from the file on first use."""
        if self._keys is None or self._values is None:
            with open(self.path, "rb") as f:
                data = f.read(self._on_disk * self.ENTRY_SIZE)
            self._keys, self._values = self._decode(data)
            self._last = None
        return self._keys, self._values

    # -------------------------------------------------------------- queries
    def __len__(self) -> int:
        return len(self._keys) if self._keys is not None else self._on_disk

    def last_entry(self) -> tuple[int, int] | None:
        """The last entry (as ``_entry`` shows it), None if empty."""
        if self._keys is None or self._values is None:
            return None if self._last is None else self._entry(*self._last)
        if not self._keys:
            return None
        return self._entry(self._keys[-1], self._values[-1])

    def entries(self) -> list[tuple[int, int]]:
        """All entries (tests and tools)."""
        keys, values = self._loaded()
        return [self._entry(k, v) for k, v in zip(keys, values, strict=True)]

    # -------------------------------------------------------------- changes
    def _append(self, key: int, value: int) -> None:
        keys, values = self._loaded()
        keys.append(key)
        values.append(value)

    def reset(self) -> None:
        """Drop every entry (before a rebuild from the log)."""
        with open(self.path, "wb"):
            pass
        self._set_empty()
        self._on_disk = 0
        self._last = None

    def _entries_below(self, offset: int) -> int:
        """How many entries (from the start) index offsets below ``offset`` (subclasses)."""
        raise NotImplementedError

    def truncate_to(self, offset: int) -> None:
        """Kafka's truncateTo: drop the entries for offsets >= ``offset`` (before the log after
        them is checked again), in memory and in the file."""
        keys, values = self._loaded()
        keep = self._entries_below(offset)
        if keep >= len(keys):
            return
        del keys[keep:]
        del values[keep:]
        if self._on_disk > keep:
            os.truncate(self.path, keep * self.ENTRY_SIZE)
            self._on_disk = keep
            self._synced = -1

    def write_pending(self) -> None:
        """Append the entries not yet in the file (page cache only; see ``sync``)."""
        keys, values = self._keys, self._values
        if keys is None or values is None or len(keys) <= self._on_disk:
            return
        start = self._on_disk
        data = memoryview(self._encode(keys[start:], values[start:]))
        with open(self.path, "ab", buffering=0) as f:
            try:
                while data:  # a full disk writes part of it, then fails
                    data = data[f.write(data) :]
            except OSError:
                # cut back to whole entries written before: the next try appends aligned
                with contextlib.suppress(OSError):
                    f.truncate(start * self.ENTRY_SIZE)
                raise
        self._on_disk = len(keys)

    def take_unsynced(self) -> bool:
        """On the event loop, when an fsync is planned: were entries written since the last
        plan? (An fsync of an unchanged file still costs 0.1-0.5 ms.)"""
        changed, self._synced = self._on_disk != self._synced, self._on_disk
        return changed

    def forget_sync(self) -> None:
        """The planned fsync failed: the next plan must cover this file again."""
        self._synced = -1

    def sync(self) -> None:
        """fsync the file (may run in a worker thread: touches no Python state)."""
        fsync_file(self.path)
