"""Unit tests for coordinator.producer_ids: ids are never reused, not even after SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from concurrent.futures import Future
from pathlib import Path

import pytest
from minibroker.coordinator.producer_ids import ProducerIdManager, ProducerIdStateError

ROOT = Path(__file__).resolve().parents[2]


def opened(data_dir, **kw) -> ProducerIdManager:
    m = ProducerIdManager(str(data_dir), **kw)
    m.open()
    return m


def test_sequential_unique_from_zero(tmp_path):
    m = opened(tmp_path)
    ids = [m.allocate() for _ in range(2500)]
    assert ids == list(range(2500))


def test_block_is_durable_before_first_id(tmp_path):
    m = ProducerIdManager(str(tmp_path), block_size=10)
    assert not tmp_path.exists() or not (tmp_path / "producer_ids").exists()  # construction: no file
    m.open()
    stored = lambda: json.loads((tmp_path / "producer_ids").read_text())["block_end"]  # noqa: E731
    assert stored() == 10  # the first block, written by open
    assert m.allocate() == 0
    assert stored() == 20  # handing out a block's first id writes the next one ahead
    for _ in range(9):
        m.allocate()
    assert stored() == 20
    assert m.allocate() == 10
    assert stored() == 30
    assert not (tmp_path / "producer_ids.tmp").exists()


def test_allocate_waits_for_the_block_written_ahead_and_writes_one_itself_if_that_failed(tmp_path):
    writes: list[tuple] = []

    def held(fn, *args):  # a durability service that has not run the write yet
        fut: Future[None] = Future()
        writes.append((fut, fn, args))
        return fut

    m = ProducerIdManager(str(tmp_path), block_size=5, submit=held)
    m.open()
    assert writes == []  # open writes the first block itself: nothing runs or waits at startup
    assert json.loads((tmp_path / "producer_ids").read_text())["block_end"] == 5
    assert m.allocate() == 0
    (fut, fn, args) = writes.pop()  # the block [5, 10) asked for ahead; its write fails
    fut.set_exception(OSError(28, "No space left on device"))
    assert [m.allocate() for _ in range(4)] == [1, 2, 3, 4]
    assert m.allocate() == 5  # written on the caller's thread instead
    assert json.loads((tmp_path / "producer_ids").read_text())["block_end"] == 10


def test_never_repeats_across_reinstantiation(tmp_path):
    seen: set[int] = set()
    last = -1
    for round_ in range(6):
        m = opened(tmp_path, block_size=7)
        for _ in range(round_ * 4):  # 0, 4, 8 ... ids: some rounds cross a block
            pid = m.allocate()
            assert pid not in seen and pid > last
            seen.add(pid)
            last = pid
    assert len(seen) == sum(r * 4 for r in range(6))


def test_crash_without_close_does_not_reuse(tmp_path):
    a = opened(tmp_path)
    first = [a.allocate() for _ in range(3)]
    # "crash": a is abandoned without any close; a new instance starts on the same dir
    b = opened(tmp_path)
    nxt = b.allocate()
    assert nxt >= 1000 and nxt not in first


def test_sigkill_of_allocating_process(tmp_path):
    code = (
        "import sys, os\n"
        "from coordinator.producer_ids import ProducerIdManager\n"
        "m = ProducerIdManager(sys.argv[1], block_size=5)\n"
        "m.open()\n"
        "for _ in range(12):\n"
        "    print(m.allocate(), flush=True)\n"
        "print('done', flush=True)\n"
        "sys.stdin.read()\n"  # block until killed
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        handed_out = []
        for line in p.stdout:
            if line.strip() == "done":
                break
            handed_out.append(int(line))
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdin.close()
        p.stdout.close()
    assert handed_out == list(range(12))
    m = opened(tmp_path, block_size=5)
    after = [m.allocate() for _ in range(20)]
    assert not set(after) & set(handed_out)
    assert after[0] == 20  # the rest of the crashed block and the one written ahead are skipped


def test_leftover_temp_file_ignored(tmp_path):
    m = opened(tmp_path, block_size=3)
    assert m.allocate() == 0  # the file says 6: this block and the next, written ahead
    (tmp_path / "producer_ids.tmp").write_text("garbage from an interrupted write")
    m2 = opened(tmp_path, block_size=3)
    assert m2.allocate() == 6
    assert not (tmp_path / "producer_ids.tmp").exists()


@pytest.mark.parametrize(
    "content",
    [
        "",
        "{",
        "not json",
        '{"version": 1, "block_end": 10, "crc": 1}',
        '{"version": 2, "block_end": 10, "crc": 0}',
        '{"version": 1, "block_end": -5, "crc": 0}',
        '{"version": 1}',
    ],
)
def test_corrupt_counter_refuses_to_start(tmp_path, content):
    (tmp_path / "producer_ids").write_text(content)
    m = ProducerIdManager(str(tmp_path))  # construction reads nothing
    with pytest.raises(ProducerIdStateError):
        m.open()


def test_creates_missing_data_dir(tmp_path):
    d = tmp_path / "a" / "b"
    m = ProducerIdManager(str(d))
    assert not d.exists()
    m.open()
    assert m.allocate() == 0 and (d / "producer_ids").exists()
    assert m.next_id == 1


def test_bad_block_size(tmp_path):
    with pytest.raises(ValueError):
        ProducerIdManager(str(tmp_path), block_size=0)


def test_ensure_above_moves_past_ids_in_the_logs_and_writes_a_block_from_there(tmp_path):
    m = opened(tmp_path, block_size=10)
    assert m.ensure_above(4) and m.next_id == 5  # inside the block open asked for
    assert m.allocate() == 5
    assert not m.ensure_above(3)
    assert m.ensure_above(500) and m.next_id == 501
    assert m.allocate() == 501
    assert json.loads((tmp_path / "producer_ids").read_text())["block_end"] > 501
    assert opened(tmp_path, block_size=10).allocate() > 501  # after a restart too
