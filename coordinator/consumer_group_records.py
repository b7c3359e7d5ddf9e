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

Tagged fields are written as Kafka's generated code writes them, so the bytes are Kafka's
(tests/acceptance/test_kip848_records.py compares them with a Kafka 4.4 broker's): MetadataHash
(3) and AssignmentTimestamp (6) only when not 0; type 8's AssignmentEpochs only when not empty
(left out it reads as None: a load takes the member epoch); type 5's ClassicMemberMetadata is
written when null (a consumer-protocol member: one byte 0) and left out only when it equals the
empty struct, which is what an absent tag reads as.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, NamedTuple
from uuid import UUID

from minibroker.coordinator.record_reader import RecordReader
from minibroker.protocol.varint import write_uvarint

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


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


# --- writing ---------------------------------------------------------------------------------
class _Writer:
    """A flexible body (value v0): compact strings/arrays/bytes, 16-byte uuids."""

    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray(_I16.pack(0))  # the value's version

    def i8(self, v: int) -> None:
        self.out += struct.pack(">b", v)

    def i32(self, v: int) -> None:
        self.out += _I32.pack(v)

    def i64(self, v: int) -> None:
        self.out += _I64.pack(v)

    def uvarint(self, v: int) -> None:
        self.out += write_uvarint(v)

    def string(self, v: str | None) -> None:
        if v is None:
            self.uvarint(0)
            return
        raw = v.encode("utf-8")
        self.uvarint(len(raw) + 1)
        self.out += raw

    def bytes_(self, v: bytes) -> None:
        self.uvarint(len(v) + 1)
        self.out += v

    def uuid(self, v: UUID) -> None:
        self.out += v.bytes

    def array_len(self, n: int | None) -> None:
        self.uvarint(0 if n is None else n + 1)

    def i32s(self, values: tuple[int, ...]) -> None:
        self.array_len(len(values))
        for v in values:
            self.i32(v)

    def tags(self, fields: list[tuple[int, bytes]]) -> None:
        """The tagged-field section: only the fields given (those not at their default)."""
        self.uvarint(len(fields))
        for tag, data in fields:
            self.uvarint(tag)
            self.uvarint(len(data))
            self.out += data

    def sub(self) -> _Writer:
        """A writer for a tagged field's body (no version prefix)."""
        w = _Writer()
        w.out.clear()
        return w


def _key(record_type: int, *fields: str) -> bytes:
    out = bytearray(_I16.pack(record_type))
    for f in fields:
        raw = f.encode("utf-8")
        out += _I16.pack(len(raw))
        out += raw
    return bytes(out)


def _write_topic_partitions(w: _Writer, topics: tuple[TopicPartitions, ...], epochs: bool) -> None:
    w.array_len(len(topics))
    for tp in topics:
        w.uuid(tp.topic_id)
        w.i32s(tuple(tp.partitions))
        tagged: list[tuple[int, bytes]] = []
        if epochs and tp.assignment_epochs:  # Kafka leaves an empty list out
            sub = w.sub()
            sub.i32s(tuple(tp.assignment_epochs))
            tagged.append((0, bytes(sub.out)))
        w.tags(tagged)


def _classic_tag(w: _Writer, classic: ClassicMemberMetadata | None) -> list[tuple[int, bytes]]:
    """Tag 0 of type 5 as Kafka's generated code writes it: a null (a consumer-protocol
    member) is written (one byte 0), a struct is written after a byte 1 unless it equals the
    default struct (session timeout 0, no protocols), which is left out."""
    if classic is None:
        return [(0, b"\x00")]
    if classic.session_timeout_ms == 0 and not classic.supported_protocols:
        return []
    sub = w.sub()
    sub.uvarint(1)
    sub.i32(classic.session_timeout_ms)
    sub.array_len(len(classic.supported_protocols))
    for proto in classic.supported_protocols:
        sub.string(proto.name)
        sub.bytes_(proto.metadata)
        sub.tags([])
    sub.tags([])
    return [(0, bytes(sub.out))]


def _epoch_value(w: _Writer, v: EpochValue) -> None:
    w.i32(v.epoch)
    w.tags([(0, _I64.pack(v.metadata_hash))] if v.metadata_hash != 0 else [])


def _member_value(w: _Writer, m: MemberMetadataValue) -> None:
    w.string(m.instance_id)
    w.string(m.rack_id)
    w.string(m.client_id)
    w.string(m.client_host)
    w.array_len(len(m.subscribed_topic_names))
    for name in m.subscribed_topic_names:
        w.string(name)
    w.string(m.subscribed_topic_regex)
    w.i32(m.rebalance_timeout_ms)
    w.string(m.server_assignor)
    w.tags(_classic_tag(w, m.classic))


def _target_meta_value(w: _Writer, v: TargetMetaValue) -> None:
    w.i32(v.assignment_epoch)
    w.tags([(0, _I64.pack(v.timestamp_ms))] if v.timestamp_ms != 0 else [])


def _target_value(w: _Writer, topics: tuple[TopicPartitions, ...]) -> None:
    _write_topic_partitions(w, topics, epochs=False)
    w.tags([])


def _current_value(w: _Writer, c: CurrentAssignmentValue) -> None:
    w.i32(c.member_epoch)
    w.i32(c.previous_member_epoch)
    w.i8(c.state)
    _write_topic_partitions(w, c.assigned, epochs=True)
    _write_topic_partitions(w, c.pending_revocation, epochs=True)
    w.tags([])


def _regex_value(w: _Writer, r: ResolvedRegexValue) -> None:
    w.array_len(len(r.topics))
    for topic in r.topics:
        w.string(topic)
    w.i64(r.version)
    w.i64(r.timestamp_ms)
    w.tags([])


#: record class -> (record type, its value writer)
_WRITERS: dict[type, tuple[int, Callable[[_Writer, Any], None]]] = {
    CgEpoch: (3, _epoch_value),
    CgMember: (5, _member_value),
    CgTargetMeta: (6, _target_meta_value),
    CgTarget: (7, _target_value),
    CgCurrent: (8, _current_value),
    CgRegex: (16, _regex_value),
}


def encode(record: ConsumerGroupRecord) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of a record as Kafka writes it; value None for a tombstone."""
    if isinstance(record, CgPartitionMetadataTombstone):
        return _key(4, record.group_id), None
    return _encode_record(_WRITERS, record, "consumer group")


def _encode_record(
    writers: dict[type, tuple[int, Callable[[_Writer, Any], None]]], record: Any, kind: str
) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of a group record (a NamedTuple of key fields then its value, None for
    a tombstone) by `writers`, record class -> (record type, its value writer); `kind` names
    the records in the TypeError for another class."""
    try:
        record_type, write_value = writers[type(record)]
    except KeyError:
        raise TypeError(f"not a {kind} record: {record!r}") from None
    # the key fields are all but the last (the value)
    key = _key(record_type, *record[:-1])
    if record.value is None:
        return key, None
    w = _Writer()
    write_value(w, record.value)
    return key, bytes(w.out)


# --- reading ---------------------------------------------------------------------------------
def _uuid(r: RecordReader) -> UUID:
    return UUID(bytes=bytes(r.take(16)))


def _i32s(r: RecordReader) -> tuple[int, ...]:
    n = r.uvarint() - 1
    if n < 0:
        raise ValueError("null array where Kafka writes one")
    return tuple(r.i32() for _ in range(n))


def _nullable_i32s(data: bytes) -> tuple[int, ...] | None:
    r = RecordReader(data, flexible=True)
    n = r.uvarint() - 1
    return None if n < 0 else tuple(r.i32() for _ in range(n))


def _strings(r: RecordReader) -> tuple[str, ...]:
    return tuple(_required(r.string()) for _ in range(r.array_len()))


def _required(value: str | None) -> str:
    if value is None:
        raise ValueError("null string in a non-nullable field")
    return value


def _read_topic_partitions(r: RecordReader) -> tuple[TopicPartitions, ...]:
    topics = []
    for _ in range(r.array_len()):
        topic_id = _uuid(r)
        partitions = _i32s(r)
        tagged = r.tagged_fields()
        epochs = _nullable_i32s(tagged[0]) if 0 in tagged else None
        if epochs is not None and len(epochs) != len(partitions):
            epochs = None  # Kafka logs it and takes the member epoch for each partition
        topics.append(TopicPartitions(topic_id, partitions, epochs))
    return tuple(topics)


def _read_classic(data: bytes) -> ClassicMemberMetadata | None:
    r = RecordReader(data, flexible=True)
    if r.uvarint() <= 0:  # null: a member of the consumer protocol
        return None
    session_timeout = r.i32()
    protocols = []
    for _ in range(r.array_len()):
        name = _required(r.string())
        metadata = r.bytes_()
        r.tagged_fields()
        protocols.append(ClassicProtocol(name, metadata or b""))
    r.tagged_fields()
    return ClassicMemberMetadata(session_timeout, tuple(protocols))


def _end(r: RecordReader) -> None:
    if r.pos != len(r.buf):
        raise ValueError("trailing bytes after the record's fields")


def _value_reader(value: bytes, record_type: int) -> RecordReader:
    """A reader of a flexible record value past its version, which must be 0."""
    r = RecordReader(value, flexible=True)
    version = r.i16()
    if version != 0:
        raise ValueError(f"unsupported value version {version} of record type {record_type}")
    return r


def _read_value(value: bytes, record_type: int, read_value: Callable[[RecordReader], Any]) -> Any:
    """A flexible record value (version 0) read by `read_value`, to its end."""
    r = _value_reader(value, record_type)
    parsed = read_value(r)
    _end(r)
    return parsed


def decode(key: bytes, value: bytes | None) -> ConsumerGroupRecord | None:
    """The record for a key of type 3-8 or 16 and its value (None = tombstone); None for a key
    of another type. Raises ValueError on a malformed key or value.

    Type 4 (ConsumerGroupPartitionMetadata, legacy since Kafka 4.1, never written by minibroker)
    decodes to `CgPartitionMetadataTombstone` whether its value is a tombstone or not: its
    content is not used any more. A value is only found in a log Kafka 4.0 wrote; reading it as
    the tombstone loses nothing minibroker uses (a group's deletion tombstones type 4 anyway, as
    Kafka's createGroupTombstoneRecords always does)."""
    kr = RecordReader(key)
    record_type = kr.i16()
    if record_type not in RECORD_TYPES:
        return None
    group_id = _required(kr.string())
    if record_type == 4:
        _end(kr)
        return CgPartitionMetadataTombstone(group_id)
    cls, read_value = _READERS[record_type]
    fields: tuple[str, ...] = (group_id,)
    if record_type in (5, 7, 8, 16):
        fields += (_required(kr.string()),)
    _end(kr)
    if value is None:
        tombstone: ConsumerGroupRecord = cls(*fields, None)
        return tombstone
    parsed = _read_value(value, record_type, read_value)
    record: ConsumerGroupRecord = cls(*fields, parsed)
    return record


def _read_epoch(r: RecordReader) -> EpochValue:
    epoch = r.i32()
    tagged = r.tagged_fields()
    return EpochValue(epoch, _I64.unpack(tagged[0])[0] if 0 in tagged else 0)


def _read_member(r: RecordReader) -> MemberMetadataValue:
    instance_id = r.string()
    rack_id = r.string()
    client_id = _required(r.string())
    client_host = _required(r.string())
    names = _strings(r)
    regex = r.string()
    rebalance_timeout = r.i32()
    assignor = r.string()
    tagged = r.tagged_fields()
    # tag 0 left out is Kafka's default: an (empty) classic member metadata, not null
    classic = _read_classic(tagged[0]) if 0 in tagged else ClassicMemberMetadata(0, ())
    return MemberMetadataValue(
        instance_id, rack_id, client_id, client_host, names, regex, rebalance_timeout, assignor, classic
    )


def _read_target_meta(r: RecordReader) -> TargetMetaValue:
    epoch = r.i32()
    tagged = r.tagged_fields()
    return TargetMetaValue(epoch, _I64.unpack(tagged[0])[0] if 0 in tagged else 0)


def _read_target(r: RecordReader) -> tuple[TopicPartitions, ...]:
    topics = tuple(TopicPartitions(t.topic_id, t.partitions) for t in _read_topic_partitions(r))
    r.tagged_fields()
    return topics


def _read_current(r: RecordReader) -> CurrentAssignmentValue:
    member_epoch = r.i32()
    previous = r.i32()
    state = r.i8()
    assigned = _read_topic_partitions(r)
    pending = _read_topic_partitions(r)
    r.tagged_fields()
    return CurrentAssignmentValue(member_epoch, previous, state, assigned, pending)


def _read_regex(r: RecordReader) -> ResolvedRegexValue:
    topics = _strings(r)
    version = r.i64()
    timestamp = r.i64()
    r.tagged_fields()
    return ResolvedRegexValue(topics, version, timestamp)


_READERS: dict[int, tuple[type, Callable[[RecordReader], Any]]] = {
    3: (CgEpoch, _read_epoch),
    5: (CgMember, _read_member),
    6: (CgTargetMeta, _read_target_meta),
    7: (CgTarget, _read_target),
    8: (CgCurrent, _read_current),
    16: (CgRegex, _read_regex),
}
