"""The records of `__share_group_state` in Kafka's format (the share coordinator's
ShareSnapshotKey/Value and ShareUpdateKey/Value schemas), so `kafka-dump-log
--share-group-state-decoder` reads what minibroker writes and a load replays Kafka's records.

A key is an int16 record type then the key fields (non-flexible: an int16-length group id, the
16-byte topic id, the int32 partition); a value is an int16 version (0) then a flexible body
(compact arrays, each StateBatch and the body ending with their tagged fields). A null value is
a tombstone: the share coordinator deletes a share-partition's state with a ShareSnapshotKey
tombstone (Kafka's newShareStateTombstoneRecord).

| type | record | value |
|---|---|---|
| 0 | ShareSnapshot | the full state: snapshot/state/leader epochs, start offset, timestamps, batches |
| 1 | ShareUpdate | a delta: snapshot/leader epochs, start offset (-1: unchanged), changed batches |

DeliveryCompleteCount (KIP-1226, Kafka 4.2) is tagged field 0 of both values, default -1: it is
written only when it is not -1 and reads as -1 when absent, as Kafka's generated code does.
"""

from __future__ import annotations

import struct
from typing import NamedTuple
from uuid import UUID

from minibroker.coordinator.consumer_group_records import _end, _value_reader
from minibroker.coordinator.record_reader import RecordReader
from minibroker.coordinator.share_types import SharePartitionKey, StateBatch
from minibroker.protocol.varint import write_uvarint

__all__ = [
    "RECORD_TYPES",
    "SHARE_SNAPSHOT",
    "SHARE_UPDATE",
    "ShareSnapshot",
    "ShareSnapshotValue",
    "ShareStateRecord",
    "ShareUpdate",
    "ShareUpdateValue",
    "decode",
    "encode",
]

SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
#: The record types of __share_group_state (the key's leading int16).
RECORD_TYPES = frozenset({SHARE_SNAPSHOT, SHARE_UPDATE})


class ShareSnapshotValue(NamedTuple):  # type 0
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int = -1
    create_timestamp: int = 0
    write_timestamp: int = 0
    batches: tuple[StateBatch, ...] = ()


class ShareUpdateValue(NamedTuple):  # type 1
    snapshot_epoch: int
    leader_epoch: int  # -1: unchanged
    start_offset: int  # -1: unchanged
    delivery_complete_count: int = -1
    batches: tuple[StateBatch, ...] = ()


class ShareSnapshot(NamedTuple):
    key: SharePartitionKey
    value: ShareSnapshotValue | None  # None: tombstone (the share-partition's state is deleted)


class ShareUpdate(NamedTuple):
    key: SharePartitionKey
    value: ShareUpdateValue | None  # None: a tombstone Kafka never writes


ShareStateRecord = ShareSnapshot | ShareUpdate

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_BATCH = struct.Struct(">qqbh")


# --- writing ---------------------------------------------------------------------------------
def _key(record_type: int, key: SharePartitionKey) -> bytes:
    group = key.group_id.encode("utf-8")
    return b"".join(
        (_I16.pack(record_type), _I16.pack(len(group)), group, key.topic_id.bytes, _I32.pack(key.partition))
    )


def _batches(out: bytearray, batches: tuple[StateBatch, ...]) -> None:
    out += write_uvarint(len(batches) + 1)
    for b in batches:
        out += _BATCH.pack(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        out += b"\x00"  # the batch's tagged fields: none


def _tags(out: bytearray, delivery_complete_count: int) -> None:
    if delivery_complete_count == -1:
        out += b"\x00"
        return
    out += b"\x01\x00\x04"  # one tagged field: tag 0, 4 bytes
    out += _I32.pack(delivery_complete_count)


def encode(record: ShareStateRecord) -> tuple[bytes, bytes | None]:
    """The (key, value) bytes of a record; value None for a tombstone."""
    if isinstance(record, ShareSnapshot):
        key = _key(SHARE_SNAPSHOT, record.key)
        s = record.value
        if s is None:
            return key, None
        out = bytearray(_I16.pack(0))
        out += _I32.pack(s.snapshot_epoch) + _I32.pack(s.state_epoch) + _I32.pack(s.leader_epoch)
        out += _I64.pack(s.start_offset) + _I64.pack(s.create_timestamp) + _I64.pack(s.write_timestamp)
        _batches(out, s.batches)
        _tags(out, s.delivery_complete_count)
        return key, bytes(out)
    key = _key(SHARE_UPDATE, record.key)
    u = record.value
    if u is None:
        return key, None
    out = bytearray(_I16.pack(0))
    out += _I32.pack(u.snapshot_epoch) + _I32.pack(u.leader_epoch) + _I64.pack(u.start_offset)
    _batches(out, u.batches)
    _tags(out, u.delivery_complete_count)
    return key, bytes(out)


# --- reading ---------------------------------------------------------------------------------
def _read_batches(r: RecordReader) -> tuple[StateBatch, ...]:
    batches = []
    for _ in range(r.array_len()):
        first, last, state, count = _BATCH.unpack(r.take(_BATCH.size))
        r.tagged_fields()
        batches.append(StateBatch(first, last, state, count))
    return tuple(batches)


def _delivery_complete_count(r: RecordReader) -> int:
    tagged = r.tagged_fields()
    if 0 not in tagged:
        return -1
    if len(tagged[0]) != 4:
        raise ValueError("DeliveryCompleteCount (tag 0) is not 4 bytes")
    value: int = _I32.unpack(tagged[0])[0]
    return value


def decode(key: bytes, value: bytes | None) -> ShareStateRecord | None:
    """The record for a key of type 0 or 1 and its value (None = tombstone); None for a key of
    another type. Raises ValueError on a malformed key or value."""
    kr = RecordReader(key)
    record_type = kr.i16()
    if record_type not in RECORD_TYPES:
        return None
    group_id = kr.string()
    if group_id is None:
        raise ValueError("null group id in a __share_group_state key")
    topic_id = UUID(bytes=bytes(kr.take(16)))
    partition = kr.i32()
    _end(kr)
    spk = SharePartitionKey(group_id, topic_id, partition)
    if value is None:
        return ShareSnapshot(spk, None) if record_type == SHARE_SNAPSHOT else ShareUpdate(spk, None)
    r = _value_reader(value, record_type)
    if record_type == SHARE_SNAPSHOT:
        snapshot_epoch, state_epoch, leader_epoch = r.i32(), r.i32(), r.i32()
        start_offset, create_ts, write_ts = r.i64(), r.i64(), r.i64()
        batches = _read_batches(r)
        count = _delivery_complete_count(r)
        _end(r)
        return ShareSnapshot(
            spk,
            ShareSnapshotValue(
                snapshot_epoch, state_epoch, leader_epoch, start_offset, count, create_ts, write_ts, batches
            ),
        )
    snapshot_epoch, leader_epoch, start_offset = r.i32(), r.i32(), r.i64()
    batches = _read_batches(r)
    count = _delivery_complete_count(r)
    _end(r)
    return ShareUpdate(spk, ShareUpdateValue(snapshot_epoch, leader_epoch, start_offset, count, batches))
