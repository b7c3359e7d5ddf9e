"""The record walk: the records of a magic-2 batch, field by field, as Kafka's
``DefaultRecord.readFrom`` reads them. Every reader of records uses it: the Produce validator
(``check_records``), internal topics, timestamp lookups and ``minibroker dump``
(``iter_records``), log compaction (``record_keys``, and ``records/rewrite.py``).

Record: ``length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
keyLength varint (-1 = null), key, valueLength varint (-1 = null), value, headerCount varint,
[headerKeyLength varint, headerKey, headerValueLength varint (-1 = null), headerValue]``; all
varints zig-zag, int32 ones at most 5 bytes and varlongs at most 10 (Kafka's ByteUtils).

``walk_records`` refuses (InvalidRecord, or RecordsTruncated for a field past the end) what a Produce
may not store: a malformed varint, a length past the record or the batch, a negative length
other than -1, an attributes byte with its high bit (kafka-python reads it as a varint), a bad
header count, a header key that is not UTF-8 (consumers fail on it), a record whose fields do
not fill its length, fewer records than the count, bytes after the last record. One rule is the
validator's alone: with ``consecutive`` the offset deltas must be 0, 1, 2, ... (what a client
writes; a compacted batch has gaps, which readers accept).

Two walks exist, each measured:
- ``walk_records`` in Python, which records every record's fields (positions, not copies);
- ``storage/_record_walk.c``, the same rules in C: ``walk`` for the validator (consecutive
  offset deltas; only the smallest and largest timestamp delta and the null-key indexes) and
  ``keys`` for the log cleaner (``record_keys``' answer); each returns None for anything it does
  not accept, and the Python walk then decides, with Kafka's message. It is an optional
  extension built into ``minibroker.storage`` (pyproject.toml), so storage/compiled_walk.py
  imports it (protocol/ imports nothing of storage/) and its callers pass it in.

Measured per 100 B record (a 1,000-record batch, timeit, best of 40, on a loaded 2-core
machine): the validator's walk with the header and CRC checks costs 0.029 us with the C walk
against 2.2 with the Python one; the cleaner's keys 0.09 us in C against 2.4 in Python. The
Python walks this one replaced, each skipping what its caller did not need, cost 1.2 and 1.05
but agreed with no other walker on malformed batches; where the extension is installed (make
test checks it is) the cleaner is ten times faster than it was.
tests/unit/test_record_walkers.py feeds every walker here, and both C walks, the same batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

from minibroker.protocol.records.batch import (
    ATTR_LOG_APPEND_TIME,
    HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    parse_header,
)
from minibroker.protocol.records.compression import decompress
from minibroker.protocol.varint import BytesLike

__all__ = [
    "InvalidRecord",
    "RecordsTruncated",
    "Record",
    "Fields",
    "CompiledWalk",
    "CompiledKeys",
    "Checked",
    "read_varint",
    "walk_records",
    "records_area",
    "walk_batch",
    "check_records",
    "timestamp_deltas",
    "iter_records",
    "record_keys",
]


class InvalidRecord(CorruptBatchError):
    """A record's structure is broken (Kafka's InvalidRecordException from the record reader)."""


class RecordsTruncated(CorruptBatchError):
    """A record's field runs past the end of the records."""

    def __init__(self) -> None:
        super().__init__("incorrect declared batch size, premature EOF reached")


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF

#: What ``walk_records`` gives per record, all positions in the walked buffer: (body: the position
#: after the length varint, end, timestamp delta, offset delta, key position, key length (-1:
#: null), value position, value length (-1: null)); the headers follow the value.
Fields = tuple[int, int, int, int, int, int, int, int]

#: storage/_record_walk.c's ``walk(records, count)``: (smallest timestamp delta, largest,
#: null-key indexes) when it accepts the records, None otherwise.
CompiledWalk = Callable[[BytesLike, int], "tuple[int, int, list[int]] | None"]
#: storage/_record_walk.c's ``keys(records, count, base_offset)``: ``record_keys``' answer when
#: it accepts the records, None otherwise.
CompiledKeys = Callable[[BytesLike, int, int], "list[tuple[int, bytes | None, bool]] | None"]


def read_varint(buf: BytesLike, pos: int, *, long: bool = False) -> tuple[int, int]:
    """Zig-zag varint of at most 5 bytes (an int32, Kafka's ByteUtils.readVarint) or with
    ``long`` at most 10 (readVarlong): (value, the position after it). Raises InvalidRecord,
    IndexError past the end of ``buf``."""
    limit, mask = (10, _MASK64) if long else (5, _MASK32)
    raw = 0
    shift = 0
    for _ in range(limit):
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            raw &= mask
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    kind = "varlong" if long else "varint"
    raise InvalidRecord(f"{kind} is too long, the most significant bit in the {limit}th byte is set")


def walk_records(  # noqa: C901 - Kafka's DefaultRecord.readFrom field by field, short varints inline
    buf: BytesLike, pos: int, end: int, count: int, *, consecutive: bool = False
) -> list[Fields]:
    """The ``count`` records in buf[pos:end] (see the module docstring for what is refused).
    A record's five varints (length, timestamp delta, offset delta, key length, value length)
    are read by one loop; those of one or two bytes (nearly all of them) inline: a call per
    field would double the cost. Raises InvalidRecord or RecordsTruncated."""
    out: list[Fields] = []
    add = out.append
    body = rec_end = key_pos = value_pos = 0
    try:
        for i in range(count):
            values = []
            for field in range(5):
                b = buf[pos]
                if b < 0x80:
                    n = (b >> 1) ^ -(b & 1)
                    pos += 1
                elif buf[pos + 1] < 0x80:
                    b = (b & 0x7F) | (buf[pos + 1] << 7)
                    n = (b >> 1) ^ -(b & 1)
                    pos += 2
                else:
                    n, pos = read_varint(buf, pos, long=field == 1)
                values.append(n)
                if field == 0:  # the record's length, then its attributes byte
                    body, rec_end = pos, pos + n
                    if n < 0 or rec_end > end:
                        raise InvalidRecord(
                            f"invalid record size: expected {n} bytes in record payload, "
                            f"but only {end - pos} remain"
                        )
                    if buf[pos] >= 0x80:  # unused by Kafka, but kafka-python reads it as a varint
                        raise InvalidRecord(f"record {i} has attributes {buf[pos]:#x}; none are defined")
                    pos += 1
                elif field == 2:
                    if consecutive and n != i:
                        raise InvalidRecord(
                            f"record {i} has offset delta {n}; offset deltas must be consecutive"
                        )
                elif field > 2:  # the key's or the value's length, then its bytes
                    if field == 3:
                        key_pos = pos
                    else:
                        value_pos = pos
                    if n >= 0:
                        pos += n
                    elif n != -1:  # Kafka reads any negative length as null; librdkafka stalls
                        raise InvalidRecord(f"record {i} has {'key' if field == 3 else 'value'} length {n}")
            if buf[pos] == 0 and pos + 1 == rec_end:  # no headers: the common case
                pos += 1
            else:
                pos = _headers(buf, pos, end, i, None)
                if pos != rec_end:
                    raise InvalidRecord(
                        f"invalid record size: expected to read {values[0]} bytes in record "
                        f"payload, but instead read {values[0] + pos - rec_end}"
                    )
            add((body, rec_end, values[1], values[2], key_pos, values[3], value_pos, values[4]))
    except IndexError:
        raise RecordsTruncated from None
    if pos != end:
        raise InvalidRecord("incorrect declared batch size, records still remaining in file")
    return out


def _headers(buf: BytesLike, pos: int, end: int, i: int, out: list[tuple[str, bytes | None]] | None) -> int:
    """Walk the headers at ``pos`` (appending them to ``out`` when given); the position after."""
    count, pos = read_varint(buf, pos)
    if count < 0 or count > end - pos:
        raise InvalidRecord(f"found invalid number of record headers {count}")
    for _ in range(count):
        n, pos = read_varint(buf, pos)
        if n < 0:
            raise InvalidRecord(f"invalid negative header key size {n}")
        try:  # consumers decode header keys as UTF-8 and fail on anything else
            key = bytes(buf[pos : pos + n]).decode()
        except UnicodeDecodeError:
            raise InvalidRecord(f"record {i} has a header key that is not UTF-8") from None
        pos += n
        n, pos = read_varint(buf, pos)
        value = None
        if n >= 0:
            value = bytes(buf[pos : pos + n])
            pos += n
        elif n != -1:
            raise InvalidRecord(f"record {i} has header value length {n}")
        if out is not None:
            out.append((key, value))
    return pos


def records_area(batch: BytesLike) -> tuple[BatchHeader, bytes | memoryview, int, int]:
    """(header, buffer, start, end) of the records of one whole batch, decompressed if needed.
    Raises CorruptBatchError."""
    mv = memoryview(batch)
    h = parse_header(mv)
    end = h.size
    if end > len(mv):
        raise CorruptBatchError("batch is truncated")
    if h.compression:
        buf = decompress(h.compression, mv[HEADER_SIZE:end])
        return h, buf, 0, len(buf)
    return h, bytes(mv[:end]), HEADER_SIZE, end


def walk_batch(batch: BytesLike) -> tuple[BatchHeader, bytes | memoryview, int, list[Fields]]:
    """(header, buffer, start of the records, their fields) of one whole batch."""
    h, buf, pos, end = records_area(batch)
    return h, buf, pos, walk_records(buf, pos, end, h.records_count)


class Checked(NamedTuple):
    """What the Produce validator needs of the records."""

    low: int  # the smallest and largest timestamp delta
    high: int
    null_keys: list[int]  # indexes of the records without a key
    deltas: list[int] | None  # every record's timestamp delta, when the Python walk ran


def check_records(records: BytesLike, count: int, compiled: CompiledWalk | None) -> Checked:
    """The validator's walk of a batch's records (decompressed): ``compiled`` (the C walk) when
    given and it accepts them, else the Python walk, with the offset deltas 0, 1, 2, ....
    Raises InvalidRecord or RecordsTruncated (with Kafka's message)."""
    if compiled is not None:
        fast = compiled(records, count)
        if fast is not None:
            return Checked(*fast, None)
    if count <= 0:  # the C walk's refusal: a client's batch never gets here (LogValidator)
        raise InvalidRecord(f"invalid reported count for record batch: {count}")
    fields = walk_records(bytes(records), 0, len(records), count, consecutive=True)
    deltas = [f[2] for f in fields]
    return Checked(min(deltas), max(deltas), [i for i, f in enumerate(fields) if f[5] < 0], deltas)


def timestamp_deltas(records: BytesLike, count: int) -> list[int]:
    """Every record's timestamp delta, by the validator's walk (``check_records``)."""
    return [f[2] for f in walk_records(bytes(records), 0, len(records), count, consecutive=True)]


def iter_records(batch: BytesLike) -> Iterator[Record]:
    """Decode the records of one batch (decompressing if needed). Timestamps of a LogAppendTime
    batch are the batch's maxTimestamp, as Kafka's readers do. Raises CorruptBatchError."""
    h, buf, _, fields = walk_batch(batch)
    log_append = h.attributes & ATTR_LOG_APPEND_TIME
    base_offset, base_ts, max_ts = h.base_offset, h.base_timestamp, h.max_timestamp
    for i, (_, rec_end, ts_delta, offset_delta, key_pos, key_len, value_pos, value_len) in enumerate(fields):
        headers: list[tuple[str, bytes | None]] = []
        at = value_pos + max(value_len, 0)
        if at + 1 < rec_end:
            _headers(buf, at, rec_end, i, headers)
        yield Record(
            base_offset + offset_delta,
            max_ts if log_append else base_ts + ts_delta,
            None if key_len < 0 else bytes(buf[key_pos : key_pos + key_len]),
            None if value_len < 0 else bytes(buf[value_pos : value_pos + value_len]),
            headers,
        )


def record_keys(
    batch: BytesLike, compiled: CompiledKeys | None = None
) -> list[tuple[int, bytes | None, bool]]:
    """(offset, key, has a value) of each record: what log compaction needs; by ``compiled``
    (the C walk) when given and it accepts the records. Raises CorruptBatchError."""
    h, buf, pos, end = records_area(batch)
    if compiled is not None:
        fast = compiled(memoryview(buf)[pos:end], h.records_count, h.base_offset)
        if fast is not None:
            return fast
    fields = walk_records(buf, pos, end, h.records_count)
    base = h.base_offset
    return [(base + f[3], None if f[5] < 0 else bytes(buf[f[4] : f[4] + f[5]]), f[7] >= 0) for f in fields]
