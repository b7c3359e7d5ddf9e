"""What a request fault reads of a request and how it answers one (broker/control/faults.py).

Reading: the API's Kafka name, the topics and partitions a request names (by name or by topic
id, resolved through `LogManager.topic_names`), its transactional and group ids, and the request
as plain JSON values (for `where` and for the remote predicates of `ask` faults). Answering: an
error placed where Kafka reports it, from the request's and response's shapes as kio's schema
plans give them (protocol.codec._plan), planned once per class:

- partition-bearing APIs answer the error on the matched partitions only; APIs with side effects
  (Produce, OffsetCommit, TxnOffsetCommit, DeleteRecords, OffsetDelete) run their handler on the
  other partitions only, so a faulted partition is not written; AddPartitionsToTxn answers
  OPERATION_NOT_ATTEMPTED for the others and adds nothing (Kafka's all-or-nothing rule); read
  APIs run the handler and replace the matched entries with clean error entries;
- CreateTopics, DeleteTopics and CreatePartitions answer it per topic, the others created,
  deleted or grown as asked;
- the other APIs get Kafka's error response (AbstractRequest.getErrorResponse) without their
  handler running: a faulted EndTxn ends nothing.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from minibroker.broker.context import NO_RESPONSE, RawResponse
from minibroker.protocol.codec import _plan as field_plans  # kio's schema plan, cached per class
from minibroker.protocol.codec import build, response_class
from minibroker.protocol.errors import ErrorCode

__all__ = [
    "API_KEYS",
    "Layout",
    "api_key_of",
    "api_name",
    "error_answer",
    "group_ids",
    "layout",
    "materialize",
    "request_json",
    "set_throttle",
    "topic_partitions",
    "transactional_ids",
    "without",
]

# --- API names --------------------------------------------------------------------------------


def _camel(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


def _api_names() -> dict[int, str]:
    from minibroker.broker.dispatch import HANDLERS  # noqa: PLC0415 - broker's table, no handler imported

    return {key: _camel(h.name) for key, h in HANDLERS.items()}


#: api key -> Kafka's ApiKeys name in CamelCase ("Produce", "EndTxn", "InitProducerId")
API_KEYS: dict[int, str] = _api_names()
_BY_NAME = {name.lower(): key for key, name in API_KEYS.items()}
_BY_NAME.update({name.replace("_", ""): key for name, key in list(_BY_NAME.items())})


def api_name(key: int) -> str:
    return API_KEYS.get(key, str(key))


def api_key_of(value: object) -> int:
    """An API given as its key number or its name: "Produce", "produce", "END_TXN", 26."""
    if isinstance(value, bool):
        raise ValueError(f"api: {value!r} is neither a name nor a key")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    key = _BY_NAME.get(text.replace("_", "").replace("-", "").lower())
    if key is None:
        raise ValueError(f"api: unknown API {value!r} (Kafka's names, e.g. Produce, EndTxn, JoinGroup)")
    return key


# --- the request's shape ----------------------------------------------------------------------

_TOPIC_ARRAYS = (
    "topics",
    "topic_data",
    "v3_and_below_topics",
    "responses",
    "results_by_topic_v3_and_below",
    "results",
)
_NAME_FIELDS = ("name", "topic")
_INDEX_FIELDS = ("index", "partition_index", "partition")
_PART_ARRAYS = (
    "partitions",
    "partition_data",
    "partition_indexes",
    "partition_responses",
    "results_by_partition",
)
_ERROR_FIELDS = ("error_code", "partition_error_code")


@dataclasses.dataclass(frozen=True, slots=True)
class Layout:
    """Where an entity class keeps its topics: `path` the array fields from the top (one, or two
    for OffsetFetch v8+'s groups[].topics), then in each topic entry its name field, whether it
    has a topic id, and its partitions: an array of entities (`index` names their index field)
    or of ints (`index` None); `parts` None for topic-level APIs."""

    path: tuple[str, ...]
    name: str | None
    topic_id: bool
    parts: str | None
    index: str | None
    error: str | None  # the partition's (or, topic-level, the topic's) error field: responses


def _fields(cls: Any) -> tuple[Any, ...]:  # cls: a kio entity class
    return field_plans(cls)


def _plans(cls: Any) -> dict[str, Any]:  # cls: a kio entity class
    return {p.name: p for p in field_plans(cls)}


def _topic_entry(cls: Any, path: tuple[str, ...]) -> Layout | None:
    plans = _plans(cls)
    name = next((n for n in _NAME_FIELDS if n in plans and plans[n].kafka_type == "string"), None)
    has_id = "topic_id" in plans
    if name is None and not has_id:
        return None
    for parts in _PART_ARRAYS:
        p = plans.get(parts)
        if p is None or not p.is_array:
            continue
        if p.nested is None:  # int32 indexes
            return Layout(path, name, has_id, parts, None, None)
        inner = _plans(p.nested)
        index = next((n for n in _INDEX_FIELDS if n in inner), None)
        if index is not None:
            error = next((n for n in _ERROR_FIELDS if n in inner), None)
            return Layout(path, name, has_id, parts, index, error)
    error = next((n for n in _ERROR_FIELDS if n in plans), None)
    return Layout(path, name, has_id, None, None, error)


_LAYOUTS: dict[type, Layout | None] = {}


def layout(cls: type) -> Layout | None:
    """The topics' layout of a kio request or response class, or None (no topics)."""
    try:
        return _LAYOUTS[cls]
    except KeyError:
        found = _LAYOUTS[cls] = _layout(cls)
        return found


def _layout(cls: Any) -> Layout | None:  # cls: a kio entity class
    for p in field_plans(cls):
        if not p.is_array or p.nested is None or p.name not in _TOPIC_ARRAYS:
            continue
        found = _topic_entry(p.nested, (p.name,))
        if found is not None:
            return found
    for p in field_plans(cls):  # groups[].topics[] (OffsetFetch v8+)
        if p.is_array and p.nested is not None and p.name == "groups":
            for q in field_plans(p.nested):
                if q.is_array and q.nested is not None:
                    found = _topic_entry(q.nested, (p.name, q.name))
                    if found is not None:
                        return found
    return None


def _topic_entries(entity: object, path: tuple[str, ...]) -> Iterator[object]:
    value = getattr(entity, path[0], None)
    if value is None:
        return
    for item in value:
        if len(path) == 1:
            yield item
        else:
            yield from _topic_entries(item, path[1:])


def _topic_name(entry: object, shape: Layout, names: dict[uuid.UUID, str]) -> str | None:
    if shape.topic_id:
        topic_id = getattr(entry, "topic_id", None)
        if topic_id is not None and topic_id.int:
            return names.get(topic_id, str(topic_id))
    return getattr(entry, shape.name) if shape.name is not None else None


def topic_partitions(
    request: object, names: dict[uuid.UUID, str]
) -> list[tuple[str | None, int | None]] | None:
    """The (topic, partition) pairs a request names (partition None for topic-level APIs), or
    None when it names none (no topics in its schema, or a Metadata request for every topic)."""
    shape = layout(type(request))
    if shape is None:
        listed = getattr(request, "topic_names", None)  # DeleteTopics v0-5: names only
        return [(name, None) for name in listed] if listed is not None else None
    if getattr(request, shape.path[0], None) is None:
        return None
    out: list[tuple[str | None, int | None]] = []
    for entry in _topic_entries(request, shape.path):
        topic = _topic_name(entry, shape, names)
        if shape.parts is None:
            out.append((topic, None))
            continue
        for part in getattr(entry, shape.parts):
            out.append((topic, part if shape.index is None else getattr(part, shape.index)))
    return out


def fetch_session_partitions(
    ctx: Any, request: Any, names: dict[uuid.UUID, str]
) -> list[tuple[str | None, int | None]]:
    """The partitions an incremental Fetch reads without naming them: those of its KIP-227
    session (a fault on one of them answers it even when the request names only others)."""
    if getattr(request, "session_id", 0) <= 0 or getattr(request, "session_epoch", 0) <= 0:
        return []
    sessions = getattr(ctx.broker, "fetch_sessions", None)
    session = sessions.get(request.session_id) if sessions is not None else None
    if session is None:
        return []
    return [
        (pf.topic if pf.topic is not None else names.get(pf.topic_id) if pf.topic_id else None, pf.partition)
        for pf in session.partitions.values()
    ]


# --- ids ----------------------------------------------------------------------------------------

_FIND_COORDINATOR = 10
_GROUP_KEY, _TXN_KEY = 0, 1


def _coordinator_keys(request: Any, key_type: int) -> list[str]:
    if getattr(request, "key_type", 0) != key_type:
        return []
    keys = getattr(request, "coordinator_keys", None)
    if keys is not None:
        return list(keys)
    key = getattr(request, "key", None)
    return [key] if key is not None else []


def transactional_ids(api_key: int, request: Any) -> list[str]:
    if api_key == _FIND_COORDINATOR:
        return _coordinator_keys(request, _TXN_KEY)
    out = []
    for name in ("transactional_id", "v3_and_below_transactional_id"):
        value = getattr(request, name, None)
        if value is not None:
            out.append(value)
    return out


def group_ids(api_key: int, request: Any) -> list[str]:
    if api_key == _FIND_COORDINATOR:
        return _coordinator_keys(request, _GROUP_KEY)
    value = getattr(request, "group_id", None)
    if value is not None:
        return [value]
    for name in ("groups_names", "groups"):  # DeleteGroups, DescribeGroups; OffsetFetch v8+
        items = getattr(request, name, None)
        if items:
            return [g if isinstance(g, str) else g.group_id for g in items]
    return []


# --- the request as JSON ------------------------------------------------------------------------


def _json(value: object, kafka_type: str | None) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)  # error codes and other int enums
    if isinstance(value, float):
        return value
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        if kafka_type == "records":
            return {"size": len(value)}
        raw = bytes(value)
        return base64.b64encode(raw).decode() if len(raw) <= 4096 else {"size": len(raw)}
    if dataclasses.is_dataclass(value):
        return entity_json(value)
    if isinstance(value, (tuple, list)):
        return [_json(v, kafka_type) for v in value]
    return str(value)


def entity_json(entity: object, names: dict[uuid.UUID, str] | None = None) -> dict[str, Any]:
    """A kio entity as a dict of plain values: its field names (durations and timestamps in ms,
    ids as strings, bytes as base64, record batches as {"size": n}); a topic given by id also
    gets its "name" when `names` knows it."""
    out: dict[str, Any] = {}
    for p in _fields(type(entity)):
        value = getattr(entity, p.name)
        if p.nested is not None and value is not None and names is not None:
            out[p.name] = [entity_json(v, names) for v in value] if p.is_array else entity_json(value, names)
        else:
            out[p.name] = _json(value, p.kafka_type)
    if names is not None and "topic_id" in out and not out.get("name") and not out.get("topic"):
        topic_id = getattr(entity, "topic_id", None)
        if topic_id is not None and topic_id in names:
            out["name"] = names[topic_id]
    return out


def request_json(ctx: Any, request: object, names: dict[uuid.UUID, str]) -> dict[str, Any]:
    """What `where` paths and remote predicates see: the request's fields, plus "header"."""
    out = entity_json(request, names)
    out["header"] = {
        "api": api_name(ctx.api_key),
        "api_key": ctx.api_key,
        "api_version": ctx.api_version,
        "client_id": ctx.client_id,
        "correlation_id": ctx.correlation_id,
    }
    return out


def path_values(value: Any, path: list[str]) -> Iterator[Any]:
    """Every value at the dotted path; a list on the way is searched element by element."""
    if isinstance(value, list):
        for item in value:
            yield from path_values(item, path)
        return
    if not path:
        yield value
        return
    if isinstance(value, dict) and path[0] in value:
        yield from path_values(value[path[0]], path[1:])


def where_holds(request: dict[str, Any], where: dict[str, Any]) -> bool:
    for dotted, expected in where.items():
        if not any(_equal(v, expected) for v in path_values(request, dotted.split("."))):
            return False
    return True


def _equal(value: Any, expected: Any) -> bool:
    if isinstance(value, list):
        return value == expected or expected in value
    return bool(value == expected)


# --- answering ----------------------------------------------------------------------------------

#: APIs whose handler writes: the faulted partitions are taken out of the request before it runs
FETCH = 1
WRITES = frozenset({0, 8, 21, 28, 47})
#: topic-level APIs that create, delete or grow topics: the faulted topics are taken out
TOPIC_WRITES = frozenset({19, 20, 37})
ADD_PARTITIONS_TO_TXN = 24
METADATA = 3
PRODUCE = 0

_MINUS_ONE = re.compile(
    r"offset|epoch|watermark|timestamp|leader_id|log_append_time|replica|num_partitions|replication_factor"
)


def _clean(cls: Any, values: dict[str, Any]) -> Any:
    """An error entry of `cls`: the given values, -1 for offsets, epochs, leaders and times
    (Kafka's INVALID_*), empty or null for the rest."""
    full = dict(values)
    for p in field_plans(cls):
        if p.name in full or p.nested is not None or p.is_array:
            continue
        if p.kafka_type in ("int32", "int64", "int16", "datetime_i64") and _MINUS_ONE.search(p.name):
            if p.name == "replica_id":
                continue
            full[p.name] = -1
        if p.kafka_type == "records":
            full[p.name] = None if p.nullable else b""
    return build(cls, full)


def without(request: Any, faulted: set[tuple[str | None, int | None]], names: dict[uuid.UUID, str]) -> Any:
    """The request without the faulted partitions (or topics); topics left with no partition
    are dropped."""
    shape = layout(type(request))
    if shape is None:  # DeleteTopics v0-5
        kept_names = tuple(n for n in request.topic_names if (n, None) not in faulted)
        return dataclasses.replace(request, topic_names=kept_names)
    assert len(shape.path) == 1  # the writing APIs have top-level topics
    kept = []
    for entry in getattr(request, shape.path[0]):
        topic = _topic_name(entry, shape, names)
        if shape.parts is None:
            if (topic, None) not in faulted:
                kept.append(entry)
            continue
        parts = [
            part
            for part in getattr(entry, shape.parts)
            if (topic, part if shape.index is None else getattr(part, shape.index)) not in faulted
        ]
        if parts:
            kept.append(dataclasses.replace(entry, **{shape.parts: tuple(parts)}))
    return dataclasses.replace(request, **{shape.path[0]: tuple(kept)})


def _request_topic_ids(request: Any, names: dict[uuid.UUID, str]) -> dict[str | None, uuid.UUID]:
    shape = layout(type(request))
    if shape is None or not shape.topic_id:
        return {}
    out = {}
    for entry in _topic_entries(request, shape.path):
        topic_id = getattr(entry, "topic_id", None)
        if topic_id is not None and topic_id.int:
            out[_topic_name(entry, shape, names)] = topic_id
    return out


def _add_errors(
    response: Any,
    errors: list[tuple[str | None, int | None, int]],
    topic_ids: dict[str | None, uuid.UUID],
) -> Any:
    """`response` with an error entry for each (topic, partition, code), appended to its topic's
    entry (or a new one)."""
    shape = layout(type(response))
    if shape is None or not errors:
        return response
    plan = _plans(type(response))[shape.path[0]]
    topic_cls = plan.nested
    entries = list(getattr(response, shape.path[0]) or ())
    for topic, partition, code in errors:
        at = next(
            (
                i
                for i, e in enumerate(entries)
                if (shape.name is not None and getattr(e, shape.name) == topic)
                or (
                    shape.topic_id and topic in topic_ids and getattr(e, "topic_id", None) == topic_ids[topic]
                )
            ),
            None,
        )
        if shape.parts is None:
            entry_values: dict[str, Any] = {shape.error or "error_code": code}
            if shape.name is not None:
                entry_values[shape.name] = topic
            if shape.topic_id and topic in topic_ids:
                entry_values["topic_id"] = topic_ids[topic]
            entries.append(_clean(topic_cls, entry_values))
            continue
        if at is None:
            values: dict[str, Any] = {shape.parts: ()}
            if shape.name is not None:
                values[shape.name] = topic if not (shape.topic_id and topic in topic_ids) else ""
            if shape.topic_id and topic in topic_ids:
                values["topic_id"] = topic_ids[topic]
            entries.append(build(topic_cls, values))
            at = len(entries) - 1
        part_cls = _plans(topic_cls)[shape.parts].nested
        assert shape.index is not None and shape.error is not None  # a response's partitions
        part = _clean(part_cls, {shape.index: partition, shape.error: code})
        entry = entries[at]
        entries[at] = dataclasses.replace(entry, **{shape.parts: (*getattr(entry, shape.parts), part)})
    return dataclasses.replace(response, **{shape.path[0]: tuple(entries)})


def _replace_errors(
    response: Any,
    faulted: set[tuple[str | None, int | None]],
    code: int,
    names: dict[uuid.UUID, str],
    topic_level: bool,
) -> Any:
    """`response` with the faulted partitions' entries replaced by clean error entries (or, with
    `topic_level`, the faulted topics' entries by a topic error with no partitions)."""
    shape = layout(type(response))
    if shape is None:
        return _every_error(response, code)
    return _replace_in(response, shape, shape.path, faulted, code, names, topic_level)


def _replace_in(
    entity: Any,
    shape: Layout,
    path: tuple[str, ...],
    faulted: set[tuple[str | None, int | None]],
    code: int,
    names: dict[uuid.UUID, str],
    topic_level: bool,
) -> Any:
    items = getattr(entity, path[0], None)
    if items is None:
        return entity
    if len(path) > 1:
        new = tuple(_replace_in(i, shape, path[1:], faulted, code, names, topic_level) for i in items)
        return dataclasses.replace(entity, **{path[0]: new})
    entries = []
    for entry in items:
        topic = _topic_name(entry, shape, names)
        if shape.parts is None or topic_level:
            error = "error_code" if topic_level else shape.error
            if any(t == topic for t, _ in faulted) and error is not None:
                changes: dict[str, Any] = {error: ErrorCode(code)}
                if topic_level and shape.parts is not None:
                    changes[shape.parts] = ()
                entry = dataclasses.replace(entry, **changes)
            entries.append(entry)
            continue
        part_cls = _plans(type(entry))[shape.parts].nested
        assert shape.index is not None and shape.error is not None  # a response's partitions
        parts = []
        for part in getattr(entry, shape.parts):
            index = getattr(part, shape.index)
            if (topic, index) in faulted:
                part = _clean(part_cls, {shape.index: index, shape.error: code})
            parts.append(part)
        entries.append(dataclasses.replace(entry, **{shape.parts: tuple(parts)}))
    return dataclasses.replace(entity, **{path[0]: tuple(entries)})


def _every_error(response: Any, code: int) -> Any:
    """Every error code of the response set to `code` (an API whose shape is not planned)."""
    changes: dict[str, Any] = {}
    for p in _fields(type(response)):
        value = getattr(response, p.name)
        if p.kafka_type == "error_code":
            changes[p.name] = ErrorCode(code)
        elif p.nested is not None and value is not None:
            changes[p.name] = (
                tuple(_every_error(v, code) for v in value) if p.is_array else _every_error(value, code)
            )
    return dataclasses.replace(response, **changes)


def materialize(ctx: Any, result: RawResponse) -> Any:
    """A hand-encoded response (Fetch) as its kio entity, to be changed."""
    from kio.serial import entity_reader  # noqa: PLC0415 - only when a fault changes a Fetch

    chunks = []
    for part in result.parts:
        if isinstance(part, (bytes, bytearray, memoryview)):
            chunks.append(bytes(part))
        else:  # a storage FileSlice
            chunks.append(part.read(part.position, part.length))
    cls = response_class(ctx.api_key, ctx.api_version)
    assert cls is not None
    entity, _size = entity_reader(cls)(b"".join(chunks), 0)
    return entity


def set_throttle(result: Any, throttle_ms: int) -> Any:
    if result is NO_RESPONSE or not any(p.name == "throttle_time" for p in _fields(type(result))):
        return result
    return dataclasses.replace(result, throttle_time=datetime.timedelta(milliseconds=throttle_ms))


def error_response(ctx: Any, request: Any, code: int) -> Any:
    """Kafka's AbstractRequest.getErrorResponse for an API answered as a whole."""
    cls = response_class(ctx.api_key, ctx.api_version)
    assert cls is not None
    plans = _plans(cls)
    values: dict[str, Any] = {}
    if "error_code" in plans:
        values["error_code"] = code
    for name in ("producer_id", "producer_epoch", "generation_id", "node_id", "port"):
        if name in plans:
            values[name] = -1  # InitProducerId, JoinGroup, FindCoordinator v0-3
    key = ctx.api_key
    if key == _FIND_COORDINATOR and "coordinators" in plans:
        keys = getattr(request, "coordinator_keys", ())
        values["coordinators"] = [
            {"key": k, "error_code": code, "node_id": -1, "host": "", "port": -1} for k in keys
        ]
    elif key == 15:  # DescribeGroups
        values["groups"] = [
            {"group_id": g, "error_code": code, "authorized_operations": -(2**31)} for g in request.groups
        ]
    elif key == 42:  # DeleteGroups
        values["results"] = [{"group_id": g, "error_code": code} for g in request.groups_names]
    elif key in _PER_ENTRY:  # admin APIs answering one entry per entry of the request
        field, entry = _PER_ENTRY[key]
        values[field] = entry(request, code)
    elif "error_code" not in plans:
        return None  # no top-level error: answered through the handler's response
    return build(cls, values)


def _resource(r: Any, code: int) -> dict[str, Any]:
    return {"error_code": code, "resource_type": r.resource_type, "resource_name": r.resource_name}


#: Admin APIs whose answer has one entry per entry of the request and no top-level error code:
#: a fault answers each entry with the error and the handler never runs (nothing is changed).
_PER_ENTRY: dict[int, tuple[str, Callable[[Any, int], list[dict[str, Any]]]]] = {
    32: ("results", lambda req, code: [{**_resource(r, code), "configs": []} for r in req.resources]),
    33: ("responses", lambda req, code: [_resource(r, code) for r in req.resources]),
    44: ("responses", lambda req, code: [_resource(r, code) for r in req.resources]),
    30: ("results", lambda req, code: [{"error_code": code} for _ in req.creations]),
    31: (
        "filter_results",
        lambda req, code: [{"error_code": code, "matching_acls": []} for _ in req.filters],
    ),
    49: (
        "entries",
        lambda req, code: [
            {
                "error_code": code,
                "entity": [
                    {"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity
                ],
            }
            for entry in req.entries
        ],
    ),
    51: (
        "results",
        lambda req, code: [{"user": u.name, "error_code": code} for u in (*req.deletions, *req.upsertions)],
    ),
}


def partition_faulted(
    pairs: Iterable[tuple[str | None, int | None]], topic: str | None, partition: int | None
) -> set[tuple[str | None, int | None]]:
    return {
        (t, p) for t, p in pairs if (topic is None or t == topic) and (partition is None or p == partition)
    }


async def error_answer(
    ctx: Any,
    request: Any,
    code: int,
    faulted: set[tuple[str | None, int | None]] | None,
    partition: int | None,
    names: dict[uuid.UUID, str],
    handle: Any,
) -> Any:
    """The answer to a request faulted with error `code`; `faulted` the matched (topic,
    partition) pairs (None: the request names no topics), `handle` the API's handler."""
    key = ctx.api_key
    if faulted is not None and key == ADD_PARTITIONS_TO_TXN:
        return _add_partitions_answer(ctx, request, code, faulted, names)
    if faulted is not None and (key in WRITES or key in TOPIC_WRITES):
        rest = without(request, faulted, names)
        pairs = topic_partitions(rest, names) or []
        if pairs or key not in WRITES:
            result = await handle(ctx, rest)
        else:  # nothing left to write
            cls = response_class(ctx.api_key, ctx.api_version)
            assert cls is not None
            result = build(cls, {})
        if key == PRODUCE and getattr(request, "acks", 1) == 0:
            from minibroker.broker.context import CloseConnection  # noqa: PLC0415

            raise CloseConnection("a request fault answered an acks=0 produce with an error")
        errors = [(t, p, code) for t, p in sorted(faulted, key=lambda tp: (tp[0] or "", tp[1] or 0))]
        return _add_errors(result, errors, _request_topic_ids(request, names))
    if faulted is not None:
        result = await handle(ctx, request)
        if isinstance(result, RawResponse):
            result = materialize(ctx, result)
        topic_level = key == METADATA and partition is None
        if key == METADATA and not topic_level:  # the request names topics: the partition is answered
            faulted = {(t, partition) for t, _p in faulted}
        result = _replace_errors(result, faulted, code, names, topic_level)
        if key == FETCH:  # an incremental answer leaves out unchanged partitions: the error is news
            missing = faulted - set(topic_partitions(result, names) or ())
            ids: dict[str | None, uuid.UUID] = {}
            if ctx.api_version >= 13:
                ids.update((name, topic_id) for topic_id, name in names.items())
            ordered = sorted(missing, key=lambda tp: (tp[0] or "", tp[1] or 0))
            result = _add_errors(result, [(t, p, code) for t, p in ordered], ids)
        return result
    answer = error_response(ctx, request, code)
    if answer is not None:
        return answer
    result = await handle(ctx, request)
    if isinstance(result, RawResponse):
        result = materialize(ctx, result)
    return _every_error(result, code)


def _add_partitions_answer(
    ctx: Any,
    request: Any,
    code: int,
    faulted: set[tuple[str | None, int | None]],
    names: dict[uuid.UUID, str],
) -> Any:
    not_attempted = int(ErrorCode.operation_not_attempted)
    cls = response_class(ctx.api_key, ctx.api_version)
    assert cls is not None
    errors = [
        (t, p, code if (t, p) in faulted else not_attempted)
        for t, p in topic_partitions(request, names) or []
    ]
    return _add_errors(build(cls, {}), errors, {})
