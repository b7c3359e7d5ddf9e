"""Retention (storage/retention.py + PartitionLog.delete_oldest_segments + LogManager): whole
segments from the head only, log start offset advanced and persisted, DeleteRecords, producer
state and aborted-transaction lists across deleted segments."""

import os

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records import build_batch
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log_manager import LOG_START_OFFSET_FILE, LogManager

from tests.support import storage as storage_support
from tests.support.storage import open_manager

pytestmark = pytest.mark.timeout(10)


def manager(path, clock) -> LogManager:
    return open_manager(path, clock, 400)


def new_topic(tmp_path, configs=None):
    return storage_support.new_topic(tmp_path, 400, SMALL if configs is None else configs, 10_000_000)


def batch(ts: int, *, pid=-1, epoch=-1, seq=-1, txn=False, n=1) -> bytes:
    return build_batch(
        [(b"k", b"v" * 100, [])] * n,
        timestamp_ms=ts,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=txn,
    )


def fill(plog, count: int, ts: int) -> None:
    for _ in range(count):
        plog.append(batch(ts))


SMALL = {"file.delete.delay.ms": "0"}


def test_retention_bytes_deletes_oldest_whole_segments(tmp_path):
    clock, m, plog = new_topic(tmp_path, {**SMALL, "retention.bytes": "800"})
    fill(plog, 10, clock.now)  # ~170 B per batch, two per 400 B segment
    sizes_before = [s.size for s in plog.segments]
    assert len(sizes_before) == 5
    assert m.delete_old_segments() > 0
    remaining = sum(s.size for s in plog.segments)
    # Kafka's rule: never below the limit, at most one segment above it
    assert 800 <= remaining < 800 + plog.segments[0].size
    assert plog.log_start_offset == plog.segments[0].base_offset > 0
    assert plog.log_end_offset == 10
    with pytest.raises(KafkaStorageError) as exc:
        plog.read(0, 1000)
    assert exc.value.error_code == ErrorCode.offset_out_of_range
    assert plog.offset_for_timestamp(-2) == (plog.log_start_offset, -1)
    assert plog.read(plog.log_start_offset, 1000).chunks
    m.close()


def test_retention_ms_never_deletes_the_segment_being_appended_to(tmp_path):
    clock, m, plog = new_topic(tmp_path, {**SMALL, "retention.ms": "1000"})
    fill(plog, 4, clock.now - 5000)  # old: segments 0-1 and 2-3
    fill(plog, 2, clock.now)  # fresh: segment 4-5, the active one
    assert m.delete_old_segments() == 2
    assert plog.log_start_offset == 4 and plog.segments[0].base_offset == 4
    clock.now += 10_000  # now everything is old: the log rolls, then deletes
    assert m.delete_old_segments() == 1
    assert plog.log_start_offset == plog.log_end_offset == 6
    assert [s.size for s in plog.segments] == [0]
    plog.append(batch(clock.now))
    assert plog.read(6, 1000).chunks
    m.close()


def test_log_start_offset_survives_restart_clean_and_unclean(tmp_path):
    clock, m, plog = new_topic(tmp_path)
    fill(plog, 6, clock.now)
    assert m.delete_records("t", 0, 3) == 3
    assert m.get_log("t", 0).segments[0].base_offset == 0  # nothing deleted yet
    m.close()
    assert (tmp_path / LOG_START_OFFSET_FILE).read_text().splitlines() == ["0", "1", "t 0 3"]
    m = manager(tmp_path, clock)
    assert m.get_log("t", 0).log_start_offset == 3
    assert m.delete_old_segments() == 1  # segment 0-1 is wholly below 3
    assert m.get_log("t", 0).segments[0].base_offset == 2
    for plog in m.all_logs():  # SIGKILL-like: no close
        for seg in plog.segments:
            seg.close()
    m = manager(tmp_path, clock)
    assert m.get_log("t", 0).log_start_offset == 3
    with pytest.raises(KafkaStorageError) as exc:
        m.delete_records("t", 0, 7)
    assert exc.value.error_code == ErrorCode.offset_out_of_range
    assert m.delete_records("t", 0, -1) == 6
    m.close()


def test_garbage_log_start_checkpoint_falls_back_to_first_segment(tmp_path):
    clock, m, plog = new_topic(tmp_path)
    fill(plog, 4, clock.now)
    m.delete_records("t", 0, 3)
    m.close()
    (tmp_path / LOG_START_OFFSET_FILE).write_bytes(b"\xff\xfe\x00garbage")
    m = manager(tmp_path, clock)
    assert m.get_log("t", 0).log_start_offset == 0
    m.close()


def test_idempotent_producer_continues_after_its_batches_were_deleted(tmp_path):
    clock, m, plog = new_topic(tmp_path, {**SMALL, "retention.ms": "1000"})
    old = clock.now - 5000
    for seq in range(3):
        plog.append(batch(old, pid=7, epoch=0, seq=seq))
    clock.now += 1
    assert m.delete_old_segments() > 0
    assert plog.log_start_offset == plog.log_end_offset == 3
    info = plog.append(batch(clock.now, pid=7, epoch=0, seq=3))
    assert (info.base_offset, info.duplicate) == (3, False)
    m.close()
    m = manager(tmp_path, clock)
    plog = m.get_log("t", 0)
    assert plog.append(batch(clock.now, pid=7, epoch=0, seq=3)).duplicate  # retry still known
    assert plog.append(batch(clock.now, pid=7, epoch=0, seq=4)).base_offset == 4
    m.close()


def test_aborted_transaction_kept_while_its_marker_segment_lives(tmp_path):
    clock, m, plog = new_topic(tmp_path, {**SMALL, "retention.ms": "1000"})
    old = clock.now - 5000
    plog.append(batch(old))  # 0
    plog.append(batch(old))  # 1
    plog.append(batch(clock.now, pid=9, epoch=0, seq=0, txn=True))  # 2, new segment
    plog.append_marker(9, 0, False, 0)  # 3: abort
    plog.append(batch(clock.now))  # 4
    assert m.delete_old_segments() == 1
    assert plog.log_start_offset == 2
    result = plog.read(2, 10_000, isolation_level=1)
    assert result.aborted == [(9, 2)]
    m.close()
    m = manager(tmp_path, clock)
    assert m.get_log("t", 0).read(2, 10_000, isolation_level=1).aborted == [(9, 2)]
    m.close()


def test_compact_only_policy_ignores_time_and_size(tmp_path):
    clock, m, plog = new_topic(
        tmp_path, {**SMALL, "retention.ms": "1", "retention.bytes": "0", "cleanup.policy": "compact"}
    )
    fill(plog, 6, clock.now - 5000)
    assert m.delete_old_segments() == 0
    m.close()


def test_deleted_segment_stays_readable_until_the_delay_passes(tmp_path):
    clock, m, plog = new_topic(tmp_path, {"retention.bytes": "0", "file.delete.delay.ms": "60000"})
    fill(plog, 4, clock.now)
    held = plog.read(0, 1000).chunks[0]
    assert m.delete_old_segments() > 0
    assert not os.path.exists(os.path.join(plog.dir, "00000000000000000000.log"))
    assert len(held.read(held.position, held.length)) == held.length
    m.close()


def test_recreated_topic_does_not_inherit_the_log_start_offset(tmp_path):
    clock, m, plog = new_topic(tmp_path)
    fill(plog, 6, clock.now)
    m.delete_records("t", 0, 5)
    m.delete_topic("t")
    m.create_topic("t", 1, SMALL)
    fill(m.get_log("t", 0), 3, clock.now)
    for plog in m.all_logs():  # SIGKILL-like: no close, no final checkpoint
        for seg in plog.segments:
            seg.close()
    m = manager(tmp_path, clock)
    assert m.get_log("t", 0).log_start_offset == 0
    m.close()


def test_last_stable_offset_never_below_the_log_start(tmp_path):
    clock, m, plog = new_topic(tmp_path)
    plog.append(batch(clock.now))
    plog.append(batch(clock.now, pid=4, epoch=0, seq=0, txn=True))  # open transaction at 1
    fill(plog, 3, clock.now)
    assert plog.last_stable_offset == 1
    m.delete_records("t", 0, 3)
    assert plog.last_stable_offset == 3
    plog.append_marker(4, 0, True, 0)
    assert plog.last_stable_offset == plog.log_end_offset
    m.close()
