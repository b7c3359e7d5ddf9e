"""Issue 13, Apache Kafka's own command-line tools against a minibroker process: the classes behind
kafka-transactions.sh (find-hanging, abort), kafka-delete-records.sh, kafka-configs.sh --alter and
kafka-log-dirs.sh, run with `java -cp` from the Maven jars conformance/reference_kafka.py fetches."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conformance.reference_kafka import tools_jars
from tests.acceptance.test_compaction import consume_all
from tests.support.helpers import create_topic, unique_name, wait_until
from tests.support.wire import WireClient

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)"),
]


@pytest.fixture(scope="module")
def kafka_tool():
    classpath = f"{tools_jars()}/*"

    def run(main_class: str, *args: str) -> str:
        done = subprocess.run(
            ["java", "-Xmx256m", "-cp", classpath, main_class, *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{main_class} {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    return run


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for v in values:
        p.produce(topic, v, partition=0)
    p.flush(10)


def test_transactions_find_hanging_and_abort(kafka_tool, broker_factory):
    """A transaction the coordinator no longer knows (its __transaction_state lost) while the
    partition still holds its open records: find-hanging reports it, abort ends it."""
    from confluent_kafka import Producer

    broker = broker_factory()
    topic = unique_name("cli-hanging")
    create_topic(broker, topic, 1)
    produce(broker.bootstrap, topic, [b"before"])
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": "hang-" + topic,
            "transaction.timeout.ms": 600_000,
        }
    )
    p.init_transactions(10)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, b"hanging-%d" % i, partition=0)
    p.flush(10)  # never ended by its producer
    del p
    produce(broker.bootstrap, topic, [b"after"])
    tx = "org.apache.kafka.tools.TransactionsCommand"
    find_hanging = (
        tx,
        "--bootstrap-server",
        broker.bootstrap,
        "find-hanging",
        "--broker-id",
        "1",
        "--max-transaction-timeout",
        "0",
    )
    assert kafka_tool(*find_hanging).splitlines()[1:] == []  # open, but its coordinator knows it

    broker.stop()
    for segment in (broker.data_dir / "__transaction_state-0").glob("*.log"):
        segment.write_bytes(b"")  # the coordinator forgets it
    broker.start()
    find_hanging = (*find_hanging[:2], broker.bootstrap, *find_hanging[3:])
    rows = [line.split() for line in kafka_tool(*find_hanging).splitlines()[1:] if line.strip()]
    assert [(r[0], r[1], r[5]) for r in rows] == [(topic, "0", "1")], rows  # topic, partition, start offset

    kafka_tool(
        tx,
        "--bootstrap-server",
        broker.bootstrap,
        "abort",
        "--topic",
        topic,
        "--partition",
        "0",
        "--start-offset",
        "1",
    )
    with WireClient.to(broker) as c:
        wait_until(
            lambda: c.list_offsets(topic, 0, -1, isolation_level=1).offset == 6,
            10,
            message="LSO past the aborted transaction",
        )
    assert [v for _, _, v in consume_all(broker.bootstrap, topic, "read_committed")] == [b"before", b"after"]
    assert kafka_tool(*find_hanging).splitlines()[1:] == []


def test_delete_records_command(kafka_tool, broker, tmp_path):
    topic = unique_name("cli-delrec")
    create_topic(broker, topic, 1)
    produce(broker.bootstrap, topic, [b"v%d" % i for i in range(10)])
    spec = tmp_path / "offsets.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 6}]}))
    out = kafka_tool(
        "org.apache.kafka.tools.DeleteRecordsCommand",
        "--bootstrap-server",
        broker.bootstrap,
        "--offset-json-file",
        str(spec),
    )
    assert f"partition: {topic}-0\tlow_watermark: 6" in out, out
    with WireClient.to(broker) as c:
        assert c.list_offsets(topic, 0, -2).offset == 6
    assert [v for _, _, v in consume_all(broker.bootstrap, topic, "read_uncommitted")] == [
        b"v%d" % i for i in range(6, 10)
    ]


def test_configs_alter_and_describe(kafka_tool, broker):
    topic = unique_name("cli-configs")
    create_topic(broker, topic, 1)
    cmd = (
        "kafka.admin.ConfigCommand",
        "--bootstrap-server",
        broker.bootstrap,
        "--entity-type",
        "topics",
        "--entity-name",
        topic,
    )
    kafka_tool(*cmd, "--alter", "--add-config", "retention.ms=3600000,cleanup.policy=[compact,delete]")
    described = kafka_tool(*cmd, "--describe")
    assert (
        "retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000"
        in described
    )
    assert "cleanup.policy=compact,delete" in described, described
    kafka_tool(*cmd, "--alter", "--delete-config", "retention.ms")
    assert "retention.ms=" not in kafka_tool(*cmd, "--describe")


def test_log_dirs_describe(kafka_tool, broker):
    topic = unique_name("cli-logdirs")
    create_topic(broker, topic, 2)
    produce(broker.bootstrap, topic, [b"x" * 1000] * 20)
    out = kafka_tool(
        "org.apache.kafka.tools.LogDirsCommand",
        "--bootstrap-server",
        broker.bootstrap,
        "--describe",
        "--topic-list",
        topic,
    )
    report = json.loads(out.strip().splitlines()[-1])
    (b,) = report["brokers"]
    assert b["broker"] == 1
    (log_dir,) = b["logDirs"]
    assert log_dir["error"] is None
    sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
    assert set(sizes) == {f"{topic}-0", f"{topic}-1"}
    assert sizes[f"{topic}-0"] > 20_000 and sizes[f"{topic}-1"] == 0


def test_kafka_acls_add_list_remove(kafka_tool, broker_factory):
    """kafka-acls.sh (AclCommand) against the authorizer: literal and prefixed ACLs are added,
    listed as Kafka lists them, and removed."""
    broker = broker_factory(
        {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",
        }
    )  # the PLAINTEXT principal may administer
    topic = unique_name("cli-acl")
    acls = ("org.apache.kafka.tools.AclCommand", "--bootstrap-server", broker.bootstrap)
    kafka_tool(*acls, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", topic)
    kafka_tool(
        *acls,
        "--add",
        "--allow-principal",
        "User:bob",
        "--producer",
        "--topic",
        "cli-pre-",
        "--resource-pattern-type",
        "prefixed",
    )
    listed = kafka_tool(*acls, "--list", "--topic", topic)
    assert "User:alice" in listed and "operation=READ" in listed and "permissionType=ALLOW" in listed, listed
    prefixed = kafka_tool(*acls, "--list", "--topic", "cli-pre-", "--resource-pattern-type", "prefixed")
    assert {"operation=WRITE", "operation=DESCRIBE", "operation=CREATE"} <= {
        part.strip(" ,()") for part in prefixed.replace(",", " ").split() if part.startswith("operation=")
    }, prefixed
    kafka_tool(
        *acls,
        "--remove",
        "--force",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--topic",
        topic,
    )
    assert "User:alice" not in kafka_tool(*acls, "--list", "--topic", topic)
    broker.restart()  # what is left is persisted (the restarted broker has a new port)
    acls = ("org.apache.kafka.tools.AclCommand", "--bootstrap-server", broker.bootstrap)
    assert "User:bob" in kafka_tool(
        *acls, "--list", "--topic", "cli-pre-", "--resource-pattern-type", "prefixed"
    )
