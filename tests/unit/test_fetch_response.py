"""The hand-written Fetch encoder must produce exactly what kio's generated encoder produces."""

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
                    for name, parts in topics
                ],
            ),
        )
    )


@pytest.mark.parametrize("version", range(4, 13))
def test_matches_kio(version):
    topics = [
        (
            "orders",
            [
                PartitionData(0, 0, 10, 8, 0, [(7, 2), (9, 5)], [RECORDS[:40], RECORDS[40:]], len(RECORDS)),
                PartitionData(1, 1, 5, 5, 0, None, [], 0),
            ],
        ),
        ("t2", [PartitionData(3, 0, 0, 0, 0, [], [], 0)]),
    ]
    parts, size = encode(version, topics, session_id=0)
    body = b"".join(parts)
    assert len(body) == size
    assert body == _expected(version, topics, 0)
