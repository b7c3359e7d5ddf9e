"""JoinGroup and SyncGroup as the group coordinator sees them: one frozen value each, built once
by the handler (broker/handlers/join_group.py, sync_group.py) from the request of whatever
version came in, and passed whole through the state machine (coordinator/group_join.py), as
Kafka's GroupMetadataManager passes JoinGroupRequestData and SyncGroupRequestData.

Version differences are settled by the handler: the values here are what the request means
(v0's rebalance timeout is its session timeout, KIP-394's MEMBER_ID_REQUIRED applies from v4,
KIP-814's skip_assignment from v9), so the coordinator never looks at an API version.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

__all__ = ["JoinRequest", "SyncRequest"]


class JoinRequest(NamedTuple):
    group_id: str
    member_id: str  # "" for a member joining for the first time
    group_instance_id: str | None  # set for a static member (KIP-345)
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    # (name, metadata) in the member's order of preference, the metadata as bytes (not a
    # memoryview of the request buffer: the coordinator keeps it beyond the request, and compares it)
    protocols: tuple[tuple[str, bytes], ...]
    require_known_member_id: bool = True  # KIP-394 (v4+): a new member gets its id first
    supports_skip_assignment: bool = False  # KIP-814 (v9+)
    reason: str | None = None  # KIP-800 (v8+), logged

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]


class SyncRequest(NamedTuple):
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None  # v5+: checked against the group's when given
    protocol_name: str | None = None
    # member id -> assignment, from the leader only (the others send none)
    assignments: Mapping[str, bytes] = MappingProxyType({})
