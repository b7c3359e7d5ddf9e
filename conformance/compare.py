"""Field-by-field differences between two normalised answers, with readable paths.

Lists of entries are paired by their identifying field (topic name, partition index, api key,
group id...), so an entry missing on one side is reported as such rather than shifting every
later entry; lists of plain values are compared as sets where order carries no meaning.
"""

from __future__ import annotations

MISSING = "<absent>"
_ENTRY_KEYS = (
    "name",
    "topic",
    "topic_name",
    "partition_index",
    "partition",
    "partition_id",
    "index",
    "api_key",
    "group_id",
    "transactional_id",
    "resource_name",
    "key",
    "broker_id",
    "node_id",
    "log_dir",
    "config_name",
    "member_id",
    "producer_id",
    "coordinator_key",
)
_ORDERED_LISTS = {"records"}


def _entry_key(a: list, b: list) -> str | None:
    """The first identifying field present in every entry and unique within each side."""
    if not a + b or not all(isinstance(i, dict) for i in a + b):
        return None
    for k in _ENTRY_KEYS:
        if all(_unique([i.get(k, MISSING) for i in side]) for side in (a, b)):
            return k
    return None


def _unique(values: list) -> bool:
    return MISSING not in values and len({repr(v) for v in values}) == len(values)


def diff(a, b, path: str = "") -> list[tuple[str, object, object]]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(a) + [k for k in b if k not in a]:
            out += diff(a.get(k, MISSING), b.get(k, MISSING), f"{path}.{k}" if path else k)
        return out
    if isinstance(a, list) and isinstance(b, list):
        leaf = path.rsplit(".", 1)[-1]
        key = _entry_key(a, b) if leaf not in _ORDERED_LISTS else None
        if key is not None:
            am = {repr(i[key]): i for i in a}
            bm = {repr(i[key]): i for i in b}
            out = []
            for k in list(am) + [k for k in bm if k not in am]:
                out += diff(am.get(k, MISSING), bm.get(k, MISSING), f"{path}[{key}={k.strip(chr(39))}]")
            return out
        if all(not isinstance(i, (dict, list)) for i in a + b) and leaf not in _ORDERED_LISTS:
            return [] if sorted(map(repr, a)) == sorted(map(repr, b)) else [(path, a, b)]
        if len(a) != len(b):
            return [(f"{path}.length", len(a), len(b))] + [
                d for i, (x, y) in enumerate(zip(a, b, strict=False)) for d in diff(x, y, f"{path}[{i}]")
            ]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=False)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path, a, b)]
