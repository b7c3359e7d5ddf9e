"""The 61-byte header of a magic-2 record batch (Apache Kafka's ``DefaultRecordBatch``): parse,
CRC-32C, stamping. Pure functions, no I/O.

The broker treats a batch as opaque bytes. It only needs the fixed header to validate an append,
assign offsets and index the log, so the hot path parses that header; the records after it are
walked by ``records/walk.py``.

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

Attribute bit 6 (``ATTR_DELETE_HORIZON``, KIP-534): the base timestamp is the delete horizon
the log cleaner stamped (``records/rewrite.py``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from minibroker.protocol.crc import crc32c as _crc32c
from minibroker.protocol.varint import BytesLike

__all__ = [
    "HEADER_SIZE",
    "HEADER_STRUCT",
    "MAGIC",
    "BATCH_OVERHEAD_LENGTH",
    "CRC_OFFSET",
    "CRC_START",
    "COMPRESSION_NONE",
    "COMPRESSION_GZIP",
    "COMPRESSION_SNAPPY",
    "COMPRESSION_LZ4",
    "COMPRESSION_ZSTD",
    "ATTR_COMPRESSION_MASK",
    "ATTR_LOG_APPEND_TIME",
    "ATTR_TRANSACTIONAL",
    "ATTR_CONTROL",
    "ATTR_DELETE_HORIZON",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "BatchHeader",
    "CorruptBatchError",
    "parse_header",
    "crc_ok",
    "seal",
    "stamp_header",
    "iter_batches",
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
#: the base timestamp is the delete horizon (Kafka's DefaultRecordBatch.DELETE_HORIZON_FLAG_MASK)
ATTR_DELETE_HORIZON = 0x40

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
CRC_OFFSET = 17
CRC_START = 21  # the CRC covers attributes .. end of batch
_ATTRIBUTES_OFFSET = 21
_MAX_TIMESTAMP_OFFSET = 35


class CorruptBatchError(ValueError):
    """The bytes are not a well-formed record batch (or its records cannot be decoded)."""


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


def crc_ok(buf: BytesLike, pos: int = 0, size: int | None = None) -> bool:
    """True if the stored CRC matches. ``buf`` is one whole batch (or ``pos``/``size`` select
    one); the length is taken from the batchLength field when ``size`` is not given."""
    mv = memoryview(buf)
    if size is None:
        size = len(mv) - pos
    if size < HEADER_SIZE:
        return False
    stored: int = _U32.unpack_from(mv, pos + CRC_OFFSET)[0]
    return stored == _crc32c(mv[pos + CRC_START : pos + size])


def seal(
    header: BatchHeader,
    records: BytesLike,
    *,
    count: int | None = None,
    attributes: int | None = None,
    base_timestamp: int | None = None,
) -> bytes:
    """A whole batch: ``header``'s fields (with its records count, attributes and base timestamp
    replaced where given) over ``records`` (the records section, compressed if the attributes
    say so), its batchLength and CRC-32C computed. The one place a batch is assembled."""
    out = bytearray(HEADER_SIZE + len(records))
    _HEADER.pack_into(
        out,
        0,
        header.base_offset,
        len(out) - 12,
        header.partition_leader_epoch,
        MAGIC,
        0,
        header.attributes if attributes is None else attributes,
        header.last_offset_delta,
        header.base_timestamp if base_timestamp is None else base_timestamp,
        header.max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        header.records_count if count is None else count,
    )
    out[HEADER_SIZE:] = records
    _U32.pack_into(out, CRC_OFFSET, _crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


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
        crc = _crc32c(mv[CRC_START : _I32.unpack_from(buf, 8)[0] + 12])
    else:
        crc = _crc32c(records, _crc32c(mv[CRC_START:HEADER_SIZE]))
    _U32.pack_into(buf, CRC_OFFSET, crc)


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
