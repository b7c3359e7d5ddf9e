"""Hand-encoded Fetch response (v4-12), so record bytes never pass through Python objects.

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


def _string(s: str, flexible: bool) -> bytes:
    data = s.encode()
    return (_uvarint(len(data) + 1) if flexible else _I16.pack(len(data))) + data


def _array_len(n: int, flexible: bool) -> bytes:
    return _uvarint(n + 1) if flexible else _I32.pack(n)


def encode(
    version: int,
    topics: list[tuple[str, list[PartitionData]]],
    error_code: int = 0,  # noqa: C901 - one hot-path encoder, read top to bottom
    session_id: int = 0,
) -> tuple[list[object], int]:
    """Return (parts, total size) of the response body for Fetch `version` (4..12)."""
    flexible = version >= 12
    parts: list[object] = []
    head = bytearray(_TOP_V7.pack(0, error_code, session_id) if version >= 7 else _I32.pack(0))
    head += _array_len(len(topics), flexible)
    size = 0
    for name, partitions in topics:
        head += _string(name, flexible)
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
                head += b"\x00"  # partition tagged fields
        if flexible:
            head += b"\x00"  # topic tagged fields
    if flexible:
        head += b"\x00"  # response tagged fields
    parts.append(bytes(head))
    size += len(head)
    return parts, size
