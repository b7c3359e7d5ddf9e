"""A byte range of a segment file: what reads return instead of bytes.

Fetch responses carry record batches exactly as they sit in the .log file, so storage hands out
(segment, position, length) and the connection sends them piece by piece (os.sendfile on plain
TCP, reads under TLS), never decoding them.
The slice names the segment, not a file descriptor: the pool of open segment files
(storage/segment_files.py) may close the file between two pieces, and the next read opens it
again.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["FileSlice"]


class FileSlice(NamedTuple):
    segment: Any  # storage.segment.LogSegment (read_batch(position, size) -> bytes)
    position: int
    length: int

    def read(self, position: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``position`` of the segment file (absolute, not relative
        to the slice); raises OSError if the file is gone."""
        return self.segment.read_batch(position, size)

    def fileno(self) -> int:
        """The segment file's descriptor, for os.sendfile; opened again if the pool closed it.
        Use it at once, never keep it (the pool may close it when another file opens)."""
        return self.segment.fd
