"""Issue 5 on the wire: every advertised version of the group APIs, encoded and decoded by
kafka-python's schema classes (an implementation independent of the broker's codec)."""

from __future__ import annotations

import threading
import uuid

import pytest
from kafka.protocol.admin.groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

from tests.support.broker import BrokerProcess
from tests.support.helpers import create_topic
from tests.support.wire import WireClient

NONE, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS = 0, 25, 22, 27
INVALID_REQUEST, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, MEMBER_ID_REQUIRED = 42, 68, 69, 79
FENCED_INSTANCE_ID, UNKNOWN_TOPIC_OR_PARTITION = 82, 3

SUBSCRIPTION = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"


@pytest.fixture(scope="module")
def gbroker(tmp_path_factory):
    b = BrokerProcess(
        tmp_path_factory.mktemp("groups-wire"),
        {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 100},
    )
    b.start()
    create_topic(b, "t", 3)
    yield b
    b.cleanup()


def gid(prefix="g") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("version", range(0, 7))
def test_find_coordinator(gbroker, version):
    with WireClient.to(gbroker) as c:
        if version >= 4:
            r = c.request(
                FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"]),
                FindCoordinatorResponse,
                version,
            )
            assert [(x.key, x.node_id, x.host, x.port, x.error_code) for x in r.coordinators] == [
                ("a", 1, gbroker.host, gbroker.port, NONE),
                ("b", 1, gbroker.host, gbroker.port, NONE),
            ]
            r = c.request(
                FindCoordinatorRequest(key_type=1, coordinator_keys=["txn"]), FindCoordinatorResponse, version
            )
            assert r.coordinators[0].error_code == NONE and r.coordinators[0].port == gbroker.port
            r = c.request(
                FindCoordinatorRequest(key_type=2, coordinator_keys=["share"]),
                FindCoordinatorResponse,
                version,
            )
            assert r.coordinators[0].error_code == INVALID_REQUEST
        else:
            r = c.request(FindCoordinatorRequest(key="a", key_type=0), FindCoordinatorResponse, version)
            assert (r.error_code, r.node_id, r.host, r.port) == (NONE, 1, gbroker.host, gbroker.port)
            if version >= 1:
                r = c.request(FindCoordinatorRequest(key="x", key_type=1), FindCoordinatorResponse, version)
                assert r.error_code == NONE
                r = c.request(FindCoordinatorRequest(key="x", key_type=2), FindCoordinatorResponse, version)
                assert r.error_code == INVALID_REQUEST


def join(c, version, group, member_id="", instance=None, protocols=(("range", SUBSCRIPTION),)):
    P = JoinGroupRequest.JoinGroupRequestProtocol
    req = JoinGroupRequest(
        group_id=group,
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=[P(name=n, metadata=m) for n, m in protocols],
    )
    return c.request(req, JoinGroupResponse, version)


@pytest.mark.parametrize("version", range(0, 10))
def test_join_sync_heartbeat_leave(gbroker, version):
    group = gid()
    sync_v, hb_v, leave_v = min(version, 5), min(version, 4), min(version, 5)
    with WireClient.to(gbroker, client_id="wire-member") as c:
        r = join(c, version, group)
        if version >= 4:
            assert r.error_code == MEMBER_ID_REQUIRED and r.member_id.startswith("wire-member-")
            r = join(c, version, group, r.member_id)
        assert r.error_code == NONE and r.generation_id == 1 and r.leader == r.member_id
        assert r.protocol_name == "range"
        if version >= 7:
            assert r.protocol_type == "consumer"
        assert [(m.member_id, m.metadata) for m in r.members] == [(r.member_id, SUBSCRIPTION)]
        me = r.member_id
        A = SyncGroupRequest.SyncGroupRequestAssignment
        s = c.request(
            SyncGroupRequest(
                group_id=group,
                generation_id=1,
                member_id=me,
                protocol_type="consumer",
                protocol_name="range",
                assignments=[A(member_id=me, assignment=b"mine")],
            ),
            SyncGroupResponse,
            sync_v,
        )
        assert s.error_code == NONE and s.assignment == b"mine"
        if sync_v >= 5:
            assert (s.protocol_type, s.protocol_name) == ("consumer", "range")
        h = c.request(
            HeartbeatRequest(group_id=group, generation_id=1, member_id=me), HeartbeatResponse, hb_v
        )
        assert h.error_code == NONE
        h = c.request(
            HeartbeatRequest(group_id=group, generation_id=2, member_id=me), HeartbeatResponse, hb_v
        )
        assert h.error_code == ILLEGAL_GENERATION
        h = c.request(
            HeartbeatRequest(group_id=group, generation_id=1, member_id="nobody"), HeartbeatResponse, hb_v
        )
        assert h.error_code == UNKNOWN_MEMBER_ID
        if leave_v >= 3:
            M = LeaveGroupRequest.MemberIdentity
            lv = c.request(
                LeaveGroupRequest(group_id=group, members=[M(member_id=me), M(member_id="ghost")]),
                LeaveGroupResponse,
                leave_v,
            )
            assert lv.error_code == NONE
            assert [(m.member_id, m.error_code) for m in lv.members] == [
                (me, NONE),
                ("ghost", UNKNOWN_MEMBER_ID),
            ]
        else:
            lv = c.request(LeaveGroupRequest(group_id=group, member_id=me), LeaveGroupResponse, leave_v)
            assert lv.error_code == NONE
        d = c.request(
            DescribeGroupsRequest(groups=[group], include_authorized_operations=False),
            DescribeGroupsResponse,
            5,
        )
        assert d.groups[0].group_state == "Empty" and d.groups[0].members == []


def test_second_member_waits_for_rebalance_and_static_fencing(gbroker):
    group = gid("two")
    with WireClient.to(gbroker, client_id="a") as ca, WireClient.to(gbroker, client_id="b") as cb:
        ra = join(ca, 5, group, instance="inst-a")  # static: no MEMBER_ID_REQUIRED
        assert ra.error_code == NONE and ra.member_id.startswith("inst-a-")
        a = ra.member_id
        A = SyncGroupRequest.SyncGroupRequestAssignment
        ca.request(
            SyncGroupRequest(
                group_id=group,
                generation_id=1,
                member_id=a,
                group_instance_id="inst-a",
                assignments=[A(member_id=a, assignment=b"all")],
            ),
            SyncGroupResponse,
            3,
        )
        rb = join(cb, 5, group)
        assert rb.error_code == MEMBER_ID_REQUIRED
        box = {}
        t = threading.Thread(target=lambda: box.setdefault("b", join(cb, 5, group, rb.member_id)))
        t.start()
        # b's JoinGroup is held until a rejoins; a learns of the rebalance from its heartbeat
        for _ in range(100):
            h = ca.request(
                HeartbeatRequest(group_id=group, generation_id=1, member_id=a, group_instance_id="inst-a"),
                HeartbeatResponse,
                3,
            )
            if h.error_code == REBALANCE_IN_PROGRESS:
                break
        assert h.error_code == REBALANCE_IN_PROGRESS
        assert t.is_alive()
        ra2 = join(ca, 5, group, a, instance="inst-a")
        t.join(10)
        rb2 = box["b"]
        assert ra2.generation_id == rb2.generation_id == 2
        assert len(ra2.members) == 2 and rb2.members == []
        assert {m.group_instance_id for m in ra2.members} == {"inst-a", None}
        b = rb2.member_id
        box = {}
        t = threading.Thread(
            target=lambda: box.setdefault(
                "b",
                cb.request(
                    SyncGroupRequest(group_id=group, generation_id=2, member_id=b, assignments=[]),
                    SyncGroupResponse,
                    3,
                ),
            )
        )
        t.start()
        sa = ca.request(
            SyncGroupRequest(
                group_id=group,
                generation_id=2,
                member_id=a,
                group_instance_id="inst-a",
                assignments=[A(member_id=a, assignment=b"A"), A(member_id=b, assignment=b"B")],
            ),
            SyncGroupResponse,
            3,
        )
        t.join(10)
        assert (sa.assignment, box["b"].assignment) == (b"A", b"B")
        # a restarted incarnation of inst-a takes over at once (no rebalance of a Stable group,
        # KIP-345) and gets the old assignment; the old member id is fenced
        with WireClient.to(gbroker, client_id="a2") as ca2:
            ra3 = join(ca2, 5, group, instance="inst-a")
            assert ra3.error_code == NONE and ra3.member_id != a and ra3.generation_id == 2
            s3 = ca2.request(
                SyncGroupRequest(
                    group_id=group,
                    generation_id=2,
                    member_id=ra3.member_id,
                    group_instance_id="inst-a",
                    assignments=[],
                ),
                SyncGroupResponse,
                3,
            )
            assert s3.assignment == b"A"
        h = ca.request(
            HeartbeatRequest(group_id=group, generation_id=2, member_id=a, group_instance_id="inst-a"),
            HeartbeatResponse,
            3,
        )
        assert h.error_code == FENCED_INSTANCE_ID


def commit(c, version, group, offsets, generation=-1, member=""):
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    P = T.OffsetCommitRequestPartition
    req = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        retention_time_ms=-1,
        topics=[
            T(
                name=topic,
                partitions=[
                    P(partition_index=p, committed_offset=o, committed_leader_epoch=e, committed_metadata=m)
                    for p, o, e, m in parts
                ],
            )
            for topic, parts in offsets.items()
        ],
    )
    r = c.request(req, OffsetCommitResponse, version)
    return {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}


@pytest.mark.parametrize("version", range(2, 10))
def test_offset_commit_and_fetch(gbroker, version):
    group = gid("offsets")
    with WireClient.to(gbroker) as c:
        res = commit(
            c,
            version,
            group,
            {"t": [(0, 10, 4, "meta0"), (1, 11, -1, None)], "missing-topic": [(0, 1, -1, "")]},
        )
        assert res == {("t", 0): NONE, ("t", 1): NONE, ("missing-topic", 0): UNKNOWN_TOPIC_OR_PARTITION}
        for fv in range(1, 10):
            epoch0 = 4 if version >= 6 and fv >= 5 else -1
            if fv >= 8:
                G = OffsetFetchRequest.OffsetFetchRequestGroup
                r = c.request(
                    OffsetFetchRequest(
                        require_stable=True,
                        groups=[
                            G(group_id=group, topics=None),
                            G(
                                group_id=group,
                                topics=[G.OffsetFetchRequestTopics(name="t", partition_indexes=[1, 2])],
                            ),
                        ],
                    ),
                    OffsetFetchResponse,
                    fv,
                )
                g_all, g_some = r.groups
                assert g_all.error_code == NONE
                assert [
                    (p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata)
                    for t in g_all.topics
                    for p in t.partitions
                ] == [(0, 10, epoch0, "meta0"), (1, 11, -1, "")]
                assert [
                    (p.partition_index, p.committed_offset) for t in g_some.topics for p in t.partitions
                ] == [(1, 11), (2, -1)]
                continue
            T = OffsetFetchRequest.OffsetFetchRequestTopic
            r = c.request(
                OffsetFetchRequest(
                    group_id=group, require_stable=True, topics=[T(name="t", partition_indexes=[0, 1, 2])]
                ),
                OffsetFetchResponse,
                fv,
            )
            parts = [
                (p.partition_index, p.committed_offset, p.metadata, p.error_code)
                for t in r.topics
                for p in t.partitions
            ]
            assert parts == [(0, 10, "meta0", NONE), (1, 11, "", NONE), (2, -1, "", NONE)]
            if fv >= 5:
                assert r.topics[0].partitions[0].committed_leader_epoch == epoch0
            if fv >= 2:
                r = c.request(OffsetFetchRequest(group_id=group, topics=None), OffsetFetchResponse, fv)
                assert [(t.name, [p.partition_index for p in t.partitions]) for t in r.topics] == [
                    ("t", [0, 1])
                ]


def test_commit_checks_generation_of_members(gbroker):
    group = gid("gen")
    with WireClient.to(gbroker, client_id="m") as c:
        r = join(c, 3, group)  # v3: no MEMBER_ID_REQUIRED
        me = r.member_id
        assert commit(c, 8, group, {"t": [(0, 1, -1, "")]}, generation=1, member=me) == {
            ("t", 0): REBALANCE_IN_PROGRESS
        }
        A = SyncGroupRequest.SyncGroupRequestAssignment
        c.request(
            SyncGroupRequest(
                group_id=group, generation_id=1, member_id=me, assignments=[A(member_id=me, assignment=b"")]
            ),
            SyncGroupResponse,
            3,
        )
        assert commit(c, 8, group, {"t": [(0, 1, -1, "")]}, generation=1, member=me) == {("t", 0): NONE}
        assert commit(c, 8, group, {"t": [(0, 1, -1, "")]}, generation=7, member=me) == {
            ("t", 0): ILLEGAL_GENERATION
        }
        assert commit(c, 8, group, {"t": [(0, 1, -1, "")]}, generation=1, member="x") == {
            ("t", 0): UNKNOWN_MEMBER_ID
        }
        assert commit(c, 8, group, {"t": [(0, 1, -1, "")]}) == {("t", 0): UNKNOWN_MEMBER_ID}  # not a member
        # admin APIs see the live group
        lg = c.request(ListGroupsRequest(states_filter=["Stable"], types_filter=[]), ListGroupsResponse, 5)
        assert group in {g.group_id for g in lg.groups}
        dg = c.request(DeleteGroupsRequest(groups_names=[group]), DeleteGroupsResponse, 2)
        assert [(x.group_id, x.error_code) for x in dg.results] == [(group, NON_EMPTY_GROUP)]
        T = OffsetDeleteRequest.OffsetDeleteRequestTopic
        od = c.request(
            OffsetDeleteRequest(
                group_id=group,
                topics=[T(name="t", partitions=[T.OffsetDeleteRequestPartition(partition_index=0)])],
            ),
            OffsetDeleteResponse,
            0,
        )
        assert od.error_code == NONE and od.topics[0].partitions[0].error_code == 86  # subscribed
        c.request(LeaveGroupRequest(group_id=group, member_id=me), LeaveGroupResponse, 1)
        od = c.request(
            OffsetDeleteRequest(
                group_id=group,
                topics=[T(name="t", partitions=[T.OffsetDeleteRequestPartition(partition_index=0)])],
            ),
            OffsetDeleteResponse,
            0,
        )
        assert od.error_code == NONE and od.topics[0].partitions[0].error_code == NONE
        for v in range(3):
            dg = c.request(DeleteGroupsRequest(groups_names=[group]), DeleteGroupsResponse, v)
            assert dg.results[0].error_code == (NONE if v == 0 else GROUP_ID_NOT_FOUND)


@pytest.mark.parametrize("version", range(0, 6))
def test_list_and_describe_versions(gbroker, version):
    group = gid("desc")
    with WireClient.to(gbroker) as c:
        commit(c, 8, group, {"t": [(2, 5, -1, "")]})
        kw = {}
        if version >= 4:
            kw["states_filter"] = ["Empty"]
        if version >= 5:
            kw["types_filter"] = ["classic"]
        lg = c.request(ListGroupsRequest(**kw), ListGroupsResponse, version)
        entry = {g.group_id: g for g in lg.groups}[group]
        assert entry.protocol_type == ""
        if version >= 4:
            assert entry.group_state == "Empty"
        d = c.request(
            DescribeGroupsRequest(groups=[group, gid("none")], include_authorized_operations=True),
            DescribeGroupsResponse,
            version,
        )
        assert [(g.error_code, g.group_state) for g in d.groups] == [(NONE, "Empty"), (NONE, "Dead")]
