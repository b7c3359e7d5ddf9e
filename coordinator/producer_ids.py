"""Durable producer id allocation.

Ids are handed out from blocks. Before the first id of a block is returned, the end of the
block (exclusive) is written to ``<data_dir>/producer_ids`` atomically (temporary file, fsync,
rename, directory fsync). On start the next id is that stored block end, so an id handed out
before a restart or a crash (SIGKILL, power loss after the fsync) is never handed out again.

``open`` (startup, before the broker serves) writes the first block on its own thread. The
later writes run off the caller's thread (``submit``: the broker's durability service) one block
ahead, as Kafka's ProducerIdManager prefetches its next block: the first ``allocate`` asks for
the block after the current one, and taking a block asks for the next, so ``allocate`` finds its
next block on disk already and never waits for an fsync (if that write is still running it
waits for it; if it failed, the block is written on the caller's thread, and a failure there is
raised without advancing). At most two blocks of ids are skipped per restart. Nothing is
started at startup (no thread, no pending write): an idle broker stays as small as before.

File format: one line of JSON ``{"version": 1, "block_end": N, "crc": crc32("1:N")}``.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable
from concurrent.futures import Future

import structlog
from minibroker.storage.durable_files import atomic_write
from minibroker.storage.log import run_now

__all__ = ["ProducerIdManager", "ProducerIdStateError", "DEFAULT_BLOCK_SIZE", "MAX_PRODUCER_ID"]

DEFAULT_BLOCK_SIZE = 1000
MAX_PRODUCER_ID = (1 << 63) - 1
_FILE_NAME = "producer_ids"
_VERSION = 1

log = structlog.get_logger(__name__)

#: runs ``fn(*args)`` where durable writes go (the broker's ``Durability.submit``)
Submit = Callable[..., Future[None]]


class ProducerIdStateError(RuntimeError):
    """The producer id counter file is unreadable; refusing to start rather than reuse ids."""


def _crc(block_end: int) -> int:
    return zlib.crc32(f"{_VERSION}:{block_end}".encode())


class ProducerIdManager:
    """Hands out producer ids that are unique for the lifetime of the data directory."""

    __slots__ = ("data_dir", "path", "block_size", "_submit", "_next", "_block_end", "_prefetch")

    def __init__(
        self, data_dir: str, block_size: int = DEFAULT_BLOCK_SIZE, *, submit: Submit = run_now
    ) -> None:
        """Touches no file: ``open`` reads the counter. ``submit``: where the block writes run
        (by default at once, on the caller's thread)."""
        if block_size < 1:
            raise ValueError("block_size must be >= 1")
        self.data_dir = data_dir
        self.path = os.path.join(data_dir, _FILE_NAME)
        self.block_size = block_size
        self._submit = submit
        self._next = 0
        self._block_end = 0  # exclusive end of the blocks known to be on disk
        self._prefetch: tuple[Future[None], int] | None = None  # (write, block end) ahead

    def open(self) -> None:
        """Read the counter (startup; an interrupted write's temporary file is removed) and write
        the first block (a failure, e.g. a full disk, is logged: ``allocate`` writes it later)."""
        os.makedirs(self.data_dir, exist_ok=True)
        try:
            os.unlink(self.path + ".tmp")
        except FileNotFoundError:
            pass
        stored = self._read()
        # Every id below the stored block end may have been handed out already.
        self._next = stored
        self._block_end = stored
        end = min(stored + self.block_size, MAX_PRODUCER_ID + 1)
        try:
            self._write(end)
        except OSError as exc:
            log.warning("could not write the first producer id block", path=self.path, error=str(exc))
        else:
            self._block_end = end

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
            self._take_prefetched()
            if pid >= self._block_end:  # none ahead (or its write failed): write it here
                end = min(pid + self.block_size, MAX_PRODUCER_ID + 1)
                self._write(end)  # durable before any id of the block is handed out
                self._block_end = end
        if self._prefetch is None:
            self._prefetch_next()  # the block after this one, written while this one is used
        self._next = pid + 1
        return pid

    def _take_prefetched(self) -> None:
        """The block written ahead becomes the current one (waiting for its write if it is still
        running; one that failed is logged and dropped)."""
        if self._prefetch is None:
            return
        written, end = self._prefetch
        self._prefetch = None
        error = written.exception()
        if error is not None:
            log.warning("could not write the next producer id block ahead", path=self.path, error=str(error))
        elif end > self._block_end:
            self._block_end = end

    def _prefetch_next(self) -> None:
        start = max(self._block_end, self._next)
        if self._prefetch is not None or start > MAX_PRODUCER_ID:
            return
        end = min(start + self.block_size, MAX_PRODUCER_ID + 1)
        self._prefetch = (self._submit(self._write, end), end)

    def ensure_above(self, highest_seen: int) -> bool:
        """Never hand out an id at or below one already in the logs (``highest_seen``, from
        producer state and the transaction log): a lost or stale counter file must not make a
        new producer collide with an old one's sequence state. True if the counter moved."""
        if highest_seen < self._next:
            return False
        self._take_prefetched()  # (startup) the block asked for by open, if it still counts
        self._next = highest_seen + 1
        self._block_end = max(self._block_end, self._next)  # nothing on disk below: from here
        self._prefetch_next()  # the next allocate() takes a block from here
        return True

    @property
    def next_id(self) -> int:
        """The id the next allocate() will return."""
        return self._next
