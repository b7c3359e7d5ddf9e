"""The non-zero error codes a response carries, for the request log and request metrics.

The walk over a kio response entity is planned once per response class (which fields are error
codes, which are nested entities that may hold some), so observing a response costs a few
attribute reads per topic and partition. Hand-encoded responses (Fetch) carry a `summary` of the
partitions they answered instead.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from minibroker.broker.context import NO_RESPONSE, RawResponse
from minibroker.protocol.codec import _plan as field_plans  # the per-class schema plan codec already caches

#: walk(entity, out): appends the entity's non-zero error codes to out
_Walk = Callable[[object, list[int]], None]


@cache
def _walker(cls: type) -> _Walk | None:
    plans = field_plans(cls)
    direct = [p.name for p in plans if p.kafka_type == "error_code"]
    nested: list[tuple[str, bool, _Walk]] = []
    for p in plans:
        inner = _walker(p.nested) if p.nested is not None else None
        if inner is not None:
            nested.append((p.name, p.is_array, inner))
    if not direct and not nested:
        return None

    def walk(entity: object, out: list[int]) -> None:
        for name in direct:
            code = getattr(entity, name)
            if code:
                out.append(int(code))
        for name, is_array, inner in nested:
            value = getattr(entity, name)
            if value is None:
                continue
            if is_array:
                for item in value:
                    inner(item, out)
            else:
                inner(value, out)

    return walk


def error_codes(result: object) -> list[int]:
    """Every non-zero error code in the response, in schema order (repeats kept)."""
    out: list[int] = []
    if result is NO_RESPONSE or result is None:
        return out
    if isinstance(result, RawResponse):
        for _topic, partitions in result.summary or ():
            out.extend(p.error_code for p in partitions if p.error_code)
        return out
    walk = _walker(type(result))  # type: ignore[arg-type]  # a class is hashable; mypy disagrees
    if walk is not None:
        walk(result, out)
    return out
