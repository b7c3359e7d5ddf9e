"""Share group records 10-15 of __consumer_offsets (coordinator/share_group_records.py): the
bytes Kafka 4.4's generated ShareGroup*Key/Value classes write (golden records produced with
MessageUtil.toCoordinatorTypePrefixedByteBuffer / toVersionPrefixedByteBuffer from
kafka-group-coordinator-4.4.0.jar), decoding, tombstones and round trips."""

from __future__ import annotations

import uuid

import pytest
from minibroker.coordinator.share_group_records import (
    RECORD_TYPES,
    SgCurrent,
    SgEpoch,
    SgMember,
    SgStatePartitions,
    SgTarget,
    SgTargetMeta,
    ShareCurrentValue,
    ShareEpochValue,
    ShareMemberValue,
    ShareTargetMetaValue,
    StatePartitionsValue,
    TopicInfo,
    TopicPartitions,
    TopicPartitionsInfo,
    decode,
    encode,
)

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)

#: (record, key hex, value hex or None) as Kafka 4.4 writes them
GOLDEN = [
    (
        SgMember("g", "m1", ShareMemberValue(None, "cid", "/127.0.0.1", ("a", "b"))),
        "000a00016700026d31",
        "000000046369640b2f3132372e302e302e31030261026200",
    ),
    (
        SgMember("g", "m1", ShareMemberValue("r1", "", "h", ())),
        "000a00016700026d31",
        "00000372310102680100",
    ),
    (SgEpoch("g", ShareEpochValue(5, -123456789012345)), "000b000167", "000000000005ffff8fb779f2208700"),
    (SgTargetMeta("g", ShareTargetMetaValue(5, 0)), "000c000167", "00000000000500"),
    (
        SgTargetMeta("g", ShareTargetMetaValue(7, 1700000000000)),
        "000c000167",
        "0000000000070100080000018bcfe56800",
    ),
    (
        SgTarget("g", "m1", (TopicPartitions(T1, (0, 2)),)),
        "000d00016700026d31",
        "000002000000000000000000000000000000010300000000000000020000",
    ),
    (
        SgCurrent(
            "g", "m1", ShareCurrentValue(3, 2, 0, (TopicPartitions(T1, (1,)), TopicPartitions(T2, ())))
        ),
        "000e00016700026d31",
        "00000000000300000002000300000000000000000000000000000001020000000100000000000000000000000000000000"
        "02010000",
    ),
    (
        SgStatePartitions(
            "g",
            StatePartitionsValue(
                (TopicPartitionsInfo(T1, "a", (0, 1)),),
                (TopicPartitionsInfo(T2, "b", (3,)),),
                (TopicInfo(T1, "c"),),
            ),
        ),
        "000f000167",
        "0000020000000000000000000000000000000102610300000000000000010002000000000000000000000000000000020262"
        "020000000300020000000000000000000000000000000102630000",
    ),
    (SgStatePartitions("g", None), "000f000167", None),
]


@pytest.mark.parametrize(("record", "key", "value"), GOLDEN)
def test_golden_records_encode_to_kafkas_bytes_and_decode_back(record, key, value):
    raw_key, raw_value = encode(record)
    assert raw_key.hex() == key
    assert (raw_value.hex() if raw_value is not None else None) == value
    assert decode(bytes.fromhex(key), bytes.fromhex(value) if value is not None else None) == record


@pytest.mark.parametrize(
    "record",
    [
        SgMember("grp", "member", None),
        SgEpoch("grp", None),
        SgTargetMeta("grp", None),
        SgTarget("grp", "member", None),
        SgCurrent("grp", "member", None),
        SgTarget("grp", "member", ()),
        SgCurrent("grp", "member", ShareCurrentValue(-1, -1, 0, ())),
        SgStatePartitions("grp", StatePartitionsValue((), (), ())),
        SgMember("ünïcode", "m", ShareMemberValue("rack", "c", "h", ("x" * 300,))),
    ],
)
def test_round_trip(record):
    key, value = encode(record)
    assert decode(key, value) == record
    assert int.from_bytes(key[:2], "big") in RECORD_TYPES


def test_other_types_are_not_these_records_and_damage_raises():
    assert decode(bytes.fromhex("0003000167"), None) is None  # a consumer group record
    key, value = encode(SgEpoch("g", ShareEpochValue(1, 2)))
    assert value is not None
    with pytest.raises(ValueError):
        decode(key, value + b"\x00")  # trailing bytes
    with pytest.raises(ValueError):
        decode(key, b"\x00\x01" + value[2:])  # an unknown value version
    with pytest.raises(TypeError):
        encode(("g", None))  # type: ignore[arg-type]
