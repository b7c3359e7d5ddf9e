"""Hand-encoded Fetch response (v4-18), so record bytes never pass through Python objects.

The encoder emits a list of parts: small `bytes` for the framing it builds and, in place of each
partition's records, the caller's record chunks (file slices) untouched. tests/unit check it
against kio's generated encoder byte for byte.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from minibroker.protocol.varint import write_uvarint as _uvarint

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PARTITION_HEAD = struct.Struct(">ihqqq")  # index, error, high watermark, LSO, log start
_PARTITION_HEAD_V4 = struct.Struct(">ihqq")  # v4 has no log start offset
_ABORTED = struct.Struct(">qq")
_TOP_V7 = struct.Struct(">ihi")  # throttle, error, session id
_LEADER = struct.Struct(">ii")


@dataclass(slots=True)
class PartitionData:
    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted: list[tuple[int, int]] | None = None  # (producer id, first offset)
    chunks: Sequence[object] = field(default_factory=list)  # bytes-like or objects with .length
    records_size: int = 0
    current_leader: tuple[int, int] | None = None  # v12+ tag 1 (leader id, epoch), KIP-951


#: One topic of the answer: its name (v4-12), its id (v13+: 16 bytes), its partitions.
Topic = tuple[str, bytes, list[PartitionData]]
#: A node endpoint (v16+ tag 0, KIP-951): (node id, host, port, rack).
NodeEndpoint = tuple[int, str, int, str | None]


def _string(s: str, flexible: bool) -> bytes:
    data = s.encode()
    return (_uvarint(len(data) + 1) if flexible else _I16.pack(len(data))) + data


def _array_len(n: int, flexible: bool) -> bytes:
    return _uvarint(n + 1) if flexible else _I32.pack(n)


def _leader_tag(leader_id: int, leader_epoch: int) -> bytes:
    # one tagged field: tag 1, size 9, LeaderIdAndEpoch (int32, int32, no tagged fields)
    return b"\x01\x01\x09" + _LEADER.pack(leader_id, leader_epoch) + b"\x00"


def _node_endpoints(nodes: Sequence[NodeEndpoint]) -> bytes:
    body = bytearray(_uvarint(len(nodes) + 1))
    for node_id, host, port, rack in nodes:
        body += _I32.pack(node_id) + _string(host, True) + _I32.pack(port)
        body += b"\x00" if rack is None else _string(rack, True)
        body += b"\x00"
    return b"\x01\x00" + _uvarint(len(body)) + bytes(body)


def encode(  # noqa: C901, PLR0912 - one hot-path encoder, read top to bottom
    version: int,
    topics: Sequence[Topic],
    error_code: int = 0,
    session_id: int = 0,
    node_endpoints: Sequence[NodeEndpoint] = (),
) -> tuple[list[object], int]:
    """Return (parts, total size) of the response body for Fetch `version` (4..18)."""
    flexible = version >= 12
    by_id = version >= 13
    parts: list[object] = []
    head = bytearray(_TOP_V7.pack(0, error_code, session_id) if version >= 7 else _I32.pack(0))
    head += _array_len(len(topics), flexible)
    size = 0
    for name, topic_id, partitions in topics:
        head += topic_id if by_id else _string(name, flexible)
        head += _array_len(len(partitions), flexible)
        for p in partitions:
            if version >= 5:
                head += _PARTITION_HEAD.pack(
                    p.partition_index,
                    p.error_code,
                    p.high_watermark,
                    p.last_stable_offset,
                    p.log_start_offset,
                )
            else:
                head += _PARTITION_HEAD_V4.pack(
                    p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset
                )
            if p.aborted is None:
                head += b"\x00" if flexible else _I32.pack(-1)
            else:
                head += _array_len(len(p.aborted), flexible)
                for producer_id, first_offset in p.aborted:
                    head += _ABORTED.pack(producer_id, first_offset)
                    if flexible:
                        head += b"\x00"
            if version >= 11:
                head += _I32.pack(-1)  # preferred read replica: none
            head += _uvarint(p.records_size + 1) if flexible else _I32.pack(p.records_size)
            if p.records_size:
                parts.append(bytes(head))
                size += len(head)
                head = bytearray()
                parts.extend(p.chunks)
                size += p.records_size
            if flexible:
                if p.current_leader is None:
                    head += b"\x00"  # partition tagged fields
                else:
                    head += _leader_tag(*p.current_leader)
        if flexible:
            head += b"\x00"  # topic tagged fields
    if flexible:
        head += _node_endpoints(node_endpoints) if node_endpoints else b"\x00"  # response tagged fields
    parts.append(bytes(head))
    size += len(head)
    return parts, size
