"""Drop tagged fields that kio does not know from a flexible request body.

Kafka ignores unknown tagged fields (KIP-482), so a newer client may send tags this broker's
schemas lack; kio raises on them instead. This walks the body with the schema class's field
layout, copies every byte except the unknown tags, and lets kio decode the result. It runs only
after kio has refused a body, so speed does not matter here.
"""

from __future__ import annotations

from minibroker.protocol.schema_layout import FIXED_SIZES as _FIXED
from minibroker.protocol.schema_layout import LENGTH_PREFIXED as _LENGTH_PREFIXED
from minibroker.protocol.schema_layout import Schema
from minibroker.protocol.schema_layout import layout as _layout
from minibroker.protocol.varint import BytesLike, read_uvarint
from minibroker.protocol.varint import write_uvarint as _uvarint


def _skip_value(kind: Schema | str, buf: BytesLike, pos: int, out: bytearray) -> int:
    if isinstance(kind, type):
        return _copy_entity(kind, buf, pos, out)
    if kind in _FIXED:
        end = pos + _FIXED[kind]
    elif kind in _LENGTH_PREFIXED:
        n, body = read_uvarint(buf, pos)
        end = body + max(n - 1, 0)
    else:
        raise ValueError(f"unknown field type {kind!r}")
    if end > len(buf):
        raise ValueError("field runs past the end of the request")
    out += buf[pos:end]
    return end


def _copy_field(
    kind: Schema | str, is_array: bool, nullable: bool, buf: BytesLike, pos: int, out: bytearray
) -> int:
    if not is_array:
        if nullable and isinstance(kind, type):  # nullable struct: int8 marker, -1 null
            out += buf[pos : pos + 1]
            if buf[pos] == 0xFF:
                return pos + 1
            pos += 1
        return _skip_value(kind, buf, pos, out)
    n, body = read_uvarint(buf, pos)
    out += buf[pos:body]
    pos = body
    for _ in range(max(n - 1, 0)):
        pos = _skip_value(kind, buf, pos, out)
    return pos


def _copy_entity(cls: Schema, buf: BytesLike, pos: int, out: bytearray) -> int:
    fields, known = _layout(cls)
    for field in fields:
        pos = _copy_field(field.kind, field.is_array, field.nullable, buf, pos, out)
    count, pos = read_uvarint(buf, pos)
    kept = bytearray()
    kept_count = 0
    for _ in range(count):
        tag, p = read_uvarint(buf, pos)
        size, p = read_uvarint(buf, p)
        end = p + size
        if end > len(buf):
            raise ValueError("tagged field runs past the end of the request")
        if tag in known:
            kept += buf[pos:end]
            kept_count += 1
        pos = end
    out += _uvarint(kept_count)
    out += kept
    return pos


def strip_unknown_tags(cls: Schema, buf: BytesLike, offset: int) -> bytes:
    """The body of a flexible request of `cls` starting at `offset`, minus unknown tags."""
    out = bytearray()
    _copy_entity(cls, buf, offset, out)
    return bytes(out)
