"""Offset, time and transaction indexes: Kafka's on-disk formats, lookups, sanity checks."""

import struct

import pytest
from minibroker.storage.offset_index import CorruptIndexError, OffsetIndex
from minibroker.storage.time_index import TimeIndex
from minibroker.storage.transaction_index import AbortedTxn, TransactionIndex

pytestmark = pytest.mark.timeout(10)


def test_offset_index_format_and_lookup(tmp_path):
    path = str(tmp_path / "00000000000000000100.index")
    idx = OffsetIndex.create(path, 100)
    assert idx.lookup(150) == (100, 0)  # no entry: start of the segment
    for rel, pos in [(10, 4100), (25, 8300), (40, 12500)]:
        idx.append(100 + rel, pos)
    assert open(path, "rb").read() == b""  # entries reach the file at flush, not per append
    idx.write_pending()
    data = open(path, "rb").read()
    assert data == struct.pack(">iiiiii", 10, 4100, 25, 8300, 40, 12500)
    assert idx.lookup(109) == (100, 0)
    assert idx.lookup(110) == (110, 4100)
    assert idx.lookup(139) == (125, 8300)
    assert idx.lookup(10**6) == (140, 12500)
    assert idx.lookup_position(8299) == (110, 4100)
    assert idx.lookup_position(8300) == (125, 8300)

    reopened = OffsetIndex.open(path, 100, log_size=13000)
    assert reopened.last_entry() == (140, 12500) and len(reopened) == 3
    assert reopened.lookup(130) == (125, 8300)  # loads lazily
    reopened.append(150, 12900)
    reopened.write_pending()
    assert len(open(path, "rb").read()) == 32


def test_offset_index_sanity_checks(tmp_path):
    path = str(tmp_path / "00000000000000000000.index")
    with pytest.raises(CorruptIndexError):
        OffsetIndex.open(path, 0, 100)  # missing
    with open(path, "wb") as f:
        f.write(struct.pack(">ii", 5, 200) + b"\x00")
    with pytest.raises(CorruptIndexError):
        OffsetIndex.open(path, 0, 1000)  # partial entry
    with open(path, "wb") as f:
        f.write(struct.pack(">ii", 5, 200))
    with pytest.raises(CorruptIndexError):
        OffsetIndex.open(path, 0, 150)  # points past the log
    assert OffsetIndex.open(path, 0, 1000).last_entry() == (5, 200)


def test_time_index_format_and_lookup(tmp_path):
    path = str(tmp_path / "00000000000000000050.timeindex")
    idx = TimeIndex.create(path, 50)
    idx.maybe_append(1000, 50)
    idx.maybe_append(1000, 53)  # not larger: ignored
    idx.maybe_append(1500, 60)
    idx.maybe_append(-1, 61)  # no timestamp: ignored
    idx.write_pending()
    assert open(path, "rb").read() == struct.pack(">qiqi", 1000, 0, 1500, 10)
    assert idx.lookup(999) is None
    assert idx.lookup(1000) == (1000, 50)
    assert idx.lookup(1499) == (1000, 50)
    assert idx.lookup(10**9) == (1500, 60)
    reopened = TimeIndex.open(path, 50)
    assert reopened.last_entry() == (1500, 60)
    assert reopened.entries() == [(1000, 50), (1500, 60)]
    with open(path, "ab") as f:
        f.write(b"\x00\x01")
    with pytest.raises(CorruptIndexError):
        TimeIndex.open(path, 50)


def test_transaction_index_format(tmp_path):
    path = str(tmp_path / "00000000000000000000.txnindex")
    idx = TransactionIndex.open(path, 0)  # no file: no aborts
    assert idx.entries == []
    idx.append(AbortedTxn(7, 3, 9, 10))
    idx.append(AbortedTxn(8, 5, 12, 6))
    data = open(path, "rb").read()
    assert len(data) == 68
    assert data[:34] == struct.pack(">hqqqq", 0, 7, 3, 9, 10)
    assert TransactionIndex.open(path, 0).entries == [(7, 3, 9, 10), (8, 5, 12, 6)]
    assert idx.collect(0, 100) == ([(7, 3, 9, 10), (8, 5, 12, 6)], False)
    assert idx.collect(10, 100) == ([(8, 5, 12, 6)], False)
    assert idx.collect(0, 4) == ([(7, 3, 9, 10)], True)  # LSO 10 >= 4: nothing later matters
    with open(path, "ab") as f:
        f.write(b"\x00" * 5)
    with pytest.raises(CorruptIndexError):
        TransactionIndex.open(path, 0)
    idx.reset()
    assert TransactionIndex.open(path, 0).entries == []
