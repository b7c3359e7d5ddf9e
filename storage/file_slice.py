"""A byte range of a segment file: what reads return instead of bytes.

Fetch responses carry record batches exactly as they sit in the .log file, so storage hands out
(fd, position, length) and the connection copies them with os.pread or sendfile, never decoding
them. The fd belongs to the segment and stays open until the segment is closed or deleted.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["FileSlice"]


class FileSlice(NamedTuple):
    fd: int
    position: int
    length: int
