"""Drop tagged fields that kio does not know from a flexible request body.

Kafka ignores unknown tagged fields (KIP-482), so a newer client may send tags this broker's
schemas lack; kio raises on them instead. This walks the body with the schema class's field
layout, copies every byte except the unknown tags, and lets kio decode the result. It runs only
after kio has refused a body, so speed does not matter here.
"""

from __future__ import annotations

import dataclasses
import typing
from functools import lru_cache

from protocol.frames import read_uvarint
from protocol.frames import write_uvarint as _uvarint

_FIXED = {"int8": 1, "bool": 1, "int16": 2, "uint16": 2, "int32": 4, "timedelta_i32": 4,
          "int64": 8, "timedelta_i64": 8, "datetime_i64": 8, "float64": 8, "uuid": 16,
          "error_code": 2}
_LENGTH_PREFIXED = {"string", "bytes", "records"}



@lru_cache(maxsize=None)
def _layout(cls: type) -> tuple[list, dict[int, object]]:
    """(untagged fields in wire order, known tag -> field) where a field is
    (kafka_type or entity class, is_array)."""
    hints = typing.get_type_hints(cls)
    fields, tags = [], {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if type(None) in typing.get_args(tp):
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        is_array = typing.get_origin(tp) is tuple
        inner = typing.get_args(tp)[0] if is_array else tp
        kind = inner if dataclasses.is_dataclass(inner) else f.metadata.get("kafka_type")
        if "tag" in f.metadata:
            tags[f.metadata["tag"]] = (kind, is_array)
        else:
            fields.append((kind, is_array))
    return fields, tags


def _skip_value(kind, buf, pos: int, out: bytearray) -> int:
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


def _copy_field(kind, is_array: bool, buf, pos: int, out: bytearray) -> int:
    if not is_array:
        return _skip_value(kind, buf, pos, out)
    n, body = read_uvarint(buf, pos)
    out += buf[pos:body]
    pos = body
    for _ in range(max(n - 1, 0)):
        pos = _skip_value(kind, buf, pos, out)
    return pos


def _copy_entity(cls: type, buf, pos: int, out: bytearray) -> int:
    fields, known = _layout(cls)
    for kind, is_array in fields:
        pos = _copy_field(kind, is_array, buf, pos, out)
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


def strip_unknown_tags(cls: type, buf, offset: int) -> bytes:
    """The body of a flexible request of `cls` starting at `offset`, minus unknown tags."""
    out = bytearray()
    _copy_entity(cls, buf, offset, out)
    return bytes(out)
