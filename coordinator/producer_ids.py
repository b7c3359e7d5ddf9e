"""Durable producer id allocation.

Ids are handed out from blocks. Before the first id of a block is returned, the end of the
block (exclusive) is written to ``<data_dir>/producer_ids`` atomically (temporary file, fsync,
rename, directory fsync). On start the next id is that stored block end, so an id handed out
before a restart or a crash (SIGKILL, power loss after the fsync) is never handed out again;
at most one block of ids is skipped per restart.

File format: one line of JSON ``{"version": 1, "block_end": N, "crc": crc32("1:N")}``.
"""

from __future__ import annotations

import json
import os
import zlib

from minibroker.storage.durable_files import atomic_write

__all__ = ["ProducerIdManager", "ProducerIdStateError", "DEFAULT_BLOCK_SIZE", "MAX_PRODUCER_ID"]

DEFAULT_BLOCK_SIZE = 1000
MAX_PRODUCER_ID = (1 << 63) - 1
_FILE_NAME = "producer_ids"
_VERSION = 1


class ProducerIdStateError(RuntimeError):
    """The producer id counter file is unreadable; refusing to start rather than reuse ids."""


def _crc(block_end: int) -> int:
    return zlib.crc32(f"{_VERSION}:{block_end}".encode())


class ProducerIdManager:
    """Hands out producer ids that are unique for the lifetime of the data directory."""

    __slots__ = ("data_dir", "path", "block_size", "_next", "_block_end")

    def __init__(self, data_dir: str, block_size: int = DEFAULT_BLOCK_SIZE) -> None:
        if block_size < 1:
            raise ValueError("block_size must be >= 1")
        self.data_dir = data_dir
        self.path = os.path.join(data_dir, _FILE_NAME)
        self.block_size = block_size
        os.makedirs(data_dir, exist_ok=True)
        try:
            os.unlink(self.path + ".tmp")
        except FileNotFoundError:
            pass
        stored = self._read()
        # Every id below the stored block end may have been handed out already.
        self._next = stored
        self._block_end = stored

    def _read(self) -> int:
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return 0
        try:
            doc = json.loads(raw)
            version = doc["version"]
            block_end = doc["block_end"]
            crc = doc["crc"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ProducerIdStateError(f"{self.path}: unreadable: {exc}") from None
        if version != _VERSION:
            raise ProducerIdStateError(f"{self.path}: unsupported version {version!r}")
        if (
            not isinstance(block_end, int)
            or isinstance(block_end, bool)
            or not 0 <= block_end <= MAX_PRODUCER_ID + 1
        ):
            raise ProducerIdStateError(f"{self.path}: bad block_end {block_end!r}")
        if crc != _crc(block_end):
            raise ProducerIdStateError(f"{self.path}: CRC mismatch")
        return block_end

    def _write(self, block_end: int) -> None:
        data = (
            json.dumps({"version": _VERSION, "block_end": block_end, "crc": _crc(block_end)}).encode() + b"\n"
        )
        atomic_write(self.path, data)

    def allocate(self) -> int:
        """Return a producer id never returned before (from this data directory)."""
        pid = self._next
        if pid >= self._block_end:
            if pid > MAX_PRODUCER_ID:
                raise ProducerIdStateError("producer id space exhausted")
            end = min(pid + self.block_size, MAX_PRODUCER_ID + 1)
            self._write(end)  # durable before any id of the block is handed out
            self._block_end = end
        self._next = pid + 1
        return pid

    def ensure_above(self, highest_seen: int) -> bool:
        """Never hand out an id at or below one already in the logs (``highest_seen``, from
        producer state and the transaction log): a lost or stale counter file must not make a
        new producer collide with an old one's sequence state. True if the counter moved."""
        if highest_seen < self._next:
            return False
        self._next = highest_seen + 1
        self._block_end = self._next  # the next allocate() persists a block from here
        return True

    @property
    def next_id(self) -> int:
        """The id the next allocate() will return."""
        return self._next

    @property
    def block_end(self) -> int:
        """Exclusive end of the block already persisted."""
        return self._block_end
