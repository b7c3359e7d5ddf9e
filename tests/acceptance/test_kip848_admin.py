"""Issue 25, the admin side of KIP-848 consumer groups against a minibroker process:
Apache Kafka's kafka-consumer-groups.sh (its Java Admin: ListGroups with types and states,
ConsumerGroupDescribe, OffsetFetch and OffsetCommit as an admin) on a group whose member is a
confluent-kafka consumer with group.protocol=consumer, and the exactly-once read-process-write
loop (tests/support/eos_worker.py) as a consumer-protocol member whose transactional offset
commits carry its member epoch, killed inside a transaction and replaced: every input record
has exactly one output record for a read_committed reader.

The broker runs with group.version=1 and lowered group.consumer.* timings (Kafka accepts the same
properties): heartbeats every 200 ms, a 2 s session, each change assigned at once."""

from __future__ import annotations

import collections
import shutil
import signal
import time

import pytest

from tests.acceptance.test_eos_worker_kill import (
    PARTS,
    N,
    Worker,
    _group_offsets,
    _read_committed_output,
    _seed,
)
from tests.acceptance.test_kafka_cli import kafka_tool  # noqa: F401 - the fixture, reused
from tests.acceptance.test_observability import scrape, value
from tests.acceptance.test_transactions_helpers import uid
from tests.support.helpers import create_topic, unique_name, wait_until

pytestmark = pytest.mark.timeout(180)

KIP848 = {
    "minibroker.features": "group.version=1",
    "group.consumer.min.heartbeat.interval.ms": 100,
    "group.consumer.heartbeat.interval.ms": 200,
    "group.consumer.min.session.timeout.ms": 1000,
    "group.consumer.session.timeout.ms": 2000,
    "group.consumer.assignment.interval.ms": 0,
    "group.initial.rebalance.delay.ms": 0,
}
GROUPS_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
java = pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)")


@pytest.fixture
def kip848_broker(broker_factory):
    return broker_factory({**KIP848, "minibroker.metrics.port": 0})


def _describe(broker, group: str):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    return admin.describe_consumer_groups([group], request_timeout=10)[group].result(timeout=15)


def _table(output: str) -> list[dict[str, str]]:
    """kafka-consumer-groups.sh --describe's offsets table as rows of {column: value}."""
    lines = [line.split() for line in output.splitlines() if line.strip()]
    header = next(i for i, cols in enumerate(lines) if cols[:2] == ["GROUP", "TOPIC"])
    return [dict(zip(lines[header], cols, strict=False)) for cols in lines[header + 1 :] if len(cols) >= 6]


@java
def test_consumer_groups_tool_describes_and_resets_a_consumer_protocol_group(kafka_tool, kip848_broker):  # noqa: F811
    from confluent_kafka import Consumer, Producer

    broker = kip848_broker
    topic, group = unique_name("kip848-cli"), unique_name("kip848-cli-group")
    create_topic(broker, topic, 2)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        p.produce(topic, b"v%d" % i, partition=i % 2)
    assert p.flush(10) == 0
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    tool = ("--bootstrap-server", broker.bootstrap)
    try:
        c.subscribe([topic])
        read = []
        deadline = time.monotonic() + 60
        while len(read) < 10:
            assert time.monotonic() < deadline, f"read {len(read)} of 10"
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                read.append(m.value())
        c.commit(asynchronous=False)
        # --describe: ConsumerGroupDescribe, the committed offsets and the log end offsets
        rows = _table(kafka_tool(GROUPS_TOOL, *tool, "--describe", "--group", group))
        assert sorted(
            (r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) for r in rows
        ) == [
            (topic, "0", "5", "5", "0"),
            (topic, "1", "5", "5", "0"),
        ]
        assert all(r["CONSUMER-ID"] != "-" for r in rows), rows  # both partitions have an owner
        state = kafka_tool(GROUPS_TOOL, *tool, "--describe", "--group", group, "--state")
        assert "uniform" in state and "Stable" in state, state
        listed = kafka_tool(GROUPS_TOOL, *tool, "--list", "--type", "consumer")
        assert group in listed.split(), listed
        typed = kafka_tool(GROUPS_TOOL, *tool, "--list", "--type")
        assert any(line.split()[:2] == [group, "Consumer"] for line in typed.splitlines()), typed
        assert group not in kafka_tool(GROUPS_TOOL, *tool, "--list", "--type", "classic").split()
        # the group gauges count consumer-protocol groups too
        samples = scrape(broker)
        assert value(samples, "minibroker_group_members", group=group, type="consumer") == 1
        assert value(samples, "minibroker_groups", type="consumer", state="Stable") == 1
        assert (
            value(samples, "minibroker_group_offset_lag_messages", group=group, topic=topic, partition=0) == 0
        )
    finally:
        c.close()  # the member leaves: the group is Empty

    # --reset-offsets --execute needs an inactive group: an admin's commit (no member, epoch -1)
    def empty() -> bool:
        return "Empty" in kafka_tool(GROUPS_TOOL, *tool, "--describe", "--group", group, "--state")

    wait_until(empty, timeout=30, message="the group Empty after its member left")
    reset = kafka_tool(
        GROUPS_TOOL,
        *tool,
        "--reset-offsets",
        "--group",
        group,
        "--topic",
        topic,
        "--to-earliest",
        "--execute",
    )
    assert f"{topic}" in reset and "NEW-OFFSET" in reset, reset
    rows = _table(kafka_tool(GROUPS_TOOL, *tool, "--describe", "--group", group))
    assert sorted((r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"]) for r in rows) == [
        ("0", "0", "5"),
        ("1", "0", "5"),
    ]
    deleted = kafka_tool(GROUPS_TOOL, *tool, "--delete", "--group", group)
    assert "successful" in deleted, deleted
    assert group not in kafka_tool(GROUPS_TOOL, *tool, "--list").split()


def test_exactly_once_read_process_write_as_a_consumer_protocol_member(kip848_broker, tmp_path):
    """eos_worker.py with group.protocol=consumer: its send_offsets_to_transaction carries the
    member id and epoch (TxnOffsetCommit checked against the member epoch). One worker is
    killed with an open transaction whose offsets were added; its replacement (same
    transactional.id, fencing it) takes over once the dead member's session expired."""
    broker = kip848_broker
    src, dst, group, txn_id = uid("eos848-in"), uid("eos848-out"), uid("eos848-group"), uid("eos848")
    create_topic(broker, src, PARTS)
    create_topic(broker, dst, PARTS)
    _seed(broker, src)  # N records
    input_end = {p: N // PARTS for p in range(PARTS)}
    workers: list[Worker] = []
    try:
        first = Worker(broker, src, dst, group, txn_id, tmp_path, 0, 0.3, "--group-protocol", "consumer")
        workers.append(first)
        deadline = time.monotonic() + 40
        commits = 0
        while True:  # two committed transactions, then killed with its offsets in the third
            line = first.next_line(deadline)
            assert line is not None, f"worker exited early: {first.seen[-5:]}\n{first.diag()}"
            commits += line.startswith("COMMITTED")
            if commits >= 2 and line == "OFFSETS":
                first.kill()
                break
        last = Worker(broker, src, dst, group, txn_id, tmp_path, 1, 0, "--group-protocol", "consumer")
        workers.append(last)
        deadline = time.monotonic() + 60
        while True:
            line = last.next_line(deadline)
            assert line is not None, f"worker exited early: {last.seen[-5:]}\n{last.diag()}"
            if line.startswith("COMMITTED") and _group_offsets(broker, group, src) == input_end:
                break
        # a KIP-848 group (librdkafka's describe_consumer_groups: ConsumerGroupDescribe), the
        # replacement its one member, owning every partition
        described = _describe(broker, group)
        assert (str(described.type), str(described.state)) == (
            "ConsumerGroupType.CONSUMER",
            "ConsumerGroupState.STABLE",
        )
        assert [len(m.assignment.topic_partitions) for m in described.members] == [PARTS]
        last.proc.send_signal(signal.SIGTERM)
        assert last.proc.wait(15) == 0, last.diag()
    finally:
        for w in workers:
            w.close()
    assert not [s for w in workers for s in w.seen if s.startswith("ABORTED")]
    out, _ = _read_committed_output(broker, dst)
    values = collections.Counter(v for _, _, v in out)
    assert {v: n for v, n in values.items() if n > 1} == {}  # nothing duplicated
    assert set(values) == {f"out-in-{i:04d}".encode() for i in range(N)}  # nothing lost
    assert _group_offsets(broker, group, src) == input_end


@java
def test_configs_tool_sets_and_describes_a_group_config(kafka_tool, kip848_broker):  # noqa: F811
    """kafka-configs.sh --entity-type groups: a config for a group that does not exist (yet),
    refused out of the broker's range, deleted; it outlives a SIGKILL (group-configs.json is
    written before the answer)."""
    broker = kip848_broker
    group = unique_name("kip848-cfg")

    def configs(*args: str) -> str:
        return kafka_tool(
            "kafka.admin.ConfigCommand",
            *("--bootstrap-server", broker.bootstrap, "--entity-type", "groups", "--entity-name", group),
            *args,
        )

    configs("--alter", "--add-config", "consumer.heartbeat.interval.ms=600")
    assert "consumer.heartbeat.interval.ms=600" in configs("--describe")
    with pytest.raises(AssertionError, match="must be in the range 100 to 15000 inclusive"):
        configs("--alter", "--add-config", "consumer.heartbeat.interval.ms=50")
    broker.restart(kill=True)
    assert "consumer.heartbeat.interval.ms=600" in configs("--describe")
    configs("--alter", "--delete-config", "consumer.heartbeat.interval.ms")
    assert "consumer.heartbeat.interval.ms" not in configs("--describe")
