"""A byte range of a segment file: what reads return instead of bytes.

Fetch responses carry record batches exactly as they sit in the .log file, so storage hands out
(segment, position, length) and the connection sends them piece by piece (os.sendfile on plain
TCP, reads under TLS), never decoding them.
The slice names the segment, not a file descriptor: the pool of open segment files
(storage/segment_files.py) may close the file between two pieces, and the next read opens it
again. ``pieces`` is the one loop that reads a slice (the connection sends them; replay of the
internal topics joins them with ``slice_bytes``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple, Protocol

__all__ = ["FileSlice", "ShortSliceError", "slice_bytes"]


class ShortSliceError(OSError):
    """The segment file ends before the slice does (it was truncated under the reader)."""


class SegmentFile(Protocol):
    """What a slice reads through (storage.segment.LogSegment)."""

    @property
    def fd(self) -> int: ...

    def read_batch(self, position: int, size: int) -> bytes: ...


class FileSlice(NamedTuple):
    segment: SegmentFile
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

    def pieces(self, max_piece: int = 1 << 20) -> Iterator[bytes]:
        """The slice's bytes in pieces of at most ``max_piece`` bytes, read as they are taken
        (a slow consumer never holds more than one). Raises OSError if the file is gone,
        ShortSliceError if it is shorter than the slice."""
        position, remaining = self.position, self.length
        while remaining > 0:
            piece = self.segment.read_batch(position, min(remaining, max_piece))
            if not piece:
                raise ShortSliceError(
                    f"segment file shorter than its index says: "
                    f"{remaining} bytes missing at position {position}"
                )
            yield piece
            position += len(piece)
            remaining -= len(piece)


def slice_bytes(chunk: FileSlice | bytes | bytearray | memoryview) -> bytes:
    """All the bytes of a read chunk, as far as the file holds them (a truncated file gives what
    is there: replay then sees a torn last batch, as recovery would)."""
    if isinstance(chunk, (bytes, bytearray, memoryview)):
        return bytes(chunk)
    out = bytearray()
    try:
        for piece in chunk.pieces():
            out += piece
    except ShortSliceError:
        pass
    return bytes(out)
