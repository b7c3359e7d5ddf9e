"""The KIP-848 consumer group records of `__consumer_offsets`, in Kafka's format (record types
3-8 and 16 of Kafka's group-coordinator `*.json` schemas), so `kafka-dump-log --offsets-decoder`
reads what minibroker writes and a load replays them through the coordinator runtime.

A key is an int16 record type then the key fields (non-flexible: int16-length strings); a value
is an int16 version (0) then a flexible body (compact strings and arrays, 16-byte uuids, tagged
fields at the end). A null value is a tombstone for its key.

| type | record | key | value |
|---|---|---|---|
| 3 | ConsumerGroupMetadata | group | epoch, metadata hash (tag 0) |
| 4 | ConsumerGroupPartitionMetadata | group | legacy since Kafka 4.1: only ever tombstoned |
| 5 | ConsumerGroupMemberMetadata | group, member | the member's subscription and identity |
| 6 | ConsumerGroupTargetAssignmentMetadata | group | assignment epoch, timestamp (tag 0) |
| 7 | ConsumerGroupTargetAssignmentMember | group, member | the member's target partitions |
| 8 | ConsumerGroupCurrentMemberAssignment | group, member | epochs, state, assigned, pending |
| 16 | ConsumerGroupRegularExpression | group, regex | the topics the regex resolved to |

Every record here is `(group_id, [key field,] value)` with `value=None` for a tombstone.
"""

from __future__ import annotations

from typing import NamedTuple
from uuid import UUID

__all__ = [
    "CgCurrent",
    "CgEpoch",
    "CgMember",
    "CgPartitionMetadataTombstone",
    "CgRegex",
    "CgTarget",
    "CgTargetMeta",
    "ClassicMemberMetadata",
    "ClassicProtocol",
    "ConsumerGroupRecord",
    "CurrentAssignmentValue",
    "EpochValue",
    "MemberMetadataValue",
    "RECORD_TYPES",
    "ResolvedRegexValue",
    "TargetMetaValue",
    "TopicPartitions",
    "decode",
    "encode",
]

#: The record types of this module (the key's leading int16).
RECORD_TYPES = frozenset({3, 4, 5, 6, 7, 8, 16})


class TopicPartitions(NamedTuple):
    """One topic's partitions in a member's assignment. `assignment_epochs` (tag 0 of type 8's
    TopicPartitions, same length as `partitions`) is None where Kafka leaves it out (type 7,
    and type 8 records from before Kafka 4.4: a load takes the member epoch for each)."""

    topic_id: UUID
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None = None


class ClassicProtocol(NamedTuple):
    name: str
    metadata: bytes


class ClassicMemberMetadata(NamedTuple):
    """A member that joined with the classic protocol into a consumer group (online migration)."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...]


class EpochValue(NamedTuple):  # type 3
    epoch: int
    metadata_hash: int = 0


class MemberMetadataValue(NamedTuple):  # type 5
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMemberMetadata | None = None


class TargetMetaValue(NamedTuple):  # type 6
    assignment_epoch: int
    timestamp_ms: int = 0


class CurrentAssignmentValue(NamedTuple):  # type 8
    member_epoch: int
    previous_member_epoch: int
    state: int  # MemberState: 0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS, 127 UNKNOWN
    assigned: tuple[TopicPartitions, ...]
    pending_revocation: tuple[TopicPartitions, ...]


class ResolvedRegexValue(NamedTuple):  # type 16
    topics: tuple[str, ...]
    version: int  # the topic metadata version it was resolved against
    timestamp_ms: int


class CgEpoch(NamedTuple):
    group_id: str
    value: EpochValue | None


class CgPartitionMetadataTombstone(NamedTuple):
    group_id: str


class CgMember(NamedTuple):
    group_id: str
    member_id: str
    value: MemberMetadataValue | None


class CgTargetMeta(NamedTuple):
    group_id: str
    value: TargetMetaValue | None


class CgTarget(NamedTuple):
    group_id: str
    member_id: str
    value: tuple[TopicPartitions, ...] | None  # assignment_epochs always None here


class CgCurrent(NamedTuple):
    group_id: str
    member_id: str
    value: CurrentAssignmentValue | None


class CgRegex(NamedTuple):
    group_id: str
    regex: str
    value: ResolvedRegexValue | None


ConsumerGroupRecord = (
    CgEpoch | CgPartitionMetadataTombstone | CgMember | CgTargetMeta | CgTarget | CgCurrent | CgRegex
)


def encode(record: ConsumerGroupRecord) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of a record as Kafka writes it; value None for a tombstone."""
    raise NotImplementedError


def decode(key: bytes, value: bytes | None) -> ConsumerGroupRecord | None:
    """The record for a key of type 3-8 or 16 and its value (None = tombstone); None for a key
    of another type. Raises ValueError on a malformed key or value."""
    raise NotImplementedError
