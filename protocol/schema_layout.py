"""The wire layout of a kio schema class: its fields in order, with the facts a byte walker needs.

Both walkers over raw request bodies use it: `request_guard` (checks every length before kio
allocates anything) and `tagged_fields` (drops tags kio does not know).
"""

from __future__ import annotations

import dataclasses
import typing
from functools import cache
from typing import Any, NamedTuple

__all__ = ["FIXED_SIZES", "LENGTH_PREFIXED", "Field", "Schema", "layout"]

#: A kio schema class: a dataclass with class variables __flexible__, __version__, __api_key__...
#: (kio generates them with no common base, hence Any)
Schema = Any

FIXED_SIZES = {
    "int8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
    "error_code": 2,
}
LENGTH_PREFIXED = {"string", "bytes", "records"}


class Field(NamedTuple):
    name: str
    kind: object  # a kafka_type string, or the nested entity class
    is_array: bool
    nullable: bool


@cache
def layout(cls: Schema) -> tuple[tuple[Field, ...], dict[int, Field]]:
    """(untagged fields in wire order, tag number -> tagged field)."""
    hints = typing.get_type_hints(cls)
    fields, tags = [], {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        nullable = type(None) in typing.get_args(tp)
        if nullable:
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        is_array = typing.get_origin(tp) is tuple
        inner = typing.get_args(tp)[0] if is_array else tp
        kind = inner if dataclasses.is_dataclass(inner) else f.metadata.get("kafka_type")
        field = Field(f.name, kind, is_array, nullable)
        if "tag" in f.metadata:
            tags[f.metadata["tag"]] = field
        else:
            fields.append(field)
    return tuple(fields), tags
