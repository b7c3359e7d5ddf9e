"""__share_group_state record codecs (coordinator/share_state_records.py): Kafka's bytes.

The expected bytes below were produced by Kafka 4.4.0's own serializer
(ShareCoordinatorRecordSerde over the generated ShareSnapshotKey/Value and ShareUpdateKey/Value)
and are checked field by field in the comments."""

from __future__ import annotations

import uuid

import pytest
from minibroker.coordinator.share_state_records import (
    ShareSnapshot,
    ShareSnapshotValue,
    ShareUpdate,
    ShareUpdateValue,
    decode,
    encode,
)
from minibroker.coordinator.share_types import SharePartitionKey, StateBatch

TOPIC = uuid.UUID("0123456789abcdef-fedcba9876543210".replace("-", ""))  # Kafka: ASNFZ4mrze_-3LqYdlQyEA
KEY = SharePartitionKey("g", TOPIC, 7)

KEY_BODY = (
    "0001"  # group id length 1 (int16: keys are not flexible)
    "67"  # "g"
    "0123456789abcdeffedcba9876543210"  # topic id, 16 bytes
    "00000007"  # partition
)
SNAPSHOT = ShareSnapshotValue(1, 2, 3, 10, -1, 1000, 2000, (StateBatch(10, 12, 2, 1),))
SNAPSHOT_VALUE = (
    "0000"  # value version 0
    "00000001"  # snapshot epoch
    "00000002"  # state epoch
    "00000003"  # leader epoch
    "000000000000000a"  # start offset 10
    "00000000000003e8"  # create timestamp 1000
    "00000000000007d0"  # write timestamp 2000
    "02"  # one state batch (compact array: n + 1)
    "000000000000000a"
    "000000000000000c"
    "02"
    "0001"
    "00"  # 10-12 ACKNOWLEDGED, count 1, no tags
    "00"  # no tagged fields: DeliveryCompleteCount -1 is left out
)
UPDATE = ShareUpdateValue(1, -1, -1, 300, (StateBatch(5, 5, 4, 3), StateBatch(6, 9, 0, 1)))
UPDATE_VALUE = (
    "0000"  # value version 0
    "00000001"  # snapshot epoch
    "ffffffff"  # leader epoch -1 (unchanged)
    "ffffffffffffffff"  # start offset -1 (unchanged)
    "03"  # two state batches
    "0000000000000005"
    "0000000000000005"
    "04"
    "0003"
    "00"  # 5 ARCHIVED, count 3
    "0000000000000006"
    "0000000000000009"
    "00"
    "0001"
    "00"  # 6-9 AVAILABLE, count 1
    "01"
    "00"
    "04"
    "0000012c"  # one tagged field: tag 0 (DeliveryCompleteCount), 4 bytes, 300
)


def test_snapshot_bytes_are_kafkas():
    key, value = encode(ShareSnapshot(KEY, SNAPSHOT))
    assert key.hex() == "0000" + KEY_BODY  # record type 0
    assert value is not None and value.hex() == SNAPSHOT_VALUE
    assert decode(key, value) == ShareSnapshot(KEY, SNAPSHOT)


def test_delivery_complete_count_is_tag_0_when_not_minus_one():
    _, value = encode(ShareSnapshot(KEY, SNAPSHOT._replace(delivery_complete_count=5)))
    assert value is not None
    assert value.hex() == SNAPSHOT_VALUE[:-2] + "01" + "00" + "04" + "00000005"
    assert decode(encode(ShareSnapshot(KEY, SNAPSHOT))[0], value) == ShareSnapshot(
        KEY, SNAPSHOT._replace(delivery_complete_count=5)
    )


def test_update_bytes_are_kafkas():
    key, value = encode(ShareUpdate(KEY, UPDATE))
    assert key.hex() == "0001" + KEY_BODY  # record type 1
    assert value is not None and value.hex() == UPDATE_VALUE
    assert decode(key, value) == ShareUpdate(KEY, UPDATE)


def test_tombstone_is_a_snapshot_key_with_no_value():
    key, value = encode(ShareSnapshot(KEY, None))
    assert key.hex() == "0000" + KEY_BODY and value is None
    assert decode(key, None) == ShareSnapshot(KEY, None)


@pytest.mark.parametrize(
    "record",
    [
        ShareSnapshot(SharePartitionKey("grp-ü", uuid.uuid4(), 0), ShareSnapshotValue(0, 0, 0, -1)),
        ShareSnapshot(
            SharePartitionKey("", uuid.uuid4(), 2**31 - 1),
            ShareSnapshotValue(
                2**31 - 1,
                5,
                9,
                2**62,
                0,
                1,
                2,
                tuple(StateBatch(i * 10, i * 10 + 4, i % 5, i) for i in range(200)),
            ),
        ),
        ShareUpdate(SharePartitionKey("x" * 300, uuid.uuid4(), 3), ShareUpdateValue(4, 2, 100, 0, ())),
        ShareUpdate(SharePartitionKey("g", uuid.uuid4(), 3), ShareUpdateValue(0, -1, -1)),
    ],
)
def test_round_trip(record):
    assert decode(*encode(record)) == record


def test_other_record_types_are_not_share_state():
    assert decode(b"\x00\x02\x00\x01g", b"\x00\x00") is None


@pytest.mark.parametrize(
    "key, value",
    [
        (bytes.fromhex("0000" + KEY_BODY[:-2]), None),  # key cut short
        (bytes.fromhex("0000" + KEY_BODY + "00"), None),  # trailing key bytes
        (bytes.fromhex("0000" + KEY_BODY), bytes.fromhex(SNAPSHOT_VALUE[:-4])),  # value cut short
        (bytes.fromhex("0000" + KEY_BODY), bytes.fromhex("0001" + SNAPSHOT_VALUE[4:])),  # version 1
        (bytes.fromhex("0001" + KEY_BODY), bytes.fromhex(UPDATE_VALUE + "00")),  # trailing value bytes
        (
            bytes.fromhex("0001" + KEY_BODY),
            bytes.fromhex(UPDATE_VALUE[:-10] + "03000000"),
        ),  # tag 0 not 4 bytes
    ],
)
def test_malformed_records_raise_value_error(key, value):
    with pytest.raises(ValueError):
        decode(key, value)
