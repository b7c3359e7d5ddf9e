"""Generators and checks shared by the CI fuzz tests (tests/acceptance/test_fuzz.py, small and
derandomized) and the long out-of-CI run (``python -m tests.support.fuzz_run``).

Two kinds of input, both driven by a ``random.Random`` so a failure is reproducible from its seed:

* mutated requests: a valid request for every served (api key, version), one element in every
  array and real topic names, then bytes flipped, lengths replaced by huge or negative values,
  truncated, extended or duplicated;
* CRC-valid random batches: a valid batch (random records, headers, codec) with its header
  fields or record bytes mutated and the CRC-32C recomputed, so it passes the CRC check and
  reaches the record validation.
"""

from __future__ import annotations

import dataclasses
import random
import struct
import time
import uuid

from crc32c import crc32c
from kafka.record.memory_records import MemoryRecords
from minibroker.broker.dispatch import HANDLERS
from minibroker.protocol.codec import build, encode_response, request_class
from minibroker.protocol.records import build_batch
from minibroker.protocol.schema_layout import layout

from tests.support.wire import WireClient, encode_uvarint, request_header

FUZZ_TOPIC = "fuzz"  # named in the seed requests (which may delete it)
BATCH_TOPIC = "fuzz-batches"  # where the random batches go; no seed request names it
_HUGE = [0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0x7FFF, 0xFFFF, 0x8000]


# ------------------------------------------------------------------------------ requests
def _sample(cls: type, rng: random.Random):
    values = {}
    for f in layout(cls)[0] + tuple(layout(cls)[1].values()):
        kind = f.kind
        if isinstance(kind, type):
            value = _sample(kind, rng)
        elif kind == "string":
            value = FUZZ_TOPIC if "name" in f.name or "topic" in f.name else "fuzz-" + f.name[:8]
        elif kind in ("records",):
            value = build_batch([(b"k", b"v")])
        elif kind == "bytes":
            value = b"\x00\x01"
        elif kind == "bool":
            value = bool(rng.getrandbits(1))
        elif kind == "uuid":
            value = uuid.UUID(int=0)
        elif kind in ("timedelta_i32", "timedelta_i64"):
            value = rng.choice([0, 100, 5000])
        elif kind == "datetime_i64":
            value = -1
        else:
            value = rng.choice([0, 0, 1, -1])
        if f.is_array:
            value = (value,)
        values[f.name] = value
    return values


def seed_frames(rng: random.Random) -> list[tuple[int, int, bytes]]:
    """(api key, version, whole request frame without the size prefix) per served version."""
    out = []
    for key, handler in sorted(HANDLERS.items()):
        for version in range(handler.min_version, handler.max_version + 1):
            cls = request_class(key, version)
            if cls is None:
                continue
            try:
                body = encode_response(build(cls, _sample(cls, rng)))  # writes any entity
            except Exception:  # noqa: BLE001 - a sample the schema refuses: try bare defaults
                body = encode_response(build(cls, {}))
            head = request_header(key, version, rng.randrange(1 << 31), flexible=cls.__flexible__)
            out.append((key, version, head + body))
    return out


def mutate_frame(frame: bytes, rng: random.Random) -> bytes:
    """One to three mutations, mostly in the body (past the api key and version)."""
    buf = bytearray(frame)
    for _ in range(rng.randint(1, 3)):
        lo = 8 if rng.random() < 0.9 and len(buf) > 9 else 0
        pos = rng.randrange(lo, max(lo + 1, len(buf)))
        op = rng.randrange(8)
        if op == 0:
            buf[pos : pos + 1] = bytes([rng.randrange(256)])
        elif op == 1:
            buf[pos : pos + 1] = bytes([rng.choice([0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE])])
        elif op == 2:
            buf[pos : pos + 4] = struct.pack(">I", rng.choice(_HUGE))
        elif op == 3:
            buf[pos : pos + 2] = struct.pack(">H", rng.choice([0xFFFF, 0x7FFF, 0x8000, 0xFFFE]))
        elif op == 4:
            buf[pos : pos + 1] = encode_uvarint(rng.choice(_HUGE))
        elif op == 5:
            del buf[pos:]
        elif op == 6:
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        else:
            end = rng.randrange(pos, len(buf) + 1)
            buf[pos:pos] = buf[pos:end]
    return bytes(buf)


class RequestSender:
    """Sends frames on one connection, reconnecting after the broker closes it; counts what
    happened to each frame."""

    def __init__(self, broker, wait_s: float = 0.3) -> None:
        self.broker = broker
        self.wait_s = wait_s
        self.client: WireClient | None = None
        self.counts = {"answered": 0, "closed": 0, "no answer in time": 0}

    def send(self, frame: bytes) -> None:
        if self.client is None:
            self.client = WireClient.to(self.broker, timeout=5)
        c = self.client
        try:
            c.send_frame(frame)
            c.recv_frame(timeout=self.wait_s)
            self.counts["answered"] += 1
            return
        except TimeoutError:
            self.counts["no answer in time"] += 1
        except (ConnectionError, OSError, AssertionError, struct.error):
            self.counts["closed"] += 1
        except Exception:  # noqa: BLE001 - ConnectionClosed and friends
            self.counts["closed"] += 1
        c.close()
        self.client = None

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None


# ------------------------------------------------------------------------------ batches
_CODECS = [0, 0, 1, 2, 3, 4]


def random_batch(rng: random.Random) -> bytes:
    now = int(time.time() * 1000)
    records = []
    for _i in range(rng.randint(1, 12)):
        key = None if rng.random() < 0.2 else bytes(rng.randrange(256) for _ in range(rng.randint(0, 12)))
        value = (
            None if rng.random() < 0.1 else bytes(rng.randrange(97, 123) for _ in range(rng.randint(0, 200)))
        )
        headers = [
            (f"h{j}", None if rng.random() < 0.3 else b"x" * rng.randint(0, 5))
            for j in range(rng.choice([0, 0, 1, 3]))
        ]
        records.append((key, value, headers, now + rng.randint(-5000, 5000)))
    return build_batch(records, compression=rng.choice(_CODECS))


_HEADER_FIELDS = [  # (offset, struct format) of header fields worth mutating
    (8, ">i"),
    (16, ">b"),
    (21, ">h"),
    (23, ">i"),
    (27, ">q"),
    (35, ">q"),
    (43, ">q"),
    (51, ">h"),
    (53, ">i"),
    (57, ">i"),
    (0, ">q"),
]


def mutate_batch(batch: bytes, rng: random.Random) -> bytes:
    """Mutate header fields or record bytes, then recompute the CRC (so only the record
    validation can refuse it). The batch length is usually kept consistent."""
    buf = bytearray(batch)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(6)
        if op == 0 and len(buf) > 61:
            pos = rng.randrange(61, len(buf))
            buf[pos] = rng.randrange(256)
        elif op == 1:
            off, fmt = rng.choice(_HEADER_FIELDS)
            size = struct.calcsize(fmt)
            bits = size * 8
            value = rng.choice(
                [
                    0,
                    1,
                    -1,
                    2,
                    2 ** (bits - 1) - 1,
                    2 ** (bits - 1) - 2,
                    -(2 ** (bits - 1)),
                    rng.randrange(-(2 ** (bits - 1)), 2 ** (bits - 1)),
                ]
            )
            struct.pack_into(fmt, buf, off, value)
        elif op == 2 and len(buf) > 62:
            del buf[rng.randrange(61, len(buf)) :]
        elif op == 3:
            buf += bytes(rng.randrange(256) for _ in range(rng.randint(1, 10)))
        elif op == 4 and len(buf) > 61:
            pos = rng.randrange(61, len(buf))
            buf[pos : pos + 1] = (
                encode_uvarint(rng.choice(_HUGE)) + b"\x80\x80\x80\x80\x80\x01"[: rng.randint(0, 6)]
            )
        elif op == 5:
            count = struct.unpack_from(">i", buf, 57)[0] + rng.choice([-1, 1])
            struct.pack_into(">i", buf, 57, (count + 2**31) % 2**32 - 2**31)  # wraps like int32
        if rng.random() < 0.8 and len(buf) >= 12:
            struct.pack_into(">i", buf, 8, len(buf) - 12)
    if len(buf) >= 21:
        struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def decode_stored(client: WireClient, topic: str, offset: int) -> list:
    """The records of the stored batch at ``offset``, decoded by kafka-python (raises if it
    cannot)."""
    _, part = client.fetch(topic, 0, offset, max_wait_ms=0)
    assert part.error_code == 0, f"fetch at {offset}: error {part.error_code}"
    mr = MemoryRecords(bytes(part.records))
    batch = mr.next_batch()
    assert batch is not None, f"no batch at offset {offset}"
    assert batch.validate_crc(), f"stored batch at {offset} fails its CRC"
    return [(r.offset, r.key, r.value, list(r.headers)) for r in batch]


@dataclasses.dataclass
class BatchOutcome:
    accepted: int = 0
    rejected: dict = dataclasses.field(default_factory=dict)
    undecodable: list = dataclasses.field(default_factory=list)
    leo_mismatch: list = dataclasses.field(default_factory=list)


def produce_and_check(
    client: WireClient, topic: str, batch: bytes, outcome: BatchOutcome, version: int = 9
) -> None:
    before = client.list_offsets(topic, 0, -1).offset
    r = client.produce(topic, 0, batch, version=version)
    after = client.list_offsets(topic, 0, -1).offset
    if r.error_code != 0:
        outcome.rejected[r.error_code] = outcome.rejected.get(r.error_code, 0) + 1
        if after != before:
            outcome.leo_mismatch.append((batch.hex(), before, after, "moved on rejection"))
        return
    outcome.accepted += 1
    try:
        records = decode_stored(client, topic, before)
    except Exception as exc:  # noqa: BLE001 - the property under test
        outcome.undecodable.append((batch.hex(), repr(exc)))
        return
    if after - before != len(records) or [r[0] for r in records] != list(range(before, after)):
        outcome.leo_mismatch.append((batch.hex(), before, after, len(records)))


def librdkafka_read(broker, topic: str, end_offset: int, timeout_s: float = 60.0) -> dict:
    """Read ``topic``-0 from offset 0 to ``end_offset`` with confluent-kafka (librdkafka);
    returns counts of records read and of errors the consumer reported."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "fuzz-read",
            "enable.auto.commit": False,
            "check.crcs": True,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    read, errors, last = 0, [], -1
    deadline = time.monotonic() + timeout_s
    try:
        while last + 1 < end_offset and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                errors.append(str(msg.error()))
                continue
            read += 1
            last = msg.offset()
    finally:
        c.close()
    return {
        "records read": read,
        "consumer errors": errors,
        "reached end": last + 1 >= end_offset,
        "last offset read": last,
    }


def handler_failures(broker, since: int = 0) -> list[str]:
    """Log lines of requests that ended in an unhandled exception."""
    return [line for line in broker.log_since(since).splitlines() if "request handler failed" in line]


def alive(broker) -> bool:
    if not broker.running:
        return False
    try:
        with WireClient.to(broker, timeout=5) as c:
            return c.api_versions(3).error_code == 0
    except (TimeoutError, OSError):
        return False


def start_fuzz_broker(factory):
    """A broker of ``factory`` with the two fuzz topics (FUZZ_TOPIC, BATCH_TOPIC) created."""
    broker = factory({"auto.create.topics.enable": False, "group.initial.rebalance.delay.ms": 0})
    with WireClient.to(broker) as c:
        assert [t.error_code for t in c.create_topics([(FUZZ_TOPIC, 1), (BATCH_TOPIC, 1)]).topics] == [0, 0]
    return broker
