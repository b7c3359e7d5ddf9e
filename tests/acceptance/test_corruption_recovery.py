"""Issue 2, recovery: damage a segment file while the broker is down (truncate it in the middle
of a batch, or flip one byte), restart, and check the broker starts, cuts the log at the last
intact batch and serves exactly the records before it; appends then continue from there.

Kafka verifies CRCs during recovery only above the recovery point (data not known to be
fsynced) after an unclean shutdown. So the flipped-byte cases stop the broker with SIGKILL and
run with a flush interval far longer than the test; truncation is also tested after a clean stop
(a cheap end-of-segment check suffices to see a torn tail)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.support import clients
from tests.support.helpers import create_topic, unique_name
from tests.support.wire import WireClient, build_batch, read_partition

BATCHES = 10
PER_BATCH = 10
NO_FLUSH = {"log.flush.interval.ms": 3_600_000}


def value(i: int) -> bytes:
    return f"value-{i:04d}-".encode() + bytes((i * 13 + j) % 256 for j in range(40))


def write_batches(broker, topic: str, first: int = 0, batches: int = BATCHES) -> None:
    with WireClient.to(broker) as c:
        for b in range(batches):
            start = first + b * PER_BATCH
            recs = [
                (f"key-{i}".encode(), value(i), [("n", str(i).encode())])
                for i in range(start, start + PER_BATCH)
            ]
            r = c.produce(topic, 0, build_batch(recs))
            assert (r.error_code, r.base_offset) == (0, start)


def segment_files(broker, topic: str, partition: int = 0) -> list[Path]:
    d = broker.data_dir / f"{topic}-{partition}"
    files = sorted(d.glob("*.log"))
    assert files, (
        f"no segment files in {d}: {sorted(x.name for x in d.iterdir()) if d.exists() else 'missing'}"
    )
    for f in files:
        assert len(f.stem) == 20 and f.stem.isdigit(), (
            f"segment file name {f.name} is not <20-digit base offset>.log"
        )
    return files


def batch_spans(path: Path) -> list[tuple[int, int, int]]:
    """(file position, size, base offset) of each batch in a segment file."""
    data = path.read_bytes()
    spans, pos = [], 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        size = 12 + length
        assert pos + size <= len(data), f"{path.name}: batch at {pos} runs past the end before damage"
        spans.append((pos, size, base))
        pos += size
    assert pos == len(data), f"{path.name}: {len(data) - pos} stray bytes at the end before damage"
    return spans


def check_survivors(broker, topic: str, survivors: int) -> None:
    """Exactly records 0..survivors-1 are served, intact; appends continue at `survivors`."""
    with WireClient.to(broker) as c:
        latest = c.list_offsets(topic, 0, -1)
        assert (latest.error_code, latest.offset) == (0, survivors), (
            f"log end after recovery: {latest.offset}"
        )
        recs, hw = read_partition(c, topic, 0)
        assert hw == survivors
        assert [(r.offset, r.key, r.value) for r in recs] == [
            (i, f"key-{i}".encode(), value(i)) for i in range(survivors)
        ]
    consumed = clients.kp_consume(broker.bootstrap, topic, [0], survivors, timeout=15)
    assert [(o, k, v) for o, k, v, _, _ in consumed[0]] == [
        (i, f"key-{i}".encode(), value(i)) for i in range(survivors)
    ]
    # new appends land right after the cut and read back cleanly with the old records
    write_batches(broker, topic, first=survivors, batches=2)
    with WireClient.to(broker) as c:
        recs, hw = read_partition(c, topic, 0)
    assert hw == survivors + 2 * PER_BATCH
    assert [r.value for r in recs] == [value(i) for i in range(survivors + 2 * PER_BATCH)]


def stop(broker, mode: str) -> None:
    if mode == "sigterm":
        broker.stop()
    else:
        broker.kill()


@pytest.mark.parametrize("mode", ["sigterm", "sigkill"])
@pytest.mark.parametrize("where", ["mid-records", "mid-header", "last-byte"])
def test_truncated_segment(broker_factory, mode, where):
    broker = broker_factory(NO_FLUSH)
    topic = unique_name("trunc")
    create_topic(broker, topic, 1)
    write_batches(broker, topic)
    stop(broker, mode)
    (seg,) = segment_files(broker, topic)
    spans = batch_spans(seg)
    assert len(spans) == BATCHES and [s[2] for s in spans] == [i * PER_BATCH for i in range(BATCHES)]
    if where == "mid-records":
        victim = 6
        pos, size, _ = spans[victim]
        cut = pos + size // 2
    elif where == "mid-header":
        victim = 6
        cut = spans[victim][0] + 7  # inside baseOffset/batchLength
    else:
        victim = BATCHES - 1
        pos, size, _ = spans[victim]
        cut = pos + size - 1
    with open(seg, "r+b") as f:
        f.truncate(cut)

    broker.start()
    check_survivors(broker, topic, victim * PER_BATCH)


@pytest.mark.parametrize(
    "victim,offset_in_batch",
    [(4, 70), (4, 21), (9, -1)],
    ids=["batch4-record", "batch4-attributes", "last-batch-last-byte"],
)
def test_flipped_byte_in_segment(broker_factory, victim, offset_in_batch):
    broker = broker_factory(NO_FLUSH)
    topic = unique_name("flip")
    create_topic(broker, topic, 1)
    write_batches(broker, topic)
    broker.kill()
    (seg,) = segment_files(broker, topic)
    spans = batch_spans(seg)
    pos, size, _ = spans[victim]
    at = pos + (offset_in_batch if offset_in_batch >= 0 else size + offset_in_batch)
    assert pos + 21 <= at < pos + size  # inside the CRC-covered part
    with open(seg, "r+b") as f:
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ 0xFF]))

    broker.start()
    check_survivors(broker, topic, victim * PER_BATCH)


def test_truncated_tail_with_several_segments(broker_factory):
    """Segments roll at log.segment.bytes; a torn tail in the newest segment leaves the older
    segments and the intact batches of the newest one."""
    broker = broker_factory({**NO_FLUSH, "log.segment.bytes": 1500})
    topic = unique_name("segs")
    create_topic(broker, topic, 1)
    write_batches(broker, topic)
    broker.kill()
    segs = segment_files(broker, topic)
    assert len(segs) >= 3, (
        f"expected several segments with log.segment.bytes=1500, got {[s.name for s in segs]}"
    )
    last = segs[-1]
    spans = batch_spans(last)
    assert spans and int(last.stem) == spans[0][2], "segment file name must be its first batch's base offset"
    pos, size, base = spans[-1]
    with open(last, "r+b") as f:
        f.truncate(pos + size // 3)
    broker.start()
    check_survivors(broker, topic, base)
