"""Kafka's aborted-transaction index (``<base>.txnindex``), one per segment.

An entry is written when an ABORT marker is appended to the segment: which producer, the first
offset of its aborted transaction on this partition, the marker's offset, and the last stable
offset right after the marker. read_committed consumers get the entries that overlap a fetch and
drop those producers' records. The file format is Kafka's, 34 bytes per entry, big endian::

    int16 version (0) | int64 producerId | int64 firstOffset | int64 lastOffset |
    int64 lastStableOffset

The file only exists for segments that hold an abort marker (as in Kafka). Entries are written
to the file as they are appended (aborts are rare, and this keeps them through a process kill);
fsync happens with the segment's. After an unclean shutdown the index of every recovered segment
is rebuilt from the abort markers in its .log.
"""

from __future__ import annotations

import os
import struct
from typing import NamedTuple

from minibroker.storage.abstract_index import CorruptIndexError
from minibroker.storage.durable_files import fsync_file

__all__ = ["AbortedTxn", "TransactionIndex"]

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int  # offset of the ABORT marker
    last_stable_offset: int  # LSO right after the marker was written


class TransactionIndex:
    __slots__ = ("path", "base_offset", "entries", "_synced")

    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.entries: list[AbortedTxn] = []
        self._synced = 0  # entries when the last fsync was planned (no file without entries)

    @classmethod
    def open(cls, path: str, base_offset: int) -> TransactionIndex:
        """Load the file if there is one (none means no aborts). Raises CorruptIndexError."""
        idx = cls(path, base_offset)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return idx
        if len(data) % ENTRY_SIZE:
            raise CorruptIndexError(f"{path} has a partial entry ({len(data)} bytes)")
        prev_last = -1
        for version, pid, first, last, lso in _ENTRY.iter_unpack(data):
            if version != _VERSION or first > last or last < prev_last or last < base_offset:
                raise CorruptIndexError(f"{path}: invalid entry ({version}, {pid}, {first}, {last}, {lso})")
            prev_last = last
            idx.entries.append(AbortedTxn(pid, first, last, lso))
        return idx

    def append(self, txn: AbortedTxn) -> None:
        with open(self.path, "ab", buffering=0) as f:
            f.write(_ENTRY.pack(_VERSION, *txn))
        self.entries.append(txn)

    def reset(self) -> None:
        """Forget all entries and empty the file (before a rebuild from the log)."""
        self.entries.clear()
        with open(self.path, "wb"):
            pass

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset`` (before the log after it is
        replayed and its aborts indexed again), in memory and in the file."""
        keep = [e for e in self.entries if e.last_offset < offset]
        if len(keep) == len(self.entries):
            return
        self.entries[:] = keep
        os.truncate(self.path, len(keep) * ENTRY_SIZE)
        self._synced = 0

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Kafka's TransactionIndex.collectAbortedTxns: entries with last_offset >=
        fetch_offset and first_offset < upper_bound; the flag says no later segment can hold
        more (an entry's last stable offset reached upper_bound)."""
        out = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return out, True
        return out, False

    def take_unsynced(self) -> bool:
        """See AbstractIndex.take_unsynced."""
        n = len(self.entries)
        changed, self._synced = n != self._synced, n
        return changed and n > 0

    def forget_sync(self) -> None:
        """The planned fsync failed: the next plan must cover this file again."""
        self._synced = 0

    def sync(self) -> None:
        if self.entries:
            fsync_file(self.path)
