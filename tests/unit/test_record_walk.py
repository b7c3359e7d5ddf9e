"""storage/_record_walk.c: the compiled walk gives the reference walk's verdict (storage/
log_validator.py ``_walk``) on every batch, with the same timestamps and null keys; when it
declines (None), the reference refuses."""

from __future__ import annotations

import random
import struct
import subprocess
import sys

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from minibroker.protocol.record_batch import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    build_batch,
)
from minibroker.storage import log_validator

try:  # without it only this module's fallback tests can pass; the others say why they fail
    from minibroker.storage._record_walk import walk
except ImportError:
    walk = None

from tests.support.crafted import NOW, raw_batch, record, varint
from tests.unit.test_log_validator import run


def _count(batch: bytes) -> int:
    return struct.unpack_from(">i", batch, 57)[0]


def compiled(batch: bytes, count: int | None = None):
    assert walk is not None, "storage/_record_walk.c is not built (make test builds it)"
    return walk(memoryview(batch)[HEADER_SIZE:], _count(batch) if count is None else count)


def reference(batch: bytes, count: int | None = None):
    """(smallest delta, largest delta, null keys) by the reference walk, or None if it refuses."""
    body = batch[HEADER_SIZE:]
    try:
        deltas, null_keys = log_validator._walk(body, 0, len(body), _count(batch) if count is None else count)
    except (log_validator._Invalid, IndexError):
        return None
    return min(deltas), max(deltas), null_keys


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
    got = compiled(batch)
    assert got == reference(batch)
    assert got[:2] == (0, 6)  # deltas from the first record's timestamp, NOW - 3
    assert got[2] == [i for i in range(300) if i % 3 == 0]


@pytest.mark.parametrize(
    "codec", [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD]
)
def test_compressed_batches_take_the_compiled_walk(codec, monkeypatch):
    monkeypatch.setattr(log_validator, "_reference_walk", lambda *a: pytest.fail("reference walk used"))
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
    assert reference(batch) is None, name
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
    got = compiled(batch)
    assert got is not None, name
    assert got == reference(batch), name


@pytest.mark.parametrize("count", [0, -1, 2**31 - 1])
def test_a_count_no_batch_can_hold_is_declined(count):
    batch = raw_batch([record(0)])
    assert compiled(batch, count) is None


def test_every_byte_set_to_every_value_gives_the_reference_verdict():
    """Each byte of a small batch with keys, nulls and headers set to each of its 256 values."""
    batch = build_batch(
        [(None, b"v" * (i * 37 % 200), [("h", None), ("k", b"x")][: i % 3], NOW + i) for i in range(4)]
        + [(b"k", None, [], NOW)],
        timestamp_ms=NOW,
    )
    walked = 0
    for pos in range(HEADER_SIZE, len(batch)):
        for byte in range(256):
            buf = bytearray(batch)
            buf[pos] = byte
            got = compiled(bytes(buf))
            assert got == reference(bytes(buf)), (pos, byte)
            walked += got is not None
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
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32))
def test_mutated_batches_get_the_reference_verdict(seed):
    batch = _mutated(seed)
    assert compiled(batch) == reference(batch)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(-2, 40))
def test_any_bytes_get_the_reference_verdict(body, count):
    batch = bytes(HEADER_SIZE) + body
    if count <= 0:
        assert compiled(batch, count) is None
    else:
        assert compiled(batch, count) == reference(batch, count)


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
