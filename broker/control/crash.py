"""Crash points armed at run time (issue 24 part 2; docs/control-plane/crash-points.md).

The points themselves are common/faults.py's: production code reaches them through the `Faults`
collaborator its constructor takes (the Broker's `faults`, which these routes arm on the
broker's loop). A reached point kills the process with SIGKILL (exit status -9); the test then
restarts the broker on the same data directory, where recovery finishes what was cut short.

- `POST /v1/crash` {"point", "key"?, "after"?, "hits"?} -> {"armed": [...]}
- `GET /v1/crash` -> {"armed": [...], "points": {name: what is durable when it fires}}
- `DELETE /v1/crash` -> {"armed": []}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minibroker.broker.control.http import ControlError, route
from minibroker.common.faults import CRASH_POINTS, UnknownCrashPoint

if TYPE_CHECKING:
    from minibroker.broker.control import ControlPlane

__all__ = ["ROUTES"]

_FIELDS = frozenset({"point", "key", "after", "hits"})


def _armed(plane: ControlPlane) -> list[dict[str, Any]]:
    return [a.to_json() for a in plane.broker.faults.armed]


def _optional_int(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ControlError(400, f"{name!r} must be an integer, not {value!r}")
    return value


@route(
    "POST", "/v1/crash", "arm a crash point: {point, key?, after?, hits?}; the broker dies as SIGKILL there"
)
async def _arm(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    if not isinstance(body, dict):
        raise ControlError(400, 'the body must be a JSON object: {"point": name, "key"?, "after"?, "hits"?}')
    unknown = set(body) - _FIELDS
    if unknown:
        raise ControlError(400, f"unknown fields {sorted(unknown)}; known: {sorted(_FIELDS)}")
    point = body.get("point")
    if not isinstance(point, str):
        raise ControlError(400, f"'point' must be one of: {', '.join(CRASH_POINTS)}")
    key = body.get("key")
    if key is not None and not isinstance(key, str):
        raise ControlError(400, f"'key' must be a string, not {key!r}")
    hits = _optional_int(body, "hits")
    try:
        plane.broker.faults.arm(point, key, _optional_int(body, "after"), 1 if hits is None else hits)
    except UnknownCrashPoint as exc:
        raise ControlError(400, str(exc)) from None
    return {"armed": _armed(plane)}


@route("GET", "/v1/crash", "the armed crash points, and every point with what is durable when it fires")
async def _list(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    return {"armed": _armed(plane), "points": dict(CRASH_POINTS)}


@route("DELETE", "/v1/crash", "disarm every crash point")
async def _disarm(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    plane.broker.faults.disarm()
    return {"armed": []}


ROUTES = [_arm, _list, _disarm]
