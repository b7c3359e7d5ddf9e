"""KIP-227 incremental fetch sessions, kept as Kafka's FetchManager and FetchSessionCacheShard keep
them (in memory: a restart forgets them, and clients start a new session on
FETCH_SESSION_ID_NOT_FOUND).

A full fetch (epoch 0) may create a session holding the partitions it asked for; the client then
sends only what changed (epoch 1, 2, ...) and the broker answers only the partitions with news:
records, a moved high watermark or log start offset, or an error. Sans-I/O: the Fetch handler
(broker/handlers/fetch.py) asks `FetchSessionCache.context(...)` what to read and
`FetchContext.answer(...)` which of its results to send.

Cache rules (Kafka's): `max.incremental.fetch.session.cache.slots` (default 1000) split over 8
shards, a new session going to the next shard in turn; a full shard evicts a session unused for
more than 120 s, else the least valuable evictable one (unprivileged before privileged, then
fewest partitions, then lowest id) when the new one is worth more. A session becomes evictable
by consumers' sessions only once it is older than 120 s (checked when it is used).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.common.clock import Clock

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
SHARDS = 8  # Kafka's KafkaBroker.NumFetchSessionCacheShards
EVICTION_MS = 120_000  # Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
_INT_MAX = 2**31 - 1
SESSION_ID_RANGE = _INT_MAX // SHARDS

#: A partition's key within one request or session: (topic id or None, topic name or None, index).
Key = tuple[uuid.UUID | None, str | None, int]


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: FINAL stays, the largest int wraps to 1."""
    if epoch < 0:
        return epoch
    return 1 if epoch == _INT_MAX else epoch + 1


class PartitionFetch:
    """One partition to read: what the request asked, or what the session remembers (with the
    high watermark and log start offset last sent, to decide whether anything changed)."""

    __slots__ = (
        "topic",
        "topic_id",
        "partition",
        "fetch_offset",
        "max_bytes",
        "current_leader_epoch",
        "high_watermark",
        "log_start_offset",
    )

    def __init__(
        self,
        topic: str | None,
        topic_id: uuid.UUID | None,
        partition: int,
        fetch_offset: int,
        max_bytes: int,
        current_leader_epoch: int,
    ) -> None:
        self.topic = topic
        self.topic_id = topic_id
        self.partition = partition
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes
        self.current_leader_epoch = current_leader_epoch
        self.high_watermark = -1
        self.log_start_offset = -1

    def session_key(self) -> tuple[uuid.UUID | str | None, int]:
        """Kafka's CachedPartition equality: by topic id when there is one, else by name."""
        return (self.topic_id if self.topic_id is not None else self.topic, self.partition)

    def must_respond(self, error_code: int, records_size: int, high_watermark: int, log_start: int) -> bool:
        """Kafka's CachedPartition.maybeUpdateResponseData(update=true): whether an incremental
        answer includes this partition; remembers what it sends."""
        respond = records_size > 0
        if self.high_watermark != high_watermark:
            respond = True
            self.high_watermark = high_watermark
        if self.log_start_offset != log_start:
            respond = True
            self.log_start_offset = log_start
        if error_code:
            self.high_watermark = -1  # re-sent once the error is gone
            respond = True
        return respond


class FetchSession:
    __slots__ = (
        "id",
        "privileged",
        "partitions",
        "uses_topic_ids",
        "creation_ms",
        "last_used_ms",
        "epoch",
        "cached_size",
    )

    def __init__(
        self,
        session_id: int,
        privileged: bool,
        partitions: dict[tuple[uuid.UUID | str | None, int], PartitionFetch],
        uses_topic_ids: bool,
        now_ms: int,
    ) -> None:
        self.id = session_id
        self.privileged = privileged
        self.partitions = partitions  # in Kafka's order: a partition that returned records moves last
        self.uses_topic_ids = uses_topic_ids
        self.creation_ms = now_ms
        self.last_used_ms = now_ms
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.cached_size = -1  # partitions counted when last touched; -1: not in the cache

    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)

    def update(self, fetch_data: dict[Key, PartitionFetch], to_forget: Iterable[PartitionFetch]) -> None:
        """Kafka's FetchSession.update: add or refresh the request's partitions, drop the forgotten."""
        partitions = self.partitions
        for want in fetch_data.values():
            cached = partitions.get(want.session_key())
            if cached is None:
                partitions[want.session_key()] = want
            else:
                cached.fetch_offset = want.fetch_offset
                cached.max_bytes = want.max_bytes
                cached.current_leader_epoch = want.current_leader_epoch
        for gone in to_forget:
            partitions.pop(gone.session_key(), None)


class _Shard:
    """Kafka's FetchSessionCacheShard: sessions with ids in [max(1, n * range), (n + 1) * range)."""

    def __init__(self, max_entries: int, eviction_ms: int, number: int, rng: random.Random) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.number = number
        self.rng = rng
        self.sessions: dict[int, FetchSession] = {}
        self.evictable_by_all: dict[int, FetchSession] = {}
        self.evictable_by_privileged: dict[int, FetchSession] = {}
        self.evictions = 0

    def new_session_id(self) -> int:
        low = max(1, self.number * SESSION_ID_RANGE)
        high = (self.number + 1) * SESSION_ID_RANGE
        while True:
            session_id = self.rng.randrange(low, high)
            if session_id not in self.sessions:
                return session_id

    def maybe_create(
        self,
        now_ms: int,
        privileged: bool,
        partitions: dict[tuple[uuid.UUID | str | None, int], PartitionFetch],
        uses_topic_ids: bool,
    ) -> int:
        if len(self.sessions) < self.max_entries or self._try_evict(privileged, len(partitions), now_ms):
            session = FetchSession(self.new_session_id(), privileged, partitions, uses_topic_ids, now_ms)
            self.sessions[session.id] = session
            self.touch(session, now_ms)
            return session.id
        return INVALID_SESSION_ID

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        if not self.sessions:
            return False
        stale = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stale.last_used_ms > self.eviction_ms:
            self.remove(stale)
            self.evictions += 1
            return True
        candidates = self.evictable_by_privileged if privileged else self.evictable_by_all
        if not candidates:
            return False
        weakest = min(candidates.values(), key=FetchSession.evictable_key)
        if (privileged, size, 0) < weakest.evictable_key():
            return False
        self.remove(weakest)
        self.evictions += 1
        return True

    def remove(self, session: FetchSession) -> None:
        self.evictable_by_all.pop(session.id, None)
        self.evictable_by_privileged.pop(session.id, None)
        self.sessions.pop(session.id, None)

    def touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        old = now_ms - session.creation_ms > self.eviction_ms
        if not session.privileged or old:
            self.evictable_by_privileged[session.id] = session
        else:
            self.evictable_by_privileged.pop(session.id, None)
        if old:
            self.evictable_by_all[session.id] = session
        else:
            self.evictable_by_all.pop(session.id, None)


class FetchContext:
    """What one Fetch request reads and how its answer is cut down (Kafka's FetchContext kinds:
    sessionless, full, incremental, session error)."""

    __slots__ = ("kind", "partitions", "error", "session", "epoch", "_cache", "_privileged", "_uses_ids")

    SESSIONLESS = 0
    FULL = 1
    INCREMENTAL = 2
    ERROR = 3

    def __init__(
        self,
        kind: int,
        partitions: Iterable[PartitionFetch] = (),
        error: ErrorCode = ErrorCode.none,
        session: FetchSession | None = None,
        cache: FetchSessionCache | None = None,
        privileged: bool = False,
        uses_ids: bool = False,
    ) -> None:
        self.kind = kind
        self.partitions = partitions
        self.error = error
        self.session = session
        self.epoch = session.epoch if session is not None else 0
        self._cache = cache
        self._privileged = privileged
        self._uses_ids = uses_ids

    def new_session(self, answered: list[tuple[PartitionFetch, int, int, int]]) -> int:
        """After a full fetch: a new session holding every answered partition, with the high
        watermark and log start offset just sent; its id, or 0 when the cache has no room."""
        assert self._cache is not None
        partitions = {}
        for want, _error, high_watermark, log_start in answered:
            want.high_watermark = high_watermark
            want.log_start_offset = log_start
            partitions[want.session_key()] = want
        return self._cache.create(self._privileged, partitions, self._uses_ids)

    def still_current(self) -> bool:
        """Kafka checks, when answering, that no other request moved the session's epoch meanwhile
        (else INVALID_FETCH_SESSION_EPOCH: a duplicate request)."""
        return self.session is not None and self.session.epoch == self.epoch


class FetchSessionCache:
    """Kafka's FetchManager over its FetchSessionCache shards."""

    def __init__(
        self,
        max_slots: int,
        clock: Clock,
        eviction_ms: int = EVICTION_MS,
        rng: random.Random | None = None,
    ) -> None:
        self.clock = clock
        rng = rng if rng is not None else random.Random()
        self.shards = [_Shard(max_slots // SHARDS, eviction_ms, n, rng) for n in range(SHARDS)]
        self._next_shard = 0

    def _now_ms(self) -> int:
        return int(self.clock.monotonic() * 1000)

    def _shard_of(self, session_id: int) -> _Shard | None:
        """Kafka's getCacheShard: ids beyond the last shard (or below the first) have none, and
        Kafka fails the request there (an index out of bounds: UNKNOWN_SERVER_ERROR)."""
        index = int(session_id / SESSION_ID_RANGE)  # Java's division truncates toward zero
        return self.shards[index] if 0 <= index < SHARDS else None

    def __len__(self) -> int:
        return sum(len(s.sessions) for s in self.shards)

    def get(self, session_id: int) -> FetchSession | None:
        shard = self._shard_of(session_id)
        return shard.sessions.get(session_id) if shard is not None else None

    def create(
        self,
        privileged: bool,
        partitions: dict[tuple[uuid.UUID | str | None, int], PartitionFetch],
        uses_topic_ids: bool,
    ) -> int:
        shard = self.shards[self._next_shard % SHARDS]
        self._next_shard = (self._next_shard + 1) % SHARDS
        return shard.maybe_create(self._now_ms(), privileged, partitions, uses_topic_ids)

    def context(
        self,
        version: int,
        session_id: int,
        epoch: int,
        privileged: bool,
        fetch_data: dict[Key, PartitionFetch],
        to_forget: list[PartitionFetch],
        topic_names: dict[uuid.UUID, str],
    ) -> FetchContext:
        """Kafka's FetchManager.newContext."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):  # a full fetch closes the session it names
            if session_id != INVALID_SESSION_ID:
                shard = self._shard_of(session_id)
                if shard is None:
                    return FetchContext(FetchContext.ERROR, error=ErrorCode.unknown_server_error)
                session = shard.sessions.get(session_id)
                if session is not None:
                    shard.remove(session)
            if epoch == FINAL_EPOCH:
                return FetchContext(FetchContext.SESSIONLESS, fetch_data.values())
            return FetchContext(
                FetchContext.FULL,
                fetch_data.values(),
                cache=self,
                privileged=privileged,
                uses_ids=version >= 13,
            )
        shard = self._shard_of(session_id)
        if shard is None:
            return FetchContext(FetchContext.ERROR, error=ErrorCode.unknown_server_error)
        session = shard.sessions.get(session_id)
        if session is None:
            return FetchContext(FetchContext.ERROR, error=ErrorCode.fetch_session_id_not_found)
        if session.epoch != epoch:
            return FetchContext(FetchContext.ERROR, error=ErrorCode.invalid_fetch_session_epoch)
        if session.uses_topic_ids != (version >= 13):
            return FetchContext(FetchContext.ERROR, error=ErrorCode.fetch_session_topic_id_error)
        session.update(fetch_data, to_forget)
        if not session.partitions:
            shard.remove(session)
            return FetchContext(FetchContext.SESSIONLESS, fetch_data.values())
        shard.touch(session, self._now_ms())
        session.epoch = next_epoch(session.epoch)
        if session.uses_topic_ids:
            for cached in session.partitions.values():
                if cached.topic is None:  # Kafka's maybeResolveUnknownName
                    cached.topic = topic_names.get(cached.topic_id)  # type: ignore[arg-type]
        return FetchContext(FetchContext.INCREMENTAL, list(session.partitions.values()), session=session)
