"""Issue 11: answers that used to differ from Apache Kafka 4.x, each checked on a real broker
over loopback (the differential suite in conformance/ compares them with Kafka itself).

Requests are built with the project's codec (kio) through conformance.wire."""

from __future__ import annotations

import time
import uuid

import pytest
from minibroker.protocol.records import build_batch

from conformance.wire import CLOSED, NO_ANSWER, Connection
from tests.support.broker import BrokerFactory

INVALID_REQUEST, UNSUPPORTED_VERSION, INVALID_TOPIC_EXCEPTION, UNKNOWN_SERVER_ERROR = 42, 35, 17, -1
INVALID_CONFIG, INVALID_REPLICA_ASSIGNMENT, UNKNOWN_TOPIC_OR_PARTITION = 40, 39, 3
NOT_REQUESTED = -(2**31)
TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def mb(request, tmp_path_factory):
    factory = BrokerFactory(tmp_path_factory.mktemp("conformance"))
    b = factory({"auto.create.topics.enable": False})
    yield b
    factory.teardown(request.session.testsfailed > 0)


@pytest.fixture
def conn(mb):
    c = Connection(mb.address, timeout=10)
    yield c
    c.close()


def create(conn, name, partitions=1, configs=None, assignments=(), version=7, validate_only=False):
    answer = conn.call(
        19,
        version,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1 if partitions != -1 else -1,
                    "assignments": list(assignments),
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout_ms": 10000,
            "validate_only": validate_only,
        },
    )
    return answer["topics"]


def produce(conn, topic, partition, records, acks=-1):
    return conn.call(
        0,
        9,
        {
            "transactional_id": None,
            "acks": acks,
            "timeout_ms": 10000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}],
        },
        expect_response=acks != 0,
    )


def fetch(conn, parts, *, max_bytes=50_000_000, partition_max=1_000_000, isolation=0, version=12):
    return conn.call(
        1,
        version,
        {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": max_bytes,
            "isolation_level": isolation,
            "session_id": 0,
            "session_epoch": -1,
            "forgotten_topics_data": [],
            "rack_id": "",
            "topics": [
                {
                    "topic": t,
                    "partitions": [
                        {
                            "partition": p,
                            "fetch_offset": 0,
                            "partition_max_bytes": partition_max,
                            "current_leader_epoch": -1,
                            "log_start_offset": -1,
                        }
                        for topic, p in parts
                        if topic == t
                    ],
                }
                for t in dict.fromkeys(t for t, _ in parts)
            ],
        },
    )


def list_offsets(conn, topic, partitions_ts, version=7):
    return conn.call(
        2,
        version,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "timeout_ms": 1000,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": p, "timestamp": ts, "current_leader_epoch": -1}
                        for p, ts in partitions_ts
                    ],
                }
            ],
        },
    )


def still_open(conn) -> bool:
    return isinstance(conn.call_raw(18, 0, {}), bytes)


def test_metadata_v10_null_name_is_invalid_request_not_a_dropped_connection(conn):
    for version in (10, 11):
        answer = conn.call(
            3,
            version,
            {"topics": [{"name": None, "topic_id": uuid.uuid4()}], "allow_auto_topic_creation": False},
        )
        assert answer != CLOSED, f"v{version}: connection dropped"
        assert [t["error_code"] for t in answer["topics"]] == [INVALID_REQUEST]
        assert answer["topics"][0]["name"] == "" and answer["brokers"] == []
    assert still_open(conn)


def test_metadata_invalid_topic_name_without_auto_create(conn):
    answer = conn.call(
        3,
        12,
        {
            "topics": [{"name": "bad name"}, {"name": ".."}, {"name": "fine-but-missing"}],
            "allow_auto_topic_creation": False,
        },
    )
    assert {t["name"]: t["error_code"] for t in answer["topics"]} == {
        "bad name": INVALID_TOPIC_EXCEPTION,
        "..": INVALID_TOPIC_EXCEPTION,
        "fine-but-missing": UNKNOWN_TOPIC_OR_PARTITION,
    }


def test_authorized_operations_full_set_when_asked(conn):
    create(conn, "authz")
    md = conn.call(
        3,
        10,
        {
            "topics": [{"name": "authz"}],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": True,
            "include_topic_authorized_operations": True,
        },
    )
    assert md["topics"][0]["topic_authorized_operations"] == 3576  # READ..ALTER_CONFIGS on a topic
    assert md["cluster_authorized_operations"] == 8096
    md = conn.call(3, 12, {"topics": [{"name": "authz"}], "allow_auto_topic_creation": False})
    assert md["topics"][0]["topic_authorized_operations"] == NOT_REQUESTED
    dc = conn.call(60, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 1})
    assert dc["cluster_authorized_operations"] == 8096


def test_fetch_max_bytes_bounds_the_response_across_partitions(conn):
    """KIP-74: only the first partition yielding data may return a batch over the limits."""
    create(conn, "kip74", 3)
    for p in range(3):
        assert (
            produce(conn, "kip74", p, build_batch([(b"k", b"x" * 3000, [], TS)]))["responses"][0][
                "partition_responses"
            ][0]["error_code"]
            == 0
        )
    parts = [("kip74", p) for p in range(3)]

    def sizes(answer):  # records come back as hex text
        return [len(p["records"] or "") // 2 for p in answer["responses"][0]["partitions"]]

    small = sizes(fetch(conn, parts, max_bytes=1000))
    assert small[0] > 1000 and small[1:] == [0, 0], small
    assert sizes(fetch(conn, parts, partition_max=100))[1:] == [0, 0]
    two = sizes(fetch(conn, parts, max_bytes=2 * small[0] + 10))
    assert two[:2] == [small[0], small[0]] and two[2] == 0, two


def test_fetch_isolation_level_outside_0_1(conn):
    create(conn, "isolation")
    answer = fetch(conn, [("isolation", 0)], isolation=2)
    assert answer["error_code"] == UNKNOWN_SERVER_ERROR
    assert answer["responses"][0]["partitions"][0]["error_code"] == UNKNOWN_SERVER_ERROR
    assert still_open(conn)


def test_acks0_error_closes_the_connection(mb):
    with_ok, with_error = Connection(mb.address, timeout=5), Connection(mb.address, timeout=5)
    try:
        create(with_ok, "acks0")
        assert produce(with_ok, "acks0", 0, build_batch([(b"k", b"v", [], TS)]), acks=0) == NO_ANSWER
        assert still_open(with_ok)
        produce(with_error, "acks0", 9, build_batch([(b"k", b"v", [], TS)]), acks=0)
        assert with_error.call_raw(18, 0, {}) == CLOSED
    finally:
        with_ok.close()
        with_error.close()


def test_create_topics_validation(conn):
    dup = conn.call(
        19,
        7,
        {
            "topics": [
                {
                    "name": "dup",
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ]
            * 2,
            "timeout_ms": 1000,
            "validate_only": False,
        },
    )
    assert [(t["name"], t["error_code"]) for t in dup["topics"]] == [("dup", INVALID_REQUEST)]
    assert create(conn, "tiny-seg", configs={"segment.bytes": "1000"})[0]["error_code"] == INVALID_CONFIG
    assert create(conn, "mib-seg", configs={"segment.bytes": str(1 << 20)})[0]["error_code"] == 0
    gap = [{"partition_index": 0, "broker_ids": [1]}, {"partition_index": 2, "broker_ids": [1]}]
    assert create(conn, "gap", -1, assignments=gap)[0]["error_code"] == INVALID_REPLICA_ASSIGNMENT
    ok = [{"partition_index": 1, "broker_ids": [1]}, {"partition_index": 0, "broker_ids": [1]}]
    assert create(conn, "ok-assign", -1, assignments=ok)[0]["num_partitions"] == 2


def test_create_topics_v5_returns_configs(conn):
    (topic,) = create(conn, "with-configs", configs={"retention.ms": "1000"}, version=5)
    configs = {c["name"]: c for c in topic["configs"]}
    assert configs["retention.ms"]["value"] == "1000" and configs["retention.ms"]["config_source"] == 1
    assert (
        configs["segment.bytes"]["value"] == "1073741824" and configs["segment.bytes"]["config_source"] == 5
    )
    (failed,) = create(conn, "with-configs", version=5)
    assert failed["error_code"] == 36 and failed["configs"] == []


def test_describe_configs_types_documentation_synonyms(conn):
    create(conn, "described", configs={"retention.ms": "3600000"})
    answer = conn.call(
        32,
        4,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "described",
                    "configuration_keys": ["retention.ms", "segment.bytes", "cleanup.policy"],
                }
            ],
            "include_synonyms": True,
            "include_documentation": True,
        },
    )
    configs = {c["name"]: c for c in answer["results"][0]["configs"]}
    assert [configs[n]["config_type"] for n in ("retention.ms", "segment.bytes", "cleanup.policy")] == [
        5,
        3,
        7,
    ]
    assert all(c["documentation"] for c in configs.values())
    assert configs["retention.ms"]["synonyms"] == [{"name": "retention.ms", "value": "3600000", "source": 1}]
    assert configs["segment.bytes"]["synonyms"] == [
        {"name": "log.segment.bytes", "value": "1073741824", "source": 5}
    ]
    plain = conn.call(
        32,
        4,
        {
            "resources": [
                {"resource_type": 4, "resource_name": "1", "configuration_keys": ["num.partitions"]}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    (entry,) = plain["results"][0]["configs"]
    assert entry["documentation"] is None and entry["synonyms"] == [] and entry["config_type"] == 3


def test_list_offsets_validation(conn):
    create(conn, "lo-check")
    dup = list_offsets(conn, "lo-check", [(0, -1), (0, -2)])
    assert [(p["partition_index"], p["error_code"]) for p in dup["topics"][0]["partitions"]] == [
        (0, INVALID_REQUEST)
    ]
    for ts, since in ((-3, 7), (-4, 8), (-5, 9)):
        assert (
            list_offsets(conn, "lo-check", [(0, ts)], version=since - 1)["topics"][0]["partitions"][0][
                "error_code"
            ]
            == UNSUPPORTED_VERSION
        )
        assert (
            list_offsets(conn, "lo-check", [(0, ts)], version=since)["topics"][0]["partitions"][0][
                "error_code"
            ]
            == 0
        )
    assert (
        list_offsets(conn, "lo-check", [(0, -7)], version=10)["topics"][0]["partitions"][0]["error_code"]
        == UNSUPPORTED_VERSION
    )


def test_api_versions_client_software_format(mb):
    for name, version, expected in (
        ("librdkafka", "2.16.1", 0),
        ("bad name", "1", INVALID_REQUEST),
        ("ok", "1.0-", INVALID_REQUEST),
        ("", "1", INVALID_REQUEST),
    ):
        c = Connection(mb.address, timeout=5)
        try:
            answer = c.call(18, 3, {"client_software_name": name, "client_software_version": version})
            assert answer["error_code"] == expected, (name, version)
            assert bool(answer["api_keys"]) == (expected == 0)
            assert still_open(c)
        finally:
            c.close()


def test_offset_for_leader_epoch_undefined_epoch(conn):
    create(conn, "ofle-undefined")
    answer = conn.call(
        23,
        4,
        {
            "replica_id": -1,
            "topics": [
                {
                    "topic": "ofle-undefined",
                    "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": -1}],
                }
            ],
        },
    )
    p = answer["topics"][0]["partitions"][0]
    assert (p["error_code"], p["leader_epoch"], p["end_offset"]) == (0, -1, -1)


def test_offset_commit_v9_to_unknown_group(conn):
    create(conn, "oc-unknown")
    for version, expected in ((8, 22), (9, 69)):  # ILLEGAL_GENERATION before v9, GROUP_ID_NOT_FOUND after
        answer = conn.call(
            8,
            version,
            {
                "group_id": f"never-joined-{version}",
                "generation_id_or_member_epoch": 3,
                "member_id": "m",
                "retention_time_ms": -1,
                "topics": [
                    {
                        "name": "oc-unknown",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 1,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            },
        )
        assert answer["topics"][0]["partitions"][0]["error_code"] == expected, version


def test_describe_topic_partitions_pages_with_a_cursor(conn):
    create(conn, "dtp-one", 3)
    create(conn, "dtp-two", 2)
    page = conn.call(
        75,
        0,
        {"topics": [{"name": "dtp-two"}, {"name": "dtp-one"}], "response_partition_limit": 4, "cursor": None},
    )
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in page["topics"]] == [
        ("dtp-one", [0, 1, 2]),
        ("dtp-two", [0]),
    ]
    assert page["next_cursor"] == {"topic_name": "dtp-two", "partition_index": 1}
    rest = conn.call(
        75,
        0,
        {
            "topics": [{"name": "dtp-two"}, {"name": "dtp-one"}],
            "response_partition_limit": 4,
            "cursor": page["next_cursor"],
        },
    )
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in rest["topics"]] == [
        ("dtp-two", [1])
    ]
    assert rest["next_cursor"] is None
    missing = conn.call(
        75, 0, {"topics": [{"name": "dtp-nope"}], "response_partition_limit": 10, "cursor": None}
    )
    assert missing["topics"][0]["error_code"] == UNKNOWN_TOPIC_OR_PARTITION


def test_elect_leaders_is_never_needed_on_one_broker(conn):
    create(conn, "elect", 2)
    answer = conn.call(
        43,
        2,
        {
            "election_type": 0,
            "timeout_ms": 1000,
            "topic_partitions": [{"topic": "elect", "partitions": [0, 1, 7]}],
        },
    )
    assert answer["error_code"] == 0
    assert [
        (p["partition_id"], p["error_code"])
        for p in answer["replica_election_results"][0]["partition_result"]
    ] == [(0, 84), (1, 84), (7, UNKNOWN_TOPIC_OR_PARTITION)]


def test_api_versions_v5_checks_the_cluster_and_node(mb):
    probe = Connection(mb.address, timeout=5)
    try:
        md = probe.call(3, 12, {"topics": [], "allow_auto_topic_creation": False})
        base = {"client_software_name": "test", "client_software_version": "1"}
        own = probe.call(
            18, 5, {**base, "cluster_id": md["cluster_id"], "node_id": md["brokers"][0]["node_id"]}
        )
        assert own["error_code"] == 0 and {k["api_key"]: k["max_version"] for k in own["api_keys"]}[18] == 5
        unset = probe.call(18, 5, {**base, "cluster_id": None, "node_id": -1})
        assert unset["error_code"] == 0
        other = probe.call(
            18, 5, {**base, "cluster_id": "AAAAAAAAAAAAAAAAAAAAAA", "node_id": md["brokers"][0]["node_id"]}
        )
        assert other["error_code"] == 129 and other["api_keys"] == []  # REBOOTSTRAP_REQUIRED
        half = probe.call(18, 5, {**base, "cluster_id": md["cluster_id"], "node_id": -1})
        assert half["error_code"] == INVALID_REQUEST
    finally:
        probe.close()


def test_admin_deadlines_and_request_size_limits(conn):
    def topic(name, partitions=1):
        return {
            "name": name,
            "num_partitions": partitions,
            "replication_factor": 1,
            "assignments": [],
            "configs": [],
        }

    def codes(api, version, fields, key):
        return [r["error_code"] for r in conn.call(api, version, fields)[key]]

    assert codes(
        19, 7, {"topics": [topic("deadline")], "timeout_ms": 0, "validate_only": True}, "topics"
    ) == [7]
    assert codes(20, 6, {"topics": [{"name": "deadline"}], "timeout_ms": 0}, "responses") == [7]
    create(conn, "grow-deadline")
    assert codes(
        37,
        3,
        {
            "topics": [{"name": "grow-deadline", "count": 2, "assignments": None}],
            "timeout_ms": 0,
            "validate_only": True,
        },
        "results",
    ) == [7]
    # one request may write at most 10000 metadata records (a topic record plus one per partition)
    assert codes(
        19, 7, {"topics": [topic("big", 9999)], "timeout_ms": 1000, "validate_only": True}, "topics"
    ) == [0]
    assert codes(
        19,
        7,
        {"topics": [topic("big-a", 5000), topic("big-b", 5001)], "timeout_ms": 1000, "validate_only": True},
        "topics",
    ) == [44, 44]
    assert codes(
        19, 7, {"topics": [topic("__consumer_offsets")], "timeout_ms": 1000, "validate_only": True}, "topics"
    ) == [36]


def test_answers_name_each_topic_once_and_skip_empty_requests(conn):
    create(conn, "once")
    md = conn.call(
        3, 12, {"topics": [{"name": "once"}, {"name": "once"}], "allow_auto_topic_creation": False}
    )
    assert [t["name"] for t in md["topics"]] == ["once"]
    assert list_offsets(conn, "once", [])["topics"] == []
    produce(conn, "once", 0, build_batch([(b"k", b"v" * 100, [], TS)]))
    first = fetch(conn, [("once", 0)], max_bytes=0)["responses"][0]["partitions"][0]
    assert first["records"], "max_bytes=0 still returns the first batch (KIP-74)"


def test_librdkafka_consumer_with_fetch_max_bytes_below_the_batches_gets_everything(mb, conn):
    """The reported stall: 900 KiB records on three partitions and fetch.max.bytes=1000000. An
    answer over receive.message.max.bytes made librdkafka drop it and retry forever."""
    from confluent_kafka import Consumer, TopicPartition

    create(conn, "big-records", 3)
    for p in range(3):
        answer = produce(
            conn, "big-records", p, build_batch([(b"k", bytes([65 + p]) * (900 * 1024), [], TS)])
        )
        assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0
    consumer = Consumer(
        {
            "bootstrap.servers": mb.bootstrap,
            "group.id": "big-records",
            "enable.auto.commit": False,
            "fetch.max.bytes": 1_000_000,
            "receive.message.max.bytes": 1_000_000 + 512,
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        consumer.assign([TopicPartition("big-records", p, 0) for p in range(3)])
        got, deadline = {}, time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            for m in consumer.consume(3, 1.0):
                assert m.error() is None, m.error()
                got[m.partition()] = len(m.value())
        assert got == {0: 900 * 1024, 1: 900 * 1024, 2: 900 * 1024}
    finally:
        consumer.close()


def test_describe_configs_invalid_topic_name_and_controller_endpoints(conn):
    answer = conn.call(
        32,
        4,
        {
            "resources": [{"resource_type": 2, "resource_name": "bad name", "configuration_keys": None}],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    assert answer["results"][0]["error_code"] == INVALID_TOPIC_EXCEPTION
    controllers = conn.call(60, 1, {"include_cluster_authorized_operations": False, "endpoint_type": 2})
    assert controllers["error_code"] == 114  # MISMATCHED_ENDPOINT_TYPE: brokers do not describe controllers


def test_fetch_refuses_unknown_sessions_and_follower_fetches(conn):
    create(conn, "sessions")
    base = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1000,
        "isolation_level": 0,
        "forgotten_topics_data": [],
        "rack_id": "",
        "topics": [
            {
                "topic": "sessions",
                "partitions": [
                    {
                        "partition": 0,
                        "fetch_offset": 0,
                        "partition_max_bytes": 1000,
                        "current_leader_epoch": -1,
                        "log_start_offset": -1,
                    }
                ],
            }
        ],
    }
    incremental = conn.call(1, 12, {**base, "session_id": 99, "session_epoch": 1})
    assert incremental["error_code"] == 70 and incremental["responses"] == []  # FETCH_SESSION_ID_NOT_FOUND
    full = conn.call(1, 12, {**base, "session_id": 0, "session_epoch": -1})
    assert full["error_code"] == 0 and full["session_id"] == 0
    follower = conn.call(1, 12, {**base, "session_id": 0, "session_epoch": -1, "replica_id": 0})
    assert follower["responses"][0]["partitions"][0]["error_code"] == 6  # NOT_LEADER_OR_FOLLOWER
