"""Record formats of __consumer_offsets: Apache Kafka's own, so Kafka tools can read them.

Keys (int16 version first, then the fields):
  version 0/1  OffsetCommitKey      group string, topic string, partition int32
  version 2    GroupMetadataKey     group string
Values (int16 version first; a null value is a tombstone for the key):
  OffsetCommitValue   v0: offset int64, metadata string, commit_timestamp int64
                      v1: offset, metadata, commit_timestamp, expire_timestamp int64
                      v2: offset, metadata, commit_timestamp
                      v3: offset, leader_epoch int32, metadata, commit_timestamp   (written)
  GroupMetadataValue  v0: protocol_type string, generation int32, protocol string?, leader string?,
                          members [member_id, client_id, client_host, session_timeout int32,
                                   subscription bytes, assignment bytes]
                      v1: members gain rebalance_timeout int32 (before session_timeout)
                      v2: current_state_timestamp int64 after leader
                      v3: members gain group_instance_id string? after member_id  (written)
Strings are int16-length UTF-8 (-1 = null), bytes int32-length, arrays int32-count.
Version 4 of either value (flexible, compact encodings) is read too; we write v3 of both.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from minibroker.coordinator.record_reader import RecordReader

__all__ = [
    "OffsetKey",
    "GroupKey",
    "OffsetValue",
    "GroupValue",
    "MemberValue",
    "encode_offset_key",
    "encode_group_key",
    "encode_offset_value",
    "encode_group_value",
    "decode_key",
    "decode_offset_value",
    "decode_group_value",
]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class OffsetKey(NamedTuple):
    group: str
    topic: str
    partition: int


class GroupKey(NamedTuple):
    group: str


class OffsetValue(NamedTuple):
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None


@dataclass(slots=True, eq=False)
class MemberIdentity:
    """Who a group member is and its timeouts: what a live member (group_metadata.Member) and
    its record in the group metadata value have in common. Not frozen: a static member's id
    changes when it rejoins."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int


@dataclass(slots=True)
class MemberValue(MemberIdentity):
    subscription: bytes
    assignment: bytes


class GroupValue(NamedTuple):
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberValue, ...]


# --- writing ---------------------------------------------------------------------------------
def _str(out: bytearray, value: str | None) -> None:
    if value is None:
        out += _I16.pack(-1)
        return
    raw = value.encode("utf-8")
    out += _I16.pack(len(raw))
    out += raw


def _bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += _I32.pack(-1)
        return
    out += _I32.pack(len(value))
    out += value


def encode_offset_key(group: str, topic: str, partition: int) -> bytes:
    out = bytearray(_I16.pack(1))
    _str(out, group)
    _str(out, topic)
    out += _I32.pack(partition)
    return bytes(out)


def encode_group_key(group: str) -> bytes:
    out = bytearray(_I16.pack(2))
    _str(out, group)
    return bytes(out)


def encode_offset_value(value: OffsetValue) -> bytes:
    out = bytearray(_I16.pack(3))
    out += _I64.pack(value.offset)
    out += _I32.pack(value.leader_epoch)
    _str(out, value.metadata if value.metadata is not None else "")
    out += _I64.pack(value.commit_timestamp)
    return bytes(out)


def encode_group_value(value: GroupValue) -> bytes:
    out = bytearray(_I16.pack(3))
    _str(out, value.protocol_type or "")
    out += _I32.pack(value.generation)
    _str(out, value.protocol)
    _str(out, value.leader)
    out += _I64.pack(value.current_state_timestamp)
    out += _I32.pack(len(value.members))
    for m in value.members:
        _str(out, m.member_id)
        _str(out, m.group_instance_id)
        _str(out, m.client_id)
        _str(out, m.client_host)
        out += _I32.pack(m.rebalance_timeout_ms)
        out += _I32.pack(m.session_timeout_ms)
        _bytes(out, bytes(m.subscription))
        _bytes(out, bytes(m.assignment))
    return bytes(out)


# --- reading ---------------------------------------------------------------------------------
def decode_key(raw: bytes) -> OffsetKey | GroupKey | None:
    """The key of a __consumer_offsets record; None for key versions this broker ignores."""
    r = RecordReader(raw)
    version = r.i16()
    if version in (0, 1):
        return OffsetKey(r.string() or "", r.string() or "", r.i32())
    if version == 2:
        return GroupKey(r.string() or "")
    return None


def decode_offset_value(raw: bytes) -> OffsetValue:
    version = _I16.unpack_from(raw, 0)[0]
    r = RecordReader(raw, flexible=version >= 4)
    r.pos = 2
    offset = r.i64()
    leader_epoch = r.i32() if version >= 3 else -1
    metadata = r.string() or ""
    commit_ts = r.i64()
    expire_ts = r.i64() if version == 1 else None
    return OffsetValue(offset, leader_epoch, metadata, commit_ts, expire_ts)


def decode_group_value(raw: bytes) -> GroupValue:
    version = _I16.unpack_from(raw, 0)[0]
    r = RecordReader(raw, flexible=version >= 4)
    r.pos = 2
    protocol_type = r.string() or ""
    generation = r.i32()
    protocol = r.string()
    leader = r.string()
    state_ts = r.i64() if version >= 2 else -1
    members = []
    for _ in range(r.array_len()):
        member_id = r.string() or ""
        instance_id = r.string() if version >= 3 else None
        client_id = r.string() or ""
        client_host = r.string() or ""
        session_timeout = r.i32()
        rebalance_timeout = session_timeout
        if version >= 1:
            # v1+: rebalance_timeout comes first in the schema
            rebalance_timeout, session_timeout = session_timeout, r.i32()
        subscription = r.bytes_() or b""
        assignment = r.bytes_() or b""
        r.tagged_fields()
        members.append(
            MemberValue(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    return GroupValue(protocol_type, generation, protocol, leader, state_ts, tuple(members))
