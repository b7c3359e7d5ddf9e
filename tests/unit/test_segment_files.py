"""storage.segment_files: the bounded pool of open segment files. Old segments open on first use,
the least recently used close first, the active segment always stays open, and reads (including
a FileSlice taken before its file was closed) keep returning the right bytes."""

import os

import pytest
from minibroker.protocol.records import build_batch, iter_batches
from minibroker.storage.config import LogConfig
from minibroker.storage.log import PartitionLog
from minibroker.storage.segment_files import SegmentFilePool, effective_max_open

from tests.support.storage import Clock

pytestmark = pytest.mark.timeout(60)

BOUND = 16
SEGMENTS = 120


@pytest.fixture
def small_pool():
    """The pool the logs of a test share (a LogManager's own, in a broker)."""
    return SegmentFilePool(BOUND)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def many_segments(path, files: SegmentFilePool) -> PartitionLog:
    plog = PartitionLog.open(str(path), "t", 0, LogConfig(segment_bytes=200), clock=Clock(), files=files)
    for i in range(SEGMENTS):  # each ~140-byte batch fills a 200-byte segment: one per batch
        plog.append(build_batch([(b"k", b"value-%04d" % i + b"x" * 60, [])], timestamp_ms=1000 + i))
    return plog


def values(plog: PartitionLog, offset: int = 0) -> list[int]:
    out = []
    while offset < plog.log_end_offset:
        result = plog.read(offset, 1 << 20)
        data = b"".join(c.read(c.position, c.length) for c in result.chunks)
        for _, header in iter_batches(data):
            out.append(header.base_offset)
            offset = header.last_offset + 1
    return out


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_reading_every_segment_keeps_at_most_the_bound_open(tmp_path, small_pool):
    baseline = open_fds()
    plog = many_segments(tmp_path / "p", small_pool)
    assert len(plog.segments) == SEGMENTS
    assert open_fds() - baseline <= BOUND + 2  # the pool, the active segment, a spare
    assert values(plog) == list(range(SEGMENTS))
    assert len(small_pool) <= BOUND
    assert open_fds() - baseline <= BOUND + 2
    plog.close()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_reopening_keeps_at_most_the_bound_open_and_appends(tmp_path, small_pool):
    many_segments(tmp_path / "p", small_pool).close()
    baseline = open_fds()
    plog = PartitionLog.open(
        str(tmp_path / "p"),
        "t",
        0,
        LogConfig(segment_bytes=200),
        clock=Clock(),
        files=small_pool,
        clean_shutdown=True,
        recovery_point=SEGMENTS,
    )
    assert open_fds() - baseline <= BOUND + 2
    assert values(plog) == list(range(SEGMENTS))
    # the active segment is outside the pool and still appends
    plog.append(build_batch([(b"k", b"after", [])], timestamp_ms=5000))
    assert plog.log_end_offset == SEGMENTS + 1
    plog.close()


def test_a_slice_reads_after_its_file_was_closed(tmp_path, small_pool):
    plog = many_segments(tmp_path / "p", small_pool)
    held = plog.read(0, 1 << 20).chunks[0]
    expected = held.read(held.position, held.length)
    values(plog)  # opens every other segment: the first one's file is closed meanwhile
    assert held.segment._fd < 0
    assert held.read(held.position, held.length) == expected
    plog.close()


def test_the_active_segment_is_never_closed_to_make_room(tmp_path, small_pool):
    plog = many_segments(tmp_path / "p", small_pool)
    active = plog.segments[-1]
    values(plog)
    assert active.keep_open and active._fd >= 0
    plog.close()


class Fake:
    def __init__(self, pool):
        self.pool, self.closed = pool, 0

    def close(self):
        self.closed += 1
        self.pool.remove(self)


def test_pool_closes_least_recently_used_first():
    pool = SegmentFilePool(BOUND)
    fakes = [Fake(pool) for _ in range(BOUND + 3)]
    for f in fakes[:BOUND]:
        pool.add(f)
    pool.add(fakes[0])  # used again: now the most recent
    for f in fakes[BOUND:]:
        pool.add(f)
    assert [f.closed for f in fakes[:5]] == [0, 1, 1, 1, 0]
    assert len(pool) == BOUND and pool.closed_count == 3


def test_bound_is_at_most_a_quarter_of_the_open_files_limit():
    assert effective_max_open(1000, 1024) == 256
    assert effective_max_open(1000, None) == 1000
    assert effective_max_open(100, 1 << 20) == 100
    assert effective_max_open(1000, 20) == 16


def test_a_segment_that_left_the_log_is_never_reopened_by_path(tmp_path, small_pool):
    """After compaction the path of a replaced segment names the cleaned file: a read of the old
    one must fail (the connection is closed and the client fetches again), never return bytes
    of another file. One still open when it left the log stays open and readable."""
    plog = many_segments(tmp_path / "p", small_pool)
    first, second = plog.segments[0], plog.segments[1]
    stale = plog.read(0, 1 << 20).chunks[0]
    values(plog)  # the first segment's file is closed to make room
    assert first._fd < 0
    first.detach()
    with pytest.raises(FileNotFoundError):
        stale.read(stale.position, stale.length)
    held = plog.read(second.base_offset, 1 << 20).chunks[0]
    expected = held.read(held.position, held.length)
    second.detach()  # open when it left: kept open, out of the pool
    values(plog, 2)  # (a real log no longer lists the two; reading past them opens the rest)
    assert second._fd >= 0 and held.read(held.position, held.length) == expected
    second.close()
    plog.close()
