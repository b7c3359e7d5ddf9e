"""protocol/records/: header parsing, CRC, patching, building and decoding batches."""

import struct

import pytest
from crc32c import crc32c
from minibroker.protocol.records import (
    ATTR_CONTROL,
    ATTR_LOG_APPEND_TIME,
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    build_batch,
    build_control_batch,
    crc_ok,
    iter_batches,
    iter_records,
    parse_control_record,
    parse_header,
    stamp_header,
)

pytestmark = pytest.mark.timeout(10)


def _header(**kw) -> BatchHeader:
    base = dict(
        base_offset=0,
        batch_length=49,
        partition_leader_epoch=-1,
        magic=2,
        crc=0,
        attributes=0,
        last_offset_delta=0,
        base_timestamp=0,
        max_timestamp=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records_count=1,
    )
    base.update(kw)
    return BatchHeader(**base)


def test_header_layout_matches_kafka_field_offsets():
    b = build_batch(
        [(b"k", b"v", [])],
        producer_id=7,
        producer_epoch=3,
        base_sequence=11,
        transactional=True,
        timestamp_ms=1234,
        base_offset=100,
        partition_leader_epoch=5,
    )
    assert struct.unpack_from(">q", b, 0)[0] == 100
    assert struct.unpack_from(">i", b, 8)[0] == len(b) - 12
    assert struct.unpack_from(">i", b, 12)[0] == 5
    assert b[16] == 2
    assert struct.unpack_from(">I", b, 17)[0] == crc32c(b[21:])
    assert struct.unpack_from(">h", b, 21)[0] == ATTR_TRANSACTIONAL
    assert struct.unpack_from(">i", b, 23)[0] == 0
    assert struct.unpack_from(">qq", b, 27) == (1234, 1234)
    assert struct.unpack_from(">qhii", b, 43) == (7, 3, 11, 1)
    h = parse_header(b)
    assert (
        h.base_offset,
        h.partition_leader_epoch,
        h.magic,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
        h.records_count,
    ) == (100, 5, 2, 7, 3, 11, 1)
    assert h.size == len(b) and h.is_transactional and not h.is_control
    assert h.producer_id >= 0 and h.last_offset == 100 and h.next_offset == 101


def test_header_properties():
    h = _header(attributes=0x3B, base_offset=10, last_offset_delta=4)
    assert h.compression == 3 and h.timestamp_type == 1
    assert h.is_transactional and h.is_control
    assert h.last_offset == 14 and h.size == 61
    assert _header().producer_id < 0


@pytest.mark.parametrize(
    "base,delta,expected",
    [
        (0, 4, 4),
        (2**31 - 1, 0, 2**31 - 1),
        (2**31 - 1, 1, 0),  # wraps to 0 after int32 max
        (2**31 - 3, 5, 2),
        (-1, 5, -1),  # no sequence
    ],
)
def test_last_sequence_wraps(base, delta, expected):
    assert _header(base_sequence=base, last_offset_delta=delta).last_sequence == expected


def test_parse_header_too_short():
    with pytest.raises(CorruptBatchError):
        parse_header(b"\x00" * 60)
    b = build_batch([(None, b"x")])
    assert parse_header(b"junk" + b, 4).records_count == 1


def test_crc_detects_a_flipped_byte_and_ignores_offset_and_epoch():
    b = bytearray(build_batch([(b"key", b"value", [("h", b"1")])]))
    assert crc_ok(b)
    stamp_header(b, 987654321, 42)
    assert crc_ok(b)  # both fields are outside the CRC
    h = parse_header(b)
    assert h.base_offset == 987654321 and h.partition_leader_epoch == 42
    for pos in (21, 40, len(b) - 1):
        bad = bytearray(b)
        bad[pos] ^= 0x01
        assert not crc_ok(bad)
    assert not crc_ok(b[: HEADER_SIZE - 1])


def test_stamping_max_timestamp_and_type_recomputes_crc():
    b = bytearray(build_batch([(b"k", b"v")], timestamp_ms=1000))
    stamp_header(b, 7, 0, max_timestamp=5555, log_append_time=True)
    h = parse_header(b)
    assert h.max_timestamp == 5555 and h.attributes & ATTR_LOG_APPEND_TIME and h.base_offset == 7
    assert crc_ok(b)
    assert [r.timestamp for r in iter_records(b)] == [5555]  # readers use maxTimestamp
    stamp_header(b, 7, 0, max_timestamp=1000)
    assert parse_header(b).timestamp_type == 0 and crc_ok(b)


def test_stamping_a_header_copy_gives_the_bytes_of_stamping_the_whole_batch():
    b = bytearray(build_batch([(b"k", b"v"), (None, b"w")], timestamp_ms=1000))
    head = bytearray(b[:HEADER_SIZE])
    stamp_header(head, 42, 3, max_timestamp=9999, log_append_time=True, records=memoryview(b)[HEADER_SIZE:])
    stamp_header(b, 42, 3, max_timestamp=9999, log_append_time=True)
    assert bytes(head) + bytes(b[HEADER_SIZE:]) == bytes(b) and crc_ok(b)


def test_iter_batches_stops_at_incomplete_tail():
    b1 = build_batch([(b"a", b"1")], base_offset=0)
    b2 = build_batch([(b"b", b"2"), (b"c", b"3")], base_offset=1)
    data = b1 + b2
    assert [(p, h.base_offset) for p, h in iter_batches(data)] == [(0, 0), (len(b1), 1)]
    assert [p for p, _ in iter_batches(data + b2[:30])] == [0, len(b1)]  # partial header
    assert [p for p, _ in iter_batches(data + b2[:-1])] == [0, len(b1)]  # partial batch
    assert list(iter_batches(b"")) == []
    bogus = bytearray(b1)
    struct.pack_into(">i", bogus, 8, 3)  # batchLength smaller than a header
    assert list(iter_batches(bytes(bogus))) == []


def test_control_batch_byte_for_byte():
    b = build_control_batch(
        producer_id=5, producer_epoch=1, commit=False, coordinator_epoch=3, timestamp_ms=2000
    )
    record = bytes(
        [
            0x20,  # length 16, zig-zag
            0x00,  # attributes
            0x00,  # timestampDelta 0
            0x00,  # offsetDelta 0
            0x08,
            0x00,
            0x00,
            0x00,
            0x00,  # key length 4; version 0, type 0 (ABORT)
            0x0C,
            0x00,
            0x00,
            0x00,
            0x00,
            0x00,
            0x03,  # value length 6; version 0, epoch 3
            0x00,  # no headers
        ]
    )
    header_after_crc = struct.pack(">hiqqqhii", ATTR_TRANSACTIONAL | ATTR_CONTROL, 0, 2000, 2000, 5, 1, -1, 1)
    body = header_after_crc + record
    expected = struct.pack(">qiib", 0, 49 + len(record), -1, 2) + struct.pack(">I", crc32c(body)) + body
    assert b == expected
    assert len(b) == 78
    assert parse_control_record(b) == (0, 0, 3)
    commit = build_control_batch(5, 1, True, 3, 2000)
    assert parse_control_record(commit).type == 1
    assert commit[61 + 5 : 61 + 9] == b"\x00\x00\x00\x01"


def test_build_and_iter_records_round_trip():
    records = [
        (b"k1", b"v1", [("h1", b"x"), ("h2", None)], 1000),
        (None, b"v2", [], 990),  # timestamps may go backwards within a batch
        (b"", None),
        (b"k4", b"v" * 300, None, 1200),
    ]
    b = build_batch(
        records, timestamp_ms=1100, producer_id=9, producer_epoch=2, base_sequence=40, base_offset=500
    )
    h = parse_header(b)
    assert h.records_count == 4 and h.last_offset_delta == 3
    assert h.base_timestamp == 1000 and h.max_timestamp == 1200
    got = list(iter_records(b))
    assert [r.offset for r in got] == [500, 501, 502, 503]
    assert [r.timestamp for r in got] == [1000, 990, 1100, 1200]
    assert [r.key for r in got] == [b"k1", None, b"", b"k4"]
    assert [r.value for r in got] == [b"v1", b"v2", None, b"v" * 300]
    assert got[0].headers == [("h1", b"x"), ("h2", None)]
    assert got[1].headers == []
    with pytest.raises(ValueError):
        build_batch([])


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compressed_round_trip(codec):
    records = [(b"key%d" % i, b"value" * 20, [("h", b"%d" % i)]) for i in range(20)]
    b = build_batch(records, compression=codec, timestamp_ms=7)
    h = parse_header(b)
    assert h.compression == codec and crc_ok(b)
    assert len(b) < 20 * 100  # actually compressed
    got = list(iter_records(b))
    assert [(r.key, r.value, r.headers) for r in got] == records


def test_raw_snappy_as_written_by_librdkafka():
    import cramjam

    plain = build_batch([(b"k", b"v" * 100, [])] * 3)
    section = bytes(cramjam.snappy.compress_raw(plain[HEADER_SIZE:]))
    buf = bytearray(plain[:HEADER_SIZE] + section)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">h", buf, 21, 2)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    assert [r.value for r in iter_records(buf)] == [b"v" * 100] * 3


def test_corrupt_records_raise():
    b = bytearray(build_batch([(b"k", b"v")]))
    struct.pack_into(">i", b, 57, 3)  # claims 3 records, has 1
    with pytest.raises(CorruptBatchError):
        list(iter_records(b))
    bad = bytearray(build_batch([(b"k", b"v")], compression=1))
    bad[75:] = b"\xff" * (len(bad) - 75)  # garbage in the deflate stream
    with pytest.raises(CorruptBatchError):
        list(iter_records(bad))


def test_interoperates_with_kafka_python():
    """An independent implementation (kafka-python) reads what we build and vice versa."""
    kp = pytest.importorskip("kafka.record.default_records")
    from kafka.record.memory_records import MemoryRecords

    ours = build_batch(
        [(b"k", b"v", [("h", b"x")], 5), (None, b"z", [], 7)],
        producer_id=7,
        producer_epoch=0,
        base_sequence=3,
        compression=2,
    )
    theirs = MemoryRecords(ours).next_batch()
    assert theirs.validate_crc() and theirs.producer_id == 7 and theirs.base_sequence == 3
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in theirs] == [
        (0, 5, b"k", b"v", [("h", b"x")]),
        (1, 7, None, b"z", []),
    ]
    marker = MemoryRecords(build_control_batch(5, 1, True, 3, 2000)).next_batch()
    assert marker.is_control_batch and marker.is_transactional and marker.validate_crc()

    builder = kp.DefaultRecordBatchBuilder(
        magic=2,
        compression_type=3,
        is_transactional=1,
        producer_id=4,
        producer_epoch=1,
        base_sequence=0,
        batch_size=1 << 20,
    )
    for i in range(3):
        builder.append(i, timestamp=1000 + i, key=b"k%d" % i, value=b"v" * 50, headers=[("a", b"b")])
    data = bytes(builder.build())
    h = parse_header(data)
    assert crc_ok(data) and h.is_transactional and h.compression == 3
    assert [(r.offset, r.timestamp, r.key) for r in iter_records(data)] == [
        (0, 1000, b"k0"),
        (1, 1001, b"k1"),
        (2, 1002, b"k2"),
    ]


@pytest.mark.parametrize("compression", [0, 1, 3])
def test_record_keys_matches_iter_records(compression):
    from minibroker.protocol.records import record_keys

    records = [
        (
            b"k" * (i % 200),
            None if i % 3 == 0 else b"v" * (i * 7 % 300),
            [("h", b"x" * i)] if i % 2 else [],
            1000 + i * 99999,
        )
        for i in range(150)
    ]
    records[5] = (None, b"no key", [], 5)
    data = build_batch(records, base_offset=40, compression=compression)
    assert record_keys(data) == [(r.offset, r.key, r.value is not None) for r in iter_records(data)]


@pytest.mark.parametrize("compression", [0, 1, 3])
def test_rewrite_batch_keeps_chosen_records_offsets_and_header(compression):
    from minibroker.protocol.records import rewrite_batch

    records = [
        (
            b"k%d" % i,
            None if i % 5 == 0 else b"v" * (i * 7 % 300),
            [("h", b"x")] if i % 2 else [],
            1000 + i * 99999,
        )
        for i in range(150)
    ]
    data = build_batch(
        records, base_offset=40, compression=compression, producer_id=7, producer_epoch=3, base_sequence=11
    )
    keep = [i % 4 != 1 and i != 149 for i in range(150)]
    out = rewrite_batch(data, keep)
    h, o = parse_header(data), parse_header(out)
    assert crc_ok(out) and o.records_count == sum(keep)
    assert (
        o.base_offset,
        o.last_offset_delta,
        o.base_timestamp,
        o.max_timestamp,
        o.producer_id,
        o.producer_epoch,
        o.base_sequence,
        o.attributes,
    ) == (
        h.base_offset,
        h.last_offset_delta,
        h.base_timestamp,
        h.max_timestamp,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
        h.attributes,
    )
    assert list(iter_records(out)) == [r for r, k in zip(iter_records(data), keep, strict=False) if k]
    with pytest.raises(ValueError):
        rewrite_batch(data, [False] * 150)


def test_control_record_read_in_place_and_other_layouts_decoded_in_full():
    """The usual 78-byte marker is read at fixed positions; a marker laid out otherwise (here
    with a record header) gives the same answer through the full decode."""
    key, value = struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 9)
    usual = build_control_batch(5, 1, False, 9, 2000)
    with_header = build_batch([(key, value, [("h", b"x")])], timestamp_ms=2000)
    assert parse_control_record(usual) == (0, 0, 9)
    assert parse_control_record(memoryview(usual)) == (0, 0, 9)
    assert parse_control_record(with_header) == (0, 0, 9)
    assert len(with_header) != len(usual)
    commit_key = struct.pack(">hh", 0, 1)
    assert parse_control_record(build_batch([(commit_key, None)], timestamp_ms=1)) == (0, 1, -1)
