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
import io
import typing
import uuid
from functools import cache
from typing import Literal

from kio.index import UnknownAPIKey, UnknownEntity, load_payload_module
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from minibroker.protocol.request_guard import MalformedRequest, check_body
from minibroker.protocol.schema_layout import Schema

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
_NEWER_SCHEMAS = {(18, 5): "minibroker.protocol.api_versions_v5"}


def _payload_class(
    api_key: int, version: int, kind: Literal[EntityType.request, EntityType.response]
) -> Schema | None:
    try:
        module = load_payload_module(api_key, version, kind)
    except (UnknownAPIKey, UnknownEntity):
        if (api_key, version) not in _NEWER_SCHEMAS:
            return None
        import importlib  # noqa: PLC0415 - cold path, once per class

        module = importlib.import_module(_NEWER_SCHEMAS[(api_key, version)])
    suffix = "Request" if kind is EntityType.request else "Response"
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and value.__name__.endswith(suffix)
            and getattr(value, "__type__", None) is kind
        ):
            return value
    return None


@cache
def request_class(api_key: int, version: int) -> Schema | None:
    return _payload_class(api_key, version, EntityType.request)


@cache
def response_class(api_key: int, version: int) -> Schema | None:
    return _payload_class(api_key, version, EntityType.response)


@cache
def _reader(cls: Schema):
    return entity_reader(cls)


@cache
def _writer(cls: Schema):
    return entity_writer(cls)


def decode_request(cls: Schema, buf: bytes | memoryview, offset: int):
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


def encode_response(entity) -> bytes:
    out = io.BytesIO()
    cls: Schema = type(entity)
    _writer(cls)(out, entity)
    return out.getvalue()


# --- building entities from plain values ------------------------------------------------------

_TIMEDELTA = {"timedelta_i32", "timedelta_i64"}


@dataclasses.dataclass(frozen=True, slots=True)
class _FieldPlan:
    name: str
    alias: str | None  # the Kafka name when kio renamed it (throttle_time -> throttle_time_ms)
    kafka_type: str | None
    nested: type | None  # entity class for nested structs / arrays of structs
    is_array: bool
    nullable: bool
    has_default: bool
    zero: object


def _zero_for(tp, kafka_type: str | None, is_array: bool, nullable: bool):
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
    plans = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        kafka_type = f.metadata.get("kafka_type")
        nullable = type(None) in typing.get_args(tp)
        if nullable:  # Optional[X]: plan for X
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        is_array = typing.get_origin(tp) is tuple
        inner = typing.get_args(tp)[0] if is_array else tp
        nested = inner if isinstance(inner, type) and dataclasses.is_dataclass(inner) else None
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


def _convert(plan: _FieldPlan, value):
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


def build(cls: Schema, values: dict):
    """Build a kio entity of `cls` from a dict of plain values.

    Keys the version does not have are ignored (one handler serves many versions); fields not
    given take the schema default, or a zero value (0, "", (), None for nullable fields).
    """
    kwargs = {}
    for plan in _plan(cls):
        if plan.name in values:
            kwargs[plan.name] = _convert(plan, values[plan.name])
        elif plan.alias is not None and plan.alias in values:
            kwargs[plan.name] = _convert(plan, values[plan.alias])
        elif not plan.has_default:
            kwargs[plan.name] = plan.zero
    return cls(**kwargs)


def millis(value) -> int:
    """A kio duration (timedelta) or timestamp (datetime) as int milliseconds; None -> -1."""
    if value is None:
        return -1
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    return int(value)
