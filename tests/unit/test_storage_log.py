"""storage.log.PartitionLog: append validation, offsets, reads, rolls, timestamps, transactions."""

import os
import struct

import pytest
from crc32c import crc32c
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records import (
    ATTR_LOG_APPEND_TIME,
    build_batch,
    build_control_batch,
    crc_ok,
    iter_batches,
    iter_records,
    parse_header,
)
from minibroker.storage.config import LogConfig
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.file_slice import FileSlice
from minibroker.storage.log import LEADER_EPOCH, PartitionLog
from minibroker.storage.log_validator import first_produced_batch

from tests.support.storage import Clock

pytestmark = pytest.mark.timeout(10)


def open_log(path, clock=None, **cfg) -> PartitionLog:
    return PartitionLog.open(str(path), "t", 0, LogConfig(**cfg), clock=clock or Clock())


def batch(n=1, *, ts=1000, value=b"v" * 20, **kw) -> bytes:
    return build_batch([(b"k%d" % i, value, []) for i in range(n)], timestamp_ms=ts, **kw)


def read_bytes(result) -> bytes:
    return b"".join(c.read(c.position, c.length) for c in result.chunks)


def dir_state(path) -> dict:
    out = {}
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), "rb") as f:
            out[name] = f.read()
    return out


# ----------------------------------------------------------------------------- append / read
def test_append_assigns_offsets_and_stamps_header(tmp_path):
    plog = open_log(tmp_path / "p")
    a = plog.append(batch(3))
    b = plog.append(batch(2))
    assert (a.base_offset, a.last_offset, a.log_append_time_ms, a.duplicate) == (0, 2, -1, False)
    assert (b.base_offset, b.last_offset) == (3, 4)
    assert plog.log_end_offset == plog.high_watermark == plog.last_stable_offset == 5
    data = read_bytes(plog.read(0, 1 << 20))
    batches = list(iter_batches(data))
    assert [h.base_offset for _, h in batches] == [0, 3]
    assert all(h.partition_leader_epoch == LEADER_EPOCH for _, h in batches)
    assert crc_ok(data[: batches[1][0]]) and crc_ok(data[batches[1][0] :])
    assert [r.offset for r in iter_records(data[batches[1][0] :])] == [3, 4]


def test_append_accepts_memoryview_and_keeps_compressed_bytes(tmp_path):
    plog = open_log(tmp_path / "p")
    raw = batch(5, compression=4, value=b"x" * 200)
    plog.append(memoryview(raw))
    stored = read_bytes(plog.read(0, 1 << 20))
    assert stored[8:12] == raw[8:12]
    assert stored[16:] == raw[16:]  # records and CRC untouched (compressed as sent)
    assert parse_header(stored).compression == 4


def test_reads_see_just_appended_bytes_and_return_file_slices(tmp_path):
    plog = open_log(tmp_path / "p")
    for i in range(10):
        plog.append(batch(1))
        r = plog.read(i, 1 << 20)
        assert isinstance(r.chunks[0], FileSlice)
        assert [h.base_offset for _, h in iter_batches(read_bytes(r))] == [i]


def test_read_bounds(tmp_path):
    plog = open_log(tmp_path / "p")
    plog.append(batch(3))
    plog.append(batch(3))
    r = plog.read(6, 100)  # == LEO: nothing, no error
    assert r.chunks == [] and r.high_watermark == 6 and r.aborted is None
    assert plog.read(6, 100, 1).aborted == []
    for bad in (7, -1):
        with pytest.raises(KafkaStorageError) as e:
            plog.read(bad, 100)
        assert e.value.error_code == ErrorCode.offset_out_of_range


def test_read_starts_at_the_batch_containing_the_offset_and_returns_whole_batches(tmp_path):
    plog = open_log(tmp_path / "p")
    sizes = []
    for _ in range(5):
        sizes.append(len(batch(4)))
        plog.append(batch(4))
    r = plog.read(6, 1 << 20)  # inside the second batch
    assert [h.base_offset for _, h in iter_batches(read_bytes(r))] == [4, 8, 12, 16]
    # max_bytes smaller than a batch: still one whole batch
    r = plog.read(6, 10)
    assert r.chunks[0].length == sizes[1]
    # max_bytes of 2.5 batches: two whole batches, never a partial one
    r = plog.read(0, int(sizes[0] * 2.5))
    assert r.chunks[0].length == 2 * sizes[0]
    assert len(list(iter_batches(read_bytes(r)))) == 2


def test_read_with_many_small_batches_uses_index_and_stays_exact(tmp_path):
    plog = open_log(tmp_path / "p", index_interval_bytes=256)
    size = len(batch(1))
    for _ in range(400):
        plog.append(batch(1))
    assert len(plog.segments[0].index) > 10
    for offset, max_bytes in [
        (0, 1000),
        (17, 5 * size),
        (123, 3 * size + 5),
        (390, 1 << 20),
        (250, 1),
        (0, 1 << 20),
    ]:
        r = plog.read(offset, max_bytes)
        got = [h.base_offset for _, h in iter_batches(read_bytes(r))]
        expected_n = min(max(max_bytes // size, 1), 400 - offset)
        assert got == list(range(offset, offset + expected_n)), (offset, max_bytes)
        assert r.chunks[0].length == expected_n * size


# ----------------------------------------------------------------------------- validation
def _with_crc(buf: bytearray) -> bytes:
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def _bad_magic():
    b = bytearray(batch(1))
    b[16] = 1
    return bytes(b)


def _bad_crc():
    b = bytearray(batch(1))
    b[-1] ^= 0xFF
    return bytes(b)


def _count_mismatch():
    b = bytearray(batch(2))
    struct.pack_into(">i", b, 57, 3)
    return _with_crc(b)


def _zero_records():
    b = bytearray(batch(1))
    struct.pack_into(">i", b, 23, -1)
    struct.pack_into(">i", b, 57, 0)
    return _with_crc(b)


def _pid_without_sequence():
    return batch(1, producer_id=5, producer_epoch=0, base_sequence=-1)


def _transactional_without_pid():
    return batch(1, transactional=True)


def _short_length():
    b = bytearray(batch(1))
    struct.pack_into(">i", b, 8, 20)
    return bytes(b[:32])


@pytest.mark.parametrize(
    "payload,code",
    [
        (lambda: b"", ErrorCode.invalid_record),
        (lambda: batch(1)[:40], ErrorCode.invalid_record),
        (lambda: batch(1)[:-3], ErrorCode.invalid_record),
        (lambda: batch(1) + batch(1), ErrorCode.invalid_record),
        (lambda: batch(1) + b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05", ErrorCode.corrupt_message),
        (_short_length, ErrorCode.corrupt_message),
        (_bad_magic, ErrorCode.invalid_record),
        (_bad_crc, ErrorCode.corrupt_message),
        (_count_mismatch, ErrorCode.invalid_record),
        (_zero_records, ErrorCode.invalid_record),
        (lambda: build_control_batch(1, 0, True, 0, 5), ErrorCode.invalid_record),
        (_pid_without_sequence, ErrorCode.invalid_record),
        (_transactional_without_pid, ErrorCode.invalid_record),
        (lambda: batch(1, value=b"x" * 2000), ErrorCode.message_too_large),
    ],
    ids=[
        "empty",
        "short-header",
        "truncated",
        "two-batches",
        "trailing-size-below-14",
        "bad-length",
        "magic-1",
        "crc",
        "count-mismatch",
        "zero-records",
        "control-from-client",
        "pid-without-sequence",
        "transactional-without-pid",
        "too-large",
    ],
)
def test_rejected_append_changes_nothing(tmp_path, payload, code):
    plog = open_log(tmp_path / "p", max_message_bytes=1000)
    plog.append(batch(2))
    before = dir_state(tmp_path / "p")
    leo = plog.log_end_offset
    with pytest.raises(KafkaStorageError) as e:  # what the Produce handler does
        plog.append(first_produced_batch(payload(), 9))
    assert e.value.error_code == code
    assert plog.log_end_offset == leo
    assert dir_state(tmp_path / "p") == before
    assert plog.append(batch(1)).base_offset == leo  # still appendable


def test_trailing_bytes_that_are_not_a_batch_are_dropped(tmp_path):
    """Kafka's trimInvalidBytes: a partial second batch is ignored, not stored."""
    plog = open_log(tmp_path / "p")
    one = batch(1)
    plog.append(first_produced_batch(one + b"\x00garbage", 9))
    assert plog.log_end_offset == 1
    assert plog.segments[-1].size == len(one)


def test_internal_callers_may_write_control_batches(tmp_path):
    plog = open_log(tmp_path / "p")
    plog.append(build_control_batch(1, 0, True, 0, 5), internal=True)
    assert plog.log_end_offset == 1


# ----------------------------------------------------------------------------- timestamps
def test_log_append_time_stamps_batch_and_recomputes_crc(tmp_path):
    clock = Clock(5_000_000)
    plog = open_log(tmp_path / "p", clock, log_append_time=True)
    info = plog.append(batch(3, ts=1000))
    assert info.log_append_time_ms == 5_000_000
    data = read_bytes(plog.read(0, 1 << 20))
    h = parse_header(data)
    assert h.attributes & ATTR_LOG_APPEND_TIME and h.max_timestamp == 5_000_000
    assert crc_ok(data)
    assert {r.timestamp for r in iter_records(data)} == {5_000_000}
    assert plog.offset_for_timestamp(4_999_999) == (0, 5_000_000)


def test_offset_for_timestamp(tmp_path):
    plog = open_log(tmp_path / "p", segment_bytes=400, index_interval_bytes=100)
    # batch i holds records with timestamps 1000+10i, 1000+10i+5; one batch goes backwards
    stamps = []
    for i in range(30):
        t = 1000 + 10 * i if i != 12 else 900
        plog.append(build_batch([(b"a", b"1", [], t), (b"b", b"2", [], t + 5)]))
        stamps += [t, t + 5]
    assert len(plog.segments) > 3
    for ts in (0, 1000, 1001, 1005, 1006, 1100, 1125, 1290, 1295):
        expected = next(((o, t) for o, t in enumerate(stamps) if t >= ts), None)
        assert plog.offset_for_timestamp(ts) == expected, ts
    assert plog.offset_for_timestamp(1296) is None
    assert plog.offset_for_timestamp(-1) == (60, -1)
    assert plog.offset_for_timestamp(-2) == (0, -1)
    assert plog.offset_for_timestamp(-3) == (59, 1295)


def test_max_timestamp_is_the_record_not_the_batch(tmp_path):
    plog = open_log(tmp_path / "p")
    plog.append(build_batch([(b"a", b"1", [], 10), (b"b", b"2", [], 99), (b"c", b"3", [], 20)]))
    plog.append(build_batch([(b"d", b"4", [], 50)]))
    assert plog.offset_for_timestamp(-3) == (1, 99)
    assert plog.offset_for_timestamp(30) == (1, 99)
    assert plog.offset_for_timestamp(51) == (1, 99)


def test_empty_log_timestamps(tmp_path):
    plog = open_log(tmp_path / "p")
    assert plog.offset_for_timestamp(-1) == (0, -1)
    assert plog.offset_for_timestamp(-2) == (0, -1)
    assert plog.offset_for_timestamp(-3) is None
    assert plog.offset_for_timestamp(5) is None


# ----------------------------------------------------------------------------- rolling
def test_roll_at_segment_bytes(tmp_path):
    plog = open_log(tmp_path / "p", segment_bytes=1000)
    size = len(batch(2))
    for _ in range(20):
        plog.append(batch(2))
    per_segment = 1000 // size
    bases = [s.base_offset for s in plog.segments]
    assert bases == list(range(0, 40, 2 * per_segment))
    names = sorted(n for n in os.listdir(tmp_path / "p") if n.endswith(".log"))
    assert names == [f"{b:020d}.log" for b in bases]
    assert all(s.size <= 1000 for s in plog.segments)
    # a read stays within one segment; reading on from its end continues in the next
    r = plog.read(0, 1 << 20)
    got = [h.base_offset for _, h in iter_batches(read_bytes(r))]
    assert got == list(range(0, 2 * per_segment, 2))
    r = plog.read(2 * per_segment, 1 << 20)
    assert [h.base_offset for _, h in iter_batches(read_bytes(r))][0] == 2 * per_segment


def test_batch_larger_than_segment_bytes_gets_its_own_segment(tmp_path):
    plog = open_log(tmp_path / "p", segment_bytes=200)
    plog.append(batch(1))
    plog.append(batch(1, value=b"x" * 500))
    plog.append(batch(1))
    assert [s.base_offset for s in plog.segments] == [0, 1, 2]
    assert plog.read(1, 10).chunks[0].length > 500


def test_roll_at_segment_ms_from_first_batch_timestamp(tmp_path):
    plog = open_log(tmp_path / "p", segment_ms=1000)
    plog.append(batch(1, ts=10_000))
    plog.append(batch(1, ts=10_900))
    assert len(plog.segments) == 1
    plog.append(batch(1, ts=11_001))
    assert [s.base_offset for s in plog.segments] == [0, 2]


def test_roll_takes_producer_snapshot(tmp_path):
    plog = open_log(tmp_path / "p", segment_bytes=300)
    for i in range(4):
        plog.append(batch(1, producer_id=3, producer_epoch=0, base_sequence=i))
    snaps = sorted(n for n in os.listdir(tmp_path / "p") if n.endswith(".snapshot"))
    assert snaps and all(int(n[:20]) in [s.base_offset for s in plog.segments] for n in snaps)


# ----------------------------------------------------------------------------- idempotence
def test_retry_of_a_recent_batch_returns_original_offsets(tmp_path):
    clock = Clock(42_000)
    plog = open_log(tmp_path / "p", clock, log_append_time=True)
    first = plog.append(batch(2, producer_id=8, producer_epoch=0, base_sequence=0))
    plog.append(batch(2, producer_id=8, producer_epoch=0, base_sequence=2))
    clock.now += 5
    before = dir_state(tmp_path / "p")
    again = plog.append(batch(2, producer_id=8, producer_epoch=0, base_sequence=0))
    assert again.duplicate
    assert (again.base_offset, again.last_offset, again.log_append_time_ms) == (
        first.base_offset,
        first.last_offset,
        42_000,
    )
    assert dir_state(tmp_path / "p") == before and plog.log_end_offset == 4


def test_producer_state_errors_change_nothing(tmp_path):
    plog = open_log(tmp_path / "p")
    plog.append(batch(1, producer_id=8, producer_epoch=1, base_sequence=0))
    before = dir_state(tmp_path / "p")
    with pytest.raises(KafkaStorageError) as e:
        plog.append(batch(1, producer_id=8, producer_epoch=1, base_sequence=5))
    assert e.value.error_code == ErrorCode.out_of_order_sequence_number
    with pytest.raises(KafkaStorageError) as e:
        plog.append(batch(1, producer_id=8, producer_epoch=0, base_sequence=1))
    assert e.value.error_code == ErrorCode.invalid_producer_epoch
    assert dir_state(tmp_path / "p") == before


# ----------------------------------------------------------------------------- transactions
class Txns:
    """Drives transactional producers against one log."""

    def __init__(self, plog):
        self.plog = plog
        self.seq = {}

    def send(self, pid, n=1, value=b"v" * 20):
        s = self.seq.get(pid, 0)
        self.seq[pid] = s + n
        return self.plog.append(
            build_batch(
                [(b"k", value, [])] * n,
                producer_id=pid,
                producer_epoch=0,
                base_sequence=s,
                transactional=True,
                timestamp_ms=1000,
            )
        ).base_offset

    def end(self, pid, commit):
        return self.plog.append_marker(pid, 0, commit, 0)


def test_lso_and_read_committed(tmp_path):
    plog = open_log(tmp_path / "p")
    tx = Txns(plog)
    plog.append(batch(2))  # 0-1 plain
    tx.send(1)  # 2 open txn of producer 1
    plog.append(batch(1, ts=5000))  # 3
    assert plog.last_stable_offset == 2 and plog.high_watermark == 4
    r = plog.read(0, 1 << 20, 1)
    assert [h.base_offset for _, h in iter_batches(read_bytes(r))] == [0]
    assert r.last_stable_offset == 2 and r.aborted == []
    assert plog.read(2, 1 << 20, 1).chunks == []  # between LSO and HWM: empty, no error
    assert len(list(iter_batches(read_bytes(plog.read(2, 1 << 20, 0))))) == 2
    assert plog.offset_for_timestamp(-1, 1) == (2, -1)
    assert plog.offset_for_timestamp(-1, 0) == (4, -1)
    assert plog.offset_for_timestamp(0, 1) == (0, 1000)
    assert plog.offset_for_timestamp(-3, 1) is None  # the max-timestamp record is unstable
    assert plog.offset_for_timestamp(-3, 0) == (3, 5000)
    marker = tx.end(1, commit=True)
    assert marker == 4 and plog.last_stable_offset == 5 == plog.log_end_offset
    r = plog.read(0, 1 << 20, 1)
    assert [h.base_offset for _, h in iter_batches(read_bytes(r))] == [0, 2, 3, 4]
    assert r.aborted == []


def test_marker_wakes_listeners(tmp_path):
    plog = open_log(tmp_path / "p")
    calls = []
    plog.add_listener(lambda: calls.append(plog.last_stable_offset))
    tx = Txns(plog)
    tx.send(1)
    tx.end(1, commit=False)
    assert calls == [0, 2]


def test_aborted_list_rule(tmp_path):
    plog = open_log(tmp_path / "p", segment_bytes=500)
    tx = Txns(plog)
    tx.send(1)  # 0
    tx.send(2)  # 1
    tx.send(1)  # 2
    tx.end(1, commit=False)  # 3: abort (1, 0..3)
    tx.send(3)  # 4
    tx.end(2, commit=True)  # 5
    plog.append(batch(1))  # 6
    tx.send(4)  # 7
    tx.end(3, commit=False)  # 8: abort (3, 4..8)
    tx.end(4, commit=False)  # 9: abort (4, 7..9)
    tx.send(5)  # 10
    tx.end(5, commit=True)  # 11
    assert len(plog.segments) > 2
    assert plog.aborted_transactions(0, 100) == [(1, 0), (3, 4), (4, 7)]
    assert plog.aborted_transactions(4, 100) == [(3, 4), (4, 7)]  # marker 3 is below offset 4
    assert plog.aborted_transactions(0, 4) == [(1, 0)]
    assert plog.aborted_transactions(0, 5) == [(1, 0), (3, 4)]
    assert plog.aborted_transactions(9, 10) == [(4, 7)]
    assert plog.aborted_transactions(10, 12) == []
    # the list a read_committed fetch gets covers exactly what it returns
    for start in range(12):
        r = plog.read(start, 1 << 20, 1)
        hs = [h for _, h in iter_batches(read_bytes(r))]
        upper = hs[-1].last_offset + 1 if hs else start
        assert r.aborted == plog.aborted_transactions(start, upper)
        assert r.aborted == sorted(r.aborted, key=lambda t: t[1])


def test_aborted_list_sorted_by_first_offset(tmp_path):
    plog = open_log(tmp_path / "p")
    tx = Txns(plog)
    tx.send(1)  # 0
    tx.send(2)  # 1
    tx.end(2, commit=False)  # 2: abort (2, 1)
    tx.end(1, commit=False)  # 3: abort (1, 0)
    assert plog.read(0, 1 << 20, 1).aborted == [(1, 0), (2, 1)]


def test_flush_messages_moves_recovery_point(tmp_path):
    plog = open_log(tmp_path / "p", flush_messages=3)
    plog.append(batch(1))
    assert plog.recovery_point == 0
    plog.append(batch(2))
    assert plog.recovery_point == 3
    plog.append(batch(1))
    assert plog.recovery_point == 3
    plog.flush()
    assert plog.recovery_point == 4


def test_read_boundaries_match_a_brute_force_model(tmp_path):
    """Random batch sizes, a small index interval, an open transaction (LSO) and random
    (offset, max_bytes, isolation): the read is exactly the longest run of whole batches that
    starts with the batch holding the offset, stays in its segment, fits in max_bytes (one batch
    at least) and stays below the HWM or LSO; the aborted list follows the rule."""
    import random

    rnd = random.Random(7)
    plog = open_log(tmp_path / "p", segment_bytes=3000, index_interval_bytes=150)
    tx = Txns(plog)
    for i in range(120):
        if i == 90:
            tx.send(77)  # never ended: LSO stays here
        elif i % 17 == 5:
            tx.send(i)
            tx.end(i, commit=bool(i % 2))
        else:
            plog.append(batch(rnd.randint(1, 4), value=b"x" * rnd.randint(1, 300)))
    model = []  # (segment base, base offset, last offset, position, size)
    for seg in plog.segments:
        for p, h in seg.headers_from(0):
            model.append((seg.base_offset, h.base_offset, h.last_offset, p, h.size))
    lso = plog.last_stable_offset
    assert lso < plog.log_end_offset
    for _ in range(600):
        iso = rnd.randint(0, 1)
        offset = rnd.randint(0, plog.log_end_offset)
        max_bytes = rnd.choice([0, 1, 100, 500, 1000, 5000, 1 << 20])
        limit = lso if iso else plog.log_end_offset
        r = plog.read(offset, max_bytes, iso)
        if offset >= limit:
            assert r.chunks == []
            continue
        i = next(k for k, m in enumerate(model) if m[2] >= offset)
        chosen = [model[i]]
        for m in model[i + 1 :]:
            if m[0] != model[i][0] or m[1] >= limit:
                break
            if m[3] + m[4] - model[i][3] > max_bytes:
                break
            chosen.append(m)
        c = r.chunks[0]
        assert (c.position, c.length) == (chosen[0][3], chosen[-1][3] + chosen[-1][4] - chosen[0][3]), (
            offset,
            max_bytes,
            iso,
        )
        if iso:
            assert r.aborted == plog.aborted_transactions(offset, chosen[-1][2] + 1)
