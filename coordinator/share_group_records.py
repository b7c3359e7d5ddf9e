"""The KIP-932 share group records of `__consumer_offsets`, in Kafka's format (record types
10-15 of Kafka 4.4's group-coordinator `ShareGroup*.json` schemas), so `kafka-dump-log
--offsets-decoder` reads what minibroker writes and a load replays them.

The layout is the consumer group records' (coordinator/consumer_group_records.py, whose writer
and readers this module shares): a key is an int16 record type then the key fields
(non-flexible: int16-length strings); a value is an int16 version (0) then a flexible body. A
null value is a tombstone for its key.

| type | record | key | value |
|---|---|---|---|
| 10 | ShareGroupMemberMetadata | group, member | rack, client id and host, subscribed topics |
| 11 | ShareGroupMetadata | group | epoch, metadata hash (a plain int64 field here) |
| 12 | ShareGroupTargetAssignmentMetadata | group | assignment epoch, timestamp (tag 0) |
| 13 | ShareGroupTargetAssignmentMember | group, member | the member's target partitions |
| 14 | ShareGroupCurrentMemberAssignment | group, member | epochs, state, assigned partitions |
| 15 | ShareGroupStatePartitionMetadata | group | initializing, initialized, deleting topics |

Every record here is `(group_id, [member_id,] value)` with `value=None` for a tombstone.
AssignmentTimestamp (12, tag 0, default 0) is written only when not 0, as Kafka's generated
code writes a tagged field at its default.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, NamedTuple
from uuid import UUID

from minibroker.coordinator.consumer_group_records import (
    _encode_record,
    _end,
    _i32s,
    _read_value,
    _required,
    _strings,
    _uuid,
    _Writer,
)
from minibroker.coordinator.record_reader import RecordReader

__all__ = [
    "RECORD_TYPES",
    "SgCurrent",
    "SgEpoch",
    "SgMember",
    "SgStatePartitions",
    "SgTarget",
    "SgTargetMeta",
    "ShareCurrentValue",
    "ShareEpochValue",
    "ShareGroupRecord",
    "ShareMemberValue",
    "ShareTargetMetaValue",
    "StatePartitionsValue",
    "TopicInfo",
    "TopicPartitionsInfo",
    "TopicPartitions",
    "decode",
    "encode",
]

#: The record types of this module (the key's leading int16).
RECORD_TYPES = frozenset({10, 11, 12, 13, 14, 15})

_I64 = struct.Struct(">q")


class TopicPartitions(NamedTuple):
    """One topic's partitions (types 13 and 14)."""

    topic_id: UUID
    partitions: tuple[int, ...]


class TopicPartitionsInfo(NamedTuple):
    """One topic's share-partitions in type 15 (initializing or initialized)."""

    topic_id: UUID
    topic_name: str
    partitions: tuple[int, ...]


class TopicInfo(NamedTuple):
    """A topic whose share state is being deleted (type 15)."""

    topic_id: UUID
    topic_name: str


class ShareMemberValue(NamedTuple):  # type 10
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


class ShareEpochValue(NamedTuple):  # type 11
    epoch: int
    metadata_hash: int = 0


class ShareTargetMetaValue(NamedTuple):  # type 12
    assignment_epoch: int
    timestamp_ms: int = 0


class ShareCurrentValue(NamedTuple):  # type 14
    member_epoch: int
    previous_member_epoch: int
    state: int  # MemberState: 0 STABLE (the only state a share member is in)
    assigned: tuple[TopicPartitions, ...]


class StatePartitionsValue(NamedTuple):  # type 15
    initializing: tuple[TopicPartitionsInfo, ...]
    initialized: tuple[TopicPartitionsInfo, ...]
    deleting: tuple[TopicInfo, ...]


class SgMember(NamedTuple):
    group_id: str
    member_id: str
    value: ShareMemberValue | None


class SgEpoch(NamedTuple):
    group_id: str
    value: ShareEpochValue | None


class SgTargetMeta(NamedTuple):
    group_id: str
    value: ShareTargetMetaValue | None


class SgTarget(NamedTuple):
    group_id: str
    member_id: str
    value: tuple[TopicPartitions, ...] | None


class SgCurrent(NamedTuple):
    group_id: str
    member_id: str
    value: ShareCurrentValue | None


class SgStatePartitions(NamedTuple):
    group_id: str
    value: StatePartitionsValue | None


ShareGroupRecord = SgMember | SgEpoch | SgTargetMeta | SgTarget | SgCurrent | SgStatePartitions


# --- writing ---------------------------------------------------------------------------------
def _write_topic_partitions(w: _Writer, topics: tuple[TopicPartitions, ...]) -> None:
    w.array_len(len(topics))
    for tp in topics:
        w.uuid(tp.topic_id)
        w.i32s(tuple(tp.partitions))
        w.tags([])


def _member_value(w: _Writer, m: ShareMemberValue) -> None:
    w.string(m.rack_id)
    w.string(m.client_id)
    w.string(m.client_host)
    w.array_len(len(m.subscribed_topic_names))
    for name in m.subscribed_topic_names:
        w.string(name)
    w.tags([])


def _epoch_value(w: _Writer, v: ShareEpochValue) -> None:
    w.i32(v.epoch)
    w.i64(v.metadata_hash)
    w.tags([])


def _target_meta_value(w: _Writer, v: ShareTargetMetaValue) -> None:
    w.i32(v.assignment_epoch)
    w.tags([(0, _I64.pack(v.timestamp_ms))] if v.timestamp_ms != 0 else [])


def _target_value(w: _Writer, topics: tuple[TopicPartitions, ...]) -> None:
    _write_topic_partitions(w, topics)
    w.tags([])


def _current_value(w: _Writer, c: ShareCurrentValue) -> None:
    w.i32(c.member_epoch)
    w.i32(c.previous_member_epoch)
    w.i8(c.state)
    _write_topic_partitions(w, c.assigned)
    w.tags([])


def _write_infos(w: _Writer, topics: tuple[TopicPartitionsInfo, ...]) -> None:
    w.array_len(len(topics))
    for t in topics:
        w.uuid(t.topic_id)
        w.string(t.topic_name)
        w.i32s(tuple(t.partitions))
        w.tags([])


def _state_partitions_value(w: _Writer, v: StatePartitionsValue) -> None:
    _write_infos(w, v.initializing)
    _write_infos(w, v.initialized)
    w.array_len(len(v.deleting))
    for t in v.deleting:
        w.uuid(t.topic_id)
        w.string(t.topic_name)
        w.tags([])
    w.tags([])


#: record class -> (record type, its value writer)
_WRITERS: dict[type, tuple[int, Callable[[_Writer, Any], None]]] = {
    SgMember: (10, _member_value),
    SgEpoch: (11, _epoch_value),
    SgTargetMeta: (12, _target_meta_value),
    SgTarget: (13, _target_value),
    SgCurrent: (14, _current_value),
    SgStatePartitions: (15, _state_partitions_value),
}


def encode(record: ShareGroupRecord) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of a record as Kafka writes it; value None for a tombstone."""
    return _encode_record(_WRITERS, record, "share group")


# --- reading ---------------------------------------------------------------------------------
def _read_topic_partitions(r: RecordReader) -> tuple[TopicPartitions, ...]:
    topics = []
    for _ in range(r.array_len()):
        topic_id = _uuid(r)
        partitions = _i32s(r)
        r.tagged_fields()
        topics.append(TopicPartitions(topic_id, partitions))
    return tuple(topics)


def _read_member(r: RecordReader) -> ShareMemberValue:
    rack_id = r.string()
    client_id = _required(r.string())
    client_host = _required(r.string())
    names = _strings(r)
    r.tagged_fields()
    return ShareMemberValue(rack_id, client_id, client_host, names)


def _read_epoch(r: RecordReader) -> ShareEpochValue:
    epoch = r.i32()
    metadata_hash = r.i64()
    r.tagged_fields()
    return ShareEpochValue(epoch, metadata_hash)


def _read_target_meta(r: RecordReader) -> ShareTargetMetaValue:
    epoch = r.i32()
    tagged = r.tagged_fields()
    return ShareTargetMetaValue(epoch, _I64.unpack(tagged[0])[0] if 0 in tagged else 0)


def _read_target(r: RecordReader) -> tuple[TopicPartitions, ...]:
    topics = _read_topic_partitions(r)
    r.tagged_fields()
    return topics


def _read_current(r: RecordReader) -> ShareCurrentValue:
    member_epoch = r.i32()
    previous = r.i32()
    state = r.i8()
    assigned = _read_topic_partitions(r)
    r.tagged_fields()
    return ShareCurrentValue(member_epoch, previous, state, assigned)


def _read_infos(r: RecordReader) -> tuple[TopicPartitionsInfo, ...]:
    topics = []
    for _ in range(r.array_len()):
        topic_id = _uuid(r)
        name = _required(r.string())
        partitions = _i32s(r)
        r.tagged_fields()
        topics.append(TopicPartitionsInfo(topic_id, name, partitions))
    return tuple(topics)


def _read_state_partitions(r: RecordReader) -> StatePartitionsValue:
    initializing = _read_infos(r)
    initialized = _read_infos(r)
    deleting = []
    for _ in range(r.array_len()):
        topic_id = _uuid(r)
        name = _required(r.string())
        r.tagged_fields()
        deleting.append(TopicInfo(topic_id, name))
    r.tagged_fields()
    return StatePartitionsValue(initializing, initialized, tuple(deleting))


_READERS: dict[int, tuple[type, Callable[[RecordReader], Any]]] = {
    10: (SgMember, _read_member),
    11: (SgEpoch, _read_epoch),
    12: (SgTargetMeta, _read_target_meta),
    13: (SgTarget, _read_target),
    14: (SgCurrent, _read_current),
    15: (SgStatePartitions, _read_state_partitions),
}

#: the record types whose key has a member id after the group id
_MEMBER_KEYED = frozenset({10, 13, 14})


def decode(key: bytes, value: bytes | None) -> ShareGroupRecord | None:
    """The record for a key of type 10-15 and its value (None = tombstone); None for a key of
    another type. Raises ValueError on a malformed key or value."""
    kr = RecordReader(key)
    record_type = kr.i16()
    if record_type not in RECORD_TYPES:
        return None
    fields: tuple[str, ...] = (_required(kr.string()),)
    if record_type in _MEMBER_KEYED:
        fields += (_required(kr.string()),)
    _end(kr)
    cls, read_value = _READERS[record_type]
    if value is None:
        tombstone: ShareGroupRecord = cls(*fields, None)
        return tombstone
    parsed = _read_value(value, record_type, read_value)
    record: ShareGroupRecord = cls(*fields, parsed)
    return record
