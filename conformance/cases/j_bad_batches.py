"""Issue 9's crafted Produce requests: valid requests carrying batches a buggy or hostile client
builds (lying counts, garbage records, undecompressable payloads, bad header fields, sequence
and epoch misuse). Each is followed by what a client would see next: whether the connection is
still open and the partition's log end offset (nothing of a refused batch may be appended)."""

import struct
import time

from crc32c import crc32c
from minibroker.protocol.records import build_batch

from conformance.cases import case
from conformance.cases.c_data import LIST_OFFSETS, PRODUCE, list_offsets_req, produce_req
from tests.support.crafted import raw_batch, record, varint

INIT_PID = 22
HOUR = 3_600_000


def now_batch(recs, **kw) -> bytes:
    """Timestamps near the wall clock, inside Kafka 4's default one-hour-ahead bound."""
    now = int(time.time() * 1000) - 60_000
    return raw_batch(recs, base_timestamp=now, max_timestamp=now, **kw)


def resealed(batch: bytes) -> bytes:
    """The batch with its CRC recomputed, so only the content lies."""
    buf = bytearray(batch)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def resized(batch: bytes, size_field: int) -> bytes:
    """The batch with its size field replaced."""
    buf = bytearray(batch)
    struct.pack_into(">i", buf, 8, size_field)
    return bytes(buf)


def produce(s, label, topic, records, version=9):
    """Send one crafted batch and record the answer, its error_message presence, whether the
    connection survived and the log end offset after it."""
    answer = s.check(label, PRODUCE, version, produce_req(topic, 0, records))
    if isinstance(answer, dict):
        part = answer["responses"][0]["partition_responses"][0]
        s.observe(f"{label}/has-error-message", bool(part.get("error_message")))
    s.connection_state(f"{label}/connection")
    s.check(f"{label}/log-end-offset", LIST_OFFSETS, 7, list_offsets_req(topic, [(0, -1)]), conn="lo")


@case("bad_batches/record-area")
def record_area(s):
    t = "bb-record-area"
    s.create_topic(t)
    three = [record(i) for i in range(3)]
    produce(s, "more-records-than-count", t, now_batch(three, count=2))
    produce(s, "fewer-records-than-count", t, now_batch(three[:2], count=3))
    produce(s, "garbage-record", t, now_batch([b"\x13" * 20]))
    produce(s, "truncated-record", t, now_batch([record(0, value=b"value")[:-3]]))
    produce(s, "record-length-past-end", t, now_batch([varint(40) + record(0)[1:]]))
    produce(s, "overlong-varint-key-length", t, now_batch([record(0, key_len=b"\x80" * 10 + b"\x00")]))
    produce(s, "overlong-varint-timestamp", t, now_batch([record(0, ts_raw=b"\x80" * 11 + b"\x00")]))
    produce(s, "negative-header-count", t, now_batch([record(0, headers=varint(-3))]))
    produce(s, "huge-header-count", t, now_batch([record(0, headers=varint(2**31 - 1))]))
    produce(s, "one-record-last-offset-delta-2^31-2", t, now_batch([record(0)], last_offset_delta=2**31 - 2))
    produce(s, "valid-after-all-that", t, now_batch(three))


@case("bad_batches/compression")
def compression(s):
    t = "bb-compression"
    s.create_topic(t)
    three = [record(i) for i in range(3)]
    for codec, name in ((1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")):
        b = bytearray(now_batch(three, codec=codec))
        b[61:] = b"\x42" * (len(b) - 61)
        produce(s, f"{name}-does-not-decompress", t, resealed(bytes(b)))
        produce(s, f"{name}-truncated-payload", t, resealed(now_batch(three, codec=codec)[:-4]))
    produce(s, "zstd-produce-v6", t, now_batch([record(0)], codec=4), version=6)
    produce(s, "zstd-produce-v7", t, now_batch([record(0)], codec=4), version=7)
    # an unknown codec: Kafka reads it before the log only below v7 (its zstd rule)
    produce(s, "codec-7-produce-v6", t, now_batch([record(0)], attributes=0x07), version=6)
    produce(s, "codec-7-produce-v7", t, now_batch([record(0)], attributes=0x07), version=7)


@case("bad_batches/timestamps")
def timestamps(s):
    t = "bb-timestamps"
    s.create_topic(t)
    recs = [record(0), record(1, ts_delta=2 * HOUR), record(2), record(3, ts_delta=3 * HOUR)]
    produce(s, "create-time-ahead", t, now_batch(recs))
    produce(s, "create-time-ahead-v7", t, now_batch(recs), version=7)
    produce(s, "create-time-ahead-v12", t, now_batch(recs), version=12)


@case("bad_batches/header-fields")
def header_fields(s):
    t = "bb-header-fields"
    s.create_topic(t)
    one = [record(0)]
    produce(s, "base-offset-7", t, now_batch(one, base_offset=7))
    produce(s, "magic-1", t, now_batch(one, magic=1))
    produce(s, "magic-3", t, now_batch(one, magic=3))
    produce(s, "truncated-by-one", t, now_batch(one)[:-1])
    produce(s, "only-the-header", t, now_batch(one)[:61])
    produce(s, "shorter-than-a-header", t, now_batch(one)[:40])
    for size in (0, 13, 14):
        produce(s, f"size-field-{size}", t, resized(now_batch(one), size))
    produce(s, "two-batches", t, now_batch(one) + now_batch(one))
    produce(s, "batch-plus-trailing-bytes", t, now_batch(one) + b"\x00\x01\x02")
    produce(
        s,
        "control-batch",
        t,
        now_batch([record(0, key=b"\x00\x00\x00\x00", value=b"\x00\x00")], attributes=0x20),
    )
    # issue 21: Kafka asks whether records are transactional before it validates a batch, so a
    # garbage attributes byte (codec 7 + the transactional bit) is refused for the missing
    # transactional id, not for its codec; without the transactional bit, for its codec
    produce(s, "attributes-0xff", t, now_batch(one, attributes=0xFF))
    produce(s, "codec-7", t, now_batch(one, attributes=0x07))
    produce(
        s,
        "transactional-without-transactional-id",
        t,
        now_batch(one, attributes=0x10, producer_id=5, base_sequence=0),
    )
    produce(s, "valid-after-all-that", t, now_batch(one))


@case("bad_batches/acks0")
def acks0(s):
    """With acks=0 a refused batch closes the connection (the client has no other way to learn)."""
    t = "bb-acks0"
    s.create_topic(t)
    for label, records in (
        ("garbage-record", now_batch([b"\x13" * 20])),
        ("magic-1", now_batch([record(0)], magic=1)),
        ("size-field-13", resized(now_batch([record(0)]), 13)),
        ("attributes-0xff", now_batch([record(0)], attributes=0xFF)),
    ):
        s.check(label, PRODUCE, 9, produce_req(t, 0, records, acks=0), expect_response=False, conn=label)
        s.connection_state(f"{label}/connection", conn=label)
    s.check("log-end-offset", LIST_OFFSETS, 7, list_offsets_req(t, [(0, -1)]), conn="lo")


@case("bad_batches/stricter")
def stricter(s):
    """Corners where minibroker refuses what Kafka stores (docs/bad-input.md; deviations.toml)."""
    t = "bb-stricter"
    s.create_topic(t)
    produce(s, "offset-deltas-0-2", t, now_batch([record(0), record(2)], last_offset_delta=1))
    produce(s, "record-attributes-0x80", t, now_batch([record(0, attributes=0x80)]))
    produce(s, "key-length-minus-2", t, now_batch([record(0, key=None, key_len=varint(-2))]))


@case("bad_batches/compacted-keyless")
def compacted_keyless(s):
    t = "bb-compacted"
    s.create_topic(t, configs={"cleanup.policy": "compact"})
    produce(s, "keyless", t, now_batch([record(0), record(1, key=None), record(2, key=None)]))
    produce(s, "keyed", t, now_batch([record(0)]))


def idempotent_batch(pid, seq, n, epoch=0):
    ts = int(time.time() * 1000) - 60_000
    return build_batch([(b"k", b"v", [], ts)] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


@case("bad_batches/sequences")
def sequences(s):
    t = "bb-sequences"
    s.create_topic(t)
    r = s.call(
        INIT_PID,
        4,
        {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
    )
    pid, epoch = r["producer_id"], r["producer_epoch"]
    produce(s, "first-14", t, idempotent_batch(pid, 0, 14, epoch))
    produce(s, "seq-14-15", t, idempotent_batch(pid, 14, 2, epoch))
    produce(s, "overlap-and-extend-14-16", t, idempotent_batch(pid, 14, 3, epoch))
    produce(s, "exact-retry-14-15", t, idempotent_batch(pid, 14, 2, epoch))
    produce(s, "far-jump-2^31-1", t, idempotent_batch(pid, 2**31 - 1, 1, epoch))
    for seq in range(16, 21):
        produce(s, f"seq-{seq}", t, idempotent_batch(pid, seq, 1, epoch))
    produce(s, "old-batch-outside-window-14-15", t, idempotent_batch(pid, 14, 2, epoch))
    produce(s, "retry-inside-window-seq-20", t, idempotent_batch(pid, 20, 1, epoch))
    produce(s, "producer-id-without-sequence", t, idempotent_batch(pid, -1, 1, epoch))
    produce(s, "epoch-minus-5", t, idempotent_batch(pid, 21, 1, -5))
    produce(s, "epoch-ahead-seq-0", t, idempotent_batch(pid, 0, 1, epoch + 1))
    produce(s, "epoch-ahead-seq-5", t, idempotent_batch(pid, 5, 1, epoch + 2))
    produce(s, "unknown-producer-seq-3", t, idempotent_batch(pid + 1000, 3, 1, 0))


@case("bad_batches/corrupt-framing-beside-a-valid-partition")
def corrupt_beside_valid(s):
    """Issue 21: Kafka asks every partition whether its first batch is transactional before
    anything else (RequestUtils.hasTransactionalRecords); a size field below 14 or a magic above
    2 makes that batch iterator throw CorruptRecordException, which no one catches in
    handleProduceRequest: every partition of the request is answered CORRUPT_MESSAGE and
    nothing is appended, the valid partition included (acks=0: the connection is closed)."""
    t = "bb-corrupt-beside-valid"
    s.create_topic(t, partitions=2)
    one = [record(0)]
    for label, bad in (
        ("size-field-13", resized(now_batch(one), 13)),
        ("magic-3", now_batch(one, magic=3)),
    ):
        for order, first, second in (("valid-first", 0, 1), ("corrupt-first", 1, 0)):
            parts = {first: now_batch(one), second: bad}
            req = produce_req(t, 0, parts[0], extra=[{"index": 1, "records": parts[1]}])
            name = f"{label}/{order}"
            s.check(name, PRODUCE, 9, req)
            s.connection_state(f"{name}/connection")
            s.check(
                f"{name}/log-end-offsets", LIST_OFFSETS, 7, list_offsets_req(t, [(0, -1), (1, -1)]), conn="lo"
            )
    # a transactional first partition answers before the corrupt one is looked at
    txn = now_batch(one, attributes=0x10, producer_id=5, base_sequence=0)
    req = produce_req(t, 0, txn, extra=[{"index": 1, "records": resized(now_batch(one), 13)}])
    s.check("transactional-then-corrupt", PRODUCE, 9, req)
    req = produce_req(t, 0, now_batch(one), acks=0, extra=[{"index": 1, "records": now_batch(one, magic=3)}])
    s.check("acks0-magic-3", PRODUCE, 9, req, expect_response=False, conn="acks0")
    s.connection_state("acks0-magic-3/connection", conn="acks0")
    s.check("log-end-offsets", LIST_OFFSETS, 7, list_offsets_req(t, [(0, -1), (1, -1)]), conn="lo")
