"""Request faults and observers (issue 24 part 1; docs/control-plane/faults.md).

A fault matches requests (API and version range, topic, partition, client id, transactional id,
group id, `where` on the decoded request's fields), fires on some of its matches (the first
`count`, every `every`th, with a seeded `probability`, or as a remote predicate decides: `ask`)
and acts: answers an error where Kafka reports it (broker/control/fault_requests.py), delays the
answer, closes the connection before or after handling, or throttles. An observer (`observe`)
only counts the requests it matched once they are answered. Tests wait on either
(`GET /v1/faults/{id}/wait`): a long poll woken when the count moves, not a sleep loop.

`RequestFaults.handle` is what broker/connection.py calls for every request when the control
plane is on; with no fault registered it runs the handler at once (one list test).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Awaitable, Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import structlog
from minibroker.broker.context import CloseConnection, RawResponse
from minibroker.broker.control.fault_requests import (
    FETCH,
    METADATA,
    api_key_of,
    api_name,
    error_answer,
    fetch_session_partitions,
    group_ids,
    materialize,
    partition_faulted,
    request_json,
    set_throttle,
    topic_partitions,
    transactional_ids,
    where_holds,
)
from minibroker.broker.control.http import ControlError, route
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.context import RequestContext
    from minibroker.broker.control import ControlPlane
    from minibroker.common.clock import Clock

__all__ = ["ROUTES", "Fault", "RequestFaults"]

log = structlog.get_logger("minibroker.control")

#: How long a request waits for a remote predicate's answer before it goes on unfaulted.
ASK_TIMEOUT_S = 30.0

_MATCH_KEYS = ("api", "versions", "topic", "partition", "client_id", "transactional_id", "group_id", "where")
_ACTION_KEYS = ("error", "delay_ms", "disconnect", "throttle_ms", "observe")
_TRIGGER_KEYS = ("count", "every", "probability", "seed", "ask")
_KEYS = frozenset((*_MATCH_KEYS, *_ACTION_KEYS, *_TRIGGER_KEYS))

Handle = Callable[["RequestContext", Any], Awaitable[object]]


def _error_code(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError(f"error: {value!r} is not an error code")
    if isinstance(value, int) or (isinstance(value, str) and value.lstrip("-").isdigit()):
        return int(ErrorCode(int(value)))
    try:
        return int(ErrorCode[str(value).strip().lower()])
    except KeyError:
        raise ValueError(
            f"error: unknown error {value!r} (Kafka's names, e.g. NOT_LEADER_OR_FOLLOWER)"
        ) from None


def _int(rule: dict[str, Any], key: str, low: int) -> int | None:
    value = rule.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{key}: {value!r} is not an integer >= {low}")
    return value


class Ask:
    """One match waiting for a remote predicate's decision."""

    __slots__ = ("id", "request", "decision", "delivered")

    def __init__(self, ask_id: int, request: dict[str, Any], decision: asyncio.Future[bool]) -> None:
        self.id = ask_id
        self.request = request
        self.decision = decision
        self.delivered = False


class Fault:
    """One registered fault or observer: its rule, triggers and counts."""

    def __init__(self, fault_id: int, rule: dict[str, Any], created_ms: int) -> None:
        unknown = set(rule) - _KEYS
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)}; known: {sorted(_KEYS)}")
        self.id = fault_id
        self.rule = {k: v for k, v in rule.items() if v is not None}
        self.created_ms = created_ms
        self.api_key = api_key_of(rule["api"]) if rule.get("api") is not None else None
        versions = rule.get("versions")
        if versions is not None and (
            not isinstance(versions, list)
            or len(versions) != 2
            or not all(isinstance(v, int) for v in versions)
        ):
            raise ValueError(f"versions: {versions!r} is not [min, max]")
        self.versions: tuple[int, int] | None = (versions[0], versions[1]) if versions else None
        self.topic: str | None = rule.get("topic")
        self.partition = _int(rule, "partition", 0)
        self.client_id: str | None = rule.get("client_id")
        self.transactional_id: str | None = rule.get("transactional_id")
        self.group_id: str | None = rule.get("group_id")
        self.where: dict[str, Any] = rule.get("where") or {}
        if not isinstance(self.where, dict):
            raise ValueError(f"where: {self.where!r} is not an object of dotted paths")
        self.observe = bool(rule.get("observe"))
        self.error = _error_code(rule["error"]) if rule.get("error") is not None else None
        self.delay_ms = _int(rule, "delay_ms", 0) or 0
        self.throttle_ms = _int(rule, "throttle_ms", 0) or 0
        self.disconnect: str | None = rule.get("disconnect")
        if self.disconnect not in (None, "before", "after"):
            raise ValueError(f"disconnect: {self.disconnect!r} is neither 'before' nor 'after'")
        acts = self.error is not None or self.delay_ms or self.throttle_ms or self.disconnect
        if self.observe and acts:
            raise ValueError("observe: an observer has no action (error, delay_ms, disconnect, throttle_ms)")
        if not self.observe and not acts:
            raise ValueError("no action: give error, delay_ms, disconnect or throttle_ms (or observe: true)")
        self.count = _int(rule, "count", 1)
        self.every = _int(rule, "every", 1)
        probability = rule.get("probability")
        if probability is not None and (
            isinstance(probability, bool)
            or not isinstance(probability, (int, float))
            or not 0 <= probability <= 1
        ):
            raise ValueError(f"probability: {probability!r} is not a number in [0, 1]")
        self.probability: float | None = probability
        self.rng = random.Random(rule.get("seed"))  # noqa: S311 - a test's dice, not a secret
        self.ask = bool(rule.get("ask"))
        self.matched = 0
        self.fired = 0  # observers: answered
        self._changed = asyncio.Event()
        self._asks: dict[int, Ask] = {}
        self._ask_seq = 0
        self._asked = asyncio.Event()
        self.closed = False

    def info(self) -> dict[str, Any]:
        return {"id": self.id, **self.rule, "matched": self.matched, "fired": self.fired}

    # --- matching ---------------------------------------------------------------------------------
    def matches(self, view: _View) -> set[tuple[str | None, int | None]] | None | Literal[False]:
        """False when the request does not match; else the faulted (topic, partition) pairs
        (None: the request names no topics)."""
        ctx = view.ctx
        if self.api_key is not None and ctx.api_key != self.api_key:
            return False
        if self.versions is not None and not self.versions[0] <= ctx.api_version <= self.versions[1]:
            return False
        if self.client_id is not None and ctx.client_id != self.client_id:
            return False
        if self.transactional_id is not None and self.transactional_id not in view.transactional_ids:
            return False
        if self.group_id is not None and self.group_id not in view.group_ids:
            return False
        pairs = view.pairs
        faulted = None
        if pairs is not None:
            faulted = partition_faulted(pairs, self.topic, self.partition)
            # a topic-level API (Metadata, CreateTopics) names no partition: a partition matcher holds
            faulted |= {(t, p) for t, p in pairs if p is None and (self.topic is None or t == self.topic)}
            if (self.topic is not None or self.partition is not None) and not faulted:
                return False
        elif self.topic is not None or self.partition is not None:
            if not (view.ctx.api_key == METADATA and view.all_topics and self.topic is not None):
                return False
            faulted = {(self.topic, None)}  # Metadata for every topic answers this one too
        if self.where and not where_holds(view.json, self.where):
            return False
        return faulted

    # --- triggers ---------------------------------------------------------------------------------
    async def triggered(self, view: _View) -> bool:
        """Whether this match fires (self.matched already counts it)."""
        if self.count is not None and self.fired >= self.count:
            return False
        if self.every is not None and self.matched % self.every:
            return False
        if self.probability is not None and self.rng.random() >= self.probability:
            return False
        if self.ask and not await self._remote(view):
            return False
        return not (self.count is not None and self.fired >= self.count)  # others fired meanwhile

    async def _remote(self, view: _View) -> bool:
        self._ask_seq += 1
        decision: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        ask = self._asks[self._ask_seq] = Ask(self._ask_seq, view.json, decision)
        self._wake_asks()
        try:
            return await asyncio.wait_for(decision, ASK_TIMEOUT_S)
        except TimeoutError:
            log.warning("fault ask unanswered: not fired", id=self.id, ask=ask.id, timeout_s=ASK_TIMEOUT_S)
            return False
        finally:
            self._asks.pop(ask.id, None)

    def _wake_asks(self) -> None:
        asked, self._asked = self._asked, asyncio.Event()
        asked.set()

    async def pending_asks(self, timeout: float) -> list[Ask]:
        """The asks no caller has seen yet, waiting up to `timeout` seconds for one."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.closed:
            fresh = [a for a in self._asks.values() if not a.delivered]
            if fresh:
                for a in fresh:
                    a.delivered = True
                return fresh
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                await asyncio.wait_for(self._asked.wait(), remaining)
            except TimeoutError:
                break
        return []

    def answer(self, ask_id: int, fire: bool) -> bool:
        ask = self._asks.get(ask_id)
        if ask is None or ask.decision.done():
            return False
        ask.decision.set_result(fire)
        return True

    # --- counts and waits -------------------------------------------------------------------------
    def counted(self) -> None:
        self.fired += 1
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait(self, n: int, timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.fired < n and not self.closed:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                return self.fired >= n
        return self.fired >= n

    def close(self) -> None:
        """Removed: parked asks go on unfaulted, waits answer now."""
        self.closed = True
        for ask in list(self._asks.values()):
            if not ask.decision.done():
                ask.decision.set_result(False)
        self._wake_asks()
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()


class _View:
    """What the faults read of one request, each computed once and only if a fault asks."""

    def __init__(self, ctx: RequestContext, request: Any) -> None:
        self.ctx = ctx
        self.request = request
        logs = getattr(ctx.broker, "logs", None)
        self.names: dict[uuid.UUID, str] = getattr(logs, "topic_names", None) or {}

    @cached_property
    def pairs(self) -> list[tuple[str | None, int | None]] | None:
        pairs = topic_partitions(self.request, self.names)
        if self.ctx.api_key == FETCH:
            pairs = [*(pairs or ()), *fetch_session_partitions(self.ctx, self.request, self.names)]
        return pairs

    @property
    def all_topics(self) -> bool:
        return getattr(self.request, "topics", ()) is None

    @cached_property
    def transactional_ids(self) -> list[str]:
        return transactional_ids(self.ctx.api_key, self.request)

    @cached_property
    def group_ids(self) -> list[str]:
        return group_ids(self.ctx.api_key, self.request)

    @cached_property
    def json(self) -> dict[str, Any]:
        return request_json(self.ctx, self.request, self.names)


class RequestFaults:
    """The registered faults and observers of one broker, applied to every request."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._faults: dict[int, Fault] = {}
        self._seq = 0
        self._throttles: dict[int, int] = {}

    # --- the registry -----------------------------------------------------------------------------
    def add(self, rule: dict[str, Any]) -> Fault:
        if not isinstance(rule, dict):
            raise ValueError("a fault is a JSON object of match keys, actions and triggers")
        self._seq += 1
        fault = Fault(self._seq, rule, self._clock.wall_ms())
        self._faults[fault.id] = fault
        log.info("fault added", id=fault.id, rule=fault.rule)
        return fault

    def get(self, fault_id: int) -> Fault:
        fault = self._faults.get(fault_id)
        if fault is None:
            raise ControlError(404, f"no fault {fault_id} (GET /v1/faults lists them)")
        return fault

    def all(self) -> list[Fault]:
        return list(self._faults.values())

    def remove(self, fault_id: int) -> Fault:
        fault = self.get(fault_id)
        del self._faults[fault_id]
        fault.close()
        return fault

    def clear(self) -> None:
        faults, self._faults = list(self._faults.values()), {}
        for fault in faults:
            fault.close()

    def close(self) -> None:
        self.clear()

    def take_throttle(self, ctx: RequestContext) -> int:
        """The throttle (ms) a fault put on this request's answer, 0 for none: the connection
        mutes for it as for a quota (broker/connection.py)."""
        return self._throttles.pop(id(ctx), 0) if self._throttles else 0

    # --- the request path -------------------------------------------------------------------------
    async def handle(self, ctx: RequestContext, request: Any, handle: Handle) -> object:
        if not self._faults:
            return await handle(ctx, request)
        view = _View(ctx, request)
        observers: list[Fault] = []
        firing: list[tuple[Fault, set[tuple[str | None, int | None]] | None]] = []
        for fault in list(self._faults.values()):
            faulted = fault.matches(view)
            if faulted is False:
                continue
            fault.matched += 1
            if fault.observe:
                observers.append(fault)
            elif await fault.triggered(view) and not fault.closed:
                fault.counted()
                firing.append((fault, faulted))
        if not firing:
            result = await handle(ctx, request)
        else:
            result = await self._act(ctx, request, view, firing, handle)
        for fault in observers:
            fault.counted()
        return result

    async def _act(
        self,
        ctx: RequestContext,
        request: Any,
        view: _View,
        firing: list[tuple[Fault, set[tuple[str | None, int | None]] | None]],
        handle: Handle,
    ) -> object:
        api = api_name(ctx.api_key)
        for fault, faulted in firing:
            log.warning(
                "fault fired", id=fault.id, api=api, what=_what(fault, faulted), client_id=ctx.client_id
            )
        if any(f.disconnect == "before" for f, _ in firing):
            raise CloseConnection("a request fault closed the connection before handling")
        delay_ms = sum(f.delay_ms for f, _ in firing)
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
        erring = next(((f, faulted) for f, faulted in firing if f.error is not None), None)
        if erring is None:
            result = await handle(ctx, request)
        else:
            fault, faulted = erring
            assert fault.error is not None
            result = await error_answer(
                ctx, request, fault.error, faulted, fault.partition, view.names, handle
            )
        throttle_ms = max(f.throttle_ms for f, _ in firing)
        if throttle_ms:
            if isinstance(result, RawResponse):
                result = materialize(ctx, result)
            result = set_throttle(result, throttle_ms)
            self._throttles[id(ctx)] = throttle_ms
        if any(f.disconnect == "after" for f, _ in firing):
            self._throttles.pop(id(ctx), None)
            raise CloseConnection("a request fault closed the connection after handling, unanswered")
        return result


def _what(fault: Fault, faulted: set[tuple[str | None, int | None]] | None) -> str:
    parts = []
    if fault.disconnect:
        parts.append(f"disconnect {fault.disconnect}")
    if fault.delay_ms:
        parts.append(f"delay {fault.delay_ms} ms")
    if fault.error is not None:
        where = ""
        if faulted:
            where = " on " + ", ".join(
                str(t) if p is None else f"{t}-{p}"
                for t, p in sorted(faulted, key=lambda x: (x[0] or "", x[1] or 0))
            )
        parts.append(f"error {ErrorCode(fault.error).name.upper()}{where}")
    if fault.throttle_ms:
        parts.append(f"throttle {fault.throttle_ms} ms")
    return "; ".join(parts)


# --- HTTP routes ----------------------------------------------------------------------------------


def _fault(plane: ControlPlane, params: dict[str, str]) -> Fault:
    try:
        fault_id = int(params["id"])
    except ValueError:
        raise ControlError(404, f"no fault {params['id']!r}") from None
    return plane.faults.get(fault_id)


def _seconds(query: dict[str, str], default: float) -> float:
    from minibroker.broker.control.http import MAX_WAIT_S  # noqa: PLC0415

    value = float(query.get("timeout", default))
    if not 0 <= value <= MAX_WAIT_S:
        raise ControlError(400, f"timeout: {value} s is not within [0, {MAX_WAIT_S}]")
    return value


@route("POST", "/v1/faults", "add a request fault or observer: match keys, actions, triggers")
async def _add(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    return plane.faults.add(body or {}).info()


@route("GET", "/v1/faults", "the request faults and observers, with their counts")
async def _list(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    return {"faults": [f.info() for f in plane.faults.all()]}


@route("DELETE", "/v1/faults", "remove every request fault and observer")
async def _clear(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    removed = [f.info() for f in plane.faults.all()]
    plane.faults.clear()
    return {"removed": removed}


@route("GET", "/v1/faults/{id}", "one fault and its counts")
async def _get(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    return _fault(plane, params).info()


@route("DELETE", "/v1/faults/{id}", "remove one fault")
async def _remove(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    fault = _fault(plane, params)
    return plane.faults.remove(fault.id).info()


@route("GET", "/v1/faults/{id}/wait", "wait until fired (observers: answered) >= n; ?n=&timeout=s; 408")
async def _wait(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    fault = _fault(plane, params)
    n = int(query.get("n", 1))
    timeout = _seconds(query, 30.0)
    if not await fault.wait(n, timeout):
        what = "answered" if fault.observe else "fired"
        raise ControlError(
            408 if not fault.closed else 410,
            f"fault {fault.id} {what} {fault.fired} of {n} in {timeout} s (matched {fault.matched})"
            + (" and was removed" if fault.closed else ""),
        )
    return fault.info()


@route("GET", "/v1/faults/{id}/asks", "pending matches of an ask fault (long poll, ?timeout=s)")
async def _asks(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    fault = _fault(plane, params)
    if not fault.ask:
        raise ControlError(400, f"fault {fault.id} is not an ask fault")
    asks = await fault.pending_asks(_seconds(query, 10.0))
    if fault.closed:
        raise ControlError(404, f"fault {fault.id} was removed")
    return {"asks": [{"id": a.id, "request": a.request} for a in asks]}


@route("POST", "/v1/faults/{id}/asks/{ask}", 'decide one ask: {"fire": true|false}')
async def _answer(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    fault = _fault(plane, params)
    if not isinstance(body, dict) or not isinstance(body.get("fire"), bool):
        raise ControlError(400, 'the body is {"fire": true} or {"fire": false}')
    answered = fault.answer(int(params["ask"]), body["fire"])
    if not answered:
        raise ControlError(404, f"fault {fault.id} has no pending ask {params['ask']} (timed out?)")
    return {"answered": True}


ROUTES = [_add, _list, _clear, _get, _remove, _wait, _asks, _answer]
