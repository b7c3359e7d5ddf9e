"""One differential test over every walker of Kafka's record format (protocol/records/):

- the C walk (storage/_record_walk.c ``walk``) and the Python walk (``check_records`` without
  it), the Produce validator's two: same verdict, same timestamp deltas and null-key indexes;
- the C walk's ``keys`` (the cleaner's offset map) and the Python ``record_keys``;
- the validator end to end (``validate_records``) with and without the C walk: the same answer
  or the same error code and message;
- the readers: ``iter_records`` (internal topics, timestamp lookups), ``record_keys`` (the
  cleaner's offset map), ``rewrite_batch`` (what the cleaner writes) and ``minibroker dump``'s
  record entries: the same records, or all refuse.

The readers and the validator apply the same rules but two: a reader accepts offset deltas that
are not 0, 1, 2, ... (a compacted batch has gaps) and a batch of no records (a count of 0 or
less, which the validator refuses). coordinator/record_reader.py reads what is inside a key or
value of an internal topic (Kafka's generated message formats), not batches: it is tested with
those formats (test_group_records, test_txn_state).

Batches: hand-made ones for every refusal of the validator, hypothesis-generated valid ones,
and mutated ones (bytes flipped, dropped, inserted; any bytes at all)."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from minibroker.broker.dump import _record_entries, _text
from minibroker.protocol.records import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    CorruptBatchError,
    build_batch,
    check_records,
    iter_records,
    parse_header,
    record_keys,
    records_area,
    rewrite_batch,
)
from minibroker.protocol.records import walk as walk_module
from minibroker.storage import log_validator
from minibroker.storage.errors import KafkaStorageError

try:  # without it only this module's fallback tests can pass; the others say why they fail
    from minibroker.storage._record_walk import keys, walk
except ImportError:
    keys = walk = None

from tests.support.crafted import NOW, raw_batch, record, varint
from tests.unit.test_log_validator import run

CODECS = [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD]


def _count(batch: bytes) -> int:
    return struct.unpack_from(">i", batch, 57)[0]


def _area(batch: bytes) -> bytes:
    """The records section, decompressed: what the validator's walks see."""
    _, buf, pos, end = records_area(batch)
    return bytes(buf[pos:end])


def compiled(batch: bytes, count: int | None = None):
    assert walk is not None, "storage/_record_walk.c is not built (make test builds it)"
    return walk(_area(batch), _count(batch) if count is None else count)


def compiled_keys(batch: bytes):
    assert keys is not None, "storage/_record_walk.c is not built (make test builds it)"
    return keys(_area(batch), _count(batch), parse_header(batch).base_offset)


def reference(batch: bytes, count: int | None = None):
    """(smallest delta, largest delta, null keys) by the Python walk, or None if it refuses."""
    try:
        checked = check_records(_area(batch), _count(batch) if count is None else count, None)
    except CorruptBatchError:
        return None
    return checked.low, checked.high, checked.null_keys


@contextmanager
def _python_walk_only() -> Iterator[None]:
    saved = log_validator._compiled_walk
    log_validator._compiled_walk = None
    try:
        yield
    finally:
        log_validator._compiled_walk = saved


def _validated(batch: bytes):
    """validate_records' answer, or its error as (code, message, record errors)."""
    try:
        return run(batch, before=2**62, after=2**62, compacted=True)
    except KafkaStorageError as exc:
        return exc.error_code, str(exc), exc.record_errors


def _read(read, batch: bytes):
    try:
        return read(batch)
    except CorruptBatchError:
        return None


def _dump(batch: bytes):
    return _record_entries("topic", batch, parse_header(batch), True)


def agree(batch: bytes) -> bool:
    """Every walker's verdict on ``batch`` (a whole batch with a good CRC) agrees; True if the
    validator accepts it."""
    fast, slow = compiled(batch), reference(batch)
    assert fast == slow
    with _python_walk_only():
        python_answer = _validated(batch)
    assert _validated(batch) == python_answer
    records = _read(lambda b: list(iter_records(b)), batch)
    readers = {
        "record_keys": _read(record_keys, batch),
        "rewrite_batch": _read(lambda b: rewrite_batch(b, None), batch) if records != [] else None,
        "dump": _read(_dump, batch),
    }
    fast_keys = compiled_keys(batch)
    if records is None:
        assert slow is None
        assert readers == dict.fromkeys(readers), "a reader accepts what iter_records refuses"
        assert fast_keys is None
        return False
    h = parse_header(batch)
    assert readers["record_keys"] == [(r.offset, r.key, r.value is not None) for r in records]
    if not (fast_keys is None and _count(batch) <= 0):  # the C walks decline an empty batch
        assert fast_keys == readers["record_keys"]
    if records:  # the cleaner's rewrite keeping every record: the same records
        assert _area(readers["rewrite_batch"]) == _area(batch)
    assert readers["dump"] == [
        {
            "offset": r.offset,
            "timestamp": r.timestamp,
            "key": _text(r.key),
            "value": _text(r.value),
            "headers": [[k, _text(v)] for k, v in r.headers],
        }
        for r in records
    ]
    offsets = [r.offset - h.base_offset for r in records]
    if slow is None:  # the validator's own rules: consecutive offset deltas, at least one record
        assert offsets != list(range(_count(batch))) or _count(batch) <= 0
        return False
    deltas = [r.timestamp - h.base_timestamp for r in records]
    assert slow == (min(deltas), max(deltas), [i for i, r in enumerate(records) if r.key is None])
    return True


def test_the_compiled_walk_is_installed():
    """`make test` installs the package with its C extension (a missing compiler would only
    slow the broker down, silently but for one warning: this test makes CI notice)."""
    assert walk is not None and log_validator._compiled_walk is walk


def test_client_batches_are_walked_with_their_timestamps_and_null_keys():
    recs = [
        (
            None if i % 3 == 0 else b"k%d" % i,
            None if i == 5 else b"v" * (i * 37 % 3000),
            [(f"h{j}", b"x" * j) for j in range(i % 4)],
            NOW + i % 7 - 3,
        )
        for i in range(300)
    ]
    batch = build_batch(recs, timestamp_ms=NOW)
    assert agree(batch)
    got = compiled(batch)
    assert got[:2] == (0, 6)  # deltas from the first record's timestamp, NOW - 3
    assert got[2] == [i for i in range(300) if i % 3 == 0]


@pytest.mark.parametrize(
    "codec", [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD]
)
def test_compressed_batches_take_the_compiled_walk(codec, monkeypatch):
    monkeypatch.setattr(walk_module, "walk_records", lambda *a, **k: pytest.fail("the Python walk was used"))
    batch = build_batch([(b"k%d" % i, b"v" * 100) for i in range(50)], timestamp_ms=NOW, compression=codec)
    assert record_keys(batch, keys) == [(i, b"k%d" % i, True) for i in range(50)]
    batch = build_batch([(b"k%d" % i, b"v" * 100) for i in range(50)], timestamp_ms=NOW, compression=codec)
    assert run(batch).max_timestamp == NOW


@pytest.mark.parametrize(
    "name,batch",
    [
        ("int32 varint of 6 bytes", raw_batch([record(0, key_len=varint(1, width=6))])),
        ("key length -61", raw_batch([record(0, key=None, key_len=varint(-61))])),
        ("key length -2**40", raw_batch([record(0, key=None, key_len=varint(-(2**40)))])),
        ("header value length -2", raw_batch([record(0, headers=varint(1) + varint(1) + b"h" + varint(-2))])),
        ("header count -1", raw_batch([record(0, headers=varint(-1))])),
        ("header count past the record", raw_batch([record(0, headers=varint(9) + varint(0) + varint(-1))])),
        (
            "header count past a record that is not the last",
            raw_batch([record(0, headers=varint(3) + varint(0) + varint(-1)), record(1), record(2)]),
        ),
        ("header key length -1", raw_batch([record(0, headers=varint(1) + varint(-1) + varint(-1))])),
        ("record attributes 0x80", raw_batch([record(0, attributes=0x80)])),
        ("offset delta gap", raw_batch([record(0), record(2)])),
        (
            "header key not utf-8",
            raw_batch([record(0, headers=varint(1) + varint(2) + b"\xff\xfe" + varint(-1))]),
        ),
        (
            "header key a lone surrogate",
            raw_batch([record(0, headers=varint(1) + varint(3) + b"\xed\xa0\x80" + varint(-1))]),
        ),
        ("more records than the count", raw_batch([record(i) for i in range(3)], count=2)),
        ("fewer records than the count", raw_batch([record(i) for i in range(2)], count=3)),
        ("truncated record", raw_batch([record(0)[:-2]])),
        ("record length 0", raw_batch([varint(0)])),
        ("record length -1", raw_batch([varint(-1)])),
        ("record length past the batch", raw_batch([varint(40) + record(0)[1:]])),
        ("varlong of 11 bytes", raw_batch([record(0, ts_raw=b"\x80" * 10 + b"\x00")])),
        ("a byte after the last record", raw_batch([record(0) + b"\x00"])),
    ],
)
def test_what_kafka_refuses_is_declined(name, batch):
    assert not agree(batch), name
    assert compiled(batch) is None, name


@pytest.mark.parametrize(
    "name,batch",
    [
        ("five-byte varint", raw_batch([record(0, key_len=varint(1, width=5))])),
        ("ten-byte varlong", raw_batch([record(0, ts_raw=varint(-7, width=10))])),
        ("null header value", raw_batch([record(0, headers=varint(1) + varint(1) + b"h" + varint(-1))])),
        (
            "utf-8 header key",
            raw_batch([record(0, headers=varint(1) + varint(2) + "é".encode() + varint(0))]),
        ),
        ("record attributes 0x01", raw_batch([record(0, attributes=0x01)])),
        ("LogAppendTime set by the producer", raw_batch([record(0)], attributes=0x08)),
        ("timestamp deltas 5 and -9", raw_batch([record(0, ts_delta=5), record(1, ts_delta=-9)])),
        (
            "largest and smallest deltas",
            raw_batch([record(0, ts_delta=2**63 - 1), record(1, ts_delta=-(2**63))]),
        ),
        (
            "null key and value",
            raw_batch([record(0, key=None, value=b""), record(1), record(2, key=b"", value=b"v" * 70)]),
        ),
        ("varint boundaries", raw_batch([record(i, value=b"v" * (60 + i)) for i in range(80)])),
    ],
)
def test_what_kafka_accepts_is_walked_in_c(name, batch):
    assert agree(batch), name


@pytest.mark.parametrize("count", [0, -1, 2**31 - 1])
def test_a_count_no_batch_can_hold_is_declined(count):
    batch = raw_batch([record(0)])
    assert compiled(batch, count) is None
    assert reference(batch, count) is None


def test_every_byte_set_to_every_value_gives_the_reference_verdict():
    """Each byte of a small batch with keys, nulls and headers set to each of its 256 values:
    the validator's two walks on all of them, every walker on the varint edges."""
    batch = build_batch(
        [(None, b"v" * (i * 37 % 200), [("h", None), ("k", b"x")][: i % 3], NOW + i) for i in range(4)]
        + [(b"k", None, [], NOW)],
        timestamp_ms=NOW,
    )
    walked = 0
    for pos in range(HEADER_SIZE, len(batch)):
        edges = {0, 1, 2, 0x7E, 0x7F, 0x80, 0x81, 0xFE, 0xFF, batch[pos] ^ 1}
        for byte in range(256):
            buf = bytearray(batch)
            buf[pos] = byte
            if byte in edges:  # every walker (slower), on the values where varints change
                walked += agree(_resealed(buf))
            else:
                got = compiled(bytes(buf))
                assert got == reference(bytes(buf)), (pos, byte)
    assert walked


def _mutated(seed: int) -> bytes:
    rnd = random.Random(seed)
    recs = [
        (
            rnd.choice([None, b"", b"k" * rnd.randrange(70)]),
            rnd.choice([None, b"v" * rnd.randrange(200)]),
            [("h", rnd.choice([None, b"x"]))] * rnd.randrange(3),
            NOW + rnd.randrange(-99, 99),
        )
        for _ in range(rnd.randrange(1, 6))
    ]
    buf = bytearray(build_batch(recs, timestamp_ms=NOW))
    for _ in range(rnd.randrange(1, 4)):
        pos = rnd.randrange(HEADER_SIZE, len(buf))
        op = rnd.randrange(3)
        if op == 0:
            buf[pos] = rnd.randrange(256)
        elif op == 1:
            del buf[pos]
        else:
            buf.insert(pos, rnd.randrange(256))
    return _resealed(buf)


def _resealed(buf: bytearray) -> bytes:
    """The batch with its batchLength and CRC made right again."""
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32))
def test_mutated_batches_get_the_reference_verdict(seed):
    batch = _mutated(seed)
    agree(batch)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(-2, 40))
def test_any_bytes_get_the_reference_verdict(body, count):
    batch = raw_batch(body, count=count)
    if count <= 0:
        assert compiled(batch) is None
    agree(batch)


_records = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=80)),
        st.one_of(st.none(), st.binary(max_size=300)),
        st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20))), max_size=3),
        st.integers(NOW - 10**6, NOW + 10**6),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records, st.sampled_from(CODECS), st.integers(0, 2**40))
def test_generated_batches_are_read_alike_by_every_walker(records, codec, base_offset):
    batch = build_batch(records, timestamp_ms=NOW, compression=codec, base_offset=base_offset)
    assert agree(batch)
    assert [(r.key, r.value, r.headers) for r in iter_records(batch)] == [
        (key, value, headers) for key, value, headers, _ in records
    ]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records.filter(lambda records: len(records) > 1), st.sampled_from(CODECS), st.data())
def test_compacted_batches_are_read_by_every_reader_and_refused_by_the_validator(records, codec, data):
    """A batch the cleaner filtered has gaps in its offset deltas: readers take it, a Produce
    may not (the validator's one rule of its own)."""
    dropped = data.draw(st.integers(0, len(records) - 2))  # a record before the last one
    keep = [i != dropped for i in range(len(records))]
    compacted = rewrite_batch(build_batch(records, timestamp_ms=NOW, compression=codec), keep)
    assert not agree(compacted)
    assert [r.offset for r in iter_records(compacted)] == [i for i, k in enumerate(keep) if k]


def test_without_the_extension_the_reference_walk_gives_the_same_answers(monkeypatch):
    batches = [
        build_batch([(None, b"v" * 10, [], NOW + i) for i in range(5)], timestamp_ms=NOW),
        build_batch([(b"k", b"v", [], NOW)], timestamp_ms=NOW, compression=COMPRESSION_GZIP),
    ]
    with_c = [run(b) for b in batches]
    monkeypatch.setattr(log_validator, "_compiled_walk", None)
    assert [run(b) for b in batches] == with_c


def test_a_missing_extension_is_logged_once_at_import():
    code = (
        "import sys; sys.modules['minibroker.storage._record_walk'] = None\n"
        "import minibroker.storage.log_validator as v\n"
        "assert v._compiled_walk is None\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert out.count("the compiled record walk is not installed") == 1, out
