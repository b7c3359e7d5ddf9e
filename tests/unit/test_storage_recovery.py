"""PartitionLog.open: clean restart without a scan, recovery after an unclean stop (torn tail,
flipped byte), rebuilt indexes, producer state and aborted transactions across restarts."""

import os

import pytest
import structlog
from minibroker.protocol.records import build_batch, iter_batches
from minibroker.storage import segment as segment_module
from minibroker.storage.log import PartitionLog

from tests.support.storage import crash_log, flip_byte, open_partition_log

pytestmark = pytest.mark.timeout(10)


def open_log(path, **kw) -> PartitionLog:
    return open_partition_log(path, **{"segment_bytes": 1000, "index_interval_bytes": 200, **kw})


def batch(n=1, ts=1000, **kw) -> bytes:
    return build_batch([(b"k", b"v" * 30, [])] * n, timestamp_ms=ts, **kw)


def all_offsets(plog) -> list[int]:
    out, offset = [], plog.log_start_offset
    while offset < plog.log_end_offset:
        r = plog.read(offset, 1 << 20)
        data = b"".join(c.read(c.position, c.length) for c in r.chunks)
        hs = [h for _, h in iter_batches(data)]
        out += [h.base_offset for h in hs]
        offset = hs[-1].last_offset + 1
    return out


def log_files(path) -> list[str]:
    return sorted(n for n in os.listdir(path) if n.endswith(".log"))


class Txns:
    def __init__(self, plog):
        self.plog, self.seq = plog, {}

    def send(self, pid, n=1):
        s = self.seq.get(pid, 0)
        self.seq[pid] = s + n
        return self.plog.append(
            batch(n, producer_id=pid, producer_epoch=0, base_sequence=s, transactional=True)
        ).base_offset

    def end(self, pid, commit):
        return self.plog.append_marker(pid, 0, commit, 0)


def aborted_views(plog) -> list:
    return [plog.read(o, 1 << 20, 1).aborted for o in range(plog.log_end_offset)]


def build_txn_log(path):
    """Several segments with aborts, commits and one transaction left open."""
    plog = open_log(path, segment_bytes=600)
    tx = Txns(plog)
    tx.send(1), tx.send(2), tx.send(1)
    tx.end(1, False)
    tx.send(3)
    tx.end(2, True)
    plog.append(batch(2))
    tx.send(4)
    tx.end(3, False)
    tx.send(5)
    tx.end(4, False)
    tx.send(6)  # left open
    plog.append(batch(1))
    assert len(plog.segments) >= 3
    return plog


# ----------------------------------------------------------------------------- clean restart
def test_clean_restart_reads_no_segment(tmp_path, monkeypatch):
    plog = build_txn_log(tmp_path / "p")
    expect = (
        plog.log_end_offset,
        plog.last_stable_offset,
        all_offsets(plog),
        aborted_views(plog),
        plog.offset_for_timestamp(-3),
        plog.offset_for_timestamp(999),
    )
    plog.close()

    scanned = []
    real_scan = segment_module.scan_batches

    def counting_scan(fd, start, end, stop, **kw):
        scanned.append((start, end))
        return real_scan(fd, start, end, stop, **kw)

    monkeypatch.setattr(
        segment_module.LogSegment, "recover", lambda self: pytest.fail("recovery after a clean shutdown")
    )
    monkeypatch.setattr(segment_module, "scan_batches", counting_scan)
    plog = open_log(tmp_path / "p", clean=True, segment_bytes=600)
    # only each segment's tail after its last index entry was read (to find where it ends)
    assert len(scanned) == len(plog.segments)
    assert all(end - start <= 600 for start, end in scanned)
    assert plog.recovery_point == plog.log_end_offset
    got = (
        plog.log_end_offset,
        plog.last_stable_offset,
        all_offsets(plog),
        aborted_views(plog),
        plog.offset_for_timestamp(-3),
        plog.offset_for_timestamp(999),
    )
    assert got == expect
    assert plog.append(batch(1)).base_offset == expect[0]


def test_dedup_survives_clean_and_unclean_restart(tmp_path):
    plog = open_log(tmp_path / "p")
    for s in range(3):
        plog.append(batch(1, producer_id=7, producer_epoch=0, base_sequence=s))
    plog.close()
    plog = open_log(tmp_path / "p", clean=True)
    assert plog.append(batch(1, producer_id=7, producer_epoch=0, base_sequence=2)).duplicate
    plog.append(batch(1, producer_id=7, producer_epoch=0, base_sequence=3))
    crash_log(plog)
    plog = open_log(tmp_path / "p")
    info = plog.append(batch(1, producer_id=7, producer_epoch=0, base_sequence=3))
    assert info.duplicate and info.base_offset == 3


# ----------------------------------------------------------------------------- unclean restart
def test_truncated_mid_batch_tail_is_cut_and_logged(tmp_path):
    plog = open_log(tmp_path / "p")
    for _ in range(20):
        plog.append(batch(2))
    last = plog.segments[-1]
    path, size = last.log_path, last.size
    crash_log(plog)
    os.truncate(path, size - 17)  # the last batch is torn

    with structlog.testing.capture_logs() as logs:
        plog = open_log(tmp_path / "p")
    assert plog.log_end_offset == 38
    assert all_offsets(plog) == list(range(0, 38, 2))
    cut = [e for e in logs if "torn or corrupt tail" in e["event"]]
    assert len(cut) == 1 and cut[0]["from_offset"] == 38 and cut[0]["log_level"] == "warning"
    assert cut[0]["bytes_removed"] == len(batch(2)) - 17
    assert plog.append(batch(1)).base_offset == 38
    assert os.path.getsize(path) == size - len(batch(2)) + len(batch(1))


def test_flipped_byte_cuts_from_corrupt_batch_and_drops_later_segments(tmp_path):
    plog = open_log(tmp_path / "p")
    for _ in range(40):
        plog.append(batch(2))
    assert len(plog.segments) >= 4
    victim = plog.segments[1]
    bsize = len(batch(2))
    flip_at = 3 * bsize + 70  # inside the 4th batch of the 2nd segment
    corrupt_offset = victim.base_offset + 6
    crash_log(plog)
    flip_byte(victim.log_path, flip_at, 0x40)

    with structlog.testing.capture_logs() as logs:
        plog = open_log(tmp_path / "p")
    assert plog.log_end_offset == corrupt_offset
    assert all_offsets(plog) == list(range(0, corrupt_offset, 2))
    assert log_files(tmp_path / "p") == [f"{s.base_offset:020d}.log" for s in plog.segments]
    assert len(plog.segments) == 2
    events = " | ".join(e["event"] for e in logs)
    assert "torn or corrupt tail" in events and "deleted the segments" in events
    assert any("CRC" in (e.get("reason") or "") for e in logs)
    assert plog.append(batch(1)).base_offset == corrupt_offset


def test_unclean_restart_checks_only_segments_after_recovery_point(tmp_path, monkeypatch):
    plog = open_log(tmp_path / "p")
    for _ in range(40):
        plog.append(batch(2))
    bases = [s.base_offset for s in plog.segments]
    rp = bases[-2] + 1  # inside the second-to-last segment
    crash_log(plog)
    recovered = []
    real = segment_module.LogSegment.recover

    def spy(self, from_offset=None):
        recovered.append(self.base_offset)
        return real(self, from_offset)

    monkeypatch.setattr(segment_module.LogSegment, "recover", spy)
    plog = open_log(tmp_path / "p", recovery_point=rp)
    assert recovered == bases[-2:]
    # as Kafka: the recovery point moves only after an fsync (the next checkpoint's)
    assert plog.log_end_offset == 80 and plog.recovery_point == rp


def test_garbage_after_last_batch_is_cut(tmp_path):
    plog = open_log(tmp_path / "p")
    plog.append(batch(1))
    path = plog.segments[-1].log_path
    crash_log(plog)
    with open(path, "ab") as f:
        f.write(b"\x00" * 100)  # e.g. a file system extending the file with zeros
    plog = open_log(tmp_path / "p")
    assert plog.log_end_offset == 1 and os.path.getsize(path) == len(batch(1))


def test_empty_log_files_after_crash(tmp_path):
    plog = open_log(tmp_path / "p")
    crash_log(plog)
    plog = open_log(tmp_path / "p")
    assert plog.log_end_offset == 0
    assert plog.append(batch(1)).base_offset == 0


# ----------------------------------------------------------------------------- indexes
@pytest.mark.parametrize("damage", ["delete", "partial-entry", "beyond-log"])
def test_damaged_indexes_are_rebuilt_after_clean_shutdown(tmp_path, damage):
    plog = open_log(tmp_path / "p")
    for i in range(40):
        plog.append(batch(2, ts=1000 + i))
    expect = (
        all_offsets(plog),
        [plog.offset_for_timestamp(t) for t in (1000, 1013, 1039)],
        [s.index.entries() for s in plog.segments],
        [s.time_index.entries() for s in plog.segments],
    )
    plog.close()
    d = tmp_path / "p"
    targets = sorted(n for n in os.listdir(d) if n.endswith((".index", ".timeindex")))
    for name in targets[:2] + targets[-2:]:  # first and last segment
        p = d / name
        if damage == "delete":
            os.unlink(p)
        elif damage == "partial-entry":
            with open(p, "ab") as f:
                f.write(b"\x01\x02\x03")
        elif name.endswith(".index"):
            with open(p, "ab") as f:
                f.write((1).to_bytes(4, "big") + (10**6).to_bytes(4, "big"))
        else:
            os.unlink(p)

    plog = open_log(tmp_path / "p", clean=True)
    assert sorted(n for n in os.listdir(d) if n.endswith((".index", ".timeindex"))) == targets
    got = (
        all_offsets(plog),
        [plog.offset_for_timestamp(t) for t in (1000, 1013, 1039)],
        [s.index.entries() for s in plog.segments],
        [s.time_index.entries() for s in plog.segments],
    )
    assert got[0] == expect[0] and got[1] == expect[1] and got[2] == expect[2]
    # a rebuilt time index may lack the final entry written at roll, never a needed one
    for before, after in zip(expect[3], got[3], strict=False):
        assert after == before[: len(after)] and len(after) >= len(before) - 1


# ----------------------------------------------------------------------------- transactions
def test_aborted_transactions_and_open_txn_survive_clean_restart(tmp_path):
    plog = build_txn_log(tmp_path / "p")
    expect = (aborted_views(plog), plog.last_stable_offset, plog.log_end_offset)
    plog.close()
    plog = open_log(tmp_path / "p", clean=True, segment_bytes=600)
    assert (aborted_views(plog), plog.last_stable_offset, plog.log_end_offset) == expect
    # the open transaction is still open: its abort marker lands in the index
    plog.append_marker(6, 0, False, 0)
    assert plog.aborted_transactions(0, plog.log_end_offset)[-1][0] == 6


@pytest.mark.parametrize(
    "damage", ["none", "delete-txnindex", "delete-snapshots", "recovery-point-in-last-segment"]
)
def test_aborted_transactions_rebuilt_after_unclean_restart(tmp_path, damage):
    plog = build_txn_log(tmp_path / "p")
    expect = (aborted_views(plog), plog.last_stable_offset, plog.log_end_offset)
    assert any(expect[0])
    rp = plog.segments[-1].base_offset if damage == "recovery-point-in-last-segment" else 0
    crash_log(plog)
    d = tmp_path / "p"
    for name in os.listdir(d):
        if (damage == "delete-txnindex" and name.endswith(".txnindex")) or (
            damage == "delete-snapshots" and name.endswith(".snapshot")
        ):
            os.unlink(d / name)
    plog = open_log(d, segment_bytes=600, recovery_point=rp)
    assert (aborted_views(plog), plog.last_stable_offset, plog.log_end_offset) == expect
    crash_log(plog)
    plog = open_log(d, clean=True, segment_bytes=600)  # what recovery wrote is consistent
    assert (aborted_views(plog), plog.last_stable_offset, plog.log_end_offset) == expect


def test_cut_abort_marker_reopens_the_transaction(tmp_path):
    plog = open_log(tmp_path / "p")
    tx = Txns(plog)
    plog.append(batch(1))
    first = tx.send(9)
    marker = tx.end(9, False)
    assert plog.aborted_transactions(0, 10) == [(9, first)]
    path, size = plog.segments[-1].log_path, plog.segments[-1].size
    crash_log(plog)
    os.truncate(path, size - 5)  # the marker is torn: it never happened
    plog = open_log(tmp_path / "p")
    assert plog.log_end_offset == marker
    assert plog.aborted_transactions(0, 10) == []
    assert plog.last_stable_offset == first
