"""ShareFetch share sessions (Kafka's ShareSessionCache): one per (group id, member id), with its
epoch and partitions, at most group.share.max.share.sessions; removed on epoch -1 and when the
connection that opened it closes (its member's acquired records are released then). Contract for
issue 26 (WP4 fills it in)."""

from __future__ import annotations

from minibroker.common.clock import Clock

__all__ = ["ShareSessionCache"]


class ShareSessionCache:
    def __init__(self, max_sessions: int, clock: Clock) -> None:
        self.max_sessions = max_sessions
        self.clock = clock
