"""Client quotas as Kafka 4.4 keeps and enforces them (KIP-13, KIP-55, KIP-219, KIP-546).

`QuotaStore`: the quotas of AlterClientQuotas (49) and DescribeClientQuotas (48), an entity being
a set of (type, name) with type user, client-id or ip and name None for the default entity;
validated as Kafka's ClientQuotaControlManager does, matched as its ClientQuotasImage does, kept
in `<data_dir>/client-quotas.json` (replaced atomically through the broker's
`Durability.write_file`, read at startup).

`ByteRateQuota`: Kafka's ClientQuotaManager for one of producer_byte_rate / consumer_byte_rate:
which quota applies to a (user, client-id) (the eight levels of precedence), one rate per
quota-metric tags over `quota.window.num` samples of `quota.window.size.seconds` (Kafka's Rate
over a WindowedSum, to the millisecond), the throttle time (O - T) / T * W.

`ClientQuotas` is what the broker holds: `active` is False until a byte-rate quota is first set
(as Kafka's quotasEnabled, it stays True until restart), so a broker without quotas pays one
attribute read per request (broker/connection.py). With quotas, the connection records each
Produce (the request's size) and Fetch (the answer's size) and, when a quota is exceeded, puts
the throttle time into the answer (a throttled Fetch is answered empty, its bytes unrecorded),
sends it at once and reads nothing more from the client for that long (KIP-219's mute).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import math
import os
import struct
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import structlog
from minibroker.broker.context import NO_RESPONSE, RawResponse
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.durable_files import atomic_write, read_json

if TYPE_CHECKING:
    from minibroker.broker.config import BrokerConfig
    from minibroker.broker.context import RequestContext
    from minibroker.common.clock import Clock

log = structlog.get_logger("minibroker.broker.quotas")

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE = "producer_byte_rate", "consumer_byte_rate"
REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE = "request_percentage", "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
# Kafka's QuotaConfig: the keys of user/client-id entities and of ip entities, with their types
USER_CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: "LONG",
    CONSUMER_BYTE_RATE: "LONG",
    REQUEST_PERCENTAGE: "DOUBLE",
    CONTROLLER_MUTATION_RATE: "DOUBLE",
}
IP_KEYS = {CONNECTION_CREATION_RATE: "INT"}
_INTEGRAL_MAX = {"INT": (2**31 - 1, "an INT"), "LONG": (2**63 - 1, "a LONG")}

# match types of DescribeClientQuotas components
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

#: An entity: its (type, name) pairs sorted by type; name None is the type's default entity.
Entity = tuple[tuple[str, str | None], ...]

_FILE = "client-quotas.json"
_I32 = struct.Struct(">i")


class QuotaRequestError(Exception):
    """A DescribeClientQuotas filter Kafka refuses as a whole (the answer's error)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def entity_text(entity: Entity) -> str:
    """Kafka's ClientQuotaEntity.toString, for the messages that name an entity."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity) + "})"


def is_ip_address(name: str) -> bool:
    import ipaddress  # noqa: PLC0415 - only for an ip entity

    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


async def unresolvable_hosts(names: Iterable[str | None]) -> set[str]:
    """The ip entity names that are neither an address nor a name that resolves (Kafka's
    isValidIpEntity, InetAddress.getByName), resolved off the event loop."""
    loop = asyncio.get_running_loop()
    bad = set()
    for name in {n for n in names if n is not None and not is_ip_address(n)}:
        try:
            await loop.getaddrinfo(name, None)
        except (OSError, UnicodeError):
            bad.add(name)
    return bad


def _check_value(keys: dict[str, str], key: str, value: float) -> str | None:
    """Kafka's validateQuotaKeyValue: the INVALID_REQUEST message, or None."""
    kind = keys.get(key)
    if kind is None:
        return f"Invalid configuration key {key}"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if kind == "DOUBLE":
        return None
    limit, name = _INTEGRAL_MAX[kind]
    if value > limit:
        return f"Proposed value for {key} is too large for {name}."
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None


def _entities_of(raw: Any) -> dict[Entity, dict[str, float]]:
    """The quotas of client-quotas.json (as json.loads gives it)."""
    out: dict[Entity, dict[str, float]] = {}
    for item in raw:
        entity = tuple(sorted((str(t), None if n is None else str(n)) for t, n in item["entity"]))
        out[entity] = {str(k): float(v) for k, v in item["values"].items()}
    return out


class QuotaStore:
    """entity -> {key: value}, persisted in `<data_dir>/client-quotas.json`."""

    def __init__(self, data_dir: str, write: Callable[[str, bytes], None] = atomic_write) -> None:
        self.path = os.path.join(data_dir, _FILE)
        self._write = write
        self.entities: dict[Entity, dict[str, float]] = {}
        if os.path.exists(self.path):
            self.entities = self._load()

    def _load(self) -> dict[Entity, dict[str, float]]:
        return read_json(
            self.path,
            _entities_of,
            "move it away and set the client quotas again (kafka-configs.sh --alter --add-config ...)",
        )

    def save(self) -> None:
        body = [{"entity": [list(p) for p in e], "values": v} for e, v in self.entities.items()]
        self._write(self.path, json.dumps(body).encode())

    # --- AlterClientQuotas ---------------------------------------------------------------------
    def alter(
        self,
        requested: Iterable[tuple[list[tuple[str, str | None]], list[tuple[str, float | None]]]],
        validate_only: bool,
        unresolvable: set[str],
    ) -> tuple[list[tuple[Entity, ErrorCode, str | None]], list[tuple[Entity, str, float | None]]]:
        """Kafka's ClientQuotaControlManager.alterClientQuotas: per entity (in request order) its
        error, and the changes made (none when validate_only): (entity, key, new value or None)."""
        results: dict[Entity, tuple[ErrorCode, str | None]] = {}
        changes: list[tuple[Entity, str, float | None]] = []
        for pairs, ops in requested:
            entity = tuple(sorted(dict(pairs).items()))  # Kafka builds a map: a repeated type keeps the last
            alterations: dict[str, float | None] = {}
            duplicate = None
            for key, value in ops:
                if key in alterations:
                    duplicate = (
                        f"Duplicate quota key {key} not updating quota for this entity {entity_text(entity)}"
                    )
                else:
                    alterations[key] = value
            if duplicate is not None:
                results[entity] = (ErrorCode.invalid_request, duplicate)
            if entity in results:  # Kafka's own order: a repeated key's error becomes this one
                results[entity] = (
                    ErrorCode.invalid_request,
                    f"Ignoring duplicate entity {entity_text(entity)}",
                )
                continue
            error, made = self._alter_entity(entity, alterations, unresolvable)
            results[entity] = (ErrorCode.invalid_request, error) if error else (ErrorCode.none, None)
            changes.extend(made)
        if not validate_only:
            for entity, key, value in changes:
                self._apply(entity, key, value)
            if changes:
                self.save()
        return [(e, code, msg) for e, (code, msg) in results.items()], ([] if validate_only else changes)

    def _alter_entity(
        self, entity: Entity, alterations: dict[str, float | None], unresolvable: set[str]
    ) -> tuple[str | None, list[tuple[Entity, str, float | None]]]:
        if not entity:
            return "Invalid empty client quota entity", []
        for etype, name in entity:
            if etype not in (USER, CLIENT_ID, IP):
                return f"Unhandled client quota entity type: {etype}", []
            if name is not None and not name:
                return f"Empty {etype} not supported", []
        types = dict(entity)
        if IP in types:
            if USER in types or CLIENT_ID in types:
                return (
                    "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
                    [],
                )
            if types[IP] is not None and types[IP] in unresolvable:
                return f"{types[IP]} is not a valid IP or resolvable host.", []
            keys = IP_KEYS
        else:
            keys = USER_CLIENT_KEYS
        current = self.entities.get(entity, {})
        made: list[tuple[Entity, str, float | None]] = []
        for key, value in alterations.items():
            if value is None:
                if key in current:
                    made.append((entity, key, None))
                continue
            problem = _check_value(keys, key, value)
            if problem is not None:
                return problem, []
            if current.get(key) != value:
                made.append((entity, key, value))
        return None, made

    def _apply(self, entity: Entity, key: str, value: float | None) -> None:
        values = self.entities.setdefault(entity, {})
        if value is None:
            values.pop(key, None)
            if not values:
                del self.entities[entity]
        else:
            values[key] = value

    # --- DescribeClientQuotas ------------------------------------------------------------------
    def describe(  # noqa: C901 - Kafka's checks of a filter, in its order
        self, components: Iterable[tuple[str, int, str | None]], strict: bool
    ) -> list[tuple[Entity, dict[str, float]]]:
        """Kafka's ClientQuotasImage.describe: raises QuotaRequestError for a filter it refuses."""
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for etype, match_type, match in components:
            if not etype:
                raise QuotaRequestError(ErrorCode.invalid_request, "Invalid empty entity type.")
            if etype in exact or etype in typed:
                raise QuotaRequestError(
                    ErrorCode.invalid_request,
                    f"Entity type {etype} cannot appear more than once in the filter.",
                )
            if etype not in (IP, USER, CLIENT_ID):
                raise QuotaRequestError(ErrorCode.unsupported_version, f"Unsupported entity type {etype}")
            if match_type == MATCH_EXACT:
                if match is None:
                    raise QuotaRequestError(
                        ErrorCode.invalid_request,
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                    )
                exact[etype] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    raise QuotaRequestError(
                        ErrorCode.invalid_request,
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                    )
                exact[etype] = None
            elif match_type == MATCH_SPECIFIED:
                if match is not None:
                    raise QuotaRequestError(
                        ErrorCode.invalid_request,
                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                    )
                typed.add(etype)
            else:
                raise QuotaRequestError(ErrorCode.invalid_request, f"Unknown match type {match_type}")
        named = exact.keys() | typed
        if IP in named and (USER in named or CLIENT_ID in named):
            raise QuotaRequestError(
                ErrorCode.invalid_request,
                "Invalid entity filter component combination. IP filter component should not be used with "
                "user or clientId filter component.",
            )
        out = []
        for entity, values in self.entities.items():
            types = dict(entity)
            if strict and len(types) != len(exact) + len(typed):
                continue
            if any(t not in types or types[t] != name for t, name in exact.items()):
                continue
            if any(t not in types for t in typed):
                continue
            out.append((entity, dict(values)))
        return out


# --- enforcement --------------------------------------------------------------------------------
_DEFAULT = object()  # the default user / client-id entity in a ByteRateQuota's overrides
_SENSOR_EXPIRY_MS = 3_600_000  # Kafka's quota sensors expire after an hour without a record
_SWEEP_INTERVAL_MS = 60_000
# Kafka's QuotaTypes bits: which levels have quotas
_CLIENT_ID_QUOTAS, _USER_QUOTAS, _USER_CLIENT_ID_QUOTAS = 1, 2, 4


class _Rate:
    """Kafka's Rate over a WindowedSum (SampledStat): `samples` windows (+1 overlapping) of
    `window_ms`; each sample is [value, events, start_ms, last_event_ms]."""

    __slots__ = ("samples", "current")

    def __init__(self) -> None:
        self.samples: list[list[float]] = []
        self.current = 0

    def record(self, value: float, now: int, num: int, window_ms: int) -> None:
        samples = self.samples
        if not samples:
            samples.append([0.0, 0, now, now])
        sample = samples[self.current]
        if now - sample[2] >= window_ms:  # complete: advance
            self.current = (self.current + 1) % (num + 1)
            if self.current >= len(samples):
                sample = [0.0, 0, now, now]
                samples.append(sample)
            else:
                sample = samples[self.current]
                sample[:] = [0.0, 0, now, now]
        sample[0] += value
        sample[1] += 1
        sample[3] = now

    def last_event_ms(self) -> float:
        return max((s[3] for s in self.samples), default=0)

    def measure(self, now: int, num: int, window_ms: int) -> tuple[float, int]:
        """(the sum recorded, the window in ms) as Kafka's Rate.measure sees them at `now`:
        samples without an event for `num` windows are reset first (purgeObsoleteSamples); the
        window runs from the oldest sample's start, at least `num - 1` whole windows."""
        samples = self.samples
        if not samples:
            samples.append([0.0, 0, now, now])
        expire = num * window_ms
        total = 0.0
        for sample in samples:
            if now - sample[3] >= expire:
                sample[:] = [0.0, 0, now, now]
            total += sample[0]
        elapsed = int(now - min(sample[2] for sample in samples))
        full, least = elapsed // window_ms, num - 1
        if full < least:
            elapsed += (least - full) * window_ms
        return total, max(elapsed, 1)


def java_round(x: float) -> int:
    """Java's Math.round (half up), not Python's round (half even)."""
    return math.floor(x + 0.5)


class ByteRateQuota:
    """Kafka's ClientQuotaManager (default callback) for one quota key."""

    def __init__(self, key: str, samples: int, window_s: int) -> None:
        self.key = key
        self.samples = samples
        self.window_ms = window_s * 1000
        self.types_enabled = 0  # Kafka's quotaTypesEnabled: set bits are never cleared
        # (user or None or _DEFAULT, client-id or None or _DEFAULT) -> bound
        self.overrides: dict[tuple[object, object], float] = {}
        self.rates: dict[tuple[str, str], _Rate] = {}
        self._next_sweep_ms = 0

    @property
    def enabled(self) -> bool:
        return self.types_enabled != 0

    def _sweep(self, now_ms: int) -> None:
        """Forget the rates of clients idle for an hour (Kafka expires its quota sensors after
        an hour without a record), so that client ids that come and go do not pile up."""
        self._next_sweep_ms = now_ms + _SWEEP_INTERVAL_MS
        idle = [t for t, r in self.rates.items() if now_ms - r.last_event_ms() >= _SENSOR_EXPIRY_MS]
        for tags in idle:
            del self.rates[tags]

    def update(self, entity: Entity, value: float | None) -> None:
        """Kafka's updateQuota: a user / client-id entity's value for this key, None: removed."""
        types = dict(entity)
        user: object = None
        client: object = None
        if USER in types:
            user = _DEFAULT if types[USER] is None else types[USER]
        if CLIENT_ID in types:
            client = _DEFAULT if types[CLIENT_ID] is None else types[CLIENT_ID]
        if user is not None:
            self.types_enabled |= _USER_CLIENT_ID_QUOTAS if client is not None else _USER_QUOTAS
        elif client is not None:
            self.types_enabled |= _CLIENT_ID_QUOTAS
        if value is None:
            self.overrides.pop((user, client), None)
        else:
            self.overrides[(user, client)] = value

    def _tags(self, user: str, client_id: str) -> tuple[str, str]:
        """Kafka's quotaMetricTags: who shares one rate."""
        enabled = self.types_enabled
        if enabled in (0, _CLIENT_ID_QUOTAS):
            return "", client_id
        if enabled == _USER_QUOTAS:
            return user, ""
        if enabled == _USER_CLIENT_ID_QUOTAS:
            return user, client_id
        has = self.overrides.__contains__
        if has((user, client_id)) or has((user, _DEFAULT)):
            return user, client_id
        if has((user, None)):
            return user, ""
        if has((_DEFAULT, client_id)) or has((_DEFAULT, _DEFAULT)):
            return user, client_id
        if has((_DEFAULT, None)):
            return user, ""
        return "", client_id

    def _limit(self, tags: tuple[str, str]) -> float | None:
        """Kafka's DefaultQuotaCallback.quotaLimit for the tags."""
        user, client_id = tags
        get = self.overrides.get
        if user and client_id:
            for key in ((user, client_id), (user, _DEFAULT), (_DEFAULT, client_id), (_DEFAULT, _DEFAULT)):
                bound = get(key)
                if bound is not None:
                    return bound
            return None
        if user:
            bound = get((user, None))
            return bound if bound is not None else get((_DEFAULT, None))
        if client_id:
            bound = get((None, client_id))
            return bound if bound is not None else get((None, _DEFAULT))
        return None

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Kafka's recordAndGetThrottleTimeMs: record, then the throttle time (0: within quota)."""
        if now_ms >= self._next_sweep_ms:
            self._sweep(now_ms)
        tags = self._tags(user, client_id)
        rate = self.rates.get(tags)
        if rate is None:
            rate = self.rates[tags] = _Rate()
        num, window_ms = self.samples, self.window_ms
        rate.record(value, now_ms, num, window_ms)
        bound = self._limit(tags)
        if bound is None:
            return 0
        total, window = rate.measure(now_ms, num, window_ms)
        observed = total / (window / 1000.0)
        if observed <= bound:
            return 0
        return java_round((observed - bound) / bound * window)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Kafka's unrecordQuotaSensor: a throttled Fetch is answered empty, its bytes taken back."""
        rate = self.rates.get(self._tags(user, client_id))
        if rate is not None:
            rate.record(-value, now_ms, self.samples, self.window_ms)

    def max_value_in_window(self, user: str, client_id: str) -> int | None:
        """Kafka's getMaxValueInQuotaWindow: the most one answer may hold without a certain throttle."""
        bound = self._limit(self._tags(user, client_id))
        if bound is None:
            return None
        return int(min(bound * (self.samples - 1) * (self.window_ms // 1000), 2**31 - 1))


def _user_of(ctx: RequestContext) -> str:
    """The principal's name, as Kafka's quota callback sees it (ANONYMOUS without authentication)."""
    session = ctx.session
    principal = session.principal if session is not None else "User:ANONYMOUS"
    return principal.partition(":")[2]


class ClientQuotas:
    """The broker's client quotas: the store, and the produce and fetch byte-rate managers."""

    PRODUCE, FETCH = 0, 1  # the API keys whose answers are throttled here

    def __init__(
        self,
        data_dir: str,
        config: BrokerConfig,
        clock: Clock,
        write: Callable[[str, bytes], None] = atomic_write,
    ) -> None:
        self.clock = clock
        self.store = QuotaStore(data_dir, write)
        samples, window_s = config["quota.window.num"], config["quota.window.size.seconds"]
        self.produce = ByteRateQuota(PRODUCER_BYTE_RATE, samples, window_s)
        self.fetch = ByteRateQuota(CONSUMER_BYTE_RATE, samples, window_s)
        self.active = False  # a byte-rate quota was set since the start: answers are metered
        for entity, values in self.store.entities.items():  # applied at startup
            for key, value in values.items():
                self.changed(entity, key, value)

    def changed(self, entity: Entity, key: str, value: float | None) -> None:
        """A stored quota changed (AlterClientQuotas, or the store read at startup)."""
        manager = {PRODUCER_BYTE_RATE: self.produce, CONSUMER_BYTE_RATE: self.fetch}.get(key)
        if manager is None or any(t == IP for t, _ in entity):
            return
        manager.update(entity, value)
        self.active = self.produce.enabled or self.fetch.enabled

    def alter(
        self,
        requested: Iterable[tuple[list[tuple[str, str | None]], list[tuple[str, float | None]]]],
        validate_only: bool,
        unresolvable: set[str],
    ) -> list[tuple[Entity, ErrorCode, str | None]]:
        """AlterClientQuotas: store (and persist) the changes, enforce them from now on
        (`unresolvable`: the ip entity names that do not resolve, see unresolvable_hosts)."""
        results, changes = self.store.alter(requested, validate_only, unresolvable)
        for entity, key, value in changes:
            self.changed(entity, key, value)
        return results

    def fetch_cap(self, ctx: RequestContext) -> int | None:
        """The most bytes a Fetch may answer with under the client's consumer_byte_rate."""
        return self.fetch.max_value_in_window(_user_of(ctx), ctx.client_id or "")

    def meter(self, ctx: RequestContext, result: Any, request_size: int) -> tuple[Any, int]:
        """Record a served Produce or Fetch; returns (the answer to send, the throttle in ms)."""
        now = self.clock.wall_ms()
        user, client_id = _user_of(ctx), ctx.client_id or ""
        if ctx.api_key == self.PRODUCE:
            if not self.produce.enabled:  # Kafka meters each quota type only once one is set
                return result, 0
            throttle = self.produce.record(user, client_id, request_size, now)
            if throttle and ctx.api_version >= 1 and result is not NO_RESPONSE:
                result = dataclasses.replace(result, throttle_time=datetime.timedelta(milliseconds=throttle))
            return result, throttle
        if not self.fetch.enabled:
            return result, 0
        raw: RawResponse = result
        size = 4 + raw.size  # Kafka's FetchResponse.sizeOf
        throttle = self.fetch.record(user, client_id, size, now)
        if not throttle:
            return result, 0
        self.fetch.unrecord(user, client_id, size, now)
        return throttled_fetch(ctx.api_version, raw, throttle), throttle


def throttled_fetch(version: int, raw: RawResponse, throttle_ms: int) -> RawResponse:
    """Kafka's getThrottledResponse: no partitions, the throttle time, the session id kept."""
    from minibroker.protocol.fetch_response import encode  # noqa: PLC0415 - only when throttling

    first = bytes(raw.parts[0][:10]) if raw.parts else b""
    session_id = _I32.unpack_from(first, 6)[0] if version >= 7 and len(first) >= 10 else 0
    parts, size = encode(version, [], session_id=session_id)
    head = parts[0]
    assert isinstance(head, bytes)  # encode's framing parts are bytes
    parts[0] = _I32.pack(throttle_ms) + head[4:]
    return RawResponse(parts, size, [])
