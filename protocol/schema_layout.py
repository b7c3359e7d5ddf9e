"""The wire layout of a kio schema class: its fields in order, with the facts a byte walker needs.

Both walkers over raw request bodies use it: `request_guard` (checks every length before kio
allocates anything) and `tagged_fields` (drops tags kio does not know).
"""

from __future__ import annotations

import dataclasses
import typing
from functools import cache
from typing import TYPE_CHECKING, NamedTuple, TypeAlias, cast

if TYPE_CHECKING:
    from kio.static.protocol import Entity

__all__ = ["FIXED_SIZES", "LENGTH_PREFIXED", "Field", "Schema", "layout"]

#: A kio schema class: a dataclass with class variables __flexible__, __version__, ... kio
#: generates them with no common base; its `Entity` protocol describes them all (requests,
#: responses and the structs nested in them).
Schema: TypeAlias = "type[Entity]"

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
    kind: Schema | str  # the nested entity class, or a kafka_type string
    is_array: bool
    nullable: bool


@cache
def layout(cls: Schema) -> tuple[tuple[Field, ...], dict[int, Field]]:
    """(untagged fields in wire order, tag number -> tagged field)."""
    hints = typing.get_type_hints(cls)
    fields: list[Field] = []
    tags: dict[int, Field] = {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        nullable = type(None) in typing.get_args(tp)
        if nullable:
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        is_array = typing.get_origin(tp) is tuple
        inner = typing.get_args(tp)[0] if is_array else tp
        # a dataclass among a kio schema's field types is one of kio's nested entity classes;
        # every other field of kio's (and our newer) schemas names its kafka_type
        kind = cast("Schema", inner) if dataclasses.is_dataclass(inner) else f.metadata["kafka_type"]
        field = Field(f.name, kind, is_array, nullable)
        if "tag" in f.metadata:
            tags[f.metadata["tag"]] = field
        else:
            fields.append(field)
    return tuple(fields), tags
