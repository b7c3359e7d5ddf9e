"""Edge cases across APIs: empty and null fields, boundary sizes, misused ids and epochs."""

from minibroker.protocol.records import build_batch

from conformance.cases import case
from conformance.cases.c_data import (
    FETCH,
    LIST_OFFSETS,
    PRODUCE,
    batch,
    fetch_req,
    list_offsets_req,
    produce_req,
)
from conformance.cases.d_groups import (
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    SYNC,
    commit,
    join,
    joined_member,
)
from conformance.cases.e_txn import (
    ADD_PARTITIONS,
    DESCRIBE_PRODUCERS,
    INIT_PID,
    LIST_TXNS,
    TXN_OFFSET_COMMIT,
    add_partitions,
    end_txn,
)

METADATA, CREATE = 3, 19


@case("edges/metadata")
def metadata_edges(s):
    s.create_topic("ed-md", 1)
    s.check("all-topics-v1-names", METADATA, 1, {"topics": [{"name": "ed-md"}, {"name": "ed-md"}]})
    s.check(
        "duplicate-names-v12",
        METADATA,
        12,
        {"topics": [{"name": "ed-md"}, {"name": "ed-md"}], "allow_auto_topic_creation": False},
    )
    s.check("name-249", METADATA, 12, {"topics": [{"name": "n" * 249}], "allow_auto_topic_creation": False})
    s.check("name-250", METADATA, 12, {"topics": [{"name": "n" * 250}], "allow_auto_topic_creation": False})


@case("edges/create-topics")
def create_edges(s):
    def topic(name, partitions=1):
        return {
            "name": name,
            "num_partitions": partitions,
            "replication_factor": 1,
            "assignments": [],
            "configs": [],
        }

    s.check("name-249", CREATE, 7, {"topics": [topic("c" * 249)], "timeout_ms": 10000, "validate_only": True})
    s.check("name-250", CREATE, 7, {"topics": [topic("c" * 250)], "timeout_ms": 10000, "validate_only": True})
    s.check(
        "name-with-dots-and-dashes",
        CREATE,
        7,
        {"topics": [topic("a.b_c-D9")], "timeout_ms": 10000, "validate_only": True},
    )
    s.check(
        "name-unicode", CREATE, 7, {"topics": [topic("tópico")], "timeout_ms": 10000, "validate_only": True}
    )
    s.check(
        "internal-name",
        CREATE,
        7,
        {"topics": [topic("__consumer_offsets")], "timeout_ms": 10000, "validate_only": True},
    )
    s.check("timeout-zero", CREATE, 7, {"topics": [topic("ed-t0")], "timeout_ms": 0, "validate_only": True})
    s.check(
        "9999-partitions",
        CREATE,
        7,
        {"topics": [topic("ed-9999", 9999)], "timeout_ms": 10000, "validate_only": True},
    )
    s.check(
        "two-topics-over-the-limit",
        CREATE,
        7,
        {
            "topics": [topic("ed-5000", 5000), topic("ed-5001", 5001)],
            "timeout_ms": 10000,
            "validate_only": True,
        },
    )
    s.create_topic("ed-grow", 1)
    s.check(
        "create-partitions-timeout-zero",
        37,
        3,
        {
            "topics": [{"name": "ed-grow", "count": 2, "assignments": None}],
            "timeout_ms": 0,
            "validate_only": True,
        },
    )
    s.check("delete-topics-timeout-zero", 20, 6, {"topics": [{"name": "ed-none"}], "timeout_ms": 0})
    s.check(
        "ten-thousand-partitions",
        CREATE,
        7,
        {"topics": [topic("ed-many", 10000)], "timeout_ms": 10000, "validate_only": True},
    )


@case("edges/data")
def data_edges(s):
    s.create_topic("ed-data", 1)
    s.check(
        "produce-empty-topics",
        PRODUCE,
        9,
        {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": []},
    )
    s.check("produce-timeout-0", PRODUCE, 9, {**produce_req("ed-data", 0, batch()), "timeout_ms": 0})
    s.check("fetch-max-bytes-0", FETCH, 12, fetch_req([("ed-data", 0, 0)], max_bytes=0))
    s.check("fetch-partition-max-0", FETCH, 12, fetch_req([("ed-data", 0, 0)], partition_max=0))
    s.check(
        "fetch-min-bytes-large-short-wait",
        FETCH,
        12,
        fetch_req([("ed-data", 0, 0)], max_wait=50, min_bytes=10**6),
    )
    s.check(
        "list-offsets-empty",
        LIST_OFFSETS,
        7,
        {"replica_id": -1, "isolation_level": 0, "timeout_ms": 1000, "topics": []},
    )
    s.check("list-offsets-empty-partitions", LIST_OFFSETS, 7, list_offsets_req("ed-data", []))
    s.check("list-offsets-negative-partition", LIST_OFFSETS, 7, list_offsets_req("ed-data", [(-1, -1)]))


@case("edges/groups")
def group_edges(s):
    s.create_topic("ed-g", 1)
    s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["ed-grp"]})
    commit(s, "commit-empty-group-id", 9, "", "ed-g", 1)
    commit(s, "commit-offset-minus-1", 9, "ed-grp", "ed-g", -1)
    s.check(
        "commit-big-metadata",
        OFFSET_COMMIT,
        9,
        {
            "group_id": "ed-grp",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [
                {
                    "name": "ed-g",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 2,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "m" * 5000,
                        }
                    ],
                }
            ],
        },
    )
    s.check(
        "commit-null-metadata",
        OFFSET_COMMIT,
        9,
        {
            "group_id": "ed-grp",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [
                {
                    "name": "ed-g",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 3,
                            "committed_leader_epoch": 7,
                            "committed_metadata": None,
                        }
                    ],
                }
            ],
        },
    )
    s.check(
        "fetch-after-null-metadata",
        OFFSET_FETCH,
        9,
        {
            "require_stable": False,
            "groups": [{"group_id": "ed-grp", "topics": [{"name": "ed-g", "partition_indexes": [0]}]}],
        },
    )
    s.check("offset-fetch-no-groups", OFFSET_FETCH, 9, {"require_stable": False, "groups": []})
    s.check("describe-no-groups", DESCRIBE_GROUPS, 5, {"groups": [], "include_authorized_operations": False})
    s.check("describe-empty-id", DESCRIBE_GROUPS, 5, {"groups": [""], "include_authorized_operations": False})
    member, gen = joined_member(s, "ed-live")
    s.check("delete-live-group", DELETE_GROUPS, 2, {"groups_names": ["ed-live"]})
    join(s, "join-no-protocols", 9, "ed-np", member_id="")
    s.check(
        "join-empty-protocols",
        JOIN,
        9,
        {
            "group_id": "ed-np2",
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 10000,
            "member_id": "",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [],
            "reason": None,
        },
    )
    s.check(
        "sync-wrong-generation",
        SYNC,
        5,
        {
            "group_id": "ed-live",
            "generation_id": gen + 1,
            "member_id": member,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        },
    )
    s.check(
        "sync-wrong-protocol-type",
        SYNC,
        5,
        {
            "group_id": "ed-live",
            "generation_id": gen,
            "member_id": member,
            "protocol_type": "connect",
            "protocol_name": "range",
            "assignments": [],
        },
    )
    s.check(
        "heartbeat-empty-member", HEARTBEAT, 4, {"group_id": "ed-live", "generation_id": gen, "member_id": ""}
    )


@case("edges/transactions")
def txn_edges(s):
    s.create_topic("ed-tx", 2)
    s.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["ed-tx"]})
    r = s.call(
        INIT_PID,
        4,
        {
            "transactional_id": "ed-tx",
            "transaction_timeout_ms": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
    )
    pid, epoch = r["producer_id"], r["producer_epoch"]
    add_partitions(s, "add-no-partitions", 3, "ed-tx", pid, epoch, "ed-tx", [])
    add_partitions(s, "add-unknown-partition", 3, "ed-tx", pid, epoch, "ed-tx", [9])
    s.check(
        "add-no-topics",
        ADD_PARTITIONS,
        3,
        {
            "v3_and_below_transactional_id": "ed-tx",
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [],
        },
    )
    add_partitions(s, "add-old-epoch", 3, "ed-tx", pid, epoch - 1, "ed-tx", [0])
    end_txn(s, "end-wrong-pid", 3, "ed-tx", pid + 100, epoch, True)
    s.check(
        "txn-offset-commit-unknown-tid",
        TXN_OFFSET_COMMIT,
        3,
        {
            "transactional_id": "ed-none",
            "group_id": "ed-g",
            "producer_id": pid,
            "producer_epoch": epoch,
            "topics": [
                {
                    "name": "ed-tx",
                    "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}],
                }
            ],
        },
    )
    idem = s.call(
        INIT_PID,
        4,
        {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
    )
    s.check(
        "idempotent-produce",
        PRODUCE,
        9,
        produce_req(
            "ed-tx",
            1,
            build_batch(
                [(b"k", b"v", [], 1_700_000_000_000)],
                producer_id=idem["producer_id"],
                producer_epoch=idem["producer_epoch"],
                base_sequence=0,
            ),
        ),
    )
    s.check(
        "describe-producers", DESCRIBE_PRODUCERS, 0, {"topics": [{"name": "ed-tx", "partition_indexes": [1]}]}
    )
    s.check("list-by-unknown-pid", LIST_TXNS, 1, {"state_filters": [], "producer_id_filters": [123456789]})
    s.check("list-by-pid", LIST_TXNS, 1, {"state_filters": [], "producer_id_filters": [pid]})
    s.check(
        "init-with-wrong-pid",
        INIT_PID,
        4,
        {
            "transactional_id": "ed-tx",
            "transaction_timeout_ms": 60000,
            "producer_id": pid + 1,
            "producer_epoch": epoch,
        },
    )
    s.check(
        "init-timeout-negative",
        INIT_PID,
        4,
        {"transactional_id": "ed-neg", "transaction_timeout_ms": -1, "producer_id": -1, "producer_epoch": -1},
    )
