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

The record walk is ``protocol/records/walk.py``'s ``check_records``: the C walk
(``storage/_record_walk.c``, an optional extension imported by ``storage/compiled_walk.py``)
when it is installed, the Python walk for every batch it declines and everything when it is
absent.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from minibroker.protocol.crc import crc32c
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_LOG_APPEND_TIME,
    ATTR_TRANSACTIONAL,
    BATCH_OVERHEAD_LENGTH,
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    HEADER_STRUCT,
    MAGIC,
    NO_TIMESTAMP,
    BatchHeader,
    Checked,
    CompiledWalk,
    DecompressedTooLarge,
    InvalidRecord,
    RecordsTruncated,
    check_records,
    decompress,
    timestamp_deltas,
)
from minibroker.protocol.varint import BytesLike
from minibroker.storage.compiled_walk import compiled_walk
from minibroker.storage.errors import KafkaStorageError

_compiled_walk: CompiledWalk | None = compiled_walk  # tests set it to None: the Python walk alone

__all__ = ["first_produced_batch", "validate_batch_header", "validate_records", "RecordsInfo"]

_I32 = struct.Struct(">i")
_make_header = BatchHeader._make
_unpack_header = HEADER_STRUCT.unpack_from

_LOG_OVERHEAD = 12  # baseOffset + batchLength
_MIN_SIZE_FIELD = 14  # Kafka's LegacyRecord.RECORD_OVERHEAD_V0: the smallest size field
_HEADER_UP_TO_MAGIC = 17
_MAGIC_OFFSET = 16
_MAX_CODEC = 4
# Kafka streams a compressed batch through its decompressor; this broker decompresses it whole,
# so a small payload that expands without bound (a "zip bomb") is refused past this size.
MAX_DECOMPRESSED_BYTES = 64 << 20


def _fail(code: ErrorCode, message: str) -> KafkaStorageError:
    return KafkaStorageError(code, message)


# ----------------------------------------------------------------------------- stage 1
def _next_batch_size(mv: memoryview, pos: int, *, first: bool = True) -> int | None:
    """Kafka's ByteBufferLogInputStream.nextBatchSize + nextBatch: the size of the complete
    batch at ``pos``, None if what remains is not a complete batch; raises for a corrupt one."""
    remaining = len(mv) - pos
    if remaining < _LOG_OVERHEAD:
        return None
    size_field: int = _I32.unpack_from(mv, pos + 8)[0]
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


def first_produced_batch(records: BytesLike | None, api_version: int) -> memoryview:
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


def is_transactional(records: BytesLike | None) -> bool:
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
def validate_batch_header(mv: BytesLike, max_message_bytes: int, *, client: bool) -> BatchHeader:
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


def _shorter_than_a_header(mv: BytesLike, *, client: bool) -> KafkaStorageError:
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


def _unpack_base_offset(mv: BytesLike) -> int:
    base_offset: int = struct.unpack_from(">q", mv, 0)[0]
    return base_offset


# ----------------------------------------------------------------------------- stage 3
class RecordsInfo(NamedTuple):
    max_timestamp: int  # what Kafka stamps as the batch's maxTimestamp (CreateTime topics)


def _walked(mv: BytesLike, h: BatchHeader) -> tuple[BytesLike, Checked]:
    """The batch's records (decompressed; the uncompressed ones are not copied), walked.
    Raises KafkaStorageError."""
    codec = h.attributes & ATTR_COMPRESSION_MASK
    records: BytesLike = mv[HEADER_SIZE:]
    if codec:
        try:
            records = decompress(codec, records, MAX_DECOMPRESSED_BYTES)
        except DecompressedTooLarge as exc:
            raise _fail(ErrorCode.message_too_large, str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - any codec failure is the client's bad data
            raise _fail(
                ErrorCode.unknown_server_error, f"failed to decompress record stream: {exc}"
            ) from None
    try:
        return records, check_records(records, h.records_count, _compiled_walk)
    except RecordsTruncated as exc:
        raise _fail(ErrorCode.invalid_record, str(exc)) from None
    except InvalidRecord as exc:
        raise _fail(ErrorCode.invalid_record, f"found invalid record structure: {exc}") from None


def validate_records(
    mv: BytesLike,
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
    records, walked = _walked(mv, h)
    errors: dict[int, str] = {}  # record index -> its one error (a key error wins)
    timestamp_error = False
    batch_lat = h.attributes & ATTR_LOG_APPEND_TIME
    max_ts = NO_TIMESTAMP
    if not log_append_time and not (batch_lat and h.max_timestamp == NO_TIMESTAMP):
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
                else [base + d for d in walked.deltas or timestamp_deltas(records, h.records_count)]
            )
            for i, ts in enumerate(stamps):
                if ts != NO_TIMESTAMP and (ts < lo or ts > hi):
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
