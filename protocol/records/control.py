"""Control batches: Kafka's end-transaction markers (``EndTransactionMarker``)."""

from __future__ import annotations

import struct
from typing import NamedTuple

from minibroker.protocol.records.batch import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    MAGIC,
    NO_SEQUENCE,
    BatchHeader,
    CorruptBatchError,
    seal,
)
from minibroker.protocol.records.build import encode_record
from minibroker.protocol.records.walk import iter_records
from minibroker.protocol.varint import BytesLike

__all__ = ["CONTROL_ABORT", "CONTROL_COMMIT", "ControlRecord", "build_control_batch", "parse_control_record"]

CONTROL_ABORT = 0
CONTROL_COMMIT = 1


class ControlRecord(NamedTuple):
    version: int
    type: int  # CONTROL_ABORT or CONTROL_COMMIT
    coordinator_epoch: int  # -1 if the record carries no value


def build_control_batch(
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp_ms: int,
) -> bytes:
    """Kafka's MemoryRecords.withEndTransactionMarker: attributes 0x30 (transactional|control,
    CreateTime), baseSequence -1, one record whose key is ``int16 version 0, int16 type``
    (ABORT=0, COMMIT=1) and whose value is ``int16 version 0, int32 coordinatorEpoch``."""
    key = struct.pack(">hh", 0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = struct.pack(">hi", 0, coordinator_epoch)
    header = BatchHeader(
        0,
        0,  # batchLength: seal computes it
        -1,
        MAGIC,
        0,
        ATTR_TRANSACTIONAL | ATTR_CONTROL,
        0,
        timestamp_ms,
        timestamp_ms,
        producer_id,
        producer_epoch,
        NO_SEQUENCE,
        1,
    )
    return seal(header, encode_record(0, 0, key, value, None))


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
