"""The admin keys a single node answers from its own facts (issue 23): DescribeQuorum (55),
List/AlterPartitionReassignments (46/45), AlterReplicaLogDirs (34), UnregisterBroker (64),
UnregisterController (94), Add/RemoveRaftVoter (80/81), ListTransactions v2's pattern (66).

Nothing here may change the reference Kafka for later cases: UnregisterBroker and
RemoveRaftVoter are never sent for the node's own registration (Kafka would take its
partitions offline, or lose its only voter); tests/acceptance/test_admin_keys.py covers those
on minibroker.
"""

import uuid

from conformance.cases import case, versions
from conformance.cases.e_txn import add_partitions, init_pid

ALTER_REPLICA_LOG_DIRS, DESCRIBE_LOG_DIRS = 34, 35
ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS = 45, 46
DESCRIBE_QUORUM, UNREGISTER_BROKER, LIST_TXNS = 55, 64, 66
ADD_VOTER, REMOVE_VOTER, UNREGISTER_CONTROLLER = 80, 81, 94

METADATA = "__cluster_metadata"


def quorum_req(*topics):
    return {
        "topics": [{"topic_name": t, "partitions": [{"partition_index": p} for p in ps]} for t, ps in topics]
    }


@case("admin_keys/describe_quorum")
def describe_quorum(s):
    for v in versions(DESCRIBE_QUORUM):
        s.check(f"v{v}/metadata-partition", DESCRIBE_QUORUM, v, quorum_req((METADATA, [0])))
        s.check(f"v{v}/other-topic", DESCRIBE_QUORUM, v, quorum_req(("dq-none", [0])))
        s.check(f"v{v}/partition-1", DESCRIBE_QUORUM, v, quorum_req((METADATA, [1])))
        s.check(f"v{v}/two-partitions", DESCRIBE_QUORUM, v, quorum_req((METADATA, [0, 1])))
        s.check(f"v{v}/two-topics", DESCRIBE_QUORUM, v, quorum_req((METADATA, [0]), ("dq-none", [0])))
        s.check(f"v{v}/none", DESCRIBE_QUORUM, v, {"topics": []})


def alter(s, label, v, topics, allow_rf=True):
    return s.check(
        label,
        ALTER_REASSIGNMENTS,
        v,
        {
            "timeout_ms": 10000,
            "allow_replication_factor_change": allow_rf,
            "topics": [
                {"name": t, "partitions": [{"partition_index": p, "replicas": r} for p, r in parts]}
                for t, parts in topics
            ],
        },
    )


@case("admin_keys/partition_reassignments")
def partition_reassignments(s):
    s.create_topic("pr-topic", 2)
    for v in versions(LIST_REASSIGNMENTS):
        s.check(f"list-v{v}/all", LIST_REASSIGNMENTS, v, {"timeout_ms": 10000, "topics": None})
        s.check(
            f"list-v{v}/named",
            LIST_REASSIGNMENTS,
            v,
            {
                "timeout_ms": 10000,
                "topics": [
                    {"name": "pr-topic", "partition_indexes": [0, 7]},
                    {"name": "pr-none", "partition_indexes": [0]},
                ],
            },
        )
    # the internal-topic probe needs __consumer_offsets, which minibroker creates at the first
    # group write (Kafka at FindCoordinator): one simple commit creates it on both brokers
    s.call(
        8,  # OffsetCommit
        2,
        {
            "group_id": "pr-offsets-topic",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": "pr-topic",
                    "partitions": [{"partition_index": 0, "committed_offset": 0, "committed_metadata": ""}],
                }
            ],
        },
    )
    s.wait_topic("__consumer_offsets", 1)
    for v in versions(ALTER_REASSIGNMENTS):
        alter(s, f"alter-v{v}/same-replica", v, [("pr-topic", [(0, [1])])])
        alter(s, f"alter-v{v}/cancel", v, [("pr-topic", [(1, None)])])
        alter(s, f"alter-v{v}/unknown", v, [("pr-topic", [(9, [1])]), ("pr-none", [(0, [1])])])
        alter(s, f"alter-v{v}/other-broker", v, [("pr-topic", [(0, [2]), (1, [2, 1])])])
        alter(s, f"alter-v{v}/grow", v, [("pr-topic", [(0, [1, 2])])], allow_rf=False)
        alter(s, f"alter-v{v}/twice", v, [("pr-topic", [(0, [1, 1]), (1, [2, 2])])])
        alter(s, f"alter-v{v}/empty-and-negative", v, [("pr-topic", [(0, []), (1, [-1])])])
        alter(s, f"alter-v{v}/topic-twice", v, [("pr-topic", [(0, [1])]), ("pr-topic", [(1, [1])])])
        alter(s, f"alter-v{v}/internal-topic", v, [("__consumer_offsets", [(0, [1])])])
    s.check("list-after-alter", LIST_REASSIGNMENTS, 0, {"timeout_ms": 10000, "topics": None})


@case("admin_keys/alter_replica_log_dirs")
def alter_replica_log_dirs(s):
    s.create_topic("arld-topic", 2)
    own = s.call(DESCRIBE_LOG_DIRS, 1, {"topics": []})["results"][0]["log_dir"]

    def req(*dirs):
        return {
            "dirs": [
                {"path": path, "topics": [{"name": t, "partitions": ps} for t, ps in topics]}
                for path, topics in dirs
            ]
        }

    for v in versions(ALTER_REPLICA_LOG_DIRS):
        s.check(
            f"v{v}/same-dir",
            ALTER_REPLICA_LOG_DIRS,
            v,
            req((own, [("arld-topic", [0, 1, 5]), ("arld-none", [0])])),
        )
        s.check(
            f"v{v}/unknown-dir",
            ALTER_REPLICA_LOG_DIRS,
            v,
            req(("/nonexistent/arld", [("arld-topic", [0]), ("arld-none", [0])])),
        )
        s.check(f"v{v}/trailing-slash", ALTER_REPLICA_LOG_DIRS, v, req((own + "/", [("arld-topic", [1])])))
        s.check(f"v{v}/relative", ALTER_REPLICA_LOG_DIRS, v, req(("arld/relative", [("arld-topic", [1])])))
        s.check(
            f"v{v}/two-dirs-one-partition",
            ALTER_REPLICA_LOG_DIRS,
            v,
            req((own, [("arld-topic", [0])]), ("/nonexistent/arld", [("arld-topic", [0])])),
        )
        s.check(f"v{v}/nothing", ALTER_REPLICA_LOG_DIRS, v, {"dirs": []})


@case("admin_keys/unregister")
def unregister(s):
    for v in versions(UNREGISTER_BROKER):
        s.check(f"broker-v{v}/unknown-id", UNREGISTER_BROKER, v, {"broker_id": 7})
        s.check(f"broker-v{v}/negative-id", UNREGISTER_BROKER, v, {"broker_id": -1})
    for v in versions(UNREGISTER_CONTROLLER):
        s.check(f"controller-v{v}/self", UNREGISTER_CONTROLLER, v, {"controller_id": 1})
        s.check(f"controller-v{v}/unknown-id", UNREGISTER_CONTROLLER, v, {"controller_id": 7})


@case("admin_keys/raft_voters")
def raft_voters(s):
    quorum = s.call(DESCRIBE_QUORUM, 2, quorum_req((METADATA, [0])))
    own_dir = quorum["topics"][0]["partitions"][0]["current_voters"][0]["replica_directory_id"]
    own_dir = uuid.UUID(str(own_dir))
    other_dir = uuid.UUID(int=5)
    # port 1: nothing listens there, so Kafka cannot reach the new voter either
    controller = [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 1}]

    def add(label, v, voter, directory, listeners=controller, cluster=None):
        s.check(
            label,
            ADD_VOTER,
            v,
            {
                "cluster_id": cluster,
                "timeout_ms": 5000,
                "voter_id": voter,
                "voter_directory_id": directory,
                "listeners": listeners,
                "ack_when_committed": True,
            },
        )

    for v in versions(ADD_VOTER):
        add(f"add-v{v}/other-cluster", v, 2, other_dir, cluster="not-this-cluster")
        add(f"add-v{v}/no-directory", v, 2, uuid.UUID(int=0))
        add(f"add-v{v}/no-listeners", v, 2, other_dir, listeners=[])
        add(f"add-v{v}/other-listener", v, 2, other_dir, listeners=[{**controller[0], "name": "FOO"}])
        add(f"add-v{v}/own-id", v, 1, own_dir)
        add(f"add-v{v}/own-id-other-directory", v, 1, other_dir)
        add(f"add-v{v}/unreachable", v, 2, other_dir)

    def remove(label, v, voter, directory, cluster=None):
        s.check(
            label,
            REMOVE_VOTER,
            v,
            {"cluster_id": cluster, "voter_id": voter, "voter_directory_id": directory},
        )

    for v in versions(REMOVE_VOTER):
        remove(f"remove-v{v}/other-cluster", v, 2, other_dir, cluster="not-this-cluster")
        remove(f"remove-v{v}/no-directory", v, 2, uuid.UUID(int=0))
        remove(f"remove-v{v}/unknown-voter", v, 2, other_dir)
        remove(f"remove-v{v}/own-id-other-directory", v, 1, other_dir)
    s.check("quorum-after", DESCRIBE_QUORUM, 2, quorum_req((METADATA, [0])))


@case("admin_keys/list_transactions_pattern")
def list_transactions_pattern(s):
    s.create_topic("ltp-topic", 1)
    for tid in ("ltp-alpha-1", "ltp-beta-2"):
        r = init_pid(s, f"init-{tid}", 4, tid)
        add_partitions(s, f"add-{tid}", 3, tid, r["producer_id"], r["producer_epoch"], "ltp-topic", [0])
    ongoing = {"state_filters": ["Ongoing"], "producer_id_filters": []}
    for label, pattern in [
        ("prefix", "ltp-alpha.*"),
        ("both", "ltp-(alpha|beta)-[0-9]"),
        ("partial-is-no-match", "ltp-alpha"),
        ("quoted", r"\Qltp-beta-2\E"),
        ("unicode-class", r"\p{L}+-\p{L}+-\d"),
        ("unclosed-group", "(("),
        ("unclosed-class", "[a-"),
        ("lookahead", "(?=ltp).*"),
        ("backreference", r"(ltp)-\1"),
    ]:
        for v in (v for v in versions(LIST_TXNS) if v >= 2):
            s.check(f"v{v}/{label}", LIST_TXNS, v, {**ongoing, "transactional_id_pattern": pattern})
    s.check(
        "v2/pattern-and-unknown-state",
        LIST_TXNS,
        2,
        {"state_filters": ["Nope"], "producer_id_filters": [], "transactional_id_pattern": "(("},
    )
