"""Reading Kafka's internal-topic record formats (the generated *Key/*Value classes of
`__consumer_offsets` and `__transaction_state`): big-endian integers, unsigned varints, and
strings, bytes and arrays whose lengths are int16/int32 in classic versions and varint+1 in
flexible ones. Every read checks the bounds: a damaged record raises ValueError."""

from __future__ import annotations

import struct

from minibroker.protocol.varint import read_uvarint

__all__ = ["RecordReader"]

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class RecordReader:
    __slots__ = ("buf", "pos", "flexible")

    def __init__(self, buf: bytes, flexible: bool = False) -> None:
        self.buf = memoryview(buf)
        self.pos = 0
        self.flexible = flexible  # set once the version is read

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise ValueError("record field runs past the end")
        view = self.buf[self.pos : self.pos + n]
        self.pos += n
        return view

    def _int(self, field: struct.Struct) -> int:
        value: int = field.unpack(self.take(field.size))[0]
        return value

    def i8(self) -> int:
        return self._int(_I8)

    def i16(self) -> int:
        return self._int(_I16)

    def i32(self) -> int:
        return self._int(_I32)

    def i64(self) -> int:
        return self._int(_I64)

    def uvarint(self) -> int:
        """Kafka's readUnsignedVarint (at most 5 bytes): ``protocol/varint.py``."""
        value, self.pos = read_uvarint(self.buf, self.pos)
        return value

    def string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.i16()
        if n < 0:
            return None
        return bytes(self.take(n)).decode("utf-8")

    def bytes_(self) -> bytes | None:
        n = self.uvarint() - 1 if self.flexible else self.i32()
        if n < 0:
            return None
        return bytes(self.take(n))

    def array_len(self) -> int:
        n = self.uvarint() - 1 if self.flexible else self.i32()
        return max(n, 0)

    def tagged_fields(self) -> dict[int, bytes]:
        """The tagged fields of a flexible structure, by tag (none in classic versions)."""
        if not self.flexible:
            return {}
        fields = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            fields[tag] = bytes(self.take(self.uvarint()))
        return fields
