"""Issue 26, the group-facing side of KIP-932 share groups against a minibroker process started
with share.version=1: a member joins with ShareGroupHeartbeat (its first heartbeat gets the
share-partitions initialized in the share coordinator, a later one their assignment, as on
Kafka), then the admin APIs over the wire (ShareGroupDescribe, ListGroups type share,
DescribeShareGroupOffsets v0-1 with lag, AlterShareGroupOffsets, DeleteShareGroupOffsets,
DeleteGroups; DescribeGroups and OffsetCommit on a share group id) with Kafka's answers, the
altered start offsets surviving a SIGKILL, and Apache Kafka's kafka-share-groups.sh (its Java
Admin: listGroups(SHARE), describeShareGroups, listShareGroupOffsets, alterShareGroupOffsets,
deleteShareGroupOffsets, deleteShareGroups) on the same broker. Below share.version 1 every
share API answers UNSUPPORTED_VERSION."""

from __future__ import annotations

import shutil
import uuid

import pytest

from conformance.wire import Connection
from tests.acceptance.test_kafka_cli import kafka_tool  # noqa: F401 - the fixture, reused
from tests.support.helpers import create_topic, unique_name, wait_until

pytestmark = pytest.mark.timeout(240)

SHARE = {"minibroker.features": "share.version=1"}
SHARE_TOOL = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
java = pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)")

NONE, UNSUPPORTED_VERSION, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND = 0, 35, 68, 69
INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION = 42, 3
HEARTBEAT, DESCRIBE, DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 76, 77, 90, 91, 92
RECORDS = 10  # per partition


@pytest.fixture
def share_broker(broker_factory):
    return broker_factory(SHARE)


@pytest.fixture
def conn(share_broker):
    c = Connection(share_broker.address)
    yield c
    c.close()


def produce(broker, topic: str, partitions: int, n: int = RECORDS) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": broker.bootstrap})
    for partition in range(partitions):
        for i in range(n):
            p.produce(topic, b"v%d" % i, partition=partition)
    assert p.flush(10) == 0


def heartbeat(conn, group: str, member: str, epoch: int, topics: list[str] | None) -> dict:
    return conn.call(
        HEARTBEAT,
        1,
        {
            "group_id": group,
            "member_id": member,
            "member_epoch": epoch,
            "rack_id": None,
            "subscribed_topic_names": topics,
        },
    )


def join_and_get_assigned(conn, group: str, topic: str, partitions: int) -> tuple[str, int, dict]:
    """A member joins and heartbeats (every 0.2 s, as a client at a short interval would) until
    it is assigned every partition of the topic. Returns (member id, epoch, first answer)."""
    member = str(uuid.uuid4())
    first = heartbeat(conn, group, member, 0, [topic])
    assert first["error_code"] == NONE, first
    epoch = first["member_epoch"]

    def assigned():
        nonlocal epoch
        answer = heartbeat(conn, group, member, epoch, [topic])
        assert answer["error_code"] == NONE, answer
        epoch = answer["member_epoch"]
        tps = (answer["assignment"] or {}).get("topic_partitions") or []
        return sorted(p for tp in tps for p in tp["partitions"]) == list(range(partitions))

    wait_until(assigned, 30, interval=0.2, message="the member's assignment of every partition")
    return member, epoch, first


def describe_offsets(conn, group: str, topics=None, version: int = 1) -> dict:
    (answer,) = conn.call(DESCRIBE_OFFSETS, version, {"groups": [{"group_id": group, "topics": topics}]})[
        "groups"
    ]
    return answer


def offsets_of(answer: dict) -> dict[tuple[str, int], tuple[int, int]]:
    return {
        (t["topic_name"], p["partition_index"]): (p["start_offset"], p.get("lag", -1))
        for t in answer["topics"]
        for p in t["partitions"]
    }


def list_share_groups(conn) -> list[tuple[str, str, str, str]]:
    answer = conn.call(16, 5, {"states_filter": [], "types_filter": ["share"]})
    return [(g["group_id"], g["protocol_type"], g["group_state"], g["group_type"]) for g in answer["groups"]]


def test_share_group_member_and_admin_apis_over_the_wire(share_broker, conn):
    broker = share_broker
    topic, group = unique_name("share-admin"), unique_name("share-admin-group")
    create_topic(broker, topic, 2)
    produce(broker, topic, 2)
    topic_id = conn.call(3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})["topics"][
        0
    ]["topic_id"]

    # Kafka's checks before the coordinator: an invalid member id has no message
    bad = heartbeat(conn, group, "", 0, [topic])
    assert (bad["error_code"], bad["error_message"]) == (INVALID_REQUEST, None)
    bad = heartbeat(conn, group, str(uuid.uuid4()), 0, None)
    assert (bad["error_code"], bad["error_message"]) == (
        INVALID_REQUEST,
        "SubscribedTopicNames must be set in first request.",
    )

    member, epoch, first = join_and_get_assigned(conn, group, topic, 2)
    assert first["member_id"] == member and first["heartbeat_interval"] > 0

    (described,) = conn.call(DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": True})[
        "groups"
    ]
    assert (described["error_code"], described["group_state"], described["assignor_name"]) == (
        NONE,
        "Stable",
        "simple",
    )
    assert described["authorized_operations"] != -(2**31)
    (m,) = described["members"]
    assert (m["member_id"], m["member_epoch"], m["subscribed_topic_names"]) == (member, epoch, [topic])
    assert [
        (tp["topic_id"], tp["topic_name"], sorted(tp["partitions"]))
        for tp in m["assignment"]["topic_partitions"]
    ] == [(topic_id, topic, [0, 1])]
    assert (group, "share", "Stable", "share") in list_share_groups(conn)

    # initialized share-partitions without a start offset yet (resolved at their first fetch)
    assert offsets_of(describe_offsets(conn, group)) == {(topic, 0): (-1, -1), (topic, 1): (-1, -1)}
    assert offsets_of(describe_offsets(conn, group, version=0)) == {
        (topic, 0): (-1, -1),
        (topic, 1): (-1, -1),
    }

    # a group with a member: no admin changes, no deletion
    alter = {
        "group_id": group,
        "topics": [{"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": 3}]}],
    }
    answer = conn.call(ALTER_OFFSETS, 0, alter)
    assert (answer["error_code"], answer["error_message"], answer["responses"]) == (
        NON_EMPTY_GROUP,
        "The group is not empty.",
        [],
    )
    answer = conn.call(DELETE_OFFSETS, 0, {"group_id": group, "topics": [{"topic_name": topic}]})
    assert answer["error_code"] == NON_EMPTY_GROUP
    (deleted,) = conn.call(42, 2, {"groups_names": [group]})["results"]
    assert deleted["error_code"] == NON_EMPTY_GROUP

    # a share group id is no classic or consumer group
    (classic,) = conn.call(15, 6, {"groups": [group], "include_authorized_operations": False})["groups"]
    assert (classic["error_code"], classic["error_message"]) == (
        GROUP_ID_NOT_FOUND,
        f"Group {group} is not a classic group.",
    )
    commit = conn.call(
        8,
        8,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": topic,
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
    assert commit["topics"][0]["partitions"][0]["error_code"] == GROUP_ID_NOT_FOUND

    # the member leaves: Empty
    left = heartbeat(conn, group, member, -1, None)
    assert (left["error_code"], left["member_id"], left["member_epoch"]) == (NONE, member, -1)
    assert (group, "share", "Empty", "share") in list_share_groups(conn)

    # reset: new start offsets; lag = high watermark - start - delivered-complete records (none)
    alter["topics"][0]["partitions"] = [
        {"partition_index": 0, "start_offset": 3},
        {"partition_index": 1, "start_offset": 5},
        {"partition_index": 7, "start_offset": 0},
    ]
    answer = conn.call(ALTER_OFFSETS, 0, alter)
    assert answer["error_code"] == NONE
    assert [
        (t["topic_name"], t["topic_id"], [(p["partition_index"], p["error_code"]) for p in t["partitions"]])
        for t in answer["responses"]
    ] == [(topic, topic_id, [(0, NONE), (1, NONE), (7, UNKNOWN_TOPIC_OR_PARTITION)])]
    expected = {(topic, 0): (3, RECORDS - 3), (topic, 1): (5, RECORDS - 5)}
    assert offsets_of(describe_offsets(conn, group)) == expected
    named = describe_offsets(conn, group, [{"topic_name": topic, "partitions": [0, 1]}])
    assert offsets_of(named) == expected

    # the altered state is durable: the same after a SIGKILL
    broker.restart(kill=True)
    after = Connection(broker.address)
    try:
        assert offsets_of(describe_offsets(after, group)) == expected
        assert (group, "share", "Empty", "share") in list_share_groups(after)

        # delete-offsets: the topic's share state goes; again, nothing to delete
        answer = after.call(DELETE_OFFSETS, 0, {"group_id": group, "topics": [{"topic_name": topic}]})
        assert answer["error_code"] == NONE
        assert [(t["topic_name"], t["topic_id"], t["error_code"]) for t in answer["responses"]] == [
            (topic, topic_id, NONE)
        ]
        assert describe_offsets(after, group)["topics"] == []
        answer = after.call(DELETE_OFFSETS, 0, {"group_id": group, "topics": [{"topic_name": topic}]})
        assert [(t["error_code"], t["error_message"]) for t in answer["responses"]] == [
            (UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete.")
        ]

        # the Empty group is deleted; then it is not found
        (deleted,) = after.call(42, 2, {"groups_names": [group]})["results"]
        assert deleted["error_code"] == NONE
        assert group not in [g[0] for g in list_share_groups(after)]
        (gone,) = after.call(DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})[
            "groups"
        ]
        assert (gone["error_code"], gone["error_message"]) == (
            GROUP_ID_NOT_FOUND,
            f"Group {group} not found.",
        )
    finally:
        after.close()


def test_delete_group_removes_the_share_state_of_all_its_partitions(share_broker, conn):
    broker = share_broker
    topic, group = unique_name("share-del"), unique_name("share-del-group")
    create_topic(broker, topic, 2)
    produce(broker, topic, 2)
    member, _, _ = join_and_get_assigned(conn, group, topic, 2)
    assert heartbeat(conn, group, member, -1, None)["error_code"] == NONE
    alter = {
        "group_id": group,
        "topics": [
            {"topic_name": topic, "partitions": [{"partition_index": p, "start_offset": 4} for p in (0, 1)]}
        ],
    }
    assert conn.call(ALTER_OFFSETS, 0, alter)["error_code"] == NONE
    assert offsets_of(describe_offsets(conn, group)) == {(topic, 0): (4, 6), (topic, 1): (4, 6)}
    (deleted,) = conn.call(42, 2, {"groups_names": [group]})["results"]
    assert deleted["error_code"] == NONE
    # the state is gone with the group: named partitions have no start offset any more
    named = describe_offsets(conn, group, [{"topic_name": topic, "partitions": [0, 1]}])
    assert offsets_of(named) == {(topic, 0): (-1, -1), (topic, 1): (-1, -1)}
    # a new group of the same id starts from scratch: its member gets the partitions again
    join_and_get_assigned(conn, group, topic, 2)
    assert offsets_of(describe_offsets(conn, group)) == {(topic, 0): (-1, -1), (topic, 1): (-1, -1)}


def test_share_apis_answer_unsupported_version_below_share_version_1(broker_factory):
    broker = broker_factory({"minibroker.features": "share.version=0"})
    c = Connection(broker.address)
    try:
        answer = heartbeat(c, "g", str(uuid.uuid4()), 0, ["t"])
        assert answer["error_code"] == UNSUPPORTED_VERSION
        (g,) = c.call(DESCRIBE, 1, {"group_ids": ["g"], "include_authorized_operations": False})["groups"]
        assert g["error_code"] == UNSUPPORTED_VERSION
        assert describe_offsets(c, "g")["error_code"] == UNSUPPORTED_VERSION
        answer = c.call(ALTER_OFFSETS, 0, {"group_id": "g", "topics": []})
        assert (answer["error_code"], answer["error_message"]) == (
            UNSUPPORTED_VERSION,
            "The version of API is not supported.",
        )
        assert c.call(DELETE_OFFSETS, 0, {"group_id": "g", "topics": []})["error_code"] == UNSUPPORTED_VERSION
    finally:
        c.close()


def _rows(output: str, first: str) -> list[dict[str, str]]:
    """A kafka-share-groups.sh table (header line starting with `first`) as rows of {column: value}."""
    lines = [line.split() for line in output.splitlines() if line.strip()]
    header = next(i for i, cols in enumerate(lines) if cols and cols[0] == first)
    return [dict(zip(lines[header], cols, strict=False)) for cols in lines[header + 1 :]]


@java
def test_kafka_share_groups_tool(kafka_tool, share_broker, conn):  # noqa: F811
    broker = share_broker
    topic, group = unique_name("share-cli"), unique_name("share-cli-group")
    create_topic(broker, topic, 2)
    produce(broker, topic, 2)
    member, _, _ = join_and_get_assigned(conn, group, topic, 2)
    boot = ["--bootstrap-server", broker.bootstrap]

    assert group in kafka_tool(SHARE_TOOL, *boot, "--list").split()
    state = _rows(kafka_tool(SHARE_TOOL, *boot, "--describe", "--group", group, "--state"), "GROUP")
    assert [(r["GROUP"], r["STATE"], r["#MEMBERS"]) for r in state] == [(group, "Stable", "1")]
    members = _rows(kafka_tool(SHARE_TOOL, *boot, "--describe", "--group", group, "--members"), "GROUP")
    assert [(r["GROUP"], r["CONSUMER-ID"]) for r in members] == [(group, member)]
    assert f"{topic}:0,1" in kafka_tool(SHARE_TOOL, *boot, "--describe", "--group", group, "--members")

    assert heartbeat(conn, group, member, -1, None)["error_code"] == NONE
    reset = kafka_tool(
        SHARE_TOOL, *boot, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"
    )
    assert group in reset
    offsets = _rows(kafka_tool(SHARE_TOOL, *boot, "--describe", "--group", group, "--offsets"), "GROUP")
    assert sorted((r["TOPIC"], r["PARTITION"], r["START-OFFSET"], r["LAG"]) for r in offsets) == [
        (topic, "0", "0", str(RECORDS)),
        (topic, "1", "0", str(RECORDS)),
    ]

    kafka_tool(SHARE_TOOL, *boot, "--delete-offsets", "--group", group, "--topic", topic)
    assert describe_offsets(conn, group)["topics"] == []
    kafka_tool(SHARE_TOOL, *boot, "--delete", "--group", group)
    assert group not in kafka_tool(SHARE_TOOL, *boot, "--list").split()
