"""The hand-written Fetch encoder must produce exactly what kio's generated encoder produces."""

import uuid

import pytest
from minibroker.protocol.codec import build, encode_response, response_class
from minibroker.protocol.fetch_response import PartitionData, encode

RECORDS = b"\x00" * 70 + b"batch-bytes"


def _expected(version, topics, session_id):
    return encode_response(
        build(
            response_class(1, version),
            dict(
                throttle_time_ms=0,
                error_code=0,
                session_id=session_id,
                responses=[
                    dict(
                        topic=name,
                        topic_id=uuid.UUID(bytes=topic_id),
                        partitions=[
                            dict(
                                partition_index=p.partition_index,
                                error_code=p.error_code,
                                high_watermark=p.high_watermark,
                                last_stable_offset=p.last_stable_offset,
                                log_start_offset=p.log_start_offset,
                                aborted_transactions=None
                                if p.aborted is None
                                else [dict(producer_id=pid, first_offset=fo) for pid, fo in p.aborted],
                                records=b"".join(p.chunks),
                            )
                            for p in parts
                        ],
                    )
                    for name, topic_id, parts in topics
                ],
            ),
        )
    )


@pytest.mark.parametrize("version", range(4, 19))
def test_matches_kio(version):
    topics = [
        (
            "orders",
            uuid.UUID(int=7).bytes,
            [
                PartitionData(0, 0, 10, 8, 0, [(7, 2), (9, 5)], [RECORDS[:40], RECORDS[40:]], len(RECORDS)),
                PartitionData(1, 1, 5, 5, 0, None, [], 0),
            ],
        ),
        ("t2", uuid.UUID(int=9).bytes, [PartitionData(3, 0, 0, 0, 0, [], [], 0)]),
    ]
    parts, size = encode(version, topics, session_id=0)
    body = b"".join(parts)
    assert len(body) == size
    assert body == _expected(version, topics, 0)


@pytest.mark.parametrize("version", range(16, 19))
def test_current_leader_and_node_endpoints_match_kio(version):
    """KIP-951 (v16+): a partition's current leader (tag 1) and the leaders' endpoints (tag 0)."""
    topic_id = uuid.UUID(int=11)
    partition = PartitionData(0, 6, aborted=[], current_leader=(1, 0))
    parts, size = encode(
        version,
        [("t", topic_id.bytes, [partition])],
        session_id=5,
        node_endpoints=[(1, "h.example", 9092, None)],
    )
    body = b"".join(parts)
    expected = encode_response(
        build(
            response_class(1, version),
            dict(
                throttle_time_ms=0,
                error_code=0,
                session_id=5,
                responses=[
                    dict(
                        topic_id=topic_id,
                        partitions=[
                            dict(
                                partition_index=0,
                                error_code=6,
                                high_watermark=-1,
                                last_stable_offset=-1,
                                log_start_offset=-1,
                                aborted_transactions=[],
                                current_leader=dict(leader_id=1, leader_epoch=0),
                                records=b"",
                            )
                        ],
                    )
                ],
                node_endpoints=[dict(node_id=1, host="h.example", port=9092, rack=None)],
            ),
        )
    )
    assert len(body) == size
    assert body == expected
