"""Issue 23, the admin keys one node answers from its own facts, through real clients: Kafka's
command-line tools (kafka-metadata-quorum.sh, kafka-reassign-partitions.sh,
kafka-transactions.sh list, kafka-cluster.sh unregister; Java Admin underneath) and
kafka-python's KafkaAdminClient. The wire answers themselves are compared with Kafka 4.4 by
conformance/cases/l_admin_keys.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid

import pytest
from kafka import errors
from kafka.structs import TopicPartition, TopicPartitionReplica
from minibroker.pipelines.jars import KAFKA_CLIENT_VERSIONS, kafka_clients_classpath

from conformance.reference_kafka import tools_jars
from conformance.wire import Connection
from tests.acceptance.test_java_clients import parse_result
from tests.acceptance.test_kafka_cli import kafka_tool  # noqa: F401 - the fixture
from tests.acceptance.test_security_acls import acl_broker  # noqa: F401 - the fixture
from tests.support.helpers import admin_client, create_topic, unique_name

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)"),
]

QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
CLUSTER = "org.apache.kafka.tools.ClusterTool"


def failing_tool(main_class: str, *args: str) -> str:
    """Run a tool that is expected to fail; its stdout and stderr."""
    done = subprocess.run(
        ["java", "-Xmx256m", "-cp", f"{tools_jars()}/*", main_class, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0, f"{main_class} {' '.join(args)} succeeded:\n{done.stdout}"
    return done.stdout + done.stderr


def test_metadata_quorum_status_and_replication(kafka_tool, shared_broker):  # noqa: F811
    status = kafka_tool(QUORUM, "--bootstrap-server", shared_broker.bootstrap, "describe", "--status")
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    assert fields["LeaderId"] == "1"
    assert fields["LeaderEpoch"] == "1"
    assert fields["CurrentObservers"] == "[]"
    (voter,) = json.loads(fields["CurrentVoters"])
    assert voter["id"] == 1
    assert voter["endpoints"] == [f"CONTROLLER://{shared_broker.host}:{shared_broker.port}"]

    replication = kafka_tool(
        QUORUM, "--bootstrap-server", shared_broker.bootstrap, "describe", "--replication"
    )
    rows = [line.split() for line in replication.splitlines()[1:] if line.strip()]
    assert [(r[0], r[-1]) for r in rows] == [("1", "Leader")], replication
    assert rows[0][1] == voter["directoryId"]  # the same directory id in both views


def test_kafka_python_describes_the_quorum(shared_broker):
    admin = admin_client(shared_broker.bootstrap)
    try:
        quorum = admin.describe_metadata_quorum()
    finally:
        admin.close()
    text = json.dumps(quorum, default=str)
    assert '"leader_id": 1' in text and '"leader_epoch": 1' in text, text
    assert '"observers": []' in text, text


def test_reassignments_on_one_broker(kafka_tool, shared_broker, tmp_path):  # noqa: F811
    topic = unique_name("reassign")
    create_topic(shared_broker, topic, 2)
    bootstrap = ("--bootstrap-server", shared_broker.bootstrap)
    assert "No partition reassignments found." in kafka_tool(REASSIGN, *bootstrap, "--list")

    # onto the one broker it is on: accepted, completes at once, nothing left in progress
    plan = tmp_path / "same.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1]}]})
    )
    out = kafka_tool(REASSIGN, *bootstrap, "--execute", "--reassignment-json-file", str(plan))
    assert "Successfully started partition reassignment" in out, out
    # --verify also clears the replication throttles (dynamic broker and topic configs)
    out = kafka_tool(REASSIGN, *bootstrap, "--verify", "--reassignment-json-file", str(plan))
    assert f"Reassignment of partition {topic}-0 is completed." in out, out
    assert "Clearing broker-level throttles on broker 1" in out, out
    assert "No partition reassignments found." in kafka_tool(REASSIGN, *bootstrap, "--list")

    # onto a broker that does not exist: refused as Kafka refuses it
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 1, "replicas": [2]}]})
    )
    out = failing_tool(REASSIGN, *bootstrap, "--execute", "--reassignment-json-file", str(plan))
    assert "Unknown broker id 2" in out or "no such broker is registered" in out, out

    admin = admin_client(shared_broker.bootstrap)
    try:
        assert admin.list_partition_reassignments() == {}
        results = admin.alter_partition_reassignments(
            {TopicPartition(topic, 0): [1], TopicPartition(topic, 1): [1, 1], TopicPartition(topic, 9): [1]}
        )
    finally:
        admin.close()
    assert results == {
        TopicPartition(topic, 0): None,
        TopicPartition(topic, 1): errors.InvalidReplicationAssignmentError,
        TopicPartition(topic, 9): errors.UnknownTopicOrPartitionError,
    }


def test_replica_log_dirs_on_one_directory(kafka_tool, shared_broker, tmp_path):  # noqa: F811
    topic = unique_name("logdirs")
    create_topic(shared_broker, topic, 1)
    data_dir = str(shared_broker.data_dir.resolve())
    admin = admin_client(shared_broker.bootstrap)
    try:
        results = admin.alter_replica_log_dirs(
            {
                TopicPartitionReplica(topic, 0, 1): data_dir,
                TopicPartitionReplica(topic + "-none", 0, 1): data_dir,
            }
        )
        elsewhere = admin.alter_replica_log_dirs({TopicPartitionReplica(topic, 0, 1): "/nonexistent"})
    finally:
        admin.close()
    # the partition is already in the one directory; another directory does not exist
    assert results == {
        TopicPartitionReplica(topic, 0, 1): errors.NoError,
        TopicPartitionReplica(topic + "-none", 0, 1): errors.UnknownTopicOrPartitionError,
    }
    assert elsewhere == {TopicPartitionReplica(topic, 0, 1): errors.LogDirNotFoundError}

    # kafka-reassign-partitions.sh moving a replica into a log dir (AlterReplicaLogDirs)
    plan = tmp_path / "logdir.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": topic, "partition": 0, "replicas": [1], "log_dirs": [data_dir]}],
            }
        )
    )
    out = kafka_tool(
        REASSIGN,
        "--bootstrap-server",
        shared_broker.bootstrap,
        "--execute",
        "--reassignment-json-file",
        str(plan),
    )
    assert f"Successfully started moving log directory to {data_dir} for replica {topic}-0" in out, out


def test_transactions_list_with_a_pattern(kafka_tool, shared_broker):  # noqa: F811
    from confluent_kafka import Producer

    topic = unique_name("txn-pattern")
    create_topic(shared_broker, topic, 1)
    prefix = unique_name("pat")
    producers = []
    try:
        for name in ("alpha-1", "alpha-2", "beta-1"):
            p = Producer(
                {"bootstrap.servers": shared_broker.bootstrap, "transactional.id": f"{prefix}-{name}"}
            )
            producers.append(p)
            p.init_transactions(10)
            p.begin_transaction()
            p.produce(topic, b"x", partition=0)
            p.flush(10)
        out = kafka_tool(
            TRANSACTIONS,
            "--bootstrap-server",
            shared_broker.bootstrap,
            "list",
            "--transactional-id-pattern",
            prefix + r"-alpha-\d",  # RE2J syntax, matched against the whole id
        )
        listed = sorted(line.split()[0] for line in out.splitlines()[1:] if line.strip())
        assert listed == [f"{prefix}-alpha-1", f"{prefix}-alpha-2"], out

        admin = admin_client(shared_broker.bootstrap)
        try:
            (everything,) = admin.list_transactions(transactional_id_pattern=f"{prefix}-.*").values()
            (partial,) = admin.list_transactions(transactional_id_pattern=prefix).values()
            # RE2 has no lookahead: INVALID_REGULAR_EXPRESSION, as Kafka answers
            with pytest.raises(errors.KafkaError) as refused:
                admin.list_transactions(transactional_id_pattern=f"(?={prefix}).*")
        finally:
            admin.close()
        assert sorted(t.transactional_id for t in everything) == [
            f"{prefix}-alpha-1",
            f"{prefix}-alpha-2",
            f"{prefix}-beta-1",
        ]
        assert partial == []  # a prefix alone does not match: the whole id must
    finally:
        for p in producers:
            p.abort_transaction(10)
    assert refused.value.errno == 128, refused.value  # INVALID_REGULAR_EXPRESSION


def test_unregister_broker_and_controller(kafka_tool, shared_broker):  # noqa: F811
    bootstrap = ("--bootstrap-server", shared_broker.bootstrap)
    out = failing_tool(CLUSTER, "unregister", *bootstrap, "--id", "7")
    assert "BrokerIdNotRegisteredException" in out or "is not currently registered" in out, out
    admin = admin_client(shared_broker.bootstrap)
    try:
        cluster = admin.describe_cluster()
    finally:
        admin.close()
    assert [b["broker_id"] for b in cluster["brokers"]] == [1]


def test_own_registrations_on_the_wire(shared_broker):
    """What conformance cannot send to the reference Kafka without breaking it for later cases:
    UnregisterBroker and RemoveRaftVoter for the node itself."""
    own_dir = None
    conn = Connection(shared_broker.address)
    try:
        quorum = conn.call(
            55, 2, {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
        )
        own_dir = quorum["topics"][0]["partitions"][0]["current_voters"][0]["replica_directory_id"]
        # accepted, as Kafka accepts it; minibroker keeps serving (Kafka would show its
        # partitions offline until the broker registers again)
        assert conn.call(64, 0, {"broker_id": 1})["error_code"] == 0
        assert (
            conn.call(3, 12, {"topics": None, "allow_auto_topic_creation": False})["brokers"][0]["node_id"]
            == 1
        )
        # the only voter is never removed: VOTER_NOT_FOUND
        removed = conn.call(
            81, 0, {"cluster_id": None, "voter_id": 1, "voter_directory_id": uuid.UUID(own_dir)}
        )
        assert removed["error_code"] == 127, removed
        # the active controller cannot unregister itself: INVALID_REQUEST
        assert conn.call(94, 0, {"controller_id": 1})["error_code"] == 42
    finally:
        conn.close()
    after = Connection(shared_broker.address)
    try:
        again = after.call(
            55, 2, {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
        )
    finally:
        after.close()
    assert again["topics"][0]["partitions"][0]["current_voters"][0]["replica_directory_id"] == own_dir


@pytest.mark.parametrize("client_version", KAFKA_CLIENT_VERSIONS, ids=lambda v: f"kafka-clients-{v}")
def test_java_admin(shared_broker, client_version):
    """jvm/clients/src/main/java/minibroker/AdminCheck.java: Java Admin's describeMetadataQuorum,
    list/alterPartitionReassignments, alterReplicaLogDirs, unregisterBroker, describeCluster
    with fenced brokers and listTransactions with a pattern (4.x only)."""
    topic, prefix = unique_name("java-admin"), unique_name("jtx")
    done = subprocess.run(
        [
            "java",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            kafka_clients_classpath(client_version),
            "minibroker.AdminCheck",
            shared_broker.bootstrap,
            topic,
            prefix,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"AdminCheck failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    result = parse_result(done.stdout)
    assert result == {
        "leader": "1",
        "epoch": "1",
        "voters": "1",
        "observers": "0",
        "reassignments": "0",
        "reassign_other": "InvalidReplicaAssignmentException",
        "cancel": "NoReassignmentInProgressException",
        "log_dir_other": "LogDirNotFoundException",
        "unregister_other": "BrokerIdNotRegisteredException",
        "brokers": "1",
        "pattern": "alpha-1,alpha-2" if client_version.startswith("4.") else "unsupported-by-client",
    }


def test_authorization_as_kafka_checks_it(acl_broker):  # noqa: F811
    """With an authorizer and no ACL for ANONYMOUS (the PLAINTEXT listener): DESCRIBE on the
    cluster for the describes, ALTER on the cluster for the changes, as Kafka checks them."""
    denied = 31  # CLUSTER_AUTHORIZATION_FAILED
    conn = Connection(("127.0.0.1", acl_broker.ports["PLAINTEXT"]))
    try:
        quorum = conn.call(
            55, 2, {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
        )
        assert quorum["error_code"] == denied and quorum["topics"] == []
        assert conn.call(46, 0, {"timeout_ms": 1000, "topics": None})["error_code"] == denied
        altered = conn.call(
            45,
            1,
            {
                "timeout_ms": 1000,
                "allow_replication_factor_change": True,
                "topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [1]}]}],
            },
        )
        assert altered["error_code"] == denied
        assert altered["responses"][0]["partitions"][0]["error_code"] == denied
        moved = conn.call(34, 2, {"dirs": [{"path": "/x", "topics": [{"name": "t", "partitions": [0]}]}]})
        assert moved["results"][0]["partitions"][0]["error_code"] == denied
        assert conn.call(64, 0, {"broker_id": 7})["error_code"] == denied
        assert conn.call(94, 0, {"controller_id": 7})["error_code"] == denied
        voter = {"cluster_id": None, "voter_id": 2, "voter_directory_id": uuid.UUID(int=5)}
        assert conn.call(81, 0, voter)["error_code"] == denied
        listeners = [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 1}]
        added = conn.call(
            80, 1, {**voter, "timeout_ms": 1000, "listeners": listeners, "ack_when_committed": True}
        )
        assert added["error_code"] == denied
    finally:
        conn.close()
