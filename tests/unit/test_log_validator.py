"""storage/log_validator.py: the answers Kafka 4's ProduceRequest.validateRecords,
UnifiedLog.analyzeAndValidateRecords and LogValidator give to crafted batches."""

from __future__ import annotations

import struct
import time

import pytest
from crc32c import crc32c
from minibroker.common.clock import ManualClock
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    build_batch,
    iter_records,
)
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log_validator import first_produced_batch, validate_batch_header, validate_records

from tests.support.crafted import NOW, raw_batch, record, varint

HOUR = 3_600_000
LONG_MAX = 2**63 - 1


def run(
    batch: bytes,
    *,
    version: int = 9,
    log_append_time: bool = False,
    before: int = LONG_MAX,
    after: int = HOUR,
    compacted: bool = False,
):
    mv = first_produced_batch(batch, version)
    h = validate_batch_header(mv, 1 << 20, client=True)
    return validate_records(
        mv,
        h,
        now_ms=NOW,
        log_append_time=log_append_time,
        before_max_ms=before,
        after_max_ms=after,
        compacted=compacted,
    )


def error_of(batch: bytes, **kw) -> KafkaStorageError:
    with pytest.raises(KafkaStorageError) as e:
        run(batch, **kw)
    return e.value


def three() -> list[bytes]:
    return [record(i, ts_delta=i) for i in range(3)]


@pytest.mark.parametrize(
    "codec", [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD]
)
def test_valid_batches_pass_every_codec(codec):
    batch = build_batch(
        [(b"k%d" % i, b"v" * 100, [("h", b"x")]) for i in range(20)], timestamp_ms=NOW, compression=codec
    )
    assert run(batch).max_timestamp == NOW
    assert len(list(iter_records(batch))) == 20


def test_overlong_but_five_byte_varints_are_accepted():
    rec = record(0, key=b"abc", key_len=varint(3, width=5))
    run(raw_batch([rec]))


@pytest.mark.parametrize(
    "name,batch",
    [
        ("more records than the count", lambda: raw_batch(three(), count=2)),
        ("fewer records than the count", lambda: raw_batch(three()[:2], count=3)),
        ("garbage after the records", lambda: raw_batch(three() + [b"\x00\x00\x00"], count=3)),
        ("offset delta gap", lambda: raw_batch([record(0), record(2)])),
        ("offset deltas reversed", lambda: raw_batch([record(1), record(0)])),
        ("int32 varint of 6 bytes", lambda: raw_batch([record(0, key_len=varint(1, width=6))])),
        ("varlong of 11 bytes", lambda: raw_batch([record(0, ts_raw=b"\x80" * 10 + b"\x00")])),
        ("negative header count", lambda: raw_batch([record(0, headers=varint(-2))])),
        ("huge header count", lambda: raw_batch([record(0, headers=varint(2**30))])),
        (
            "negative header key length",
            lambda: raw_batch([record(0, headers=varint(1) + varint(-1) + varint(-1))]),
        ),
        (
            "header key not utf-8",
            lambda: raw_batch([record(0, headers=varint(1) + varint(2) + b"\xff\xfe" + varint(-1))]),
        ),
        ("record attributes with the high bit", lambda: raw_batch([record(0, attributes=0x80)])),
        (
            "key length -61 (librdkafka stalls on it)",
            lambda: raw_batch([record(0, key=None, key_len=varint(-61))]),
        ),
        (
            "header value length -2",
            lambda: raw_batch([record(0, headers=varint(1) + varint(1) + b"h" + varint(-2))]),
        ),
        ("record length past the batch", lambda: raw_batch([varint(500) + b"\x00" * 10])),
        ("negative record length", lambda: raw_batch([varint(-5) + b"\x00" * 10])),
        ("truncated record", lambda: raw_batch([record(0)[:-2]])),
        ("key runs past its record", lambda: raw_batch([record(0, key=b"k", key_len=varint(40))])),
        (
            "one record claiming lastOffsetDelta 2**31-2",
            lambda: raw_batch([record(0)], count=1, last_offset_delta=2**31 - 2),
        ),
        ("zero records", lambda: raw_batch(b"", count=0, last_offset_delta=-1)),
    ],
)
def test_broken_records_are_invalid_record(name, batch):
    assert error_of(batch()).error_code == ErrorCode.invalid_record, name


@pytest.mark.parametrize("codec", [COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD])
def test_compressed_records_are_walked(codec):
    e = error_of(raw_batch([record(0), record(5)], codec=codec))
    assert e.error_code == ErrorCode.invalid_record
    e = error_of(raw_batch([record(0)], count=2, codec=codec))
    assert e.error_code == ErrorCode.invalid_record


@pytest.mark.parametrize("codec", [COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD])
def test_payload_that_does_not_decompress(codec):
    """Kafka: KafkaException("Failed to decompress record stream") -> UNKNOWN_SERVER_ERROR."""
    good = raw_batch(three(), codec=codec)
    broken = bytearray(good[:61] + b"\x13\x37" * 20)
    struct.pack_into(">i", broken, 8, len(broken) - 12)
    struct.pack_into(">I", broken, 17, crc32c(bytes(broken[21:])))
    assert error_of(bytes(broken)).error_code == ErrorCode.unknown_server_error


def test_zstd_needs_produce_v7():
    batch = raw_batch(three(), codec=COMPRESSION_ZSTD)
    assert error_of(batch, version=6).error_code == ErrorCode.unsupported_compression_type
    run(batch, version=7)


def test_timestamps_after_max_get_record_errors():
    recs = [record(0), record(1, ts_delta=HOUR + 1), record(2, ts_delta=HOUR), record(3, ts_delta=2 * HOUR)]
    e = error_of(raw_batch(recs))
    assert e.error_code == ErrorCode.invalid_timestamp
    assert [i for i, _ in e.record_errors] == [1, 3]
    assert "out of range" in e.record_errors[0][1]


def test_timestamps_before_max_and_no_timestamp():
    old = raw_batch([record(0), record(1, ts_delta=-10_000)])
    run(old)  # default before.max.ms is Long.MAX
    e = error_of(old, before=5_000)
    assert e.error_code == ErrorCode.invalid_timestamp and [i for i, _ in e.record_errors] == [1]
    run(raw_batch([record(0)], base_timestamp=-1, max_timestamp=-1), before=5_000)


def test_log_append_time_set_by_the_producer():
    batch = raw_batch(three(), attributes=0x08)
    e = error_of(batch, log_append_time=True)
    assert e.error_code == ErrorCode.invalid_timestamp and len(e.record_errors) == 3
    run(batch)  # CreateTime topic: the batch's maxTimestamp is each record's timestamp


def test_max_timestamp_is_recomputed_from_the_records():
    batch = raw_batch([record(0, ts_delta=7), record(1, ts_delta=3)], max_timestamp=NOW + 999)
    assert run(batch).max_timestamp == NOW + 7


def test_compacted_topic_needs_keys():
    batch = raw_batch([record(0), record(1, key=None), record(2, key=None)])
    run(batch)
    e = error_of(batch, compacted=True)
    assert e.error_code == ErrorCode.invalid_record
    assert [i for i, _ in e.record_errors] == [1, 2]
    e = error_of(raw_batch([record(0, key=None), record(1, ts_delta=2 * HOUR)]), compacted=True)
    assert e.error_code == ErrorCode.invalid_timestamp  # any timestamp error wins


@pytest.mark.parametrize(
    "mutate,code",
    [
        (lambda b: struct.pack_into(">q", b, 0, 5), ErrorCode.invalid_record),  # base offset
        (lambda b: struct.pack_into(">b", b, 16, 1), ErrorCode.invalid_record),  # magic 1
        (lambda b: struct.pack_into(">b", b, 16, 3), ErrorCode.corrupt_message),  # magic 3
        (lambda b: struct.pack_into(">b", b, 16, -1), ErrorCode.corrupt_message),  # magic -1
        (lambda b: struct.pack_into(">i", b, 8, 13), ErrorCode.corrupt_message),  # size < 14
        (lambda b: struct.pack_into(">I", b, 17, 1), ErrorCode.corrupt_message),  # CRC
    ],
)
def test_header_answers(mutate, code):
    b = bytearray(raw_batch(three()))
    mutate(b)
    assert error_of(bytes(b)).error_code == code


def test_truncated_batch_is_invalid_record():
    assert error_of(raw_batch(three())[:-1]).error_code == ErrorCode.invalid_record
    assert error_of(b"").error_code == ErrorCode.invalid_record


def test_unknown_codec_is_unknown_server_error():
    b = bytearray(raw_batch(three()))
    struct.pack_into(">h", b, 21, 6)
    struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    assert error_of(bytes(b)).error_code == ErrorCode.unknown_server_error


def test_now_is_real_time_in_the_broker():
    """Sanity: a batch built now passes with the default after.max.ms."""
    batch = build_batch([(b"k", b"v")])
    mv = first_produced_batch(batch, 9)
    h = validate_batch_header(mv, 1 << 20, client=True)
    validate_records(
        mv,
        h,
        now_ms=int(time.time() * 1000),
        log_append_time=False,
        before_max_ms=LONG_MAX,
        after_max_ms=HOUR,
        compacted=False,
    )


def test_log_stores_the_recomputed_max_timestamp(tmp_path):
    """A CreateTime header that lies about maxTimestamp (or claims LogAppendTime) is restamped
    with the records' real maximum and a new CRC, as Kafka's setMaxTimestamp does."""
    from minibroker.protocol.records import crc_ok, parse_header
    from minibroker.storage.config import LogConfig
    from minibroker.storage.log import PartitionLog

    plog = PartitionLog.open(str(tmp_path / "p"), "t", 0, LogConfig(), clock=ManualClock(wall_ms=NOW))
    recs = [record(0, ts_delta=7), record(1, ts_delta=3)]
    plog.append(raw_batch(recs, max_timestamp=NOW + 999))
    # LogAppendTime from a producer: every record's timestamp is maxTimestamp; type CreateTime
    plog.append(raw_batch(recs, max_timestamp=NOW + 999, attributes=0x08))
    stored = (tmp_path / "p" / "00000000000000000000.log").read_bytes()
    first = parse_header(stored)
    second = parse_header(stored, first.size)
    assert (first.max_timestamp, first.timestamp_type) == (NOW + 7, 0)
    assert (second.max_timestamp, second.timestamp_type) == (NOW + 999, 0)
    assert crc_ok(stored, 0, first.size) and crc_ok(stored, first.size, second.size)
    plog.close()


@pytest.mark.parametrize("codec", [COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD])
def test_decompression_bomb_is_refused_without_allocating_it(codec, monkeypatch):
    """A small payload that expands past the limit: MESSAGE_TOO_LARGE, never a huge buffer."""
    import minibroker.storage.log_validator as lv

    monkeypatch.setattr(lv, "MAX_DECOMPRESSED_BYTES", 1 << 20)
    bomb = raw_batch([record(0, value=b"\x00" * (3 << 20))], codec=codec)
    assert len(bomb) < 1 << 20
    assert error_of(bomb).error_code == ErrorCode.message_too_large
    fits = raw_batch([record(0, value=b"\x00" * (900 << 10))], codec=codec)
    run(fits)  # below the limit, even at a ratio far above the first guess
