"""Request decoding and response encoding through kio's generated schema classes.

kio has one immutable dataclass per (api key, version, request|response), generated from Kafka's
own JSON message definitions. Importing every schema module costs over a second, so classes are
resolved lazily and cached per (api key, version). Responses are built from plain Python values
by `build`, which knows kio's conventions (durations as timedelta, timestamps as datetimes,
nested entities) so handlers never do.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import sys
import typing
import uuid
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import kio
from kio.index import UnknownAPIKey, UnknownEntity, load_payload_module
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from minibroker.protocol.request_guard import MalformedRequest, check_body
from minibroker.protocol.schema_layout import Schema

if TYPE_CHECKING:
    from kio.serial.readers import Reader
    from kio.serial.writers import Writer
    from kio.static.protocol import Entity, Payload, RequestPayload, ResponsePayload

    E = TypeVar("E", bound=Entity)

__all__ = [
    "DecodeError",
    "build",
    "decode_request",
    "encode_response",
    "request_class",
    "response_class",
]

_UTC = datetime.UTC


class DecodeError(Exception):
    """The request body does not parse for its (api key, version)."""


#: Schemas newer than the pinned kio, written in kio's form: (api key, version) -> module.
_NEWER_SCHEMAS = {
    (18, 5): "minibroker.protocol.api_versions_v5",
    (28, 6): "minibroker.protocol.txn_offset_commit_v6",
    (42, 3): "minibroker.protocol.delete_groups_v3",
    (94, 0): "minibroker.protocol.unregister_controller_v0",
}


def _payload_class(
    api_key: int, version: int, kind: Literal[EntityType.request, EntityType.response]
) -> type[Payload] | None:
    try:
        module = load_payload_module(api_key, version, kind)
    except (UnknownAPIKey, UnknownEntity):
        if (api_key, version) not in _NEWER_SCHEMAS:
            return None
        module = importlib.import_module(_NEWER_SCHEMAS[(api_key, version)])
    suffix = "Request" if kind is EntityType.request else "Response"
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and value.__name__.endswith(suffix)
            and getattr(value, "__type__", None) is kind
        ):
            # a class of kio's generated module for this API, marked as its request or response:
            # a kio payload, which the checker cannot see through vars()
            return cast("type[Payload]", value)
    return None


@cache
def request_class(api_key: int, version: int) -> type[RequestPayload] | None:
    # kio's request classes carry their request header's schema (v1 or v2)
    return cast("type[RequestPayload] | None", _payload_class(api_key, version, EntityType.request))


@cache
def response_class(api_key: int, version: int) -> type[ResponsePayload] | None:
    # kio's response classes carry their response header's schema (v0 or v1)
    return cast("type[ResponsePayload] | None", _payload_class(api_key, version, EntityType.response))


@cache
def _reader(cls: type[RequestPayload]) -> Reader[RequestPayload]:
    return entity_reader(cls)


@cache
def _writer(cls: type) -> Writer[Any]:  # cls: a kio entity class (see encode_response)
    return entity_writer(cls)


def decode_request(
    cls: type[RequestPayload], buf: bytes | memoryview, offset: int
) -> tuple[RequestPayload, int]:
    """Decode a request body starting at `offset`; returns (entity, bytes consumed).

    kio raises KeyError for a tagged field it does not know and assorted errors for short or
    malformed input; all of them become DecodeError so the caller can answer cleanly. Lengths
    and nulls are checked first (`request_guard`): kio would abort the process on a huge one.
    """
    try:
        check_body(cls, buf, offset)
    except MalformedRequest as exc:
        raise DecodeError(str(exc)) from None
    try:
        return _reader(cls)(buf, offset)
    except KeyError as exc:
        if not cls.__flexible__:
            raise DecodeError(f"KeyError: {exc}") from None
        # A tagged field this schema lacks: Kafka ignores those (KIP-482), so drop and retry.
        from minibroker.protocol.tagged_fields import strip_unknown_tags  # cold path; avoids an import cycle

        try:
            return _reader(cls)(strip_unknown_tags(cls, buf, offset), 0)
        except Exception as retry_exc:  # noqa: BLE001
            raise DecodeError(f"{type(retry_exc).__name__}: {retry_exc}") from None
    except Exception as exc:  # noqa: BLE001 - any parse failure is the client's bad input
        raise DecodeError(f"{type(exc).__name__}: {exc}") from None


def encode_response(entity: object) -> bytes:
    """The body of a response entity. The dispatcher hands on a handler's answer as `object`;
    any answer that reaches here (not RawResponse, not NO_RESPONSE) is a kio response entity."""
    out = io.BytesIO()
    cls: type = type(entity)
    _writer(cls)(out, entity)
    return out.getvalue()


# --- building entities from plain values ------------------------------------------------------

_TIMEDELTA = {"timedelta_i32", "timedelta_i64"}


# a dataclass, not a NamedTuple: build() reads its fields for every field of every response,
# and a slot reads faster than a named tuple's field
@dataclasses.dataclass(frozen=True, slots=True)
class _FieldPlan:
    name: str
    alias: str | None  # the Kafka name when kio renamed it (throttle_time -> throttle_time_ms)
    kafka_type: str | None
    nested: Schema | None  # entity class for nested structs / arrays of structs
    is_array: bool
    nullable: bool
    has_default: bool
    zero: object


def _zero_for(tp: object, kafka_type: str | None, is_array: bool, nullable: bool) -> object:
    if nullable:
        return None
    if is_array:
        return ()
    if kafka_type in _TIMEDELTA:
        return datetime.timedelta(0)
    if kafka_type == "error_code":
        return ErrorCode.none
    if kafka_type == "uuid":
        return uuid.UUID(int=0)
    if kafka_type in ("string",):
        return ""
    if kafka_type in ("bytes", "records"):
        return b""
    if kafka_type == "bool":
        return False
    return 0


@cache
def _plan(cls: Schema) -> tuple[_FieldPlan, ...]:
    hints = typing.get_type_hints(cls)
    plans: list[_FieldPlan] = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        kafka_type = f.metadata.get("kafka_type")
        nullable = type(None) in typing.get_args(tp)
        if nullable:  # Optional[X]: plan for X
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        is_array = typing.get_origin(tp) is tuple
        inner = typing.get_args(tp)[0] if is_array else tp
        # a dataclass among a kio schema's field types is one of kio's nested entity classes
        nested = (
            cast("Schema", inner) if isinstance(inner, type) and dataclasses.is_dataclass(inner) else None
        )
        alias = None
        if kafka_type in _TIMEDELTA and not f.name.endswith("_ms"):
            alias = f.name + "_ms"
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        plans.append(
            _FieldPlan(
                f.name,
                alias,
                kafka_type,
                nested,
                is_array,
                nullable,
                has_default,
                _zero_for(inner, kafka_type, is_array, nullable),
            )
        )
    return tuple(plans)


def _convert(plan: _FieldPlan, value: Any) -> object:  # value: a plain value of the field's type
    if value is None:
        return None
    if plan.nested is not None:
        if plan.is_array:
            return tuple(v if dataclasses.is_dataclass(v) else build(plan.nested, v) for v in value)
        return value if dataclasses.is_dataclass(value) else build(plan.nested, value)
    kt = plan.kafka_type
    if kt in _TIMEDELTA:
        return value if isinstance(value, datetime.timedelta) else datetime.timedelta(milliseconds=value)
    if kt == "datetime_i64":
        if isinstance(value, datetime.datetime):
            return value
        return None if value < 0 else datetime.datetime.fromtimestamp(value / 1000, tz=_UTC)
    if kt == "error_code":
        return ErrorCode(value)
    if plan.is_array and not isinstance(value, tuple):
        return tuple(value)
    return value


def build(cls: type[E], values: Mapping[str, Any]) -> E:
    """Build a kio entity of `cls` from a dict of plain values.

    Keys the version does not have are ignored (one handler serves many versions); fields not
    given take the schema default, or a zero value (0, "", (), None for nullable fields).
    """
    kwargs: dict[str, object] = {}
    for plan in _plan(cls):
        if plan.name in values:
            kwargs[plan.name] = _convert(plan, values[plan.name])
        elif plan.alias is not None and plan.alias in values:
            kwargs[plan.name] = _convert(plan, values[plan.alias])
        elif not plan.has_default:
            kwargs[plan.name] = plan.zero
    return cls(**kwargs)


def millis(value: datetime.timedelta | datetime.datetime | float | None) -> int:
    """A kio duration (timedelta) or timestamp (datetime) as int milliseconds; None -> -1."""
    if value is None:
        return -1
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    return int(value)


def _declares(module_name: str, class_name: str, name: str) -> bool:
    """Whether `class_name` of the schema module `module_name` has a field `name`. A kio module
    not imported yet is read as text (kio writes one `    name: type` line per field, in its
    class's block): importing it imports its version's request and response, ~3-4 ms each, and
    the broker's first Metadata (a field dropped at v11, another added at v10) would import eight
    of them, to check names the handler tests have already checked."""
    module = sys.modules.get(module_name)
    if module is None and module_name.startswith("kio.schema."):
        return _kio_source_declares(module_name, class_name, name)
    if module is None:
        module = importlib.import_module(module_name)
    same = getattr(module, class_name, None)
    return same is not None and name in {f.name for f in dataclasses.fields(same)}


def _kio_source_declares(module_name: str, class_name: str, name: str) -> bool:
    source = Path(kio.__file__).parent.joinpath(*module_name.split(".")[1:]).with_suffix(".py")
    text = source.read_text(encoding="utf-8")
    start = text.find(f"\nclass {class_name}:\n")
    if start < 0:
        return False
    ends = [i for i in (text.find("\n@", start + 1), text.find("\nclass ", start + 1)) if i >= 0]
    return f"\n    {name}: " in text[start : min(ends, default=len(text))]


#: (entity class, field name) pairs that `field` has checked against the API's schemas
_FIELDS_CHECKED: set[tuple[type, str]] = set()


def field(entity: object, name: str, default: typing.Any) -> typing.Any:
    """`entity.name`, or `default` for a version of the schema that lacks the field.

    Handlers read this way the fields some of the versions they serve lack (kio has one class
    per version). The name must be a field of the entity's class or of the same entity in the
    API's newest schema (kio's or `_NEWER_SCHEMAS`), or, for a field newer versions dropped, in
    an older one; else AttributeError: a misspelt name fails at its first read (in the unit
    tests) instead of silently becoming the default. The check runs once per (class, name);
    after it, a read is one set lookup and a getattr.
    """
    cls: typing.Any = type(entity)  # a kio class; its __api_key__ is not in kio's Entity protocol
    if (cls, name) not in _FIELDS_CHECKED:
        if name not in {f.name for f in dataclasses.fields(cls)}:
            from kio.schema.index import api_key_map, schema_name_map  # noqa: PLC0415 - cold path

            api_key = cls.__api_key__
            versions = schema_name_map[api_key_map[api_key]]
            modules = [(v, path.split(":")[0]) for v, paths in versions.items() for path in paths.values()]
            modules += [(v, module) for (k, v), module in _NEWER_SCHEMAS.items() if k == api_key]
            # newest first: a dropped field costs the older ones
            if not any(_declares(module, cls.__name__, name) for _, module in sorted(modules, reverse=True)):
                raise AttributeError(f"{cls.__name__} (api key {api_key}): no field {name!r} in any version")
        _FIELDS_CHECKED.add((cls, name))
    return getattr(entity, name, default)
