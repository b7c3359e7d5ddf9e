"""Produce (happy paths and request-level errors), Fetch, ListOffsets, OffsetForLeaderEpoch.

Record-batch content validation and sequence rules: j_bad_batches.py.
"""

import uuid

from minibroker.protocol.records import build_batch

from conformance.cases import case, versions

PRODUCE, FETCH, LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH = 0, 1, 2, 23
TS = 1_700_000_000_000  # fixed record timestamps so both logs hold identical bytes


def batch(n=1, value=b"v", ts=TS, size=None):
    if size is not None:
        value = b"x" * size
    return build_batch([(b"k%d" % i, value, [], ts + i) for i in range(n)])


def produce_req(topic, partition, records, acks=-1, tid=None, extra=(), topic_uuid=None):
    return {
        "transactional_id": tid,
        "acks": acks,
        "timeout_ms": 30000,
        "topic_data": [
            {
                "name": topic,
                "topic_id": topic_uuid,
                "partition_data": [{"index": partition, "records": records}, *extra],
            }
        ],
    }


def topic_id(s, name):
    """The topic's id on this broker (v13+ requests address topics by id)."""
    md = s.call(3, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False})
    return uuid.UUID(md["topics"][0]["topic_id"])


def fetch_req(
    parts, *, max_bytes=52428800, partition_max=1048576, isolation=0, max_wait=0, min_bytes=0, ids=None
):
    topics = {}
    for topic, p, off in parts:
        topics.setdefault(topic, []).append(
            {
                "partition": p,
                "fetch_offset": off,
                "partition_max_bytes": partition_max,
                "current_leader_epoch": -1,
                "log_start_offset": -1,
            }
        )
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": isolation,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {"topic": t, "topic_id": (ids or {}).get(t), "partitions": ps} for t, ps in topics.items()
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def list_offsets_req(topic, partitions_ts, isolation=0):
    return {
        "replica_id": -1,
        "isolation_level": isolation,
        "timeout_ms": 30000,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": p, "timestamp": ts, "current_leader_epoch": -1}
                    for p, ts in partitions_ts
                ],
            }
        ],
    }


@case("produce/happy")
def produce_happy(s):
    s.create_topic("pr-happy", 2)
    tid = topic_id(s, "pr-happy")
    for v in versions(PRODUCE):
        if v < 3:
            continue
        for acks in (-1, 1):
            s.check(f"v{v}/acks{acks}", PRODUCE, v, produce_req("pr-happy", v % 2, batch(2), topic_uuid=tid))
    s.check("v12/unknown-partition", PRODUCE, 12, produce_req("pr-happy", 5, batch()))
    s.check("v12/negative-partition", PRODUCE, 12, produce_req("pr-happy", -1, batch()))
    s.check(
        "v12/two-partitions",
        PRODUCE,
        12,
        produce_req("pr-happy", 0, batch(), extra=[{"index": 1, "records": batch(3)}]),
    )
    s.check("v12/bad-acks", PRODUCE, 12, produce_req("pr-happy", 0, batch(), acks=2))
    s.check("v12/internal-topic", PRODUCE, 12, produce_req("__consumer_offsets", 0, batch()))
    s.check("v12/unknown-topic", PRODUCE, 12, produce_req("pr-missing-topic", 0, batch()))


@case("produce/acks0-error-closes")
def produce_acks0(s):
    s.create_topic("pr-acks0", 1)
    s.check("ok", PRODUCE, 9, produce_req("pr-acks0", 0, batch(), acks=0), expect_response=False, conn="ok")
    s.connection_state("ok/after", conn="ok")
    s.check(
        "unknown-partition",
        PRODUCE,
        9,
        produce_req("pr-acks0", 3, batch(), acks=0),
        expect_response=False,
        conn="bad",
    )
    s.connection_state("unknown-partition/after", conn="bad")


@case("fetch/basic")
def fetch_basic(s):
    s.create_topic("fe-basic", 2)
    for i in range(3):
        s.call(PRODUCE, 9, produce_req("fe-basic", 0, batch(2, value=b"val%d" % i)))
    ids = {"fe-basic": topic_id(s, "fe-basic")}
    for v in versions(FETCH):
        s.check(f"v{v}/from-0", FETCH, v, fetch_req([("fe-basic", 0, 0), ("fe-basic", 1, 0)], ids=ids))
        s.check(f"v{v}/mid-batch", FETCH, v, fetch_req([("fe-basic", 0, 3)], ids=ids))
        s.check(f"v{v}/at-end", FETCH, v, fetch_req([("fe-basic", 0, 6)], ids=ids))
        s.check(f"v{v}/past-end", FETCH, v, fetch_req([("fe-basic", 0, 7)], ids=ids))
        s.check(f"v{v}/negative", FETCH, v, fetch_req([("fe-basic", 0, -1)], ids=ids))
        s.check(f"v{v}/unknown-partition", FETCH, v, fetch_req([("fe-basic", 9, 0)], ids=ids))
        s.check(f"v{v}/unknown-topic", FETCH, v, fetch_req([("fe-nosuch", 0, 0)], ids=ids))
        s.check(f"v{v}/partition-max-1", FETCH, v, fetch_req([("fe-basic", 0, 0)], partition_max=1, ids=ids))
        s.check(f"v{v}/read-committed", FETCH, v, fetch_req([("fe-basic", 0, 0)], isolation=1, ids=ids))
    s.check(
        "v12/leader-epoch-future",
        FETCH,
        12,
        {
            **fetch_req([("fe-basic", 0, 0)]),
            "topics": [
                {
                    "topic": "fe-basic",
                    "partitions": [
                        {
                            "partition": 0,
                            "fetch_offset": 0,
                            "current_leader_epoch": 5,
                            "partition_max_bytes": 1000,
                            "log_start_offset": -1,
                        }
                    ],
                }
            ],
        },
    )
    for iso in (2, -1):
        s.check(
            f"v12/isolation-{iso}",
            FETCH,
            12,
            fetch_req([("fe-basic", 0, 0)], isolation=iso),
            conn=f"iso{iso}",
        )
    s.check("v12/empty", FETCH, 12, fetch_req([]))


@case("fetch/max-bytes")
def fetch_max_bytes(s):
    """KIP-74: only the first partition that yields data may exceed fetch.max.bytes."""
    s.create_topic("fe-big", 3)
    for p in range(3):
        s.call(PRODUCE, 9, produce_req("fe-big", p, batch(size=3000)))
    parts = [("fe-big", p, 0) for p in range(3)]
    for v in (4, 7, 12):
        s.check(f"v{v}/max-1000", FETCH, v, fetch_req(parts, max_bytes=1000))
        s.check(f"v{v}/max-5000", FETCH, v, fetch_req(parts, max_bytes=5000))
        s.check(f"v{v}/partition-max-100", FETCH, v, fetch_req(parts, partition_max=100))
        s.check(
            f"v{v}/first-empty",
            FETCH,
            v,
            fetch_req([("fe-big", 0, 1), ("fe-big", 1, 0), ("fe-big", 2, 0)], max_bytes=1000),
        )


@case("fetch/long-poll")
def fetch_long_poll(s):
    s.create_topic("fe-wait", 1)
    s.check("empty-wait-100ms", FETCH, 12, fetch_req([("fe-wait", 0, 0)], max_wait=100, min_bytes=1))


@case("list_offsets")
def list_offsets(s):
    s.create_topic("lo-topic", 2)
    s.call(
        PRODUCE, 9, produce_req("lo-topic", 0, build_batch([(b"a", b"1", [], TS), (b"b", b"2", [], TS + 10)]))
    )
    s.call(PRODUCE, 9, produce_req("lo-topic", 0, build_batch([(b"c", b"3", [], TS + 5)])))
    for v in versions(LIST_OFFSETS):
        for ts in (-1, -2, -3, -4, -5, -6, -7, TS, TS + 5, TS + 7, TS + 100, 0):
            s.check(f"v{v}/ts={ts}", LIST_OFFSETS, v, list_offsets_req("lo-topic", [(0, ts)]))
        s.check(f"v{v}/empty-partition", LIST_OFFSETS, v, list_offsets_req("lo-topic", [(1, -1)]))
        s.check(f"v{v}/unknown-partition", LIST_OFFSETS, v, list_offsets_req("lo-topic", [(5, -1)]))
        s.check(f"v{v}/unknown-topic", LIST_OFFSETS, v, list_offsets_req("lo-missing", [(0, -1)]))
        s.check(f"v{v}/read-committed", LIST_OFFSETS, v, list_offsets_req("lo-topic", [(0, -1)], isolation=1))
    s.check("duplicate-partition", LIST_OFFSETS, 7, list_offsets_req("lo-topic", [(0, -1), (0, -2)]))
    s.check(
        "leader-epoch-future",
        LIST_OFFSETS,
        7,
        {
            **list_offsets_req("lo-topic", [(0, -1)]),
            "topics": [
                {
                    "name": "lo-topic",
                    "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": 3}],
                }
            ],
        },
    )


@case("offset_for_leader_epoch")
def offset_for_leader_epoch(s):
    s.create_topic("ofle", 1)
    s.call(PRODUCE, 9, produce_req("ofle", 0, batch(3)))
    for v in versions(OFFSET_FOR_LEADER_EPOCH):
        for epoch in (0, 1, -1):
            s.check(
                f"v{v}/epoch={epoch}",
                OFFSET_FOR_LEADER_EPOCH,
                v,
                {
                    "replica_id": -1,
                    "topics": [
                        {
                            "topic": "ofle",
                            "partitions": [
                                {"partition": 0, "current_leader_epoch": -1, "leader_epoch": epoch}
                            ],
                        }
                    ],
                },
            )
        s.check(
            f"v{v}/unknown",
            OFFSET_FOR_LEADER_EPOCH,
            v,
            {
                "replica_id": -1,
                "topics": [
                    {
                        "topic": "ofle-missing",
                        "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
                    }
                ],
            },
        )
        s.check(
            f"v{v}/fenced",
            OFFSET_FOR_LEADER_EPOCH,
            v,
            {
                "replica_id": -1,
                "topics": [
                    {
                        "topic": "ofle",
                        "partitions": [{"partition": 0, "current_leader_epoch": 4, "leader_epoch": 0}],
                    }
                ],
            },
        )
