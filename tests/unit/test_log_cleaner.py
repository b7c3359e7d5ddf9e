"""Log compaction (storage/cleaner.py, storage/log_cleaner.py) on a LogManager in a temp dir:
latest value per key kept, offsets unchanged, tombstones and aborted transactions, markers,
read_committed view unchanged, crash in the middle of a swap."""

import os
from concurrent.futures import Future

import pytest
from minibroker.protocol.records import ATTR_CONTROL, build_batch, crc_ok, iter_batches, iter_records
from minibroker.storage.cleaner import CLEANER_DIR
from minibroker.storage.log import InlineFlusher
from minibroker.storage.log_cleaner import CLEANER_CHECKPOINT_FILE, SWAP_FILE
from minibroker.storage.log_manager import LogManager

from tests.support import storage as storage_support
from tests.support.storage import Clock, open_manager

pytestmark = pytest.mark.timeout(20)

COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}


def manager(path, clock) -> LogManager:
    return open_manager(path, clock, 600)


def new_topic(tmp_path, configs=COMPACT):
    return storage_support.new_topic(tmp_path, 600, configs, 100_000_000)


def run_pass(m: LogManager) -> bool:
    if not m.cleaner.maybe_clean():
        return False
    running = m.cleaner._running
    assert running is not None
    running[3].result(60)  # a niced worker process: slow to start on a loaded machine
    m.cleaner.finish_pass()
    return True


def put(plog, key, value, ts, **kw):
    return plog.append(build_batch([(key, value, [])], timestamp_ms=ts, **kw)).base_offset


def overwrite_keys(plog, rounds: int, keys: int, ts: int, prefix: bytes = b"v") -> None:
    """``rounds`` rounds of one ~60-byte value for each of keys k0..k<keys-1>."""
    for rnd in range(rounds):
        for k in range(keys):
            put(plog, b"k%d" % k, prefix + b"%d" % rnd + b"x" * 50, ts)


def read_all(plog, isolation=0):
    """(offset, key, value) as a consumer sees them, aborted transactions skipped for
    read_committed the way the Java consumer does it."""
    out = []
    offset = plog.log_start_offset
    limit = plog.last_stable_offset if isolation else plog.log_end_offset
    aborted_pids: set[int] = set()
    while offset < limit:
        result = plog.read(offset, 1 << 20, isolation)
        data = b"".join(c.read(c.position, c.length) for c in result.chunks)
        if not data:
            break
        pending = sorted(result.aborted or [], key=lambda a: a[1])
        for pos, h in iter_batches(data):
            if h.last_offset < offset:
                continue
            while pending and pending[0][1] <= h.last_offset:
                aborted_pids.add(pending.pop(0)[0])
            batch = data[pos : pos + h.size]
            if h.attributes & ATTR_CONTROL:
                aborted_pids.discard(h.producer_id)
            elif not (isolation and h.is_transactional and h.producer_id in aborted_pids):
                out += [(r.offset, r.key, r.value) for r in iter_records(batch)]
            offset = h.last_offset + 1
    return out


def latest(records):
    view = {}
    for offset, key, value in records:
        view[key] = (offset, value)
    return view


def test_compaction_keeps_latest_per_key_with_same_offsets(tmp_path):
    clock, m, plog = new_topic(tmp_path)
    for rnd in range(10):
        for k in range(5):
            put(plog, b"k%d" % k, b"v%d-%d" % (k, rnd) + b"x" * 40, clock.now)
    put(plog, b"k0", None, clock.now)  # tombstone
    for k in range(5, 8):
        put(plog, b"k%d" % k, b"tail" + b"y" * 40, clock.now)
    before = read_all(plog)
    size_before = sum(s.size for s in plog.segments)
    assert run_pass(m)
    after = read_all(plog)
    assert latest(after) == latest(before)
    assert set(after) <= set(before)  # same offsets, same contents
    assert len(after) < len(before) / 3
    assert sum(s.size for s in plog.segments) < size_before / 2
    assert (b"k0", None) in [(k, v) for _, k, v in after]  # tombstone kept for now
    assert plog.log_end_offset == 54
    # new writes keep their offsets; a restart reads the compacted log back the same
    assert put(plog, b"k1", b"new", clock.now) == 54
    m.close()
    m = manager(tmp_path, clock)
    plog = m.get_log("t", 0)
    assert read_all(plog) == after + [(54, b"k1", b"new")]
    m.close()


def test_tombstones_go_after_delete_retention(tmp_path):
    clock, m, plog = new_topic(tmp_path, {**COMPACT, "delete.retention.ms": "1000"})
    for k in range(6):
        put(plog, b"k%d" % k, b"v" * 50, clock.now)
    for k in range(3):
        put(plog, b"k%d" % k, None, clock.now)
    for k in range(10):
        put(plog, b"z%d" % k, b"w" * 50, clock.now)
    assert run_pass(m)
    assert sum(v is None for _, _, v in read_all(plog)) == 3
    clock.now += 5000  # the tombstones are now in the cleaned part and old enough
    for k in range(10):
        put(plog, b"z%d" % k, b"w2" * 30, clock.now)
    assert run_pass(m)
    keys = {k for _, k, v in read_all(plog)}
    assert not {b"k0", b"k1", b"k2"} & keys and {b"k3", b"k4", b"k5"} <= keys
    m.close()


def test_aborted_transactions_removed_read_committed_view_unchanged(tmp_path):
    clock, m, plog = new_topic(tmp_path)
    seq = {7: 0, 8: 0}

    def txn_put(pid, key, value):
        put(
            plog,
            key,
            value,
            clock.now,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=seq[pid],
            transactional=True,
        )
        seq[pid] += 1

    for rnd in range(6):
        txn_put(7, b"a", b"committed-%d" % rnd + b"c" * 40)
        txn_put(8, b"b", b"aborted-%d" % rnd + b"d" * 40)
        plog.append_marker(7, 0, True, 0)
        plog.append_marker(8, 0, False, 0)
        put(plog, b"plain%d" % rnd, b"p" * 40, clock.now)
    for k in range(6):
        put(plog, b"tail%d" % k, b"t" * 60, clock.now)
    committed_before = read_all(plog, 1)
    uncommitted_before = read_all(plog, 0)
    assert run_pass(m)
    committed_after = read_all(plog, 1)
    assert latest(committed_after) == latest(committed_before)
    assert all(not (v or b"").startswith(b"aborted") for _, _, v in read_all(plog, 0))
    assert len(read_all(plog, 0)) < len(uncommitted_before)
    # producers keep working after compaction (their last batch is retained)
    txn_put(7, b"a", b"after")
    plog.append_marker(7, 0, True, 0)
    assert latest(read_all(plog, 1))[b"a"][1] == b"after"
    m.close()


def test_interrupted_swap_completes_and_unfinished_pass_is_discarded(tmp_path):
    clock, m, plog = new_topic(tmp_path)
    overwrite_keys(plog, 8, 4, clock.now)
    before = latest(read_all(plog))
    # run the pass but stop "the process" after the swap list was written
    assert m.cleaner.maybe_clean()
    _, job, _, future = m.cleaner._running
    result = future.result(10)
    work = os.path.join(plog.dir, CLEANER_DIR)
    with open(os.path.join(work, SWAP_FILE), "w") as f:
        f.write("".join(f"{b} {' '.join(map(str, olds))}\n" for b, olds in result.rewritten.items()))
    m.cleaner._running = None
    m.close()
    m = manager(tmp_path, clock)
    assert not os.path.exists(work)
    after = read_all(m.get_log("t", 0))
    assert latest(after) == before and len(after) < 32
    m.close()
    # output without a swap list is dropped, the log is unchanged
    os.makedirs(work)
    with open(os.path.join(work, "00000000000000000000.log"), "wb") as f:
        f.write(b"garbage")
    m = manager(tmp_path, clock)
    assert not os.path.exists(work) and read_all(m.get_log("t", 0)) == after
    m.close()


def test_delete_policy_logs_and_open_transactions_are_not_cleaned(tmp_path):
    clock = Clock(100_000_000)
    m = manager(tmp_path, clock)
    m.create_topic("d", 1, {})
    m.create_topic("t", 1, COMPACT)
    for name in ("d", "t"):
        plog = m.get_log(name, 0)
        put(
            plog,
            b"k",
            b"open" + b"o" * 60,
            clock.now,
            producer_id=3,
            producer_epoch=0,
            base_sequence=0,
            transactional=True,
        )
        for _ in range(20):
            put(plog, b"k", b"v" * 60, clock.now)
    assert not run_pass(m)  # LSO is at offset 0 in "t"; "d" is not compacted
    m.close()


def test_small_cleaned_segments_are_merged(tmp_path):
    clock, m, plog = new_topic(tmp_path)
    overwrite_keys(plog, 20, 3, clock.now)
    segments_before = len(plog.segments)
    assert run_pass(m)  # first pass: 1 for 1 (each original segment is full)
    for rnd in range(8):
        put(plog, b"other", b"o%d" % rnd + b"y" * 60, clock.now)
    view = latest(read_all(plog))
    assert run_pass(m)  # second pass: the small cleaned segments fit in one
    assert len(plog.segments) < segments_before / 2
    assert latest(read_all(plog)) == view
    files = sorted(os.listdir(plog.dir))
    assert len([f for f in files if f.endswith(".log")]) == len(plog.segments)
    m.close()
    m = manager(tmp_path, clock)
    assert latest(read_all(m.get_log("t", 0))) == view
    m.close()


def test_a_killed_worker_process_is_replaced(tmp_path):
    import signal

    clock, m, plog = new_topic(tmp_path)
    overwrite_keys(plog, 8, 4, clock.now)
    before = read_all(plog)
    assert run_pass(m)  # starts the worker
    overwrite_keys(plog, 8, 4, clock.now, prefix=b"w")
    for pid in list(m.cleaner._executor._processes):
        os.kill(pid, signal.SIGKILL)
    if m.cleaner.maybe_clean():  # fails (or the dead pool is noticed at submit)
        m.cleaner._running[3].exception(10)
        m.cleaner.finish_pass()
    assert latest(read_all(plog))[b"k0"][1].startswith(b"w7")
    assert run_pass(m)  # a new worker
    assert len(read_all(plog)) < len(before) + 32
    m.close()


def test_compaction_lags_and_dirty_ratio(tmp_path):
    clock = Clock(100_000_000)
    m = manager(tmp_path, clock)
    base = {"cleanup.policy": "compact"}
    m.create_topic("lag", 1, {**base, "min.compaction.lag.ms": "60000", "min.cleanable.dirty.ratio": "0.01"})
    lag = m.get_log("lag", 0)
    for rnd in range(10):
        put(lag, b"k", b"v%d" % rnd + b"x" * 60, clock.now)
    assert not run_pass(m)  # every record younger than min.compaction.lag.ms
    clock.now += 61_000
    assert run_pass(m)
    assert len(read_all(lag)) < 10

    m.create_topic("ratio", 1, base)  # min.cleanable.dirty.ratio 0.5
    ratio = m.get_log("ratio", 0)
    for k in range(40):  # distinct keys: cleaning removes nothing
        put(ratio, b"key%d" % k, b"x" * 60, clock.now)
    assert run_pass(m)
    for k in range(8):  # one more segment of updates: dirty/total well below 0.5
        put(ratio, b"key%d" % k, b"y" * 60, clock.now)
    assert not run_pass(m)
    m.set_topic_configs("ratio", {**base, "max.compaction.lag.ms": "1000"})
    clock.now += 2000
    assert run_pass(m)  # overdue: cleaned whatever the ratio
    assert latest(read_all(ratio))[b"key0"][1] == b"y" * 60
    assert len(read_all(ratio)) < 48
    m.close()


def raw_batches(plog):
    """(header, batch bytes) of every batch in the log, control batches included."""
    out = []
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        result = plog.read(offset, 1 << 20, 0)
        data = b"".join(c.read(c.position, c.length) for c in result.chunks)
        for pos, h in iter_batches(data):
            if h.last_offset >= offset:
                out.append((h, data[pos : pos + h.size]))
                offset = h.last_offset + 1
    return out


def test_kept_tombstones_carry_their_delete_horizon_in_the_batch(tmp_path):
    """KIP-534: the pass that first keeps a tombstone stamps now + delete.retention.ms into its
    batch (base timestamp, attribute bit 6); record timestamps do not change; a later pass
    drops the tombstone only once that horizon has passed."""
    clock = Clock()
    m = manager(tmp_path, clock)
    m.create_topic("t", 1, {**COMPACT, "delete.retention.ms": "10000"})
    plog = m.get_log("t", 0)
    written_at = clock.now
    for k in range(4):
        put(plog, b"k%d" % k, b"v" * 50, written_at)
    plog.append(
        build_batch(
            [(b"k0", None, [], written_at - 7), (b"k1", None, [], written_at)], timestamp_ms=written_at
        )
    )
    for k in range(10):
        put(plog, b"z%d" % k, b"w" * 50, clock.now)
    clock.now += 1000
    assert run_pass(m)
    stamped = [(h, b) for h, b in raw_batches(plog) if any(r.value is None for r in iter_records(b))]
    assert len(stamped) == 1
    h, batch = stamped[0]
    assert h.attributes & 0x40 and h.base_timestamp == clock.now + 10_000
    assert [(r.key, r.timestamp) for r in iter_records(batch)] == [
        (b"k0", written_at - 7),
        (b"k1", written_at),
    ]
    assert crc_ok(batch)
    clock.now += 5000  # not yet past the horizon: a pass keeps them
    for k in range(10):
        put(plog, b"z%d" % k, b"w2" * 30, clock.now)
    assert run_pass(m)
    assert sum(v is None for _, _, v in read_all(plog)) == 2
    clock.now += 6000  # past it: the next pass drops them
    for k in range(10):
        put(plog, b"z%d" % k, b"w3" * 30, clock.now)
    assert run_pass(m)
    keys = {k for _, k, _ in read_all(plog)}
    assert not {b"k0", b"k1"} & keys and {b"k2", b"k3"} <= keys
    m.close()


def test_markers_go_after_their_horizon_once_their_transaction_is_gone(tmp_path):
    """A COMMIT marker whose transaction's records were all compacted away by an earlier pass
    is stamped with a delete horizon by the next one and removed by a pass after the horizon
    (Kafka's CleanedTransactionMetadata with KIP-534); read_committed readers see the same
    records throughout."""
    clock = Clock()
    m = manager(tmp_path, clock)
    m.create_topic("t", 1, {**COMPACT, "delete.retention.ms": "10000"})
    plog = m.get_log("t", 0)
    put(
        plog,
        b"a",
        b"old" + b"o" * 50,
        clock.now,
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
        transactional=True,
    )
    plog.append_marker(7, 0, True, 0)
    put(
        plog,
        b"b",
        b"kept" + b"k" * 50,
        clock.now,
        producer_id=7,
        producer_epoch=0,
        base_sequence=1,
        transactional=True,
    )
    plog.append_marker(7, 0, True, 0)  # its transaction keeps a record: it stays
    put(plog, b"a", b"new" + b"n" * 50, clock.now, producer_id=9, producer_epoch=0, base_sequence=0)
    for k in range(10):
        put(plog, b"z%d" % k, b"w" * 50, clock.now)
    view = latest(read_all(plog, 1))

    def markers():
        return [h for h, _ in raw_batches(plog) if h.attributes & ATTR_CONTROL]

    assert run_pass(m)  # the txn's only record is superseded and removed; the marker stays
    assert [h.attributes & 0x40 for h in markers()] == [0, 0]
    for k in range(10):
        put(plog, b"z%d" % k, b"w1" * 30, clock.now)
    assert run_pass(m)  # no batch of that txn left: the marker is stamped, still kept
    assert [(h.base_offset, bool(h.attributes & 0x40), h.base_timestamp) for h in markers()] == [
        (1, True, clock.now + 10_000),
        (3, False, clock.now),
    ]
    clock.now += 10_001
    for k in range(10):
        put(plog, b"z%d" % k, b"w2" * 30, clock.now)
    assert run_pass(m)
    assert [h.base_offset for h in markers()] == [3]
    after = latest(read_all(plog, 1))
    assert (after[b"a"], after[b"b"]) == (view[b"a"], view[b"b"])
    m.close()


@pytest.mark.parametrize("compression", [0, 1])  # none, gzip
def test_multi_record_batches_partly_kept_with_tombstones(tmp_path, compression):
    """Batches of several records, some superseded inside the same batch or by later ones,
    tombstones among them: the pass keeps exactly the latest record per key with its offset and
    timestamp, rebuilt batches are valid (CRC, codec) and a restart reads the same."""
    clock = Clock()
    m = manager(tmp_path, clock)
    m.create_topic("t", 1, {**COMPACT, "delete.retention.ms": "60000"})
    plog = m.get_log("t", 0)
    for rnd in range(6):
        records = [
            (
                b"k%d" % (i % 5),
                None if (rnd, i) == (5, 4) else b"v%d-%d" % (rnd, i) * 8,
                [],
                clock.now + rnd * 10 + i,
            )
            for i in range(7)
        ]
        plog.append(build_batch(records, timestamp_ms=clock.now, compression=compression))
    for k in range(6):
        put(plog, b"z%d" % k, b"w" * 60, clock.now)
    before = read_all(plog)
    stamps = {
        off: ts
        for h, b in raw_batches(plog)
        for off, ts in ((r.offset, r.timestamp) for r in iter_records(b))
    }
    assert run_pass(m)
    after = read_all(plog)
    assert latest(after) == latest(before) and len(after) < len(before)
    assert set(after) <= set(before)
    stamped = []
    for h, batch in raw_batches(plog):
        assert crc_ok(batch) and h.compression == (compression if h.base_offset < 42 else 0)
        for r in iter_records(batch):
            assert r.timestamp == stamps[r.offset]
        if any(r.value is None for r in iter_records(batch)):
            stamped.append(h.base_offset)
            assert h.attributes & 0x40 and h.base_timestamp == clock.now + 60_000
    assert stamped == [35]  # the last round's batch, which keeps k4's tombstone
    m.close()
    m = manager(tmp_path, clock)
    assert read_all(m.get_log("t", 0)) == after
    m.close()


class HeldFlusher(InlineFlusher):
    """Background disk work waits until ``run()``: the broker's io thread, not there yet."""

    def __init__(self) -> None:
        self.held: list = []

    def submit(self, fn, /, *args):
        fut: Future = Future()
        self.held.append((fut, fn, args))
        return fut

    def run(self) -> None:
        while self.held:
            fut, fn, args = self.held.pop(0)
            try:
                fut.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the future's reader
                fut.set_exception(exc)


def test_the_swap_waits_for_its_list_on_disk_and_leaves_the_fsyncs_to_the_flusher(tmp_path):
    clock, held = Clock(100_000_000), HeldFlusher()
    m = LogManager(str(tmp_path), {"log.segment.bytes": 600}, clock=clock, flusher=held)
    m.open()
    m.create_topic("t", 1, COMPACT)
    plog = m.get_log("t", 0)
    overwrite_keys(plog, 8, 4, clock.now)
    held.run()  # the rolls' fsyncs
    before, segments = read_all(plog), list(plog.segments)
    work = tmp_path / "t-0" / CLEANER_DIR
    assert m.cleaner.maybe_clean()
    m.cleaner._running[3].result(10)
    m.cleaner.finish_pass()  # the swap list is the flusher's now: nothing installed yet
    assert plog.segments == segments and not (work / SWAP_FILE).exists()
    assert m.cleaner.maybe_clean()  # still swapping
    held.run()
    assert (work / SWAP_FILE).exists() and plog.segments == segments
    m.cleaner.maybe_clean()  # the list is on disk: the segments are swapped in here
    assert plog.segments != segments and latest(read_all(plog)) == latest(before)
    assert sum(s.size for s in plog.segments) < sum(s.size for s in segments) / 2
    assert (work / SWAP_FILE).exists()  # until the directory is fsynced (a restart completes it)
    assert not (tmp_path / CLEANER_CHECKPOINT_FILE).exists()
    held.run()
    assert not work.exists()
    assert "t 0 " in (tmp_path / CLEANER_CHECKPOINT_FILE).read_text()
    assert m.cleaner.passes == 1
    m.close()
