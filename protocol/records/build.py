"""Building magic-2 batches (for internal topics, markers and tests; clients build their own):
the zig-zag varint writer and the record encoder."""

from __future__ import annotations

import time
from collections.abc import Sequence

from minibroker.protocol.records.batch import (
    ATTR_TRANSACTIONAL,
    COMPRESSION_NONE,
    MAGIC,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchHeader,
    seal,
)
from minibroker.protocol.records.compression import compress
from minibroker.protocol.varint import BytesLike

__all__ = ["NewRecord", "zigzag_bytes", "encode_record", "build_batch"]

#: A record to build (``build_batch``): (key, value), (key, value, headers) or (key, value,
#: headers, timestamp_ms); headers are [(key, value or None)].
Headers = Sequence[tuple[str | BytesLike, BytesLike | None]] | None
NewRecord = (
    tuple[BytesLike | None, BytesLike | None]
    | tuple[BytesLike | None, BytesLike | None, Headers]
    | tuple[BytesLike | None, BytesLike | None, Headers, int | None]
)


def zigzag_bytes(n: int) -> bytes:
    """The zig-zag varint of ``n`` (a record's lengths, deltas and counts)."""
    z = (n << 1) ^ (n >> 63)
    if 0 <= z < 0x80:
        return bytes((z,))
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _sized(data: BytesLike | None) -> bytes:
    """A key, value or header value: its length (-1 for null) and its bytes."""
    return b"\x01" if data is None else zigzag_bytes(len(data)) + bytes(data)  # zig-zag(-1) = 1


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: BytesLike | None,
    value: BytesLike | None,
    headers: Headers,
) -> bytes:
    """One record, its length varint first."""
    parts = [b"\x00", zigzag_bytes(timestamp_delta), zigzag_bytes(offset_delta), _sized(key), _sized(value)]
    headers = headers or ()
    parts.append(zigzag_bytes(len(headers)))
    for hkey, hval in headers:
        parts += (_sized(hkey.encode() if isinstance(hkey, str) else hkey), _sized(hval))
    body = b"".join(parts)
    return zigzag_bytes(len(body)) + body


def build_batch(
    records: Sequence[NewRecord],
    *,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    timestamp_ms: int | None = None,
    timestamp: int | None = None,
    compression: int = COMPRESSION_NONE,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Build one magic-2 batch.

    Each record is ``(key, value)``, ``(key, value, headers)`` or ``(key, value, headers,
    timestamp_ms)``; headers are ``[(str, bytes | None)]``. Records without their own timestamp
    get ``timestamp_ms`` (alias ``timestamp``; default: now, for tests: the broker always
    passes its clock's). ``compression`` compresses the records section (needs cramjam)."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    default_ts = timestamp_ms if timestamp_ms is not None else timestamp
    if default_ts is None:
        default_ts = time.time_ns() // 1_000_000
    stamps = [r[3] if len(r) > 3 and r[3] is not None else default_ts for r in records]
    base_ts = stamps[0]
    section = b"".join(
        encode_record(i, ts - base_ts, r[0], r[1], r[2] if len(r) > 2 else None)
        for i, (r, ts) in enumerate(zip(records, stamps, strict=True))
    )
    if compression:
        section = compress(compression, section)
    count = len(records)
    header = BatchHeader(
        base_offset,
        0,  # batchLength: seal computes it
        partition_leader_epoch,
        MAGIC,
        0,
        compression | (ATTR_TRANSACTIONAL if transactional else 0),
        count - 1,
        base_ts,
        max(stamps),
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    return seal(header, section)
