"""LogLoader after an unclean stop: work proportional to what follows the recovery point.

Recovery starts at the recovery point inside its segment, producer state loads the snapshot a
recovery-point checkpoint wrote and replays only what follows, a torn tail after the recovery
point is still cut, a missing or garbage snapshot falls back to a full replay, and (as in
Kafka) a byte damaged below the recovery point is not looked at by an unclean start; with
nothing after the recovery point nothing is checked or rewritten."""

import os
import struct
import threading

import pytest
import structlog
from minibroker.protocol.records import build_batch, iter_batches
from minibroker.storage import segment as segment_module
from minibroker.storage.log import PartitionLog
from minibroker.storage.producer_state import ProducerStateManager
from minibroker.storage.recovery_checkpoint import plan_snapshots, write_snapshots

from tests.support.storage import crash_log, flip_byte, open_partition_log

pytestmark = pytest.mark.timeout(20)

BIG = 1 << 20  # one segment for everything below


def open_log(path, **kw) -> PartitionLog:
    return open_partition_log(path, **{"segment_bytes": BIG, "index_interval_bytes": 300, **kw})


def checkpoint(plog: PartitionLog) -> int:
    """What the broker's periodic checkpoint does, synchronously: plan the snapshot, fsync
    (recovery point moves), write the snapshot. Returns the recovery point."""
    pending = plan_snapshots([plog])
    plog.flush()
    for item in write_snapshots(pending):
        plog.snapshot_written(item.offset)
    return plog.recovery_point


class Producer:
    """A transactional producer writing one-record transactions into ``plog``."""

    def __init__(self, plog, pid):
        self.plog, self.pid, self.seq = plog, pid, 0

    def batch(self, seq):
        return build_batch(
            [(b"k", b"v" * 40)],
            timestamp_ms=1000 + seq,
            producer_id=self.pid,
            producer_epoch=0,
            base_sequence=seq,
            transactional=True,
        )

    def txn(self, commit=True):
        self.plog.append(self.batch(self.seq))
        self.seq += 1
        return self.plog.append_marker(self.pid, 0, commit, 0)


def state(plog):
    """Everything a restart must preserve."""
    ends = [plog.read(o, 1 << 20, 1).aborted for o in range(0, plog.log_end_offset, 7)]
    seg = plog.segments[-1]
    return (
        plog.log_end_offset,
        plog.last_stable_offset,
        ends,
        [
            (e.producer_id, e.epoch, e.last_sequence, e.current_txn_first_offset)
            for e in plog.producer_state.producers()
        ],
        plog.offset_for_timestamp(1010),
        plog.offset_for_timestamp(-3),
        [e for s in plog.segments for e in s.txn_index.entries],
        seg.max_timestamp,
    )


def recovered_event(logs):
    found = [e for e in logs if e["event"] == "recovered partition log"]
    assert len(found) == 1
    return found[0]


def build(path, before=60, after=15, aborts_every=4):
    """One segment: ``before`` transactions, a checkpoint, ``after`` more (some aborted, one
    left open), then a SIGKILL. Returns (expected state, recovery point, bytes after it)."""
    plog = open_log(path)
    p1, p2 = Producer(plog, 1), Producer(plog, 2)
    for i in range(before):
        (p1 if i % 2 else p2).txn(commit=i % aborts_every != 0)
    rp = checkpoint(plog)
    size_at_rp = plog.segments[-1].size
    for i in range(after):
        (p1 if i % 2 else p2).txn(commit=i % aborts_every != 1)
    plog.append(p1.batch(p1.seq))  # an open transaction
    p1.seq += 1
    expect = state(plog)
    tail = plog.segments[-1].size - size_at_rp
    crash_log(plog)
    return expect, rp, tail


def _spy_recover(monkeypatch) -> list:
    """Every LogSegment.recover result, in call order."""
    checked = []
    real = segment_module.LogSegment.recover

    def spy(self, from_offset=None):
        checked.append(real(self, from_offset))
        return checked[-1]

    monkeypatch.setattr(segment_module.LogSegment, "recover", spy)
    return checked


def test_recovery_starts_at_the_recovery_point_inside_the_segment(tmp_path, monkeypatch):
    expect, rp, tail = build(tmp_path / "p")
    checked = _spy_recover(monkeypatch)
    with structlog.testing.capture_logs() as logs:
        plog = open_log(tmp_path / "p", recovery_point=rp)
    assert len(checked) == 1 and checked[0].checked_from > 0 and checked[0].truncated_bytes == 0
    event = recovered_event(logs)
    assert event["bytes_checked"] == tail
    # the snapshot at the recovery point was loaded: only the batches after it were replayed
    assert event["batches_replayed"] == 2 * 15 + 1
    assert state(plog) == expect
    # as Kafka, the recovery point moves only after an fsync: the next checkpoint's, which
    # also takes the snapshot a later crash will start from
    assert plog.recovery_point == rp
    assert checkpoint(plog) == expect[0]
    assert (tmp_path / "p" / f"{expect[0]:020d}.snapshot").exists()
    # indexes as a full recovery builds them
    index, time_index = plog.segments[-1].index.entries(), plog.segments[-1].time_index.entries()
    crash_log(plog)
    full = open_log(tmp_path / "p", recovery_point=0)
    assert state(full) == expect
    assert full.segments[-1].index.entries() == index
    assert full.segments[-1].time_index.entries() == time_index
    # and what recovery wrote reads back the same after a clean stop
    full.close()
    assert state(open_log(tmp_path / "p", clean=True)) == expect


def test_producer_dedup_and_appends_continue_after_a_partial_recovery(tmp_path):
    expect, rp, _ = build(tmp_path / "p")
    plog = open_log(tmp_path / "p", recovery_point=rp)
    p1 = Producer(plog, 1)
    p1.seq = 38  # 30 before + 7 after the checkpoint + the open one
    retry = plog.append(p1.batch(p1.seq - 1))
    assert retry.duplicate and retry.base_offset == expect[0] - 1
    assert plog.append_marker(1, 0, True, 0) == expect[0]
    assert plog.append(p1.batch(p1.seq)).base_offset == expect[0] + 1


def test_torn_tail_after_the_recovery_point_is_still_cut(tmp_path):
    expect, rp, _ = build(tmp_path / "p")
    path = os.path.join(tmp_path / "p", f"{0:020d}.log")
    size = os.path.getsize(path)
    os.truncate(path, size - 10)  # the open transaction's batch is torn
    with structlog.testing.capture_logs() as logs:
        plog = open_log(tmp_path / "p", recovery_point=rp)
    cut = [e for e in logs if "torn or corrupt tail" in e["event"]]
    assert len(cut) == 1 and cut[0]["from_offset"] == expect[0] - 1
    assert plog.log_end_offset == expect[0] - 1
    assert plog.last_stable_offset == plog.log_end_offset  # the open transaction is gone
    assert os.path.getsize(path) < size - 10


def test_a_flipped_byte_after_the_recovery_point_cuts_from_there(tmp_path):
    expect, rp, tail = build(tmp_path / "p")
    path = os.path.join(tmp_path / "p", f"{0:020d}.log")
    size = os.path.getsize(path)
    at = size - tail + 260  # in the records of the third batch after the recovery point
    flip_byte(path, at, 0x10)
    plog = open_log(tmp_path / "p", recovery_point=rp)
    assert rp < plog.log_end_offset < expect[0]
    assert os.path.getsize(path) <= at


@pytest.mark.parametrize("damage", ["delete", "garbage"])
def test_missing_or_garbage_snapshot_falls_back_to_a_full_replay(tmp_path, damage):
    expect, rp, _ = build(tmp_path / "p")
    d = tmp_path / "p"
    snap = d / f"{rp:020d}.snapshot"
    assert snap.exists()
    if damage == "delete":
        for name in os.listdir(d):
            if name.endswith(".snapshot"):
                os.unlink(d / name)
    else:
        snap.write_bytes(b"MBPS" + os.urandom(40))
    with structlog.testing.capture_logs() as logs:
        plog = open_log(d, recovery_point=rp)
    assert recovered_event(logs)["batches_replayed"] == 2 * 75 + 1  # the whole log
    assert state(plog) == expect


def test_snapshot_above_the_recovery_point_is_not_trusted(tmp_path):
    """A checkpoint that wrote its snapshot but died before the checkpoint file: the loader
    replays from the snapshot at or below the recovery point it was given."""
    plog = open_log(tmp_path / "p")
    p1 = Producer(plog, 1)
    for _ in range(10):
        p1.txn()
    rp = checkpoint(plog)
    for _ in range(10):
        p1.txn(commit=False)
    pending = plan_snapshots([plog])
    write_snapshots(pending)  # no flush: the recovery point stays
    expect = state(plog)
    crash_log(plog)
    with structlog.testing.capture_logs() as logs:
        plog = open_log(tmp_path / "p", recovery_point=rp)
    assert recovered_event(logs)["batches_replayed"] == 20
    assert state(plog) == expect


def test_damaged_byte_below_the_recovery_point_is_not_checked_on_an_unclean_start(tmp_path):
    """As Kafka's LogLoader: an unclean start recovers only from the recovery point; bytes below
    it were fsynced before it moved. A record damaged there later is served as stored (the
    consumer's CRC check reports it), not silently cut along with everything after it."""
    expect, rp, tail = build(tmp_path / "p")
    path = os.path.join(tmp_path / "p", f"{0:020d}.log")
    at = 100  # a record of the first batch
    was = flip_byte(path, at, 0x01)
    plog = open_log(tmp_path / "p", recovery_point=rp)
    assert plog.log_end_offset == expect[0]
    data = b"".join(c.read(c.position, c.length) for c in plog.read(0, 100).chunks)
    assert data[at : at + 1] == bytes([was ^ 0x01])
    assert [h.base_offset for _, h in iter_batches(data)][:1] == [0]


def test_recovery_point_not_on_a_batch_boundary_recovers_the_whole_segment(tmp_path, monkeypatch):
    plog = open_log(tmp_path / "p")
    for i in range(30):
        plog.append(build_batch([(b"k", b"v")] * 3, timestamp_ms=1000 + i))
    leo = plog.log_end_offset
    crash_log(plog)
    checked = _spy_recover(monkeypatch)
    plog = open_log(tmp_path / "p", recovery_point=31)  # inside a batch of 3
    assert checked[0].checked_from == 0 and plog.log_end_offset == leo


def test_checkpoint_plans_nothing_when_nothing_was_appended(tmp_path):
    plog = open_log(tmp_path / "p")
    assert plan_snapshots([plog]) == []  # empty log: the loader's state is the snapshot
    Producer(plog, 1).txn()
    assert checkpoint(plog) == plog.log_end_offset
    assert plan_snapshots([plog]) == []
    plog.close()
    snaps = sorted(n for n in os.listdir(tmp_path / "p") if n.endswith(".snapshot"))
    assert snaps == [f"{plog.log_end_offset:020d}.snapshot"]


def test_checkpoints_keep_only_the_newest_snapshots(tmp_path):
    plog = open_log(tmp_path / "p")
    producer = Producer(plog, 1)
    ends = []
    for _ in range(5):
        producer.txn()
        ends.append(checkpoint(plog))
    snaps = sorted(int(n[:20]) for n in os.listdir(tmp_path / "p") if n.endswith(".snapshot"))
    assert snaps == ends[-3:]  # as Kafka, a few are kept; the newest is at the recovery point


def test_no_snapshot_is_written_for_a_log_deleted_during_its_fsync(tmp_path):
    plog = open_log(tmp_path / "p")
    Producer(plog, 1).txn()
    pending = plan_snapshots([plog])
    plog.delete_files()  # DeleteTopics while the checkpoint's fsync ran
    assert write_snapshots(pending) == []
    assert not (tmp_path / "p").exists() or not any(
        n.endswith(".snapshot") for n in os.listdir(tmp_path / "p")
    )


def test_close_waits_for_a_checkpoint_snapshot_being_written(tmp_path, monkeypatch):
    """The snapshot is written in a worker thread while the loop goes on: a DeleteTopics (close,
    then the directory renamed away) must not let it land in a directory a new topic took."""
    plog = open_log(tmp_path / "p")
    Producer(plog, 1).txn()
    pending = plan_snapshots([plog])
    entered, release = threading.Event(), threading.Event()
    real = ProducerStateManager.write_snapshot

    def slow(self, offset, data):
        entered.set()
        assert release.wait(10)
        real(self, offset, data)

    monkeypatch.setattr(ProducerStateManager, "write_snapshot", slow)
    written: list = []
    writer = threading.Thread(target=lambda: written.extend(write_snapshots(pending)))
    writer.start()
    assert entered.wait(10)
    closer = threading.Thread(target=plog.close, kwargs={"flush": False})
    closer.start()
    closer.join(0.2)
    assert closer.is_alive(), "close() did not wait for the snapshot being written"
    release.set()
    writer.join(10)
    closer.join(10)
    assert not closer.is_alive() and written == pending
    assert write_snapshots(pending) == []  # closed: no snapshot any more


def test_an_unclean_start_without_a_snapshot_at_the_end_takes_one_at_the_next_checkpoint(tmp_path):
    """The recovery point can reach the log end through a flush that writes no snapshot; the
    loader then replays from an older one, and the next checkpoint must write one at the end."""
    plog = open_log(tmp_path / "p")
    p1 = Producer(plog, 1)
    p1.txn()
    checkpoint(plog)
    p1.txn()
    plog.flush()  # the recovery point moves to the end, no snapshot there
    rp = plog.recovery_point
    crash_log(plog)
    plog = open_log(tmp_path / "p", recovery_point=rp)
    assert [item.offset for item in plan_snapshots([plog])] == [plog.log_end_offset]


@pytest.mark.parametrize("transactions", [0, 20])
def test_an_unclean_start_with_nothing_after_the_recovery_point_checks_nothing(
    tmp_path, monkeypatch, transactions
):
    """A SIGKILL after the last checkpoint caught up (or of a log never written to) costs what
    a clean start does: the segment ends at the recovery point, so no batch is checked, no
    index file is rewritten and no recovery is logged."""
    plog = open_log(tmp_path / "p")
    p1 = Producer(plog, 1)
    for i in range(transactions):
        p1.txn(commit=i % 3 != 0)
    rp = checkpoint(plog)
    expect = state(plog)
    crash_log(plog)
    files = {n: (tmp_path / "p" / n).read_bytes() for n in os.listdir(tmp_path / "p")}
    checked = _spy_recover(monkeypatch)
    with structlog.testing.capture_logs() as logs:
        plog = open_log(tmp_path / "p", recovery_point=rp)
    assert checked == []
    assert [e for e in logs if e["event"] == "recovered partition log"] == []
    assert state(plog) == expect and plog.recovery_point == rp == expect[0]
    assert {n: (tmp_path / "p" / n).read_bytes() for n in os.listdir(tmp_path / "p")} == files
    # appends and producer dedup carry on; a crash after them recovers only those
    p1.plog = plog
    if transactions:
        assert plog.append(p1.batch(p1.seq - 1)).duplicate
    size_at_rp = plog.segments[-1].size
    p1.txn(commit=False)
    expect = state(plog)
    crash_log(plog)
    plog = open_log(tmp_path / "p", recovery_point=rp)
    assert [(r.checked_from, r.valid_bytes, r.batches) for r in checked] == [
        (size_at_rp, plog.segments[-1].size, 2)
    ]
    assert state(plog) == expect


def test_an_unclean_start_recovers_a_log_that_ends_below_its_recovery_point(tmp_path, monkeypatch):
    """Bytes the recovery point says were fsynced are missing (a lost write): not taken as a
    log that ends at its recovery point; the segment is recovered (here: found intact)."""
    plog = open_log(tmp_path / "p")
    for i in range(5):
        plog.append(build_batch([(b"k", b"v")], timestamp_ms=1000 + i))
    crash_log(plog)
    checked = _spy_recover(monkeypatch)
    plog = open_log(tmp_path / "p", recovery_point=9)
    assert [r.checked_from for r in checked] == [0] and plog.log_end_offset == 5


@pytest.mark.parametrize("lost", ["aborted transaction", "time index entry"])
def test_index_entries_past_a_recovery_point_the_log_ends_at_are_rebuilt(tmp_path, lost):
    """A power loss can keep index entries written after the last checkpoint while the log
    bytes behind them are lost. The log then ends at its recovery point, but the segment is
    recovered, not trusted: a stale aborted-transaction entry would make read_committed
    consumers skip the producer's next, committed records at those offsets."""
    plog = open_log(tmp_path / "p")
    p1 = Producer(plog, 1)
    for _ in range(3):
        p1.txn()
    rp = checkpoint(plog)
    size_at_rp = plog.segments[-1].size
    if lost == "aborted transaction":
        p1.txn(commit=False)
        assert plog.segments[-1].txn_index.entries[-1].last_offset >= rp
    crash_log(plog)
    directory = tmp_path / "p"
    log_file = next(n for n in os.listdir(directory) if n.endswith(".log"))
    os.truncate(directory / log_file, size_at_rp)  # the log's unsynced tail is lost
    if lost == "time index entry":  # the page of an entry for a batch past rp was kept
        with open(directory / log_file.replace(".log", ".timeindex"), "ab") as f:
            f.write(struct.pack(">qi", 9999, rp + 3))
    plog = open_log(tmp_path / "p", recovery_point=rp)
    seg = plog.segments[-1]
    assert plog.log_end_offset == rp
    assert all(t.last_offset < rp for t in seg.txn_index.entries)
    last_time = seg.time_index.last_entry()
    assert last_time is None or last_time[1] < rp
    p1.plog = plog
    p1.seq -= 1 if lost == "aborted transaction" else 0
    p1.txn(commit=True)  # the producer's retry, committed this time
    assert plog.read(rp, 1 << 20, 1).aborted == []
