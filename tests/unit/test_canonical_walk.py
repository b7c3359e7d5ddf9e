"""storage/canonical_walk.py: the compiled fast walk vouches only for batches the reference walk
(storage/log_validator.py ``_walk``) accepts, with the same timestamps and null keys."""

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
from minibroker.storage.canonical_walk import PADDING, walk_canonical

from tests.support.crafted import NOW, raw_batch, record, varint
from tests.unit.test_log_validator import run


def fast(batch: bytes):
    return walk_canonical(batch + PADDING, len(batch))


def reference(batch: bytes):
    """(min timestamp, max timestamp, null keys) by the reference walk, or None if it refuses."""
    body = batch[HEADER_SIZE:]
    count = struct.unpack_from(">i", batch, 57)[0]
    base = struct.unpack_from(">q", batch, 27)[0]
    try:
        deltas, null_keys = log_validator._walk(body, 0, len(body), count)
    except (log_validator._Invalid, IndexError):
        return None
    return base + min(deltas), base + max(deltas), null_keys


def test_client_batches_take_the_fast_walk():
    recs = [
        (
            None if i % 3 == 0 else b"k%d" % i,
            None if i == 5 else b"v" * (i * 37 % 3000),
            [(f"h{j}", b"x" * j) for j in range(i % 4)],
            NOW + i % 7,
        )
        for i in range(300)
    ]
    batch = build_batch(recs, timestamp_ms=NOW)
    got = fast(batch)
    assert got is not None
    assert tuple(got) == reference(batch)
    assert got.null_keys == [i for i in range(300) if i % 3 == 0]


@pytest.mark.parametrize(
    "codec", [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD]
)
def test_compressed_batches_are_walked_fast_too(codec, monkeypatch):
    calls = []
    monkeypatch.setattr(
        log_validator, "_reference_walk", lambda *a: calls.append(a) or pytest.fail("reference walk used")
    )
    batch = build_batch([(b"k%d" % i, b"v" * 100) for i in range(50)], timestamp_ms=NOW, compression=codec)
    assert run(batch).max_timestamp == NOW and not calls


@pytest.mark.parametrize(
    "name,batch",
    [
        ("int32 varint of 6 bytes", raw_batch([record(0, key_len=varint(1, width=6))])),
        ("five-byte varint (Kafka accepts it)", raw_batch([record(0, key_len=varint(1, width=5))])),
        ("key length -61", raw_batch([record(0, key=None, key_len=varint(-61))])),
        ("key length -2**40", raw_batch([record(0, key=None, key_len=varint(-(2**40)))])),
        ("header value length -2", raw_batch([record(0, headers=varint(1) + varint(1) + b"h" + varint(-2))])),
        ("record attributes 0x80", raw_batch([record(0, attributes=0x80)])),
        (
            "null header value (Kafka accepts it)",
            raw_batch([record(0, headers=varint(1) + varint(1) + b"h" + varint(-1))]),
        ),
        ("offset delta gap", raw_batch([record(0), record(2)])),
        (
            "header key not utf-8",
            raw_batch([record(0, headers=varint(1) + varint(2) + b"\xff\xfe" + varint(-1))]),
        ),
        ("more records than the count", raw_batch([record(i) for i in range(3)], count=2)),
        ("fewer records than the count", raw_batch([record(i) for i in range(2)], count=3)),
        ("truncated record", raw_batch([record(0)[:-2]])),
        ("LogAppendTime set by the producer", raw_batch([record(0)], attributes=0x08)),
        ("varlong of 11 bytes", raw_batch([record(0, ts_raw=b"\x80" * 10 + b"\x00")])),
    ],
)
def test_what_is_not_canonical_goes_to_the_reference_walk(name, batch):
    assert fast(batch) is None, name


@pytest.mark.parametrize(
    "name,batch",
    [
        ("record attributes 0x01", raw_batch([record(0, attributes=0x01)])),
        ("first record's timestamp delta 5", raw_batch([record(0, ts_delta=5), record(1, ts_delta=-9)])),
        (
            "null key and value",
            raw_batch([record(0, key=None, value=b""), record(1), record(2, key=b"", value=b"v" * 70)]),
        ),
        ("varint boundaries", raw_batch([record(i, value=b"v" * (60 + i)) for i in range(80)])),
    ],
)
def test_odd_but_canonical_batches_are_vouched_for(name, batch):
    got = fast(batch)
    assert got is not None and tuple(got) == reference(batch), name


def test_every_wrong_null_byte_goes_to_the_reference_walk():
    """Any one byte of a keyless batch set to any odd value below 0x80 (a one-byte negative
    length among them): vouched for only when the reference walk agrees."""
    batch = build_batch(
        [(None, b"v" * (i * 37 % 200), [], NOW + i) for i in range(6)] + [(b"k", None, [], NOW)],
        timestamp_ms=NOW,
    )
    vouched = 0
    for pos in range(HEADER_SIZE, len(batch)):
        for byte in range(1, 0x80, 2):
            buf = bytearray(batch)
            buf[pos] = byte
            got = fast(bytes(buf))
            if got is not None:
                vouched += 1
                assert tuple(got) == reference(bytes(buf)), (pos, byte)
    assert vouched


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
def test_fast_walk_never_vouches_for_what_the_reference_refuses(seed):
    batch = _mutated(seed)
    got = fast(batch)
    if got is not None:
        assert tuple(got) == reference(batch)


def test_padded_copy_reuses_its_buffer_and_pads_with_zeros():
    from minibroker.storage.canonical_walk import padded_copy

    first, size = padded_copy(b"\xff" * 1000)
    assert size == 1000
    second, size = padded_copy(b"ab", memoryview(b"cd"))
    assert second is first and size == 4
    assert bytes(second[: 4 + len(PADDING)]) == b"abcd" + PADDING
    big, size = padded_copy(bytes(5 << 20))
    assert big is not first and size == 5 << 20
    assert padded_copy(b"x")[0] is first  # a batch that large is not kept


def test_the_broker_process_loads_the_reader_without_aiokafkas_client():
    """``python -m minibroker`` calls load_reader_without_client: the first batch then loads
    only the reader (not aiokafka's asyncio client) and is walked by it."""
    code = f"""
import sys
from minibroker.storage import canonical_walk
canonical_walk.load_reader_without_client()
batch = {build_batch([(b"k", b"v" * 100)] * 3, timestamp_ms=NOW)!r}
walked = canonical_walk.walk_canonical(batch + canonical_walk.PADDING, len(batch))
assert canonical_walk._load() is not None, "the compiled reader did not load"
assert walked is not None and walked.max_timestamp == {NOW}, walked
loaded = sorted(m for m in sys.modules if m.startswith("aiokafka"))
assert "aiokafka.client" not in loaded and "aiokafka.producer" not in loaded, loaded
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
