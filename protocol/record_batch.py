"""Kafka record batches, magic 2 (Apache Kafka's ``DefaultRecordBatch``): pure functions, no I/O.

The broker treats a batch as opaque bytes. It only needs the fixed 61-byte header to validate an
append, assign offsets and index the log, so the hot path parses that header and never touches
the records. Record-level decoding (``iter_records``) exists for internal topics, timestamp
lookups and tests.

Header layout (big endian; offsets in bytes)::

     0 baseOffset int64          broker rewrites (outside the CRC)
     8 batchLength int32         bytes after this field (= size - 12)
    12 partitionLeaderEpoch int32 broker stamps (outside the CRC)
    16 magic int8 = 2
    17 crc uint32                CRC-32C over [21, end of batch)
    21 attributes int16          bits 0-2 compression, 3 timestamp type, 4 transactional, 5 control
    23 lastOffsetDelta int32
    27 baseTimestamp int64
    35 maxTimestamp int64
    43 producerId int64
    51 producerEpoch int16
    53 baseSequence int32
    57 recordsCount int32
    61 records...

Record: ``length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
keyLength varint (-1 = null), key, valueLength varint, value, headerCount varint,
[headerKeyLength varint, headerKey, headerValueLength varint (-1 = null), headerValue]``; all
varints are zig-zag encoded.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import NamedTuple, overload

from minibroker.protocol.crc import crc32c as _crc32c
from minibroker.protocol.varint import BytesLike

__all__ = [
    "HEADER_SIZE",
    "HEADER_STRUCT",
    "MAGIC",
    "BATCH_OVERHEAD_LENGTH",
    "COMPRESSION_NONE",
    "COMPRESSION_GZIP",
    "COMPRESSION_SNAPPY",
    "COMPRESSION_LZ4",
    "COMPRESSION_ZSTD",
    "ATTR_COMPRESSION_MASK",
    "ATTR_LOG_APPEND_TIME",
    "ATTR_TRANSACTIONAL",
    "ATTR_CONTROL",
    "CONTROL_ABORT",
    "CONTROL_COMMIT",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "BatchHeader",
    "Record",
    "ControlRecord",
    "CorruptBatchError",
    "DecompressedTooLarge",
    "parse_header",
    "crc_ok",
    "compute_crc",
    "stamp_header",
    "iter_batches",
    "build_batch",
    "build_control_batch",
    "iter_records",
    "iter_record_keys",
    "parse_control_record",
    "filter_batch",
    "decompress",
]

HEADER_SIZE = 61
MAGIC = 2
# batchLength of a batch with no records: everything after the batchLength field.
BATCH_OVERHEAD_LENGTH = HEADER_SIZE - 12

COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD = range(5)
ATTR_COMPRESSION_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

CONTROL_ABORT = 0
CONTROL_COMMIT = 1

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

_INT32_MAX = 2**31 - 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_STRUCT = _HEADER  # for callers that unpack headers in a loop
assert _HEADER.size == HEADER_SIZE
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_MAX_TIMESTAMP_OFFSET = 35
_CRC_START = 21  # the CRC covers attributes .. end of batch


class CorruptBatchError(ValueError):
    """The bytes are not a well-formed record batch (or its records cannot be decoded)."""


class DecompressedTooLarge(CorruptBatchError):
    """The records decompress to more than the caller's limit."""


class BatchHeader(NamedTuple):
    """The 61-byte header of one record batch (field names follow Kafka's)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return (self.attributes >> 3) & 1

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        """Total bytes of the batch including the baseOffset and batchLength fields."""
        return self.batch_length + 12

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record; sequences wrap from 2**31-1 to 0 (Kafka's
        DefaultRecordBatch.incrementSequence). -1 when the batch has no sequence."""
        base = self.base_sequence
        if base < 0:
            return NO_SEQUENCE
        delta = self.last_offset_delta
        if base > _INT32_MAX - delta:
            return delta - (_INT32_MAX - base) - 1
        return base + delta


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


#: A record to build (``build_batch``): (key, value), (key, value, headers) or (key, value,
#: headers, timestamp_ms); headers are [(key, value or None)].
_Headers = Sequence[tuple[str | BytesLike, BytesLike | None]] | None
NewRecord = (
    tuple[BytesLike | None, BytesLike | None]
    | tuple[BytesLike | None, BytesLike | None, _Headers]
    | tuple[BytesLike | None, BytesLike | None, _Headers, int | None]
)


class ControlRecord(NamedTuple):
    version: int
    type: int  # CONTROL_ABORT or CONTROL_COMMIT
    coordinator_epoch: int  # -1 if the record carries no value


_make_header = BatchHeader._make
_unpack_header = _HEADER.unpack_from


def parse_header(buf: BytesLike, pos: int = 0) -> BatchHeader:
    """Parse the header of the batch starting at ``pos``. Raises CorruptBatchError if fewer than
    61 bytes are available. Does not validate anything else (see ``crc_ok``)."""
    try:
        return _make_header(_unpack_header(buf, pos))
    except struct.error:
        raise CorruptBatchError(
            f"record batch header needs {HEADER_SIZE} bytes, {len(buf) - pos} available"
        ) from None


def compute_crc(buf: BytesLike, pos: int = 0, size: int | None = None) -> int:
    """CRC-32C of the batch at ``pos`` over bytes [21, end of batch)."""
    mv = memoryview(buf)
    if size is None:
        size = _I32.unpack_from(mv, pos + 8)[0] + 12
    return _crc32c(mv[pos + _CRC_START : pos + size])


def crc_ok(buf: BytesLike, pos: int = 0, size: int | None = None) -> bool:
    """True if the stored CRC matches. ``buf`` is one whole batch (or ``pos``/``size`` select
    one); the length is taken from the batchLength field when ``size`` is not given."""
    mv = memoryview(buf)
    if size is None:
        size = len(mv) - pos
    if size < HEADER_SIZE:
        return False
    stored: int = _U32.unpack_from(mv, pos + _CRC_OFFSET)[0]
    return stored == _crc32c(mv[pos + _CRC_START : pos + size])


def stamp_header(
    buf: bytearray,
    base_offset: int,
    leader_epoch: int,
    *,
    max_timestamp: int | None = None,
    log_append_time: bool = False,
    records: BytesLike | None = None,
) -> None:
    """What the broker writes into a batch it appends, the one place headers are patched.
    ``buf`` is a whole batch, or just its 61-byte header with ``records`` the bytes after it
    (the append path copies only the header). baseOffset and partitionLeaderEpoch lie outside
    the CRC. With ``max_timestamp``, also Kafka's DefaultRecordBatch.setMaxTimestamp: the
    timestamp-type bit and maxTimestamp, which lie inside the CRC, so it is recomputed."""
    _I64.pack_into(buf, 0, base_offset)
    _I32.pack_into(buf, 12, leader_epoch)
    if max_timestamp is None:
        return
    attrs = _I16.unpack_from(buf, _ATTRIBUTES_OFFSET)[0]
    attrs = attrs | ATTR_LOG_APPEND_TIME if log_append_time else attrs & ~ATTR_LOG_APPEND_TIME
    _I16.pack_into(buf, _ATTRIBUTES_OFFSET, attrs)
    _I64.pack_into(buf, _MAX_TIMESTAMP_OFFSET, max_timestamp)
    mv = memoryview(buf)
    if records is None:
        crc = _crc32c(mv[_CRC_START : _I32.unpack_from(buf, 8)[0] + 12])
    else:
        crc = _crc32c(records, _crc32c(mv[_CRC_START:HEADER_SIZE]))
    _U32.pack_into(buf, _CRC_OFFSET, crc)


def iter_batches(buf: BytesLike, pos: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) of each complete batch in concatenated batches. Stops quietly at
    an incomplete tail (a partial header, a batch running past the end) or at a batchLength too
    small to be a batch, which is how a fetch response or a torn log tail ends."""
    end = len(buf)
    while pos + HEADER_SIZE <= end:
        h = _make_header(_unpack_header(buf, pos))
        if h.batch_length < BATCH_OVERHEAD_LENGTH:
            return
        size = h.batch_length + 12
        if pos + size > end:
            return
        yield pos, h
        pos += size


# ------------------------------------------------------------------------------ varints
def _zigzag_bytes(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    if 0 <= z < 0x80:
        return bytes((z,))
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _read_varint(buf: BytesLike, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    raw = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptBatchError("varint longer than 10 bytes")


# ------------------------------------------------------------------------------ building
def _encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: BytesLike | None,
    value: BytesLike | None,
    headers: _Headers,
) -> bytes:
    parts = [b"\x00", _zigzag_bytes(timestamp_delta), _zigzag_bytes(offset_delta)]
    if key is None:
        parts.append(b"\x01")  # zig-zag(-1)
    else:
        parts += (_zigzag_bytes(len(key)), bytes(key))
    if value is None:
        parts.append(b"\x01")
    else:
        parts += (_zigzag_bytes(len(value)), bytes(value))
    headers = headers or ()
    parts.append(_zigzag_bytes(len(headers)))
    for hkey, hval in headers:
        kb = hkey.encode() if isinstance(hkey, str) else bytes(hkey)
        parts += (_zigzag_bytes(len(kb)), kb)
        if hval is None:
            parts.append(b"\x01")
        else:
            parts += (_zigzag_bytes(len(hval)), bytes(hval))
    body = b"".join(parts)
    return _zigzag_bytes(len(body)) + body


def _compress(codec: int, data: bytes) -> bytes:
    import cramjam  # only needed for compressed batches (tests, not the broker's hot path)

    if codec == COMPRESSION_GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == COMPRESSION_SNAPPY:
        # xerial snappy-java framing, what the Java client writes; every client reads it.
        block = bytes(cramjam.snappy.compress_raw(data))
        return _XERIAL_HEADER + _I32.pack(len(block)) + block
    if codec == COMPRESSION_LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == COMPRESSION_ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def _assemble(
    records_section: bytes,
    count: int,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    base_offset: int,
    partition_leader_epoch: int,
) -> bytes:
    buf = bytearray(HEADER_SIZE + len(records_section))
    _HEADER.pack_into(
        buf,
        0,
        base_offset,
        len(buf) - 12,
        partition_leader_epoch,
        MAGIC,
        0,
        attributes,
        count - 1,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    buf[HEADER_SIZE:] = records_section
    _U32.pack_into(buf, _CRC_OFFSET, _crc32c(memoryview(buf)[_CRC_START:]))
    return bytes(buf)


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
    """Build one magic-2 batch (for internal topics and tests; clients build their own).

    Each record is ``(key, value)``, ``(key, value, headers)`` or ``(key, value, headers,
    timestamp_ms)``; headers are ``[(str, bytes | None)]``. Records without their own timestamp
    get ``timestamp_ms`` (alias ``timestamp``; default: now). ``compression`` compresses the
    records section (needs cramjam)."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    default_ts = timestamp_ms if timestamp_ms is not None else timestamp
    if default_ts is None:
        default_ts = int(time.time() * 1000)
    stamps = [r[3] if len(r) > 3 and r[3] is not None else default_ts for r in records]
    base_ts = stamps[0]
    encoded = [
        _encode_record(i, ts - base_ts, r[0], r[1], r[2] if len(r) > 2 else None)
        for i, (r, ts) in enumerate(zip(records, stamps, strict=True))
    ]
    section = b"".join(encoded)
    if compression:
        section = _compress(compression, section)
    attributes = compression | (ATTR_TRANSACTIONAL if transactional else 0)
    return _assemble(
        section,
        len(records),
        attributes,
        base_ts,
        max(stamps),
        producer_id,
        producer_epoch,
        base_sequence,
        base_offset,
        partition_leader_epoch,
    )


def filter_batch(header: BatchHeader, batch: BytesLike, keep: Sequence[bool]) -> bytes:  # noqa: C901
    """The batch ``header`` describes, holding only its records whose ``keep`` flag is set (at
    least one): what log compaction writes. Like Kafka's MemoryRecords.filterTo it keeps the base
    offset, last offset delta, timestamps, producer id/epoch/base sequence and attributes (so
    offsets and producer state are unchanged), and compresses with the batch's own codec. A
    record's offset and timestamp deltas are relative to the base offset and base timestamp,
    which stay, so the surviving records are copied byte for byte, not decoded and re-encoded."""
    mv = memoryview(batch)
    buf: bytes | memoryview
    if header.compression:
        buf = decompress(header.compression, mv[HEADER_SIZE : header.size])
        pos = 0
    else:
        buf, pos = mv[: header.size], HEADER_SIZE
    parts: list[bytes | memoryview] = []
    kept, run_start = 0, -1
    read = _read_varint
    try:
        for k in keep:
            start = pos
            b = buf[pos]
            if b < 0x80:
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                length, pos = read(buf, pos)
            pos += length
            if k:
                kept += 1
                if run_start < 0:
                    run_start = start
            elif run_start >= 0:
                parts.append(buf[run_start:start])
                run_start = -1
    except IndexError:
        raise CorruptBatchError("record runs past the end of the batch") from None
    if run_start >= 0:
        parts.append(buf[run_start:pos])
    if not kept:
        raise ValueError("a filtered batch keeps at least one record")
    section = b"".join(parts)
    if header.compression:
        section = _compress(header.compression, section)
    out = bytearray(HEADER_SIZE + len(section))
    _HEADER.pack_into(
        out,
        0,
        header.base_offset,
        len(out) - 12,
        header.partition_leader_epoch,
        MAGIC,
        0,
        header.attributes,
        header.last_offset_delta,
        header.base_timestamp,
        header.max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        kept,
    )
    out[HEADER_SIZE:] = section
    _U32.pack_into(out, _CRC_OFFSET, _crc32c(memoryview(out)[_CRC_START:]))
    return bytes(out)


def build_control_batch(
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp_ms: int | None = None,
) -> bytes:
    """Kafka's MemoryRecords.withEndTransactionMarker: attributes 0x30 (transactional|control,
    CreateTime), baseSequence -1, one record whose key is ``int16 version 0, int16 type``
    (ABORT=0, COMMIT=1) and whose value is ``int16 version 0, int32 coordinatorEpoch``."""
    if timestamp_ms is None:
        timestamp_ms = int(time.time() * 1000)
    key = struct.pack(">hh", 0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = struct.pack(">hi", 0, coordinator_epoch)
    section = _encode_record(0, 0, key, value, None)
    return _assemble(
        section,
        1,
        ATTR_TRANSACTIONAL | ATTR_CONTROL,
        timestamp_ms,
        timestamp_ms,
        producer_id,
        producer_epoch,
        NO_SEQUENCE,
        0,
        -1,
    )


# ------------------------------------------------------------------------------ decoding
_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


_FIRST_GUESS_RATIO = 16  # most batches decompress to less than this many times their size
_TOO_SMALL = ("failed to write whole buffer", "smaller than required")


def _bounded(module: ModuleType, data: bytes, limit: int) -> memoryview:
    """Decompress into a buffer of at most ``limit`` bytes (cramjam's ``decompress_into``) so a
    small payload that expands to gigabytes cannot exhaust memory. A first, smaller buffer
    covers ordinary ratios; only a payload that does not fit gets a second try at ``limit``."""
    import cramjam

    size = min(limit, max(1 << 16, _FIRST_GUESS_RATIO * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = module.decompress_into(data, out)
        except cramjam.DecompressionError as exc:
            if size < limit and any(t in str(exc) for t in _TOO_SMALL):
                size = limit
                continue
            if any(t in str(exc) for t in _TOO_SMALL):
                raise DecompressedTooLarge(f"records decompress to more than {limit} bytes") from None
            raise
        return memoryview(out)[:n]


def _snappy_raw(data: bytes, limit: int | None) -> bytes:
    import cramjam

    if limit is not None and cramjam.snappy.decompress_raw_len(data) > limit:
        raise DecompressedTooLarge(f"records decompress to more than {limit} bytes")
    return bytes(cramjam.snappy.decompress_raw(data))


@overload
def decompress(codec: int, data: BytesLike, limit: None = None) -> bytes: ...
@overload
def decompress(codec: int, data: BytesLike, limit: int) -> bytes | memoryview: ...
def decompress(codec: int, data: BytesLike, limit: int | None = None) -> bytes | memoryview:
    """The records section of a compressed batch, decompressed (bytes-like). With ``limit``,
    more than ``limit`` decompressed bytes is an error instead of an allocation."""
    import cramjam

    try:
        data = bytes(data)
        if codec == COMPRESSION_SNAPPY:
            if data[:8] == _XERIAL_HEADER[:8]:
                # xerial framing: 16-byte header, then [int32 length, raw snappy block]*
                out = []
                pos = 16
                total = 0
                while pos < len(data):  # consumers refuse a partial chunk: so do we
                    if pos + 4 > len(data):
                        raise ValueError("xerial snappy chunk length is truncated")
                    n = _I32.unpack_from(data, pos)[0]
                    pos += 4
                    if n < 0 or pos + n > len(data):
                        raise ValueError(f"xerial snappy chunk of {n} bytes is truncated")
                    chunk = _snappy_raw(data[pos : pos + n], None if limit is None else limit - total)
                    total += len(chunk)
                    out.append(chunk)
                    pos += n
                return b"".join(out)
            return _snappy_raw(data, limit)  # librdkafka: raw snappy
        module = {
            COMPRESSION_GZIP: cramjam.gzip,
            COMPRESSION_LZ4: cramjam.lz4,
            COMPRESSION_ZSTD: cramjam.zstd,
        }.get(codec)
        if module is None:
            raise CorruptBatchError(f"unknown compression codec {codec}")
        if limit is None:
            return bytes(module.decompress(data))
        return _bounded(module, data, limit)
    except DecompressedTooLarge:
        raise
    except (cramjam.DecompressionError, ValueError) as exc:
        raise CorruptBatchError(f"cannot decompress records (codec {codec}): {exc}") from None


def iter_records(batch: BytesLike) -> Iterator[Record]:
    """Decode the records of one batch (decompressing if needed). Timestamps of a LogAppendTime
    batch are the batch's maxTimestamp, as Kafka's readers do. Raises CorruptBatchError."""
    mv = memoryview(batch)
    h = parse_header(mv)
    end = h.size
    if end > len(mv):
        raise CorruptBatchError("batch is truncated")
    codec = h.compression
    buf: bytes | memoryview
    if codec:
        buf = decompress(codec, mv[HEADER_SIZE:end])
        pos, end = 0, len(buf)
    else:
        buf, pos = mv, HEADER_SIZE
    log_append = h.attributes & ATTR_LOG_APPEND_TIME
    base_offset, base_ts, max_ts = h.base_offset, h.base_timestamp, h.max_timestamp
    try:
        for _ in range(h.records_count):
            length, pos = _read_varint(buf, pos)
            rec_end = pos + length
            if length < 0 or rec_end > end:
                raise CorruptBatchError("record runs past the end of the batch")
            pos += 1  # record attributes (unused)
            ts_delta, pos = _read_varint(buf, pos)
            off_delta, pos = _read_varint(buf, pos)
            n, pos = _read_varint(buf, pos)
            key = None if n < 0 else bytes(buf[pos : pos + n])
            pos += max(n, 0)
            n, pos = _read_varint(buf, pos)
            value = None if n < 0 else bytes(buf[pos : pos + n])
            pos += max(n, 0)
            count, pos = _read_varint(buf, pos)
            headers: list[tuple[str, bytes | None]] = []
            for _ in range(count):
                n, pos = _read_varint(buf, pos)
                hkey = bytes(buf[pos : pos + n]).decode("utf-8", "replace")
                pos += n
                n, pos = _read_varint(buf, pos)
                hval = None if n < 0 else bytes(buf[pos : pos + n])
                pos += max(n, 0)
                headers.append((hkey, hval))
            if pos != rec_end:
                raise CorruptBatchError("record length does not match its fields")
            yield Record(
                base_offset + off_delta, max_ts if log_append else base_ts + ts_delta, key, value, headers
            )
    except IndexError:
        raise CorruptBatchError("record runs past the end of the batch") from None


def iter_record_keys(batch: BytesLike) -> Iterator[tuple[int, bytes | None, bool]]:  # noqa: C901 - inlined varints
    """(offset, key, has_value) of each record, skipping timestamps, values and headers by the
    record length: what log compaction needs, several times faster than ``iter_records``.
    Raises CorruptBatchError."""
    mv = memoryview(batch)
    h = parse_header(mv)
    end = h.size
    if end > len(mv):
        raise CorruptBatchError("batch is truncated")
    if h.compression:
        buf = decompress(h.compression, mv[HEADER_SIZE:end])
        pos, end = 0, len(buf)
    else:
        buf, pos = bytes(mv[:end]), HEADER_SIZE
    base_offset = h.base_offset
    read = _read_varint
    try:
        for _ in range(h.records_count):
            # record length; one- and two-byte varints inline (a record of 64 B to 8 KiB, an
            # offset delta of 64 to 8191: the common cases)
            b = buf[pos]
            if b < 0x80:
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif buf[pos + 1] < 0x80:
                b = (b & 0x7F) | (buf[pos + 1] << 7)
                length, pos = (b >> 1) ^ -(b & 1), pos + 2
            else:
                length, pos = read(buf, pos)
            rec_end = pos + length
            if length < 0 or rec_end > end:
                raise CorruptBatchError("record runs past the end of the batch")
            pos += 1  # attributes
            b = buf[pos]  # timestamp delta (skipped)
            pos = pos + 1 if b < 0x80 else read(buf, pos)[1]
            b = buf[pos]
            if b < 0x80:
                delta, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif buf[pos + 1] < 0x80:
                b = (b & 0x7F) | (buf[pos + 1] << 7)
                delta, pos = (b >> 1) ^ -(b & 1), pos + 2
            else:
                delta, pos = read(buf, pos)
            b = buf[pos]
            if b < 0x80:
                n, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                n, pos = read(buf, pos)
            if n < 0:
                key = None
            else:
                key = buf[pos : pos + n]
                pos += n
            # a null value's length is -1, zigzag 1: the one-byte varint 0x01
            yield base_offset + delta, key, buf[pos] != 0x01
            pos = rec_end
    except IndexError:
        raise CorruptBatchError("record runs past the end of the batch") from None


# The one record of an end-transaction marker as Kafka and build_control_batch lay it out
# (uncompressed; varints one byte each: record length 16, deltas 0, key length 4, value length
# 6, no headers): parse_control_record reads it in place; any other layout is decoded in full.
_MARKER_BATCH_SIZE = HEADER_SIZE + 17
_MARKER_LAYOUT = struct.Struct(">bxbbb hh b hi b")  # from HEADER_SIZE


def parse_control_record(batch: BytesLike) -> ControlRecord:
    """The end-transaction marker of a control batch. Raises CorruptBatchError."""
    if len(batch) == _MARKER_BATCH_SIZE and batch[22] & 0x07 == 0 and batch[57:61] == b"\x00\x00\x00\x01":
        length, ts_delta, offset_delta, key_len, version, kind, value_len, _, epoch, headers = (
            _MARKER_LAYOUT.unpack_from(batch, HEADER_SIZE)
        )
        if (length, ts_delta, offset_delta, key_len, value_len, headers) == (32, 0, 0, 8, 12, 0):
            return ControlRecord(version, kind, epoch)
    for rec in iter_records(batch):
        key = rec.key
        if key is None or len(key) < 4:
            raise CorruptBatchError("control record key shorter than 4 bytes")
        version, kind = struct.unpack_from(">hh", key)
        coordinator_epoch = -1
        if rec.value is not None and len(rec.value) >= 6:
            coordinator_epoch = struct.unpack_from(">hi", rec.value)[1]
        return ControlRecord(version, kind, coordinator_epoch)
    raise CorruptBatchError("control batch has no record")
