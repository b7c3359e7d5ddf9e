"""Hand-made record batches for validation tests: any field, any varint width, any lie."""

from __future__ import annotations

import struct

from crc32c import crc32c
from minibroker.protocol.records import COMPRESSION_NONE, compress

NOW = 1_700_000_000_000


def zz(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def varint(n: int, width: int | None = None) -> bytes:
    """Zig-zag varint; ``width`` pads it (non-canonically) to that many bytes."""
    z = zz(n) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while True:
        out.append(z & 0x7F)
        z >>= 7
        if not z and (width is None or len(out) >= width):
            break
        out[-1] |= 0x80
    return bytes(out)


def record(
    offset_delta: int,
    key: bytes | None = b"k",
    value: bytes = b"v",
    *,
    ts_delta: int = 0,
    headers: bytes = b"\x00",
    attributes: int = 0,
    key_len: bytes | None = None,
    ts_raw: bytes | None = None,
) -> bytes:
    body = bytes([attributes]) + (ts_raw if ts_raw is not None else varint(ts_delta))
    body += varint(offset_delta)
    if key_len is not None:
        body += key_len + (key or b"")
    elif key is None:
        body += varint(-1)
    else:
        body += varint(len(key)) + key
    body += varint(len(value)) + value + headers
    return varint(len(body)) + body


def raw_batch(
    records: list[bytes] | bytes,
    *,
    count: int | None = None,
    last_offset_delta: int | None = None,
    codec: int = COMPRESSION_NONE,
    base_timestamp: int = NOW,
    max_timestamp: int = NOW,
    attributes: int = 0,
    base_offset: int = 0,
    magic: int = 2,
    producer_id: int = -1,
    base_sequence: int = -1,
) -> bytes:
    section = records if isinstance(records, bytes) else b"".join(records)
    n = count if count is not None else (1 if isinstance(records, bytes) else len(records))
    if codec:
        section = compress(codec, section)
    lod = last_offset_delta if last_offset_delta is not None else n - 1
    head = struct.pack(
        ">qiibIhiqqqhii",
        base_offset,
        49 + len(section),
        -1,
        magic,
        0,
        attributes | codec,
        lod,
        base_timestamp,
        max_timestamp,
        producer_id,
        0,
        base_sequence,
        n,
    )
    buf = bytearray(head + section)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)
