"""The group handlers over every advertised version: kio request in, kio response out, and the
response must encode (catches field names/types that a version does not have)."""

from __future__ import annotations

import asyncio
import datetime

import pytest
from minibroker.broker.context import RequestContext
from minibroker.broker.coordinator_runtime import CoordinatorRuntime
from minibroker.broker.handlers import (
    delete_groups,
    describe_groups,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
from minibroker.broker.security.authorizer import all_operations
from minibroker.common.clock import SYSTEM_CLOCK
from minibroker.protocol.codec import build, encode_response, request_class
from minibroker.protocol.errors import ErrorCode as E

from tests.unit.coordinator_fakes import MemoryOffsetsStore, commit, group_coordinator, stage
from tests.unit.handler_fakes import FakeBroker

CONFIG = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10}


class AllowAll:
    """broker.security without an authorizer: everything is allowed."""

    authorizer = None

    def allowed(self, *_):
        return True

    def allowed_any(self, *_):
        return True

    def authorized_operations(self, session, resource_type, name):
        return all_operations(resource_type)


def make_broker():
    runtime = CoordinatorRuntime(durability=None)  # no fsync: group records go to the page cache
    gc = group_coordinator(
        dict(CONFIG), store=MemoryOffsetsStore(1), scheduler=runtime.timer(), clock=SYSTEM_CLOCK
    )
    return FakeBroker(
        groups=gc, coordinators=runtime, node_id=7, host="broker.example", port=9999, security=AllowAll()
    )


def ctx_for(broker, module, version):
    return RequestContext(broker, module.API_KEY, version, 1, "client-x", "127.0.0.1:5555")


def req(module, version, **fields):
    return build(request_class(module.API_KEY, version), fields)


async def call(broker, module, version, **fields):
    resp = await module.handle(ctx_for(broker, module, version), req(module, version, **fields))
    encode_response(resp)  # must be encodable for this version
    return resp


def ms(n):
    return datetime.timedelta(milliseconds=n)


@pytest.mark.parametrize("version", range(0, 7))
async def test_find_coordinator_all_versions(version):
    b = make_broker()
    if version >= 4:
        r = await call(b, find_coordinator, version, key_type=0, coordinator_keys=["g1", "g2"])
        assert [(c.key, c.node_id, c.host, c.port, c.error_code) for c in r.coordinators] == [
            ("g1", 7, "broker.example", 9999, E.none),
            ("g2", 7, "broker.example", 9999, E.none),
        ]
        r = await call(b, find_coordinator, version, key_type=1, coordinator_keys=["txn"])
        assert r.coordinators[0].error_code == E.none and r.coordinators[0].node_id == 7
        r = await call(b, find_coordinator, version, key_type=2, coordinator_keys=["share"])
        assert r.coordinators[0].error_code == E.invalid_request
    else:
        r = await call(b, find_coordinator, version, key="g1", key_type=0)
        assert (r.node_id, r.host, r.port, r.error_code) == (7, "broker.example", 9999, E.none)
        if version >= 1:
            r = await call(b, find_coordinator, version, key="t", key_type=1)
            assert r.error_code == E.none
            r = await call(b, find_coordinator, version, key="s", key_type=2)
            assert r.error_code == E.invalid_request and r.node_id == -1


PROTOCOLS = [dict(name="range", metadata=b"\x00\x00\x00\x00\x00\x01\x00\x01t")]


async def join(b, version, member_id="", group="g", instance=None):
    return await call(
        b,
        join_group,
        version,
        group_id=group,
        session_timeout=ms(5000),
        rebalance_timeout=ms(5000),
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=PROTOCOLS,
    )


@pytest.mark.parametrize("version", range(0, 10))
async def test_join_sync_heartbeat_leave_every_version(version):
    b = make_broker()
    r = await join(b, version)
    if version >= 4:
        assert r.error_code == E.member_id_required and r.member_id.startswith("client-x-")
        r = await join(b, version, member_id=r.member_id)
    assert r.error_code == E.none and r.generation_id == 1 and r.leader == r.member_id
    assert [m.member_id for m in r.members] == [r.member_id]
    assert r.protocol_name == "range"
    if version >= 7:
        assert r.protocol_type == "consumer"
    me = r.member_id
    sync_version = min(version, 5)
    s = await call(
        b,
        sync_group,
        sync_version,
        group_id="g",
        generation_id=1,
        member_id=me,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[dict(member_id=me, assignment=b"ASSIGN")],
    )
    assert s.error_code == E.none and s.assignment == b"ASSIGN"
    if sync_version >= 5:
        assert (s.protocol_type, s.protocol_name) == ("consumer", "range")
    h = await call(b, heartbeat, min(version, 4), group_id="g", generation_id=1, member_id=me)
    assert h.error_code == E.none
    h = await call(b, heartbeat, min(version, 4), group_id="g", generation_id=9, member_id=me)
    assert h.error_code == E.illegal_generation
    d = await call(
        b, describe_groups, min(version, 6), groups=["g", "missing"], include_authorized_operations=True
    )
    g, missing = d.groups
    assert (
        g.group_state == "Stable"
        and g.protocol_data == "range"
        and g.members[0].member_assignment == b"ASSIGN"
    )
    assert g.members[0].client_host == "/127.0.0.1" and g.members[0].client_id == "client-x"
    assert missing.group_state == "Dead"
    lv = min(version, 5)
    if lv >= 3:
        r = await call(
            b, leave_group, lv, group_id="g", members=[dict(member_id=me), dict(member_id="ghost")]
        )
        assert r.error_code == E.none
        assert [(m.member_id, m.error_code) for m in r.members] == [
            (me, E.none),
            ("ghost", E.unknown_member_id),
        ]
    else:
        r = await call(b, leave_group, lv, group_id="g", member_id=me)
        assert r.error_code == E.none
        r = await call(b, leave_group, lv, group_id="g", member_id=me)
        assert r.error_code == E.unknown_member_id
    lg = await call(b, list_groups, min(version, 5), states_filter=["empty"])
    assert [x.group_id for x in lg.groups] == ["g"]


async def test_join_waits_for_rebalance_and_sync_waits_for_leader():
    b = make_broker()
    r1 = await join(b, 5, member_id=(await join(b, 5)).member_id)
    a = r1.member_id
    await call(
        b,
        sync_group,
        3,
        group_id="g",
        generation_id=1,
        member_id=a,
        assignments=[dict(member_id=a, assignment=b"all")],
    )
    # a second member joins: its JoinGroup waits until the leader rejoins
    pending = (await join(b, 5)).member_id
    second = asyncio.ensure_future(join(b, 5, member_id=pending))
    await asyncio.sleep(0.01)
    assert not second.done()
    hb = await call(b, heartbeat, 3, group_id="g", generation_id=1, member_id=a)
    assert hb.error_code == E.rebalance_in_progress
    leader = await asyncio.wait_for(join(b, 5, member_id=a), 2)
    follower = await asyncio.wait_for(second, 2)
    assert leader.generation_id == follower.generation_id == 2
    assert len(leader.members) == 2 and follower.members == ()
    fsync = asyncio.ensure_future(
        call(b, sync_group, 3, group_id="g", generation_id=2, member_id=pending, assignments=[])
    )
    await asyncio.sleep(0.01)
    assert not fsync.done()
    await call(
        b,
        sync_group,
        3,
        group_id="g",
        generation_id=2,
        member_id=a,
        assignments=[dict(member_id=a, assignment=b"A"), dict(member_id=pending, assignment=b"B")],
    )
    assert (await asyncio.wait_for(fsync, 2)).assignment == b"B"


@pytest.mark.parametrize("version", range(2, 10))
async def test_offset_commit_versions(version):
    b = make_broker()
    r = await call(
        b,
        offset_commit,
        version,
        group_id="s",
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            dict(
                name="t",
                partitions=[
                    dict(
                        partition_index=0,
                        committed_offset=5,
                        committed_leader_epoch=3,
                        committed_metadata="meta",
                    ),
                    dict(partition_index=1, committed_offset=6, committed_metadata=None),
                ],
            )
        ],
    )
    assert [(p.partition_index, p.error_code) for p in r.topics[0].partitions] == [(0, E.none), (1, E.none)]
    epoch = 3 if version >= 6 else -1
    err, rows = b.groups.fetch_offsets("s", None)
    assert rows == [("t", 0, 5, epoch, "meta", E.none), ("t", 1, 6, -1, "", E.none)]


@pytest.mark.parametrize("version", range(1, 10))
async def test_offset_fetch_versions(version):
    b = make_broker()
    commit(b.groups, "s", "", None, -1, [("t", 0, 5, 3, "meta")])
    if version >= 8:
        r = await call(
            b,
            offset_fetch,
            version,
            require_stable=True,
            groups=[
                dict(group_id="s", topics=None),
                dict(group_id="s", topics=[dict(name="t", partition_indexes=[0, 1])]),
                dict(group_id="nobody", topics=None),
            ],
        )
        all_, some, nobody = r.groups
        assert [
            (p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata)
            for p in all_.topics[0].partitions
        ] == [(0, 5, 3, "meta")]
        assert [(p.partition_index, p.committed_offset) for p in some.topics[0].partitions] == [
            (0, 5),
            (1, -1),
        ]
        assert nobody.topics == () and nobody.error_code == E.none
        return
    r = await call(
        b,
        offset_fetch,
        version,
        group_id="s",
        topics=[dict(name="t", partition_indexes=[0, 1])],
        require_stable=True,
    )
    parts = r.topics[0].partitions
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in parts] == [
        (0, 5, "meta"),
        (1, -1, ""),
    ]
    if version >= 5:
        assert parts[0].committed_leader_epoch == 3
    if version >= 2:
        r = await call(b, offset_fetch, version, group_id="s", topics=None)
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in r.topics] == [("t", [0])]


async def test_require_stable_reports_pending_txn_offsets():
    b = make_broker()
    stage(b.groups, 11, 0, "tx", -1, "", None, [("t", 0, 9, -1, "")])
    r = await call(
        b, offset_fetch, 7, group_id="tx", topics=[dict(name="t", partition_indexes=[0])], require_stable=True
    )
    assert r.topics[0].partitions[0].error_code == E.unstable_offset_commit
    r = await call(b, offset_fetch, 6, group_id="tx", topics=[dict(name="t", partition_indexes=[0])])
    assert r.topics[0].partitions[0].error_code == E.none and r.topics[0].partitions[0].committed_offset == -1
    b.groups.manager.store.append_marker(0, 11, True)
    b.groups.complete_txn(11, True)
    r = await call(b, offset_fetch, 9, require_stable=True, groups=[dict(group_id="tx", topics=None)])
    assert r.groups[0].topics[0].partitions[0].committed_offset == 9


async def test_delete_groups_and_offset_delete():
    b = make_broker()
    commit(b.groups, "s", "", None, -1, [("t", 0, 5, -1, ""), ("t", 1, 5, -1, "")])
    r = await call(
        b, offset_delete, 0, group_id="s", topics=[dict(name="t", partitions=[dict(partition_index=0)])]
    )
    assert r.error_code == E.none and r.topics[0].partitions[0].error_code == E.none
    r = await call(
        b, offset_delete, 0, group_id="zz", topics=[dict(name="t", partitions=[dict(partition_index=0)])]
    )
    assert r.error_code == E.group_id_not_found
    for version in range(3):
        r = await call(b, delete_groups, version, groups_names=["s", "zz"])
        expected = E.none if version == 0 else E.group_id_not_found
        assert [(x.group_id, x.error_code) for x in r.results] == [
            ("s", expected),
            ("zz", E.group_id_not_found),
        ]


async def test_describe_v6_unknown_group():
    b = make_broker()
    r = await call(b, describe_groups, 6, groups=["nope"], include_authorized_operations=False)
    assert r.groups[0].error_code == E.group_id_not_found
    assert r.groups[0].authorized_operations == -(2**31)
