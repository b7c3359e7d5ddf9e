"""protocol/request_guard.py: lengths checked against the frame, nulls only where allowed."""

from __future__ import annotations

import struct

import pytest
from minibroker.protocol.codec import DecodeError, build, decode_request, encode_response, request_class
from minibroker.protocol.request_guard import MalformedRequest, check_body
from minibroker.protocol.varint import write_uvarint


def encoded(key: int, version: int, values: dict) -> bytes:
    return encode_response(build(request_class(key, version), values))


@pytest.mark.parametrize(
    "key,version,values",
    [
        (3, 12, {"topics": [{"name": "a"}, {"name": "b"}]}),
        (3, 12, {"topics": None}),
        (3, 4, {"topics": None}),
        (
            0,
            9,
            {
                "acks": -1,
                "topic_data": [
                    {
                        "name": "t",
                        "partition_data": [
                            {"index": 0, "records": b"\x00" * 70},
                            {"index": 1, "records": None},
                        ],
                    }
                ],
            },
        ),
        (0, 3, {"transactional_id": None, "acks": 1, "topic_data": []}),
        (
            19,
            7,
            {
                "topics": [
                    {
                        "name": "t",
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [{"name": "x", "value": None}],
                    }
                ]
            },
        ),
        # a nullable struct (the cursor): int8 marker, then the struct when present
        (75, 0, {"topics": [{"name": "t"}], "response_partition_limit": 5, "cursor": None}),
        (
            75,
            0,
            {
                "topics": [{"name": "t"}],
                "response_partition_limit": 5,
                "cursor": {"topic_name": "t", "partition_index": 1},
            },
        ),
    ],
)
def test_valid_bodies_pass_and_decode(key, version, values):
    body = encoded(key, version, values)
    check_body(request_class(key, version), body, 0)
    decode_request(request_class(key, version), body, 0)


def test_string_longer_than_kafka_allows():
    cls = request_class(3, 4)
    body = struct.pack(">i", 1) + struct.pack(">h", -1) + b"\x00"  # null non-nullable name
    with pytest.raises(MalformedRequest, match="serialized as null"):
        check_body(cls, body, 0)
    body = struct.pack(">i", 1) + struct.pack(">H", 0x8000) + b"x" * 0x8000 + b"\x00"
    with pytest.raises(MalformedRequest):
        check_body(cls, body, 0)


@pytest.mark.parametrize(
    "body",
    [
        write_uvarint(0xFFFFFFFE),  # compact array of 2**32-3 elements
        b"\x02" + b"\x00" * 16 + write_uvarint(0x7FFFFFFF),  # a name longer than the frame
        b"\x02" + b"\x00" * 16 + b"\x80\x80\x80\x80\x80\x01",  # varint of 6 bytes
        b"\x00\x00\x00" + write_uvarint(5),  # five tagged fields in no bytes
        b"\x00\x00\x00\x01\x07" + write_uvarint(100),  # a tag claiming 100 bytes
    ],
)
def test_lengths_past_the_frame_are_refused(body):
    with pytest.raises(DecodeError):
        decode_request(request_class(3, 12), body, 0)


def test_null_array_where_forbidden():
    cls = request_class(19, 7)  # CreateTopics.topics is not nullable
    with pytest.raises(DecodeError, match="serialized as null"):
        decode_request(cls, b"\x00" + b"\x00" * 8, 0)


def test_nullable_struct_marker_other_than_null_or_present():
    body = encoded(75, 0, {"topics": [{"name": "a"}], "cursor": None})
    bad = body[:-2] + b"\x02" + body[-1:]  # the cursor's marker: neither -1 nor 1
    with pytest.raises(MalformedRequest, match="invalid marker 2"):
        check_body(request_class(75, 0), bad, 0)
