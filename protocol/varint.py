"""Unsigned varints of the flexible protocol versions (lengths, counts, tags): one reader, one
writer, shared by the header parser, the request guard and the tagged-field stripper.

Kafka's ByteUtils.readUnsignedVarint reads at most 5 bytes (an int32) and refuses a longer one;
so does ``read_uvarint``.
"""

from __future__ import annotations

__all__ = ["BytesLike", "VarintError", "read_uvarint", "write_uvarint"]

#: What the byte walkers read: a frame, a slice of one (memoryview), or a rebuilt body.
BytesLike = bytes | bytearray | memoryview


class VarintError(ValueError):
    """A varint is truncated or longer than 5 bytes."""


def read_uvarint(buf: BytesLike, pos: int, end: int | None = None) -> tuple[int, int]:
    """(value, position after it) of the varint at ``pos``, read no further than ``end``
    (default: the end of ``buf``). Raises VarintError."""
    if end is None:
        end = len(buf)
    value = shift = 0
    for _ in range(5):
        if pos >= end:
            raise VarintError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    raise VarintError("varint longer than 5 bytes")


def write_uvarint(n: int) -> bytes:
    """Unsigned varint (7 bits a byte, low first), as flexible versions use for lengths."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if not n:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)
