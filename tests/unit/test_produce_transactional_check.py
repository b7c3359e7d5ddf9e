"""Issue 21: Produce asks Kafka's RequestUtils.hasTransactionalRecords question of every
partition (storage/log_validator.py is_transactional, which raises CORRUPT_MESSAGE where Kafka's
batch iterator throws); broker/handlers/produce.py clears the common case with an inline
pre-test first. The pre-test must never change the answer: checked here on crafted headers."""

from __future__ import annotations

import itertools
import random
import struct
import types

import pytest
from minibroker.broker.handlers.produce import _has_transactional_records
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log_validator import is_transactional

from tests.support.crafted import NOW, raw_batch, record

pytestmark = pytest.mark.timeout(30)


def request(*records):
    parts = [types.SimpleNamespace(index=i, records=r) for i, r in enumerate(records)]
    return types.SimpleNamespace(topic_data=[types.SimpleNamespace(name="t", partition_data=parts)])


def answer(fn, *args):
    try:
        return fn(*args)
    except KafkaStorageError as exc:
        return exc.error_code, exc.message


def variants():
    """Batches with every size-field, magic and attributes corner, whole and cut short."""
    batch = raw_batch([record(0)], base_timestamp=NOW, max_timestamp=NOW)
    for size, magic, attributes in itertools.product(
        (-1, 0, 13, 14, 255, 256, len(batch) - 12, 1 << 24, 2**31 - 1),
        (0, 1, 2, 3, 0x80, 0xFF),
        (0, 0x10, 0xFF),
    ):
        b = bytearray(batch)
        struct.pack_into(">i", b, 8, size)
        b[16], b[22] = magic, attributes
        for cut in (len(b), 30, 23, 22, 17, 16, 12, 11, 0):
            yield bytes(b[:cut])
    rng = random.Random(21)
    for _ in range(2000):
        yield bytes(rng.getrandbits(8) for _ in range(rng.choice((11, 12, 17, 22, 23, 40, 80))))


def test_the_inline_pretest_gives_the_full_rules_answer():
    for records in variants():
        assert answer(_has_transactional_records, request(records)) == answer(is_transactional, records), (
            records
        )


def test_partitions_are_asked_in_order_and_the_first_transactional_one_answers():
    good = raw_batch([record(0)], base_timestamp=NOW, max_timestamp=NOW)
    txn = raw_batch([record(0)], base_timestamp=NOW, max_timestamp=NOW, attributes=0x10)
    corrupt = bytearray(good)
    struct.pack_into(">i", corrupt, 8, 13)
    assert _has_transactional_records(request(good, None, b"", good)) is False
    assert _has_transactional_records(request(txn, bytes(corrupt))) is True  # Kafka stops at the first
    with pytest.raises(KafkaStorageError) as info:
        _has_transactional_records(request(good, bytes(corrupt), txn))
    assert info.value.error_code == ErrorCode.corrupt_message
    assert info.value.message == "Record size 13 is less than the minimum record overhead (14)"
