"""What Kafka checks in a produced record batch before it may reach the log (pure code, no I/O).

Three stages (and a first look), each in the order and with the error codes Apache Kafka 4 uses:

0. ``is_transactional`` (Kafka's ``RequestUtils.hasTransactionalRecords``), asked of every
   partition of a Produce request before anything else.
1. ``first_produced_batch`` (Kafka's ``ProduceRequest.validateRecords`` over
   ``ByteBufferLogInputStream``): the framing of a partition's records in a Produce request.
   A size field below 14 or a magic outside 0..2 is CORRUPT_MESSAGE; no complete batch, a magic
   other than 2 or a second complete batch is INVALID_RECORD; zstd below Produce v7 is
   UNSUPPORTED_COMPRESSION_TYPE. Bytes after the batch that do not form another batch are
   dropped, as Kafka's ``trimInvalidBytes`` does.
2. ``validate_batch_header`` (``UnifiedLog.analyzeAndValidateRecords`` + ``LogValidator
   .validateBatch``): base offset 0, ``max.message.bytes``, CRC-32C, offset range and record
   count, no control batches and no producer id without a sequence from clients.
3. ``validate_records`` (``LogValidator.assignOffsetsNonCompressed`` /
   ``validateMessagesAndAssignOffsetsCompressed``): every record is walked (compressed batches
   are decompressed first): record framing, varints at most 5 bytes (int32) or 10 (int64),
   header counts, offset deltas 0, 1, 2..., exactly ``recordsCount`` records filling the
   batch, keys on compacted topics, and CreateTime timestamps within
   ``message.timestamp.before.max.ms`` / ``after.max.ms``. Timestamp and key problems are
   collected per record (``record_errors``, INVALID_TIMESTAMP or INVALID_RECORD); structural
   ones stop at once with INVALID_RECORD; a payload that does not decompress is
   UNKNOWN_SERVER_ERROR (Kafka's KafkaException "Failed to decompress record stream").

One deliberate difference: Kafka accepts non-consecutive offset deltas and rewrites them (a
compressed batch is recompressed); no magic-2 client writes them, so they are refused here with
INVALID_RECORD rather than stored as sent.

The walk is the per-record cost of a Produce (measured by ``make bench``). ``_walk`` below is
the definition. ``storage/_record_walk.c`` does the same walk in C: it accepts exactly the
batches ``_walk`` accepts and declines (None) the others, which ``_walk`` then refuses with
Kafka's error and message. The extension is optional (built where a C compiler is found at
install time); without it ``_walk`` does all the work, and a Produce costs about five times the
broker CPU per record (1.16 against 0.23 us per 100 B record in ``bench.produce_path``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import NamedTuple

import structlog
from minibroker.protocol.crc import crc32c
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.record_batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_LOG_APPEND_TIME,
    ATTR_TRANSACTIONAL,
    BATCH_OVERHEAD_LENGTH,
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    HEADER_STRUCT,
    MAGIC,
    BatchHeader,
    DecompressedTooLarge,
    decompress,
)
from minibroker.storage.errors import KafkaStorageError

_compiled_walk: Callable[[bytes | memoryview, int], tuple[int, int, list[int]] | None] | None
try:
    from minibroker.storage._record_walk import walk as _compiled_walk
except ImportError as _missing:  # installed without a C compiler: the Python walk does it all
    _compiled_walk = None
    structlog.get_logger(__name__).warning(
        "the compiled record walk is not installed, so every produced record is walked in"
        " Python at about five times the CPU (reinstall minibroker where a C compiler is found)",
        error=str(_missing),
    )

__all__ = ["first_produced_batch", "validate_batch_header", "validate_records", "RecordsInfo"]

_I32 = struct.Struct(">i")
_make_header = BatchHeader._make
_unpack_header = HEADER_STRUCT.unpack_from

_LOG_OVERHEAD = 12  # baseOffset + batchLength
_MIN_SIZE_FIELD = 14  # Kafka's LegacyRecord.RECORD_OVERHEAD_V0: the smallest size field
_HEADER_UP_TO_MAGIC = 17
_MAGIC_OFFSET = 16
_MAX_CODEC = 4
_NO_TIMESTAMP = -1
# Kafka streams a compressed batch through its decompressor; this broker decompresses it whole,
# so a small payload that expands without bound (a "zip bomb") is refused past this size.
MAX_DECOMPRESSED_BYTES = 64 << 20


def _fail(code: ErrorCode, message: str) -> KafkaStorageError:
    return KafkaStorageError(code, message)


# ----------------------------------------------------------------------------- stage 1
def _next_batch_size(mv, pos: int, *, first: bool = True) -> int | None:
    """Kafka's ByteBufferLogInputStream.nextBatchSize + nextBatch: the size of the complete
    batch at ``pos``, None if what remains is not a complete batch; raises for a corrupt one."""
    remaining = len(mv) - pos
    if remaining < _LOG_OVERHEAD:
        return None
    size_field = _I32.unpack_from(mv, pos + 8)[0]
    # Kafka's Produce answer carries these two framing messages for the first batch only
    if size_field < _MIN_SIZE_FIELD:
        raise KafkaStorageError(
            ErrorCode.corrupt_message,
            f"Record size {size_field} is less than the minimum record overhead ({_MIN_SIZE_FIELD})",
            in_answer=first,
        )
    if remaining < _HEADER_UP_TO_MAGIC:
        return None
    magic = mv[pos + _MAGIC_OFFSET]
    if magic > MAGIC:  # unsigned here: 128..255 are Java's negative bytes
        raise KafkaStorageError(
            ErrorCode.corrupt_message,
            f"Invalid magic found in record: {magic - 256 if magic > 127 else magic}",
            in_answer=first,
        )
    size = size_field + _LOG_OVERHEAD
    return None if remaining < size else size


def first_produced_batch(records, api_version: int) -> memoryview:
    """The one batch a Produce request carries for a partition (stage 1 above)."""
    mv = memoryview(records or b"")
    size = _next_batch_size(mv, 0)
    if size is None:
        raise _fail(
            ErrorCode.invalid_record,
            f"produce requests with version {api_version} must have at least one record batch per partition",
        )
    if mv[_MAGIC_OFFSET] != MAGIC:
        raise _fail(
            ErrorCode.invalid_record,
            f"produce requests with version {api_version} are only allowed to contain "
            f"record batches with magic version 2",
        )
    codec = mv[22] & ATTR_COMPRESSION_MASK
    # Kafka reads the codec here only for the zstd rule (`version < 7 && compressionType() ==
    # ZSTD`): from v7 on an unknown codec is found by stage 2, with the partition's log start
    if api_version < 7 and codec > _MAX_CODEC:
        raise _fail(ErrorCode.unknown_server_error, f"unknown compression type id {codec}")
    if codec == COMPRESSION_ZSTD and api_version < 7:
        raise _fail(
            ErrorCode.unsupported_compression_type,
            f"produce requests with version {api_version} are not allowed to use ZStandard compression",
        )
    if _next_batch_size(mv, size, first=False) is not None:
        raise _fail(
            ErrorCode.invalid_record,
            f"produce requests with version {api_version} are only allowed to contain "
            f"exactly one record batch per partition",
        )
    return mv[:size]


def is_transactional(records) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords for one partition: whether the first complete
    batch is a magic-2 batch with the transactional bit. KafkaApis asks this of every partition
    before any other check of a Produce request (stage 1 included), so a batch whose attributes
    byte is garbage is answered as transactional (TRANSACTIONAL_ID_AUTHORIZATION_FAILED without
    an authorized transactional id) before its unknown codec is noticed. Like Kafka's batch
    iterator it raises CORRUPT_MESSAGE for a size field below 14 or a magic above 2, which
    KafkaApis does not catch there: the whole request is refused (broker/handlers/produce.py).
    Produce calls it only for what its cheap inline test cannot clear."""
    if not records:
        return False
    mv = memoryview(records)
    size = _next_batch_size(mv, 0)  # a complete batch is at least 26 bytes: mv[22] exists
    return size is not None and mv[_MAGIC_OFFSET] == MAGIC and bool(mv[22] & ATTR_TRANSACTIONAL)


# ----------------------------------------------------------------------------- stage 2
def validate_batch_header(mv, max_message_bytes: int, *, client: bool) -> BatchHeader:
    """Stage 2 on exactly one batch (``mv`` is the whole batch). Returns its header."""
    n = len(mv)
    if n < HEADER_SIZE:
        raise _shorter_than_a_header(mv, client=client)
    h = _make_header(_unpack_header(mv, 0))
    if h.magic != MAGIC:
        raise _fail(ErrorCode.invalid_record, f"record batch magic {h.magic}: only {MAGIC} is allowed")
    size = h.batch_length + _LOG_OVERHEAD
    if h.batch_length < BATCH_OVERHEAD_LENGTH or size != n:
        raise _fail(
            ErrorCode.corrupt_message, f"record batch length {h.batch_length} does not match its {n} bytes"
        )
    if client and h.base_offset != 0:
        raise _fail(
            ErrorCode.invalid_record,
            f"the baseOffset of the record batch should be 0, but it is {h.base_offset}",
        )
    if size > max_message_bytes:
        raise _fail(
            ErrorCode.message_too_large,
            f"the record batch size is {size} bytes which exceeds the maximum configured "
            f"value of {max_message_bytes} (max.message.bytes)",
        )
    if crc32c(mv[21:]) != h.crc:
        raise _fail(ErrorCode.corrupt_message, f"record is corrupt (stored crc = {h.crc})")
    if client:
        _check_client_header(h)
    if h.attributes & ATTR_COMPRESSION_MASK > _MAX_CODEC:
        raise _fail(
            ErrorCode.unknown_server_error,
            f"unknown compression type id {h.attributes & ATTR_COMPRESSION_MASK}",
        )
    return h


def _shorter_than_a_header(mv, *, client: bool) -> KafkaStorageError:
    n = len(mv)
    if n < 27:  # Kafka reads lastOffset past the end of the batch: an internal error
        return _fail(
            ErrorCode.unknown_server_error, f"record batch of {n} bytes is shorter than its fixed fields"
        )
    if client and _unpack_base_offset(mv) != 0:
        return _fail(ErrorCode.invalid_record, "the baseOffset of the record batch should be 0")
    return _fail(
        ErrorCode.corrupt_message,
        f"record batch is corrupt (the size {n} is smaller than the minimum allowed overhead {HEADER_SIZE})",
    )


def _check_client_header(h: BatchHeader) -> None:
    """What Kafka's LogValidator.validateBatch refuses in a batch from a client."""
    if h.last_offset_delta < 0:
        raise _fail(
            ErrorCode.invalid_record, f"batch has an invalid offset range: [0, {h.last_offset_delta}]"
        )
    if h.records_count <= 0:
        raise _fail(ErrorCode.invalid_record, f"invalid reported count for record batch: {h.records_count}")
    if h.records_count != h.last_offset_delta + 1:
        raise _fail(
            ErrorCode.invalid_record,
            f"inconsistent batch offset range [0, {h.last_offset_delta}] and count "
            f"of records {h.records_count}",
        )
    if h.attributes & ATTR_CONTROL:
        raise _fail(ErrorCode.invalid_record, "clients are not allowed to write control records")
    if h.producer_id >= 0 and h.base_sequence < 0:
        raise _fail(
            ErrorCode.invalid_record,
            f"invalid sequence number {h.base_sequence} in record batch with producerId {h.producer_id}",
        )
    if h.producer_id < 0 and h.attributes & ATTR_TRANSACTIONAL:
        raise _fail(ErrorCode.invalid_record, "transactional batch without a producer id")


def _unpack_base_offset(mv) -> int:
    return struct.unpack_from(">q", mv, 0)[0]


# ----------------------------------------------------------------------------- stage 3
class RecordsInfo(NamedTuple):
    max_timestamp: int  # what Kafka stamps as the batch's maxTimestamp (CreateTime topics)


class _Invalid(Exception):
    """A record's structure is broken (Kafka's InvalidRecordException from the iterator)."""


def _varint32(buf, pos: int) -> tuple[int, int]:
    """Zig-zag int32 varint of at most 5 bytes, as Kafka's ByteUtils.readVarint."""
    raw = 0
    shift = 0
    for _ in range(5):
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            raw &= 0xFFFFFFFF
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise _Invalid("varint is too long, the most significant bit in the 5th byte is set")


def _varint64(buf, pos: int) -> tuple[int, int]:
    raw = 0
    shift = 0
    for _ in range(10):
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            raw &= 0xFFFFFFFFFFFFFFFF
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise _Invalid("varlong is too long, the most significant bit in the 10th byte is set")


def _walk(buf, pos: int, end: int, count: int) -> tuple[list, list]:  # noqa: C901 - Kafka's
    # DefaultRecord.readFrom field by field, short varints inline: it decides every batch that
    # storage/_record_walk.c declines, hostile ones included
    """Walk ``count`` records in buf[pos:end]; returns (timestamp deltas, indexes of null-key
    records). Raises _Invalid for anything Kafka's record reader refuses, and IndexError when a
    field runs past the end. Varints of one or two bytes (nearly all of them) are decoded
    inline: a function call per field would double the cost."""
    deltas: list[int] = []
    add_delta = deltas.append
    null_keys = []
    v32 = _varint32
    for i in range(count):
        b = buf[pos]  # record length
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            c = buf[pos + 1]
            if c < 0x80:
                b = (b & 0x7F) | (c << 7)
                length = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                length, pos = v32(buf, pos)
        rec_end = pos + length
        if length < 0 or rec_end > end:
            raise _Invalid(
                f"invalid record size: expected {length} bytes in record payload, but only {end - pos} remain"
            )
        if buf[pos] >= 0x80:  # unused by Kafka, but kafka-python reads it as a varint
            raise _Invalid(f"record {i} has attributes {buf[pos]:#x}; none are defined")
        b = buf[pos + 1]  # timestamp delta (varlong)
        if b < 0x80:
            add_delta((b >> 1) ^ -(b & 1))
            pos += 2
        else:
            c = buf[pos + 2]
            if c < 0x80:
                b = (b & 0x7F) | (c << 7)
                add_delta((b >> 1) ^ -(b & 1))
                pos += 3
            else:
                d, pos = _varint64(buf, pos + 1)
                add_delta(d)
        z = i << 1  # the offset delta must be i: compare with its canonical one or two bytes
        if z < 0x80 and buf[pos] == z:
            pos += 1
        elif z < 0x4000 and buf[pos] == (z & 0x7F) | 0x80 and buf[pos + 1] == z >> 7:
            pos += 2
        else:
            off, pos = v32(buf, pos)
            if off != i:
                raise _Invalid(f"record {i} has offset delta {off}; offset deltas must be consecutive")
        b = buf[pos]  # key length
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            n, pos = v32(buf, pos)
        if n >= 0:
            pos += n
        elif n == -1:
            null_keys.append(i)
        else:  # Kafka reads any negative length as null; librdkafka stalls on the partition
            raise _Invalid(f"record {i} has key length {n}")
        b = buf[pos]  # value length
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            c = buf[pos + 1]
            if c < 0x80:
                b = (b & 0x7F) | (c << 7)
                n = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                n, pos = v32(buf, pos)
        if n >= 0:
            pos += n
        elif n != -1:
            raise _Invalid(f"record {i} has value length {n}")
        if buf[pos] == 0 and pos + 1 == rec_end:  # no headers: the common case
            pos += 1
            continue
        pos = _headers(buf, pos, end, i)
        if pos != rec_end:
            raise _Invalid(
                f"invalid record size: expected to read {length} bytes in record "
                f"payload, but instead read {length + pos - rec_end}"
            )
    if pos != end:
        raise _Invalid("incorrect declared batch size, records still remaining in file")
    return deltas, null_keys


def _headers(buf, pos: int, end: int, i: int) -> int:
    headers, pos = _varint32(buf, pos)
    if headers < 0 or headers > end - pos:
        raise _Invalid(f"found invalid number of record headers {headers}")
    for _ in range(headers):
        n, pos = _varint32(buf, pos)
        if n < 0:
            raise _Invalid(f"invalid negative header key size {n}")
        try:  # consumers decode header keys as UTF-8 and fail on anything else
            bytes(buf[pos : pos + n]).decode()
        except UnicodeDecodeError:
            raise _Invalid(f"record {i} has a header key that is not UTF-8") from None
        pos += n
        n, pos = _varint32(buf, pos)
        if n >= 0:
            pos += n
        elif n != -1:
            raise _Invalid(f"record {i} has header value length {n}")
    return pos


def _reference_walk(buf: bytes, count: int) -> tuple[list, list]:
    """The definition of what is accepted (``_walk``), with its failures as Kafka's errors."""
    try:
        return _walk(buf, 0, len(buf), count)
    except _Invalid as exc:
        raise _fail(ErrorCode.invalid_record, f"found invalid record structure: {exc}") from None
    except IndexError:
        raise _fail(
            ErrorCode.invalid_record, "incorrect declared batch size, premature EOF reached"
        ) from None


def _record_area(mv, h: BatchHeader):
    """The batch's records, decompressed; the uncompressed ones are not copied."""
    codec = h.attributes & ATTR_COMPRESSION_MASK
    if not codec:
        return mv[HEADER_SIZE:]
    try:
        return decompress(codec, mv[HEADER_SIZE:], MAX_DECOMPRESSED_BYTES)
    except DecompressedTooLarge as exc:
        raise _fail(ErrorCode.message_too_large, str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - any codec failure is the client's bad data
        raise _fail(ErrorCode.unknown_server_error, f"failed to decompress record stream: {exc}") from None


class _Walked(NamedTuple):
    records: bytes | memoryview  # see _record_area
    low: int  # the smallest and largest timestamp delta
    high: int
    null_keys: list[int]
    deltas: list[int] | None  # every record's timestamp delta, when the reference walk ran

    def all_deltas(self, count: int) -> list[int]:
        if self.deltas is not None:
            return self.deltas
        return _reference_walk(bytes(self.records), count)[0]


def _walk_records(mv, h: BatchHeader) -> _Walked:
    """Every record walked: in C when the extension is installed and accepts the batch (every
    well-formed one), by the reference walk otherwise. Raises KafkaStorageError."""
    records = _record_area(mv, h)
    if _compiled_walk is not None:
        fast = _compiled_walk(records, h.records_count)
        if fast is not None:
            return _Walked(records, *fast, None)
    deltas, null_keys = _reference_walk(bytes(records), h.records_count)
    return _Walked(records, min(deltas), max(deltas), null_keys, deltas)


def validate_records(
    mv,
    h: BatchHeader,
    *,
    now_ms: int,
    log_append_time: bool,
    before_max_ms: int,
    after_max_ms: int,
    compacted: bool,
    topic_partition: tuple[str, int] = ("", -1),
) -> RecordsInfo:
    """Stage 3 on a batch that passed stage 2. Raises KafkaStorageError (with
    ``record_errors`` for per-record problems)."""
    walked = _walk_records(mv, h)
    errors: dict[int, str] = {}  # record index -> its one error (a key error wins)
    timestamp_error = False
    batch_lat = h.attributes & ATTR_LOG_APPEND_TIME
    max_ts = _NO_TIMESTAMP
    if not log_append_time and not (batch_lat and h.max_timestamp == _NO_TIMESTAMP):
        base = h.base_timestamp
        if batch_lat:  # every record's timestamp is the batch's maxTimestamp
            first_ts = max_ts = h.max_timestamp
        else:
            first_ts, max_ts = base + walked.low, base + walked.high
        lo = now_ms - before_max_ms
        hi = now_ms + after_max_ms
        if first_ts < lo or max_ts > hi:  # rare: find the records at fault
            stamps = (
                [max_ts] * h.records_count
                if batch_lat
                else [base + d for d in walked.all_deltas(h.records_count)]
            )
            for i, ts in enumerate(stamps):
                if ts != _NO_TIMESTAMP and (ts < lo or ts > hi):
                    timestamp_error = True
                    errors[i] = (
                        f"Timestamp {ts} of message with offset {i} is out of range. "
                        f"The timestamp should be within [{lo}, {hi}]"
                    )
    elif batch_lat:
        timestamp_error = True
        errors = dict.fromkeys(
            range(h.records_count),
            "Invalid timestamp type in message. Producer should not set timestamp type to LogAppendTime.",
        )
    if compacted and walked.null_keys:
        for i in walked.null_keys:
            errors[i] = (
                "Compacted topic cannot accept message without key in topic partition "
                f"{topic_partition[0]}-{topic_partition[1]}"
            )
        timestamp_error = any(not m.startswith("Compacted") for m in errors.values())
    if errors:
        _raise_record_errors(sorted(errors.items()), timestamp_error)
    return RecordsInfo(max_ts)


def _raise_record_errors(errors: list[tuple[int, str]], timestamp_error: bool) -> None:
    if timestamp_error:
        raise KafkaStorageError(
            ErrorCode.invalid_timestamp,
            "One or more records have been rejected due to invalid timestamp",
            errors,
        )
    raise KafkaStorageError(
        ErrorCode.invalid_record,
        f"One or more records have been rejected due to {len(errors)} record errors in "
        f"total, and only showing the first three errors at most: {_java_list(errors[:3])}",
        errors,
    )


def _java_list(errors: list[tuple[int, str]]) -> str:
    """Record errors as Kafka's message prints them (a Java list of RecordError)."""
    return "[" + ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors) + "]"
