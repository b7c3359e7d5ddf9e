"""Check a request body against its schema before kio decodes it.

kio's native reader allocates whatever a length field claims: a compact array length of 2**32-2
in a 24-byte frame makes it request tens of gigabytes and abort the process (SIGABRT), which
nothing in Python can catch. Kafka's generated readers refuse such a request first ("Tried to
allocate a collection of size N, but there are only M bytes remaining") and close the
connection. This walk does the same, driven by kio's own schema metadata (`schema_layout`):

* every array count, string, bytes and records length is checked against the bytes left in the
  frame (or in the enclosing tagged field) before anything is read past it;
* a null (-1) where the schema does not allow one is refused, as Kafka's readers do ("non-nullable
  field X was serialized as null"), instead of reaching a handler as None;
* strings longer than 32767 bytes are refused (Kafka: "string field had invalid length");
* varints are at most 5 bytes (Kafka's readUnsignedVarint).

It only reads; a body that passes is handed to kio unchanged. Trailing bytes after the body are
left alone (some clients send them; see codec.md).
"""

from __future__ import annotations

import struct

from minibroker.protocol.schema_layout import FIXED_SIZES, Field, Schema, layout
from minibroker.protocol.varint import BytesLike, VarintError, read_uvarint

__all__ = ["MalformedRequest", "check_body"]

_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from
_MAX_STRING = 0x7FFF


class MalformedRequest(ValueError):
    """The body cannot be a request of this schema; Kafka closes the connection."""


def _length(buf: BytesLike, pos: int, end: int, flexible: bool, wide: bool) -> tuple[int, int]:
    """A length or count; -1 means null. `wide`: int32 (arrays, bytes) else int16 (strings)."""
    if flexible:
        n, pos = read_uvarint(buf, pos, end)
        return n - 1, pos
    size = 4 if wide else 2
    if pos + size > end:
        raise MalformedRequest("truncated length field")
    return (_I32 if wide else _I16)(buf, pos)[0], pos + size


def _value(kind: Schema | str, name: str, buf: BytesLike, pos: int, end: int, flexible: bool) -> int:
    if isinstance(kind, type):
        return _entity(kind, buf, pos, end)
    size = FIXED_SIZES.get(kind)
    if size is not None:
        pos += size
        if pos > end:
            raise MalformedRequest(f"field {name} runs past the end of the request")
        return pos
    n, pos = _length(buf, pos, end, flexible, kind != "string")
    if n < -1:
        raise MalformedRequest(f"field {name} has invalid length {n}")
    if n == -1:
        raise MalformedRequest(f"non-nullable field {name} was serialized as null")
    if kind == "string" and n > _MAX_STRING:
        raise MalformedRequest(f"string field {name} had invalid length {n}")
    if n > end - pos:
        raise MalformedRequest(f"field {name} claims {n} bytes, but only {end - pos} bytes remain")
    return pos + n


def _field(field: Field, buf: BytesLike, pos: int, end: int, flexible: bool) -> int:  # noqa: C901 - Kafka's field rules
    kind, name = field.kind, field.name
    if not field.is_array:
        if field.nullable and isinstance(kind, type):
            # a nullable struct (DescribeTopicPartitions' cursor) starts with an int8 marker:
            # -1 null, 1 present
            if pos >= end:
                raise MalformedRequest(f"field {name} runs past the end of the request")
            marker = buf[pos] - 256 if buf[pos] > 127 else buf[pos]
            if marker == -1:
                return pos + 1
            if marker != 1:
                raise MalformedRequest(f"nullable struct {name} has invalid marker {marker}")
            return _entity(kind, buf, pos + 1, end)
        if field.nullable and kind not in FIXED_SIZES:
            n, after = _length(buf, pos, end, flexible, kind != "string")
            if n == -1:
                return after
        return _value(kind, name, buf, pos, end, flexible)
    n, pos = _length(buf, pos, end, flexible, True)
    if n == -1:
        if field.nullable:
            return pos
        raise MalformedRequest(f"non-nullable field {name} was serialized as null")
    if n < -1:
        raise MalformedRequest(f"array {name} has invalid length {n}")
    if n > end - pos:
        raise MalformedRequest(
            f"tried to allocate a collection of size {n} for {name}, but "
            f"there are only {end - pos} bytes remaining"
        )
    for _ in range(n):
        pos = _value(kind, name, buf, pos, end, flexible)
    return pos


def _entity(cls: Schema, buf: BytesLike, pos: int, end: int) -> int:
    flexible = cls.__flexible__
    fields, tags = layout(cls)
    for field in fields:
        pos = _field(field, buf, pos, end, flexible)
    if not flexible:
        return pos
    count, pos = read_uvarint(buf, pos, end)
    if count > end - pos:
        raise MalformedRequest(f"{count} tagged fields claimed, {end - pos} bytes remain")
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos, end)
        size, pos = read_uvarint(buf, pos, end)
        if size > end - pos:
            raise MalformedRequest(
                f"tagged field {tag} claims {size} bytes, but only {end - pos} bytes remain"
            )
        tagged = tags.get(tag)
        if tagged is not None:
            _field(tagged, buf, pos, pos + size, flexible)
        pos += size
    return pos


def check_body(cls: Schema, buf: BytesLike, offset: int) -> None:
    """Raise MalformedRequest unless the body at `offset` is safe to hand to kio."""
    try:
        _entity(cls, buf, offset, len(buf))
    except VarintError as exc:
        raise MalformedRequest(str(exc)) from None
