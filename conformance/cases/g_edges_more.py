"""More edge cases: epochs of idempotent producers, old group versions, config resources."""

from conformance.cases import case
from conformance.cases.d_groups import FIND_COORDINATOR, HEARTBEAT, JOIN, LEAVE, OFFSET_FETCH, SYNC, join
from conformance.cases.e_txn import INIT_PID, init_pid

DESCRIBE_CONFIGS, DESCRIBE_CLUSTER, LIST_GROUPS = 32, 60, 16


@case("edges/idempotent-epochs")
def idempotent_epochs(s):
    first = s.call(
        INIT_PID,
        4,
        {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
    )
    pid, epoch = first["producer_id"], first["producer_epoch"]
    for v in (3, 4, 5):
        init_pid(s, f"v{v}/bump-own", v, None, pid=pid, epoch=epoch)
        init_pid(s, f"v{v}/bump-stale", v, None, pid=pid, epoch=epoch + 50)
    init_pid(s, "pid-without-epoch", 4, None, pid=pid, epoch=-1)
    init_pid(s, "epoch-without-pid", 4, None, pid=-1, epoch=3)


@case("edges/old-group-versions")
def old_group_versions(s):
    s.call(FIND_COORDINATOR, 0, {"key": "og"})
    r = join(s, "join-v0", 0, "og")
    member, gen = r["member_id"], r["generation_id"]
    s.check(
        "sync-v0-no-assignment",
        SYNC,
        0,
        {"group_id": "og", "generation_id": gen, "member_id": member, "assignments": []},
    )
    s.check("heartbeat-v0", HEARTBEAT, 0, {"group_id": "og", "generation_id": gen, "member_id": member})
    s.check(
        "offset-fetch-v1-unknown",
        OFFSET_FETCH,
        1,
        {"group_id": "og-none", "topics": [{"name": "nope", "partition_indexes": [0]}]},
    )
    s.check("leave-v0", LEAVE, 0, {"group_id": "og", "member_id": member})
    s.check("leave-v0-again", LEAVE, 0, {"group_id": "og", "member_id": member})
    # listed before og4 exists: Kafka 4's group coordinator lists groups as of its last committed
    # offset, so a group only created in memory (a JoinGroup answered MEMBER_ID_REQUIRED) shows
    # up there after some later write, a timing no client can rely on
    s.check("list-v0", LIST_GROUPS, 0, {})
    s.check(
        "join-v4-needs-id",
        JOIN,
        4,
        {
            "group_id": "og4",
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 10000,
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}],
        },
    )


@case("edges/config-resources")
def config_resources(s):
    s.create_topic("ec-topic", 1)

    def describe(label, resources, **kw):
        s.check(
            label,
            DESCRIBE_CONFIGS,
            4,
            {
                "resources": resources,
                "include_synonyms": kw.get("syn", False),
                "include_documentation": False,
            },
        )

    describe(
        "topic-and-broker",
        [
            {"resource_type": 2, "resource_name": "ec-topic", "configuration_keys": ["retention.ms"]},
            {"resource_type": 4, "resource_name": "1", "configuration_keys": ["num.partitions"]},
        ],
    )
    describe("empty-keys", [{"resource_type": 2, "resource_name": "ec-topic", "configuration_keys": []}])
    describe("no-resources", [])
    describe(
        "group-resource", [{"resource_type": 32, "resource_name": "some-group", "configuration_keys": None}]
    )
    describe(
        "invalid-topic-name", [{"resource_type": 2, "resource_name": "bad name", "configuration_keys": None}]
    )
    describe(
        "broker-not-a-number", [{"resource_type": 4, "resource_name": "one", "configuration_keys": None}]
    )
    describe(
        "broker-synonyms",
        [
            {
                "resource_type": 4,
                "resource_name": "1",
                "configuration_keys": ["log.segment.bytes", "log.retention.hours"],
            }
        ],
        syn=True,
    )
    s.check(
        "describe-cluster-controllers",
        DESCRIBE_CLUSTER,
        1,
        {"include_cluster_authorized_operations": False, "endpoint_type": 2},
    )


@case("edges/fetch-sessions")
def fetch_sessions(s):
    from conformance.cases.c_data import FETCH, fetch_req

    s.create_topic("ef-topic", 1)
    base = fetch_req([("ef-topic", 0, 0)])
    s.check("new-session", FETCH, 12, {**base, "session_id": 0, "session_epoch": 0})
    s.check("unknown-session", FETCH, 12, {**base, "session_id": 12345, "session_epoch": 1})
    s.check("close-unknown-session", FETCH, 12, {**base, "session_id": 12345, "session_epoch": -1})
    s.check("epoch-without-session", FETCH, 12, {**base, "session_id": 0, "session_epoch": 3})
    s.check(
        "forgotten-topics-full-fetch",
        FETCH,
        12,
        {**base, "forgotten_topics_data": [{"topic": "ef-topic", "partitions": [0]}]},
    )
    s.check("replica-id-0", FETCH, 12, {**base, "replica_id": 0})
    s.check("negative-partition", FETCH, 12, fetch_req([("ef-topic", -1, 0)]))
    s.check("v4-empty-topics", FETCH, 4, fetch_req([]))
