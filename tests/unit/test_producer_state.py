"""Unit tests for storage.producer_state (Kafka's ProducerStateManager/ProducerAppendInfo rules)."""

from __future__ import annotations

import os
import struct
import time

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records import build_control_batch, parse_header
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.producer_state import (
    BatchMetadata,
    CompletedTxn,
    ProducerStateManager,
    parse_end_txn_marker,
    snapshot_path,
)

from tests.support.wire import encode_uvarint

INT32_MAX = 2**31 - 1
DAY_MS = 24 * 3600 * 1000
TXN = 0x10
CTRL = 0x20


# --------------------------------------------------------------------------- batch building
def _varint(v: int) -> bytes:
    return encode_uvarint((v << 1) ^ (v >> 63))  # zig-zag


def _record(offset_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = bytearray(b"\x00")  # attributes
    body += _varint(0)  # timestamp delta
    body += _varint(offset_delta)
    for part in (key, value):
        if part is None:
            body += _varint(-1)
        else:
            body += _varint(len(part)) + part
    body += _varint(0)  # headers
    return _varint(len(body)) + bytes(body)


def batch_bytes(
    pid: int = 1,
    epoch: int = 0,
    seq: int = 0,
    count: int = 1,
    *,
    attrs: int = 0,
    records: bytes | None = None,
    base_offset: int = 0,
    timestamp: int = 1000,
) -> bytes:
    """A magic-2 batch (CRC left 0: producer state does not look at it)."""
    if records is None:
        records = b"".join(_record(i, None, b"v") for i in range(count))
    body = struct.pack(">hiqqqhii", attrs, count - 1, timestamp, timestamp, pid, epoch, seq, count) + records
    # baseOffset, batchLength, partitionLeaderEpoch, magic, crc
    return struct.pack(">qiibI", base_offset, len(body) + 9, 0, 2, 0) + body


def marker_bytes(pid: int, epoch: int, *, abort: bool, coordinator_epoch: int = 0) -> bytes:
    rec = _record(0, struct.pack(">hh", 0, 0 if abort else 1), struct.pack(">hi", 0, coordinator_epoch))
    return batch_bytes(pid, epoch, -1, 1, attrs=TXN | CTRL, records=rec)


def hdr(pid: int = 1, epoch: int = 0, seq: int = 0, count: int = 1, *, attrs: int = 0):
    return parse_header(batch_bytes(pid, epoch, seq, count, attrs=attrs))


def marker_hdr(pid: int, epoch: int, abort: bool = False, coordinator_epoch: int = 0):
    return parse_header(marker_bytes(pid, epoch, abort=abort, coordinator_epoch=coordinator_epoch))


class Log:
    """Minimal partition log driving the manager the way PartitionLog does."""

    def __init__(self, psm: ProducerStateManager) -> None:
        self.psm = psm
        self.next_offset = 0
        self.now = 1_000_000

    def append(self, header) -> BatchMetadata | tuple[int, int]:
        dup = self.psm.check(header)
        if dup is not None:
            return dup
        first = self.next_offset
        self.next_offset += header.last_offset_delta + 1
        self.psm.update(header, first, self.now)
        return first, self.next_offset - 1

    def marker(self, pid: int, epoch: int, abort: bool, coordinator_epoch: int = 0):
        header = marker_hdr(pid, epoch, abort, coordinator_epoch)
        self.psm.check(header, coordinator_epoch=coordinator_epoch)
        off = self.next_offset
        self.next_offset += 1
        return self.psm.update(header, off, self.now, abort=abort, coordinator_epoch=coordinator_epoch)


@pytest.fixture
def psm(tmp_path):
    return ProducerStateManager(str(tmp_path), DAY_MS)


@pytest.fixture
def log(psm):
    return Log(psm)


def code_of(excinfo) -> int:
    return int(excinfo.value.error_code)


# --------------------------------------------------------------------------- basic rules
def test_real_header_fields_used(log):
    h = hdr(7, 3, 10, 4, attrs=TXN)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_offset_delta) == (7, 3, 10, 3)
    assert h.is_transactional and not h.is_control


def test_no_producer_id_is_ignored(log, psm):
    h = hdr(-1, -1, -1, 3)
    assert psm.check(h) is None
    assert psm.update(h, 0, 5) is None
    assert psm.check(h) is None  # a "retry" of a non-idempotent batch is appended again
    assert len(psm) == 0 and list(psm.producers()) == []


def test_unknown_producer_accepts_any_sequence(log, psm):
    assert psm.check(hdr(1, 0, 42)) is None
    assert psm.check(hdr(2, 5, INT32_MAX)) is None
    assert log.append(hdr(3, 0, 1234, 2)) == (0, 1)
    assert psm.get(3).last_sequence == 1235


def test_producer_id_without_sequence_is_invalid_record(log, psm):
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(1, 0, -1))
    assert code_of(ei) == ErrorCode.invalid_record


def test_in_sequence_batches(log, psm):
    assert log.append(hdr(1, 0, 0, 3)) == (0, 2)
    assert log.append(hdr(1, 0, 3, 1)) == (3, 3)
    assert log.append(hdr(1, 0, 4, 10)) == (4, 13)
    e = psm.get(1)
    assert (e.epoch, e.last_sequence, e.last_timestamp) == (0, 13, log.now)


def test_gap_is_out_of_order(log, psm):
    log.append(hdr(1, 0, 0, 3))
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(1, 0, 4))
    assert code_of(ei) == ErrorCode.out_of_order_sequence_number == 45


def test_exact_retry_returns_original_metadata(log, psm):
    log.append(hdr(1, 0, 0, 3))
    log.now += 50
    log.append(hdr(1, 0, 3, 2))
    dup = psm.check(hdr(1, 0, 0, 3))
    assert isinstance(dup, BatchMetadata)
    assert (dup.first_offset, dup.last_offset, dup.timestamp) == (0, 2, 1_000_000)
    dup = psm.check(hdr(1, 0, 3, 2))
    assert (dup.first_offset, dup.last_offset, dup.timestamp) == (3, 4, 1_000_050)


def test_window_of_five(log, psm):
    for i in range(7):
        log.append(hdr(1, 0, 2 * i, 2))  # seqs 0-1, 2-3, ..., 12-13; offsets the same
    # the last five (seq 4..13) are deduplicated with their original offsets
    for i in range(2, 7):
        dup = psm.check(hdr(1, 0, 2 * i, 2))
        assert (dup.first_offset, dup.last_offset) == (2 * i, 2 * i + 1)
    # the two oldest fell out of the window: Kafka 4 answers OUT_OF_ORDER_SEQUENCE_NUMBER
    for i in range(2):
        with pytest.raises(KafkaStorageError) as ei:
            psm.check(hdr(1, 0, 2 * i, 2))
        assert code_of(ei) == ErrorCode.out_of_order_sequence_number == 45
    assert len(psm.get(1).batches) == 5


def test_sequence_behind_but_not_exact_is_out_of_order(log, psm):
    log.append(hdr(1, 0, 0, 5))
    log.append(hdr(1, 0, 5, 5))
    for first, count in ((0, 3), (2, 3), (9, 1), (5, 4)):  # overlapping, not an exact retry
        with pytest.raises(KafkaStorageError) as ei:
            psm.check(hdr(1, 0, first, count))
        assert code_of(ei) == ErrorCode.out_of_order_sequence_number


def test_overlapping_and_extending_batch_is_out_of_order_not_acknowledged(log, psm):
    """The issue's case: last 14-15, new 14-16. DUPLICATE would make the Java producer report
    record 16 as written; Kafka 4 answers OUT_OF_ORDER_SEQUENCE_NUMBER."""
    log.append(hdr(1, 0, 0, 14))
    log.append(hdr(1, 0, 14, 2))
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(1, 0, 14, 3))
    assert code_of(ei) == ErrorCode.out_of_order_sequence_number
    assert psm.check(hdr(1, 0, 14, 2)).first_offset == 14  # the exact retry still dedups
    assert psm.check(hdr(1, 0, 16, 1)) is None


def test_ahead_is_out_of_order_not_duplicate(log, psm):
    log.append(hdr(1, 0, 0, 5))
    for first in (6, 100, 2**29, 2**30 + 10, INT32_MAX - 2**28):
        with pytest.raises(KafkaStorageError) as ei:
            psm.check(hdr(1, 0, first))
        assert code_of(ei) == ErrorCode.out_of_order_sequence_number
    # a far jump (the 2**31-1 after 15) and what lies "behind" across the wrap too
    for first in (INT32_MAX, INT32_MAX - 1000, 0, 3):
        with pytest.raises(KafkaStorageError) as ei:
            psm.check(hdr(1, 0, first))
        assert code_of(ei) == ErrorCode.out_of_order_sequence_number


# --------------------------------------------------------------------------- int32 wrap
def test_sequence_wraps_at_int32_max(log, psm):
    log.append(hdr(1, 0, INT32_MAX - 4, 4))  # seq MAX-4 .. MAX-1
    log.append(hdr(1, 0, INT32_MAX - 0, 3))  # seq MAX, 0, 1
    assert psm.get(1).last_sequence == 1
    assert psm.get(1).batches[-1].first_seq == INT32_MAX
    log.append(hdr(1, 0, 2, 1))
    assert psm.get(1).last_sequence == 2
    # same wrap arithmetic as BatchHeader.last_sequence
    for base, count in ((INT32_MAX, 1), (INT32_MAX, 3), (INT32_MAX - 1, 2), (INT32_MAX - 5, 100)):
        p = ProducerStateManager(psm.partition_dir, DAY_MS)
        h = hdr(1, 0, base, count)
        p.update(h, 0, 0)
        assert p.get(1).last_sequence == h.last_sequence
    # the batch spanning the wrap is deduplicated
    dup = psm.check(hdr(1, 0, INT32_MAX, 3))
    assert (dup.first_offset, dup.last_offset) == (4, 6)
    # a batch that ends exactly at MAX is followed by 0
    psm2 = ProducerStateManager(psm.partition_dir + "/x", DAY_MS)
    l2 = Log(psm2)
    l2.append(hdr(1, 0, INT32_MAX - 1, 2))
    assert psm2.get(1).last_sequence == INT32_MAX
    with pytest.raises(KafkaStorageError) as ei:
        psm2.check(hdr(1, 0, 1))
    assert code_of(ei) == ErrorCode.out_of_order_sequence_number
    assert l2.append(hdr(1, 0, 0, 1)) == (2, 2)


def test_duplicate_and_out_of_order_across_the_wrap(log, psm):
    for i in range(7):
        log.append(hdr(1, 0, (INT32_MAX - 9 + 2 * i) & INT32_MAX, 2))
    last = psm.get(1).last_sequence
    assert last == 3  # MAX-9 + 14 - 1 wrapped
    with pytest.raises(KafkaStorageError) as ei:  # behind, before the wrap, out of window
        psm.check(hdr(1, 0, INT32_MAX - 9, 2))
    assert code_of(ei) == ErrorCode.out_of_order_sequence_number
    with pytest.raises(KafkaStorageError) as ei:  # ahead
        psm.check(hdr(1, 0, 5))
    assert code_of(ei) == ErrorCode.out_of_order_sequence_number
    assert psm.check(hdr(1, 0, 4)) is None


# --------------------------------------------------------------------------- epochs
def test_lower_epoch_is_invalid_producer_epoch(log, psm):
    log.append(hdr(1, 5, 0))
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(1, 4, 1))
    assert code_of(ei) == ErrorCode.invalid_producer_epoch == 47
    with pytest.raises(KafkaStorageError) as ei:  # even as a "retry" of an old batch
        psm.check(hdr(1, 4, 0))
    assert code_of(ei) == ErrorCode.invalid_producer_epoch


def test_epoch_bump_requires_sequence_zero(log, psm):
    log.append(hdr(1, 0, 0, 3))
    log.append(hdr(1, 0, 3, 3))
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(1, 1, 6))
    assert code_of(ei) == ErrorCode.out_of_order_sequence_number
    assert log.append(hdr(1, 1, 0, 2)) == (6, 7)
    e = psm.get(1)
    assert (e.epoch, e.last_sequence, len(e.batches)) == (1, 1, 1)
    # the old epoch's window is gone and the old epoch is fenced
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(1, 0, 0, 3))
    assert code_of(ei) == ErrorCode.invalid_producer_epoch
    # retry of the new epoch's first batch is deduplicated
    assert psm.check(hdr(1, 1, 0, 2)).first_offset == 6


def test_unknown_producer_with_high_epoch_any_sequence(psm):
    assert psm.check(hdr(9, 30000, 17)) is None


# --------------------------------------------------------------------------- transactions
def test_transaction_open_commit_and_first_unstable_offset(log, psm):
    assert psm.first_unstable_offset() is None
    log.append(hdr(1, 0, 0, 2))  # idempotent, not transactional: opens nothing
    assert psm.first_unstable_offset() is None
    assert log.append(hdr(1, 0, 2, 3, attrs=TXN)) == (2, 4)
    assert psm.ongoing_first_offset(1) == 2
    log.append(hdr(1, 0, 5, 1, attrs=TXN))
    assert psm.ongoing_first_offset(1) == 2  # does not move
    assert psm.first_unstable_offset() == 2
    assert list(psm.producers())[0].current_txn_first_offset == 2
    done = log.marker(1, 0, abort=False)
    assert done == CompletedTxn(1, 2, 6, False)
    assert psm.first_unstable_offset() is None
    assert psm.ongoing_first_offset(1) is None
    assert psm.ongoing_transactions() == {}
    assert list(psm.producers())[0].current_txn_first_offset is None
    # the next transaction of the same producer opens at its own first offset
    log.append(hdr(1, 0, 6, 1, attrs=TXN))
    assert psm.ongoing_first_offset(1) == 7


def test_interleaved_transactions_lso(log, psm):
    log.append(hdr(1, 0, 0, 1, attrs=TXN))  # 0
    log.append(hdr(2, 0, 0, 1, attrs=TXN))  # 1
    log.append(hdr(3, 0, 0, 1))  # 2, idempotent only
    log.append(hdr(1, 0, 1, 1, attrs=TXN))  # 3
    assert psm.ongoing_transactions() == {1: 0, 2: 1}
    assert psm.first_unstable_offset() == 0
    assert log.marker(2, 0, abort=True) == CompletedTxn(2, 1, 4, True)
    assert psm.first_unstable_offset() == 0  # producer 1 still open
    assert log.marker(1, 0, abort=False) == CompletedTxn(1, 0, 5, False)
    assert psm.first_unstable_offset() is None
    log.append(hdr(2, 0, 1, 1, attrs=TXN))  # 6
    log.append(hdr(1, 0, 2, 1, attrs=TXN))  # 7
    assert psm.first_unstable_offset() == 6
    log.marker(2, 0, abort=False)
    assert psm.first_unstable_offset() == 7


def test_marker_type_parsed_from_batch_bytes(psm):
    psm.update(hdr(1, 0, 0, 1, attrs=TXN), 0, 1)
    raw = marker_bytes(1, 0, abort=True, coordinator_epoch=7)
    assert parse_end_txn_marker(raw) == (True, 7)
    assert parse_end_txn_marker(marker_bytes(1, 0, abort=False, coordinator_epoch=3)) == (False, 3)
    done = psm.update(parse_header(raw), 1, 2, batch=raw)
    assert done == CompletedTxn(1, 0, 1, True)
    assert psm.get(1).coordinator_epoch == 7


def test_marker_from_record_batch_builder(psm):
    psm.update(hdr(1, 2, 0, 1, attrs=TXN), 10, 1)
    raw = build_control_batch(1, 2, commit=False, coordinator_epoch=4, timestamp_ms=5)
    assert parse_end_txn_marker(raw) == (True, 4)
    h = parse_header(raw)
    assert psm.check(h, coordinator_epoch=4) is None
    assert psm.update(h, 11, 5, batch=raw) == CompletedTxn(1, 10, 11, True)
    raw = build_control_batch(1, 2, commit=True, coordinator_epoch=4, timestamp_ms=5)
    assert parse_end_txn_marker(raw) == (False, 4)


def test_marker_without_open_transaction(log, psm):
    assert log.marker(5, 0, abort=True) is None  # unknown producer: creates the entry
    assert psm.get(5).epoch == 0
    log.append(hdr(1, 0, 0, 1))
    assert log.marker(1, 0, abort=False) is None
    assert psm.first_unstable_offset() is None


def test_non_transactional_write_during_open_transaction(log, psm):
    log.append(hdr(1, 0, 0, 1, attrs=TXN))
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(1, 0, 1, 1))
    assert code_of(ei) == ErrorCode.invalid_txn_state
    assert psm.check(hdr(1, 0, 1, 1, attrs=TXN)) is None


def test_marker_epoch_rules(log, psm):
    log.append(hdr(1, 3, 0, 2, attrs=TXN))
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(marker_hdr(1, 2))
    assert code_of(ei) == ErrorCode.invalid_producer_epoch
    assert psm.check(marker_hdr(1, 3)) is None
    # a marker may carry a bumped epoch (abort on InitProducerId / timeout)
    assert psm.check(marker_hdr(1, 4, abort=True)) is None
    assert log.marker(1, 4, abort=True) == CompletedTxn(1, 0, 2, True)
    e = psm.get(1)
    assert (e.epoch, e.last_sequence) == (4, -1)
    # the old epoch is fenced, the new one starts at 0
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(1, 3, 2))
    assert code_of(ei) == ErrorCode.invalid_producer_epoch
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(1, 4, 2))
    assert code_of(ei) == ErrorCode.out_of_order_sequence_number
    assert log.append(hdr(1, 4, 0, 1)) == (3, 3)


def test_coordinator_epoch_fencing(log, psm):
    log.append(hdr(1, 0, 0, 1, attrs=TXN))
    log.marker(1, 0, abort=False, coordinator_epoch=5)
    assert psm.get(1).coordinator_epoch == 5
    log.append(hdr(1, 0, 1, 1, attrs=TXN))
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(marker_hdr(1, 0, coordinator_epoch=4), coordinator_epoch=4)
    assert code_of(ei) == ErrorCode.transaction_coordinator_fenced
    assert psm.check(marker_hdr(1, 0), coordinator_epoch=5) is None


def test_producers_for_describe(log, psm):
    log.append(hdr(1, 2, 0, 4))
    log.now += 10
    log.append(hdr(2, 0, 0, 1, attrs=TXN))
    entries = {e.producer_id: e for e in psm.producers()}
    e1, e2 = entries[1], entries[2]
    assert (
        e1.epoch,
        e1.last_sequence,
        e1.last_timestamp,
        e1.coordinator_epoch,
        e1.current_txn_first_offset,
    ) == (2, 3, 1_000_000, -1, None)
    assert (e2.epoch, e2.last_sequence, e2.last_timestamp, e2.current_txn_first_offset) == (
        0,
        0,
        1_000_010,
        4,
    )


# --------------------------------------------------------------------------- recovery replay
def test_update_never_raises_on_replay(psm):
    psm.update(hdr(1, 5, 0, 1), 0, 1)
    psm.update(hdr(1, 5, 10, 1), 1, 2)  # gap
    psm.update(hdr(1, 5, 3, 1), 2, 3)  # behind
    psm.update(hdr(1, 4, 0, 1), 3, 4)  # lower epoch: applied as is (Kafka REPLICATION origin)
    psm.update(hdr(1, 4, 1, 1), 4, 5)
    psm.update(hdr(1, 4, 2, 1, attrs=TXN), 5, 6)
    psm.update(hdr(1, 4, 3, 1), 6, 7)  # non-transactional in a txn
    psm.update(marker_hdr(1, 4), 7, 8)  # type unknown, no bytes: treated as commit
    psm.update(marker_hdr(2, 0), 8, 9, batch=b"garbage")
    psm.update(marker_hdr(3, 0), 9, 10)
    psm.update(hdr(-1, -1, -1, 1), 10, 11)
    assert psm.get(1).epoch == 4 and psm.get(1).last_sequence == 3
    assert psm.first_unstable_offset() is None


def test_replay_rebuilds_same_state(tmp_path, log, psm):
    batches = [hdr(1, 0, 0, 2), hdr(2, 0, 0, 1, attrs=TXN), hdr(1, 0, 2, 2), hdr(2, 0, 1, 3, attrs=TXN)]
    placed = []
    for h in batches:
        first, _ = log.append(h)
        placed.append((h, first))
    replayed = ProducerStateManager(str(tmp_path / "r"), DAY_MS)
    for h, first in placed:
        replayed.update(h, first, log.now)
    assert replayed.ongoing_transactions() == psm.ongoing_transactions() == {2: 2}
    assert replayed.check(hdr(1, 0, 2, 2)).first_offset == 3
    assert replayed.check(hdr(2, 0, 1, 3, attrs=TXN)).first_offset == 5


# --------------------------------------------------------------------------- expiry
def test_expiry(log, psm):
    log.append(hdr(1, 0, 0, 1))
    log.append(hdr(2, 0, 0, 1, attrs=TXN))  # open transaction: never expires
    log.now += 1000
    log.append(hdr(3, 0, 0, 1))
    psm.remove_expired(1_000_000 + DAY_MS - 1)
    assert {e.producer_id for e in psm.producers()} == {1, 2, 3}
    psm.remove_expired(1_000_000 + DAY_MS)
    assert {e.producer_id for e in psm.producers()} == {2, 3}
    psm.remove_expired(10**15)
    assert {e.producer_id for e in psm.producers()} == {2}
    # an expired producer is unknown again: any sequence is accepted
    assert psm.check(hdr(1, 0, 77)) is None
    log.marker(2, 0, abort=False)
    psm.remove_expired(10**15)
    assert len(psm) == 0


def test_activity_postpones_expiry(log, psm):
    log.append(hdr(1, 0, 0, 1))
    log.now += DAY_MS // 2
    log.append(hdr(1, 0, 1, 1))
    psm.remove_expired(1_000_000 + DAY_MS)
    assert psm.get(1) is not None


# --------------------------------------------------------------------------- snapshots
def _fill(log):
    for i in range(7):
        log.append(hdr(1, 3, 2 * i, 2))  # offsets 0..13
    log.append(hdr(2, 0, 0, 1, attrs=TXN))  # 14, open
    log.append(hdr(3, 1, 5, 1, attrs=TXN))  # 15
    log.marker(3, 1, abort=True, coordinator_epoch=9)  # 16
    log.append(hdr(4, 0, INT32_MAX, 2))  # 17..18, wrapped


def _state(psm):
    return {
        e.producer_id: (
            e.epoch,
            e.coordinator_epoch,
            e.last_timestamp,
            e.current_txn_first_offset,
            list(e.batches),
        )
        for e in psm.producers()
    }


def test_snapshot_round_trip(tmp_path, log, psm):
    _fill(log)
    psm.take_snapshot(log.next_offset)
    path = snapshot_path(str(tmp_path), 19)
    assert os.path.basename(path) == "00000000000000000019.snapshot"
    assert os.path.exists(path)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]

    fresh = ProducerStateManager(str(tmp_path), DAY_MS)
    assert fresh.load_snapshot(19) == 19
    assert _state(fresh) == _state(psm)
    assert fresh.ongoing_transactions() == {2: 14}
    assert fresh.first_unstable_offset() == 14
    # a retry after the restart is still deduplicated, for the whole window
    for i in range(2, 7):
        assert fresh.check(hdr(1, 3, 2 * i, 2)).first_offset == 2 * i
    with pytest.raises(KafkaStorageError) as ei:
        fresh.check(hdr(1, 3, 0, 2))
    assert code_of(ei) == ErrorCode.out_of_order_sequence_number
    assert fresh.check(hdr(4, 0, INT32_MAX, 2)).last_offset == 18
    assert fresh.check(hdr(4, 0, 1, 1)) is None
    assert fresh.get(3).coordinator_epoch == 9
    # the transaction stays closable after the restart
    assert fresh.update(marker_hdr(2, 0), 19, 5, abort=False) == CompletedTxn(2, 14, 19, False)
    assert fresh.first_unstable_offset() is None


def test_snapshot_of_empty_state(tmp_path, psm):
    psm.take_snapshot(0)
    fresh = ProducerStateManager(str(tmp_path), DAY_MS)
    assert fresh.load_snapshot(0) == 0 and len(fresh) == 0


def test_load_without_snapshot_returns_zero_and_clears(tmp_path, log, psm):
    _fill(log)
    assert psm.load_snapshot(100) == 0
    assert len(psm) == 0 and psm.first_unstable_offset() is None
    missing = ProducerStateManager(str(tmp_path / "does-not-exist"), DAY_MS)
    assert missing.load_snapshot(5) == 0


def test_load_deletes_snapshots_newer_than_log_end(tmp_path, log, psm):
    log.append(hdr(1, 0, 0, 5))
    psm.take_snapshot(5)
    log.append(hdr(1, 0, 5, 5))
    psm.take_snapshot(10)
    log.append(hdr(1, 0, 10, 5))
    psm.take_snapshot(15)
    assert psm.snapshot_offsets() == [5, 10, 15]

    fresh = ProducerStateManager(str(tmp_path), DAY_MS)
    assert fresh.load_snapshot(12) == 10  # the log was cut at 12 by recovery
    assert fresh.snapshot_offsets() == [5, 10]
    assert fresh.get(1).last_sequence == 9
    # the caller replays [10, 12) and continues
    assert fresh.load_snapshot(7) == 5
    assert fresh.snapshot_offsets() == [5]
    assert fresh.get(1).last_sequence == 4
    assert fresh.load_snapshot(4) == 0
    assert fresh.snapshot_offsets() == [] and len(fresh) == 0


def test_snapshot_at_exact_log_end_is_kept(tmp_path, log, psm):
    log.append(hdr(1, 0, 0, 5))
    psm.take_snapshot(5)
    fresh = ProducerStateManager(str(tmp_path), DAY_MS)
    assert fresh.load_snapshot(5) == 5
    assert fresh.snapshot_offsets() == [5]


def test_corrupt_snapshot_falls_back_to_older(tmp_path, log, psm):
    log.append(hdr(1, 0, 0, 5))
    psm.take_snapshot(5)
    log.append(hdr(1, 0, 5, 5))
    psm.take_snapshot(10)
    path = snapshot_path(str(tmp_path), 10)
    data = bytearray(open(path, "rb").read())
    data[-3] ^= 0xFF
    open(path, "wb").write(data)
    open(snapshot_path(str(tmp_path), 3) + ".tmp", "wb").write(b"half written")
    fresh = ProducerStateManager(str(tmp_path), DAY_MS)
    assert fresh.load_snapshot(10) == 5
    assert fresh.snapshot_offsets() == [5]
    assert sorted(os.listdir(tmp_path)) == ["00000000000000000005.snapshot"]
    # truncated file
    open(snapshot_path(str(tmp_path), 5), "r+b").truncate(20)
    assert fresh.load_snapshot(10) == 0


def test_only_newest_snapshots_kept(tmp_path, log, psm):
    for i in range(6):
        log.append(hdr(1, 0, i, 1))
        psm.take_snapshot(log.next_offset)
    assert psm.snapshot_offsets() == [4, 5, 6]
    psm.take_snapshot(6)  # same offset again: overwritten atomically
    assert psm.snapshot_offsets() == [4, 5, 6]


def test_truncate_snapshots_after(tmp_path, log, psm):
    for off in (3, 6, 9):
        psm.take_snapshot(off)
    psm.truncate_snapshots_after(6)
    assert psm.snapshot_offsets() == [3, 6]
    psm.truncate_snapshots_after(5)
    assert psm.snapshot_offsets() == [3]
    psm.delete_snapshots_before(4)
    assert psm.snapshot_offsets() == []


# --------------------------------------------------------------------------- cost
def test_hot_path_is_cheap(psm):
    headers = [hdr(p, 0, s, 1) for p in range(10) for s in range(100)]
    headers.sort(key=lambda h: h.base_sequence)
    start = time.perf_counter()
    off = 0
    for _ in range(5):
        psm.clear()
        for h in headers:
            assert psm.check(h) is None
            psm.update(h, off, 1)
            off += 1
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0  # 5000 check+update; ~10 ms on a laptop


# --------------------------------------------------------------------------- issue 9 audit
def test_negative_epoch_with_a_producer_id_is_invalid_producer_epoch(psm):
    """Kafka's empty entry has epoch -1: -5 is 'smaller than the last seen epoch'."""
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(7, -5, 0))
    assert code_of(ei) == ErrorCode.invalid_producer_epoch
    assert psm.check(hdr(7, -1, 0)) is None


def test_producer_with_epoch_minus_one_accepts_any_sequence(log, psm):
    """currentEntry.producerEpoch == NO_PRODUCER_EPOCH: Kafka accepts any sequence."""
    log.append(hdr(7, -1, 0, 2))
    assert psm.check(hdr(7, -1, 10)) is None
    assert psm.check(hdr(7, 0, 5)) is None  # a new epoch over -1 need not start at 0


def test_unknown_producer_at_a_later_epoch_accepts_any_sequence(psm):
    assert psm.check(hdr(9, 3, 1234)) is None


def test_new_epoch_must_start_at_zero(log, psm):
    log.append(hdr(1, 0, 0, 3))
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(1, 1, 3))
    assert code_of(ei) == ErrorCode.out_of_order_sequence_number
    assert psm.check(hdr(1, 1, 0)) is None


def test_retry_of_a_batch_from_an_older_epoch_is_invalid_producer_epoch(log, psm):
    log.append(hdr(1, 0, 0, 3))
    log.append(hdr(1, 1, 0, 3))
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(1, 0, 0, 3))
    assert code_of(ei) == ErrorCode.invalid_producer_epoch


def test_entry_known_only_from_a_marker_needs_sequence_zero(log, psm):
    """A marker creates the entry (epoch known, no batches): the next batch continues from -1."""
    psm.update(marker_hdr(4, 2), 0, 0, abort=False)
    with pytest.raises(KafkaStorageError) as ei:
        psm.check(hdr(4, 2, 7))
    assert code_of(ei) == ErrorCode.out_of_order_sequence_number
    assert psm.check(hdr(4, 2, 0)) is None


def test_every_rule_lives_in_sequence_error(log, psm):
    from minibroker.storage.producer_state import in_sequence, sequence_error

    assert in_sequence(INT32_MAX, 0) and in_sequence(4, 5)
    assert not in_sequence(4, 4) and not in_sequence(4, 6)
    log.append(hdr(1, 0, 0, 2))
    entry = psm.get(1)
    assert sequence_error(entry, 0, 0, 1).first_offset == 0
    assert sequence_error(entry, 0, 2, 0) is None
    assert sequence_error(entry, 0, 1, 1).error_code == ErrorCode.out_of_order_sequence_number
