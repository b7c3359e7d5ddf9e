"""ShareFetch share sessions (Kafka's ShareSessionCache): one per (group id, member id), with its
epoch and partitions, at most group.share.max.share.sessions; removed on epoch -1 and when the
connection that opened it closes (its member's acquired records are released then).

The epoch rules are Kafka 4.4's (SharePartitionManager.newContext and acknowledgeSessionUpdate):
ShareFetch with epoch 0 opens a session (replacing the member's old one; acknowledgements in it
are INVALID_REQUEST), -1 closes it (its acknowledgements are processed, nothing is fetched), any
other epoch must be the session's (INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_NOT_FOUND) and
moves it on, adding the request's partitions and dropping its forgotten ones. ShareAcknowledge
never opens one: epoch 0 is INVALID_SHARE_SESSION_EPOCH.

A session remembers the partitions by (topic id, partition), with the topic name the id had when
the partition joined (None: unknown, answered UNKNOWN_TOPIC_ID) and whether its next answer must
name it (a partition just added, or one that answered an error), as Kafka's CachedSharePartition.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import structlog
from minibroker.common.clock import Clock
from minibroker.protocol.errors import ErrorCode

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "CachedPartition",
    "ShareFetchContext",
    "ShareSession",
    "ShareSessionCache",
    "next_epoch",
]

log = structlog.get_logger("minibroker.broker.share_sessions")

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_INT = 2**31 - 1

#: (topic id, partition)
PartitionId = tuple[uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    """Kafka's ShareRequestMetadata.nextEpoch."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == _MAX_INT:
        return 1
    return epoch + 1


@dataclass(slots=True)
class CachedPartition:
    topic: str | None  # the id's name when the partition joined the session; None: unknown id
    requires_update: bool = False

    def must_respond(self, error_code: int, records_size: int) -> bool:
        """Kafka's CachedSharePartition.maybeUpdateResponseData (updating): whether an
        incremental answer names the partition."""
        respond = records_size > 0
        if self.requires_update:
            respond = True
            self.requires_update = False
        if error_code:
            self.requires_update = True
            respond = True
        return respond


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    connection_id: int
    epoch: int
    partitions: dict[PartitionId, CachedPartition] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return self.group_id, self.member_id

    def update(
        self, wanted: Iterable[tuple[PartitionId, str | None]], forgotten: Iterable[PartitionId]
    ) -> None:
        """Kafka's ShareSession.update: new partitions join (to be answered next), forgotten
        ones leave."""
        parts = self.partitions
        for pid, topic in wanted:
            if pid not in parts:
                parts[pid] = CachedPartition(topic, requires_update=True)
        for pid in forgotten:
            parts.pop(pid, None)

    def moved_last(self, pid: PartitionId) -> None:
        """A partition that returned records goes to the end (Kafka rotates them so)."""
        cached = self.partitions.pop(pid, None)
        if cached is not None:
            self.partitions[pid] = cached


class ShareFetchContext(NamedTuple):
    """What a ShareFetch's epoch makes of it: an error for the whole request, or the session
    and the partitions to fetch ((topic id, partition) -> topic name or None)."""

    error: ErrorCode = ErrorCode.none
    kind: str = "initial"  # initial | subsequent | final
    session: ShareSession | None = None
    partitions: tuple[tuple[PartitionId, str | None], ...] = ()


class ShareSessionCache:
    def __init__(self, max_sessions: int, clock: Clock) -> None:
        self.max_sessions = max_sessions
        self.clock = clock
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        #: connection id -> [session key, stale]: the last session the connection opened
        self._by_connection: dict[int, list] = {}
        self._members_per_group: dict[str, int] = {}
        #: Kafka's ShareGroupListener: the member's records are released when its connection
        #: closes; the group's share-partitions are let go once its last session went that way.
        self.on_member_leave: Callable[[str, str], None] | None = None
        self.on_group_empty: Callable[[str], None] | None = None
        self.evictions = 0  # sessions removed because their connection closed

    def __len__(self) -> int:
        return len(self.sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))

    def partitions_count(self) -> int:
        return sum(len(s.partitions) for s in self.sessions.values())

    # --- ShareFetch / ShareAcknowledge -----------------------------------------------------------
    def fetch_context(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        wanted: list[tuple[PartitionId, str | None]],
        forgotten: list[PartitionId],
        acknowledging: bool,
        connection_id: int,
    ) -> ShareFetchContext:
        """Kafka's SharePartitionManager.newContext."""
        key = (group_id, member_id)
        if epoch == FINAL_EPOCH:
            if key not in self.sessions:
                return ShareFetchContext(ErrorCode.share_session_not_found)
            return ShareFetchContext(kind="final")
        if epoch == INITIAL_EPOCH:
            if acknowledging:
                return ShareFetchContext(ErrorCode.invalid_request)
            self.remove(group_id, member_id)
            session = self._create(group_id, member_id, wanted, connection_id)
            if session is None:
                return ShareFetchContext(ErrorCode.share_session_limit_reached)
            log.debug("share session created", group_id=group_id, member_id=member_id, partitions=len(wanted))
            return ShareFetchContext(kind="initial", session=session, partitions=tuple(wanted))
        session = self.sessions.get(key)
        if session is None:
            return ShareFetchContext(ErrorCode.share_session_not_found)
        if session.epoch != epoch:
            return ShareFetchContext(ErrorCode.invalid_share_session_epoch)
        session.update(wanted, forgotten)
        session.epoch = next_epoch(session.epoch)
        parts = tuple((pid, cached.topic) for pid, cached in session.partitions.items())
        return ShareFetchContext(kind="subsequent", session=session, partitions=parts)

    def acknowledge_context(self, group_id: str, member_id: str, epoch: int) -> ErrorCode:
        """Kafka's SharePartitionManager.acknowledgeSessionUpdate."""
        if epoch == INITIAL_EPOCH:
            return ErrorCode.invalid_share_session_epoch
        session = self.sessions.get((group_id, member_id))
        if session is None:
            return ErrorCode.share_session_not_found
        if epoch != FINAL_EPOCH:
            if session.epoch != epoch:
                return ErrorCode.invalid_share_session_epoch
            session.epoch = next_epoch(session.epoch)
        return ErrorCode.none

    # --- sessions --------------------------------------------------------------------------------
    def _create(
        self, group_id: str, member_id: str, wanted: list[tuple[PartitionId, str | None]], connection_id: int
    ) -> ShareSession | None:
        if len(self.sessions) >= self.max_sessions:
            return None
        session = ShareSession(group_id, member_id, connection_id, next_epoch(INITIAL_EPOCH))
        for pid, topic in wanted:
            session.partitions[pid] = CachedPartition(topic)
        self.sessions[session.key] = session
        self._members_per_group[group_id] = self._members_per_group.get(group_id, 0) + 1
        self._by_connection[connection_id] = [session.key, False]
        return session

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        """Forget the session (its records are the caller's to release)."""
        session = self.sessions.pop((group_id, member_id), None)
        if session is not None:
            self._members_per_group[group_id] = max(self._members_per_group.get(group_id, 0) - 1, 0)
            entry = self._by_connection.get(session.connection_id)
            if entry is not None:
                entry[1] = True  # stale: the connection's close no longer concerns it
        return session

    def connection_closed(self, connection_id: int) -> None:
        """Kafka's ClientConnectionDisconnectListener: the session the connection opened goes,
        its member's records are released (on_member_leave), and a group left with no session
        lets its share-partitions go (on_group_empty)."""
        entry = self._by_connection.pop(connection_id, None)
        if entry is None:
            return
        (group_id, member_id), stale = entry
        if not stale and (group_id, member_id) in self.sessions:
            self.evictions += 1
            log.debug("share session closed with its connection", group_id=group_id, member_id=member_id)
            if self.on_member_leave is not None:
                self.on_member_leave(group_id, member_id)
            self.remove(group_id, member_id)
        if self._members_per_group.get(group_id, 0) == 0:
            self._members_per_group.pop(group_id, None)
            if self.on_group_empty is not None:
                self.on_group_empty(group_id)

    def clear(self) -> None:
        """share.version went below 1 (Kafka's onShareVersionToggle)."""
        self.sessions.clear()
        self._members_per_group.clear()
        self._by_connection.clear()
