"""The KIP-932 share-group handlers (broker/handlers/share_group_heartbeat.py, share_group_describe.py,
describe_share_group_offsets.py, alter_share_group_offsets.py, delete_share_group_offsets.py and
the share branches of list_groups.py, delete_groups.py, describe_groups.py) over
fakes of the share group coordinator and the share coordinator (the contract of
coordinator/share_groups.py and coordinator/share_coordinator.py): Kafka 4.4's checks, messages
and answer shapes, and the share-state flows (initialize after a heartbeat, re-initialize on
alter, delete on delete-offsets and DeleteGroups). Every response must encode."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from minibroker.broker.context import RequestContext
from minibroker.broker.handlers import (
    alter_share_group_offsets,
    delete_groups,
    delete_share_group_offsets,
    describe_groups,
    describe_share_group_offsets,
    list_groups,
    share_group_describe,
    share_group_heartbeat,
)
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.security.authorizer import OPERATIONS_NOT_REQUESTED, all_operations
from minibroker.coordinator.groups import described_group
from minibroker.coordinator.runtime import CoordinatorResult
from minibroker.coordinator.share_groups import ShareHeartbeatAnswer
from minibroker.coordinator.share_types import SharePartitionKey, StateSummary
from minibroker.protocol.codec import build, encode_response, request_class
from minibroker.protocol.errors import ErrorCode as E
from minibroker.storage.log_manager import TopicInfo

from tests.unit.handler_fakes import FakeBroker

pytestmark = pytest.mark.timeout(30)

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
ZERO = uuid.UUID(int=0)
MEMBER = str(uuid.uuid4())


class Security:
    """broker.security: everything allowed but the (operation, resource type, name) denied."""

    def __init__(self, *denied: tuple[int, int, str], authorizer: object = None) -> None:
        self.denied = set(denied)
        self.authorizer = authorizer

    def allowed(self, session, operation, resource_type, name):
        return (operation, resource_type, name) not in self.denied

    def allowed_any(self, *_):
        return True

    def authorized_operations(self, session, resource_type, name):
        return all_operations(resource_type)


class Features:
    def __init__(self, share_version: int) -> None:
        self.share_version = share_version

    def level(self, name: str) -> int:
        return self.share_version if name == "share.version" else 0


@dataclass
class FakeShareGroups:
    """groups.share as coordinator/share_groups.py's contract has it; answers set by the test."""

    heartbeat_answer: ShareHeartbeatAnswer = ShareHeartbeatAnswer()
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)  # describe() entries by id
    initialized: dict[str, dict[uuid.UUID, frozenset[int]]] = field(default_factory=dict)
    group_error: tuple[int, str | None] = (0, None)  # alter/delete offsets' answer
    calls: list[tuple] = field(default_factory=list)

    def heartbeat(self, request):
        self.calls.append(("heartbeat", request))
        return CoordinatorResult(self.heartbeat_answer)

    def partitions_initialized(self, group_id, topics):
        self.calls.append(("partitions_initialized", group_id, dict(topics)))
        return CoordinatorResult(None)

    def partitions_uninitialized(self, group_id, topics):
        self.calls.append(("partitions_uninitialized", group_id, dict(topics)))
        return CoordinatorResult(None)

    def describe(self, group_ids):
        return [
            dict(self.groups[g])
            if g in self.groups
            else described_group(g, E.group_id_not_found, f"Group {g} not found.")
            for g in group_ids
        ]

    def initialized_partitions(self, group_id):
        return dict(self.initialized.get(group_id, {}))

    def alter_offsets(self, group_id, topics):
        self.calls.append(("alter_offsets", group_id, dict(topics)))
        return CoordinatorResult(self.group_error)

    def delete_offsets(self, group_id, topic_ids):
        self.calls.append(("delete_offsets", group_id, list(topic_ids)))
        return CoordinatorResult(self.group_error)

    def delete_group(self, group_id):
        self.calls.append(("delete_group", group_id))
        return CoordinatorResult(0)


class FakeShareCoordinator:
    """broker.share_coordinator: summaries set by the test, operations recorded."""

    def __init__(self) -> None:
        self.summaries: dict[SharePartitionKey, StateSummary] = {}
        self.calls: list[tuple] = []
        self.initialize_errors: dict[SharePartitionKey, int] = {}

    def initialize_state(self, key, state_epoch, start_offset):
        self.calls.append(("initialize_state", key, state_epoch, start_offset))
        return CoordinatorResult(self.initialize_errors.get(key, 0))

    def delete_state(self, keys):
        self.calls.append(("delete_state", list(keys)))
        return CoordinatorResult(0)

    def read_summary(self, key):
        return self.summaries.get(key, StateSummary(E.unknown_topic_or_partition))

    def keys_of_group(self, group_id):
        return [k for k in self.summaries if k.group_id == group_id]


class FakeLogs:
    def __init__(self) -> None:
        self.topics = {"t1": TopicInfo("t1", T1, 2), "t2": TopicInfo("t2", T2, 1)}
        self.topic_names = {info.topic_id: name for name, info in self.topics.items()}
        self.hw = {("t1", 0): 100, ("t1", 1): 50, ("t2", 0): 7}

    def get_log(self, topic, partition):
        hw = self.hw.get((topic, partition))
        return None if hw is None else SimpleNamespace(high_watermark=hw)


class FakeGroups:
    """broker.groups: coordinates every group; share groups are the share fake's."""

    def __init__(self, share: FakeShareGroups, types: dict[str, str] | None = None) -> None:
        self.share = share
        self.types = types or {}
        self.manager = SimpleNamespace(share_groups=share.groups)
        self.classic_deleted: list[str] = []

    given_up: frozenset[str] = frozenset()  # groups of a __consumer_offsets partition given up

    def coordinates(self, group_id):
        return group_id not in self.given_up

    def group_type(self, group_id):
        return "share" if group_id in self.share.groups else self.types.get(group_id)

    def list_groups(self, states, types):
        if types or states:
            return []  # the classic group matches no filter of these tests
        return [
            dict(group_id="classic-g", protocol_type="consumer", group_state="Empty", group_type="classic")
        ]

    def delete_groups(self, group_ids):
        self.classic_deleted.extend(group_ids)
        return CoordinatorResult({g: E.group_id_not_found for g in group_ids})

    def describe_group(self, group_id):
        return E.none, dict(group_state="Dead", protocol_type="", protocol_data="", members=[])


def share_group(group_id="sg", state="Stable", epoch=3, members=()):
    return dict(
        error_code=E.none,
        error_message=None,
        group_id=group_id,
        group_state=state,
        group_epoch=epoch,
        assignment_epoch=epoch,
        assignor_name="simple",
        members=list(members),
    )


def member(topics=((T1, (0, 1)),)):
    return dict(
        member_id=MEMBER,
        rack_id=None,
        member_epoch=3,
        client_id="c",
        client_host="/127.0.0.1",
        subscribed_topic_names=["t1"],
        assignment=dict(topic_partitions=[dict(topic_id=t, partitions=list(ps)) for t, ps in topics]),
    )


def make_broker(share_version=1, security=None, types=None):
    share = FakeShareGroups()
    return FakeBroker(
        features=Features(share_version),
        security=security or Security(),
        groups=FakeGroups(share, types),
        logs=FakeLogs(),
        share_coordinator=FakeShareCoordinator(),
    )


async def call(broker, module, version, **fields):
    ctx = RequestContext(broker, module.API_KEY, version, 1, "client-x", "127.0.0.1:5555")
    resp = await module.handle(ctx, build(request_class(module.API_KEY, version), fields))
    encode_response(resp)  # must be encodable for this version
    return resp


def heartbeat_fields(**fields):
    base = dict(group_id="sg", member_id=MEMBER, member_epoch=0, rack_id=None, subscribed_topic_names=["t1"])
    return {**base, **fields}


# ---------------------------------------------------------------------------------- heartbeat
@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(member_id="  "), "MemberId can't be empty."),
        (dict(group_id=" "), "GroupId can't be empty."),
        (dict(rack_id=""), "RackId can't be empty."),
        (dict(subscribed_topic_names=None), "SubscribedTopicNames must be set in first request."),
        (dict(subscribed_topic_names=[]), "SubscribedTopicNames must be set in first request."),
        (dict(member_epoch=-2), "MemberEpoch is invalid."),
    ],
)
async def test_heartbeat_validation_messages(fields, message):
    b = make_broker()
    r = await call(b, share_group_heartbeat, 1, **heartbeat_fields(**fields))
    assert (r.error_code, r.error_message) == (E.invalid_request, message)
    assert b.groups.share.calls == []


@pytest.mark.parametrize("member_id", ["", "x" * 37])
async def test_heartbeat_invalid_member_id_has_no_message(member_id):
    """KafkaApis.isMemberIdValid refuses it before the coordinator's checks; its getErrorResponse
    keeps only the error code."""
    b = make_broker()
    r = await call(b, share_group_heartbeat, 1, **heartbeat_fields(member_id=member_id))
    assert (r.error_code, r.error_message, r.member_id) == (E.invalid_request, None, None)


async def test_heartbeat_checks_in_kafkas_order():
    b = make_broker(share_version=0)
    r = await call(b, share_group_heartbeat, 1, **heartbeat_fields(member_id=""))
    assert r.error_code == E.unsupported_version
    b = make_broker(security=Security((Op.READ, Res.GROUP, "sg")))
    r = await call(b, share_group_heartbeat, 1, **heartbeat_fields(member_id=""))
    assert r.error_code == E.group_authorization_failed
    b = make_broker(security=Security((Op.DESCRIBE, Res.TOPIC, "t1")))
    r = await call(b, share_group_heartbeat, 1, **heartbeat_fields(rack_id=""))
    assert (r.error_code, r.error_message) == (E.topic_authorization_failed, None)
    assert b.groups.share.calls == []


async def test_heartbeat_answer_and_share_state_initialization():
    b = make_broker()
    b.groups.share.heartbeat_answer = ShareHeartbeatAnswer(
        member_id=MEMBER,
        member_epoch=4,
        heartbeat_interval_ms=5000,
        assignment=((T2, (0,)),),
        initialize={T1: frozenset({1, 0})},
        state_epoch=4,
    )
    r = await call(b, share_group_heartbeat, 1, **heartbeat_fields(rack_id="r1"))
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval.total_seconds()) == (
        0,
        MEMBER,
        4,
        5,
    )
    assert [(tp.topic_id, list(tp.partitions)) for tp in r.assignment.topic_partitions] == [(T2, [0])]
    (kind, request), *rest = b.groups.share.calls
    assert kind == "heartbeat"
    assert (request.group_id, request.member_id, request.member_epoch, request.rack_id) == (
        "sg",
        MEMBER,
        0,
        "r1",
    )
    assert (request.subscribed_topic_names, request.client_id, request.client_host) == (
        ("t1",),
        "client-x",
        "/127.0.0.1",
    )
    assert b.share_coordinator.calls == [
        ("initialize_state", SharePartitionKey("sg", T1, 0), 4, -1),
        ("initialize_state", SharePartitionKey("sg", T1, 1), 4, -1),
    ]
    assert rest == [("partitions_initialized", "sg", {T1: frozenset({0, 1})})]


async def test_heartbeat_reports_only_partitions_whose_state_was_initialized():
    b = make_broker()
    b.groups.share.heartbeat_answer = ShareHeartbeatAnswer(
        member_id=MEMBER, member_epoch=1, initialize={T1: frozenset({0, 1})}, state_epoch=1
    )
    b.share_coordinator.initialize_errors[SharePartitionKey("sg", T1, 0)] = E.coordinator_not_available
    r = await call(b, share_group_heartbeat, 1, **heartbeat_fields())
    assert r.error_code == 0 and r.assignment is None
    # partition 1 becomes assignable; partition 0 is handed back, to be asked for again
    assert b.groups.share.calls[1:] == [
        ("partitions_initialized", "sg", {T1: frozenset({1})}),
        ("partitions_uninitialized", "sg", {T1: frozenset({0})}),
    ]


async def test_heartbeat_leave_passes_epoch_minus_one_without_topics():
    b = make_broker()
    b.groups.share.heartbeat_answer = ShareHeartbeatAnswer(member_id=MEMBER, member_epoch=-1)
    r = await call(
        b, share_group_heartbeat, 1, **heartbeat_fields(member_epoch=-1, subscribed_topic_names=None)
    )
    assert (r.error_code, r.member_epoch) == (0, -1)
    assert b.groups.share.calls[0][1].subscribed_topic_names is None


# ---------------------------------------------------------------------------------- describe
async def test_describe_names_topics_orders_refusals_first_and_adds_operations():
    b = make_broker(security=Security((Op.DESCRIBE, Res.GROUP, "secret")))
    b.groups.share.groups["sg"] = share_group(members=[member(((T1, (0, 1)), (uuid.UUID(int=9), (0,))))])
    r = await call(
        b, share_group_describe, 1, group_ids=["sg", "secret", "", "nope"], include_authorized_operations=True
    )
    got = [(g.group_id, g.error_code, g.error_message) for g in r.groups]
    assert got == [
        ("secret", E.group_authorization_failed, None),
        ("", E.invalid_group_id, None),
        ("sg", 0, None),
        ("nope", E.group_id_not_found, "Group nope not found."),
    ]
    sg = r.groups[2]
    assert (sg.group_state, sg.group_epoch, sg.assignor_name) == ("Stable", 3, "simple")
    assert sg.authorized_operations == all_operations(Res.GROUP)
    assert r.groups[3].authorized_operations == OPERATIONS_NOT_REQUESTED
    (m,) = sg.members
    # the unknown topic id is left out
    assert [(tp.topic_id, tp.topic_name, list(tp.partitions)) for tp in m.assignment.topic_partitions] == [
        (T1, "t1", [0, 1])
    ]


async def test_describe_without_operations_and_below_share_version():
    b = make_broker()
    b.groups.share.groups["sg"] = share_group(state="Empty")
    r = await call(b, share_group_describe, 1, group_ids=["sg"], include_authorized_operations=False)
    assert (r.groups[0].group_state, r.groups[0].authorized_operations) == ("Empty", OPERATIONS_NOT_REQUESTED)
    b = make_broker(share_version=0)
    r = await call(b, share_group_describe, 1, group_ids=["sg", "x"], include_authorized_operations=True)
    assert [(g.group_id, g.error_code) for g in r.groups] == [
        ("sg", E.unsupported_version),
        ("x", E.unsupported_version),
    ]


async def test_describe_refuses_a_group_assigned_a_topic_the_principal_may_not_describe():
    b = make_broker(security=Security((Op.DESCRIBE, Res.TOPIC, "t1"), authorizer=object()))
    b.groups.share.groups["sg"] = share_group(members=[member()])
    r = await call(b, share_group_describe, 1, group_ids=["sg"], include_authorized_operations=False)
    (g,) = r.groups
    assert (g.error_code, g.members) == (E.topic_authorization_failed, ())
    assert (
        g.error_message == "The group has described topic(s) that the client is not authorized to describe."
    )


# ---------------------------------------------------------------------------------- offsets
def summary(start, done=-1, leader_epoch=0, state_epoch=1):
    return StateSummary(
        0,
        start_offset=start,
        leader_epoch=leader_epoch,
        state_epoch=state_epoch,
        delivery_complete_count=done,
    )


@pytest.mark.parametrize("version", [0, 1])
async def test_describe_offsets_named_topics(version):
    b = make_broker(security=Security((Op.DESCRIBE, Res.TOPIC, "t2")))
    b.share_coordinator.summaries[SharePartitionKey("sg", T1, 0)] = summary(40, done=5, leader_epoch=2)
    b.share_coordinator.summaries[SharePartitionKey("sg", T1, 1)] = summary(10)  # count unknown
    groups = [
        dict(
            group_id="sg",
            topics=[
                dict(topic_name="t2", partitions=[0]),
                dict(topic_name="ghost", partitions=[3]),
                dict(topic_name="t1", partitions=[0, 1, 5]),
            ],
        )
    ]
    r = await call(b, describe_share_group_offsets, version, groups=groups)
    (g,) = r.groups
    assert g.error_code == 0
    rows = [
        (t.topic_name, t.topic_id, p.partition_index, p.start_offset, p.leader_epoch, p.error_code)
        for t in g.topics
        for p in t.partitions
    ]
    assert rows == [
        ("t1", T1, 0, 40, 2, 0),
        ("t1", T1, 1, 10, 0, 0),
        ("t1", T1, 5, -1, 0, 0),
        ("ghost", ZERO, 3, -1, 0, 0),
        ("t2", ZERO, 0, -1, 0, E.topic_authorization_failed),
    ]
    assert g.topics[2].partitions[0].error_message == "Topic authorization failed."
    if version >= 1:
        assert [p.lag for p in g.topics[0].partitions] == [100 - 40 - 5, -1, -1]


async def test_describe_offsets_all_topics_per_group_errors_and_empty_topics():
    b = make_broker(
        share_version=1, security=Security((Op.DESCRIBE, Res.GROUP, "secret"), (Op.DESCRIBE, Res.TOPIC, "t2"))
    )
    b.groups.share.initialized["sg"] = {
        T1: frozenset({1}),
        T2: frozenset({0}),
        uuid.UUID(int=9): frozenset({0}),
    }
    b.share_coordinator.summaries[SharePartitionKey("sg", T1, 1)] = summary(45, done=0)
    groups = [
        dict(group_id="sg", topics=None),
        dict(group_id="secret", topics=None),
        dict(group_id="e", topics=[]),
    ]
    r = await call(b, describe_share_group_offsets, 1, groups=groups)
    sg, secret, empty = r.groups
    assert [
        (t.topic_name, [(p.partition_index, p.start_offset, p.lag) for p in t.partitions]) for t in sg.topics
    ] == [("t1", [(1, 45, 5)])]
    assert (secret.error_code, secret.error_message, secret.topics) == (
        E.group_authorization_failed,
        None,
        (),
    )
    assert (empty.error_code, empty.topics) == (0, ())
    r = await call(make_broker(share_version=0), describe_share_group_offsets, 1, groups=groups)
    assert [(g.group_id, g.error_code) for g in r.groups] == [
        (g["group_id"], E.unsupported_version) for g in groups
    ]


async def test_alter_offsets_reinitializes_state_with_a_new_state_epoch():
    b = make_broker(security=Security((Op.READ, Res.TOPIC, "t2")))
    b.groups.share.groups["sg"] = share_group(state="Empty", epoch=3)
    b.share_coordinator.summaries[SharePartitionKey("sg", T1, 0)] = summary(40, state_epoch=5)
    topics = [
        dict(
            topic_name="t1",
            partitions=[
                dict(partition_index=0, start_offset=7),
                dict(partition_index=9, start_offset=1),
                dict(partition_index=1, start_offset=8),
            ],
        ),
        dict(topic_name="ghost", partitions=[dict(partition_index=0, start_offset=1)]),
        dict(topic_name="t2", partitions=[dict(partition_index=0, start_offset=1)]),
    ]
    r = await call(b, alter_share_group_offsets, 0, group_id="sg", topics=topics)
    assert (r.error_code, r.error_message) == (0, None)
    rows = [
        (t.topic_name, t.topic_id, p.partition_index, p.error_code, p.error_message)
        for t in r.responses
        for p in t.partitions
    ]
    # KafkaApis' refusals first, then the coordinator's answers (AlterShareGroupOffsetsResponse.Builder)
    assert rows == [
        ("ghost", ZERO, 0, E.unknown_topic_or_partition, "This server does not host this topic-partition."),
        ("t2", T2, 0, E.topic_authorization_failed, "Topic authorization failed."),
        ("t1", T1, 0, 0, None),
        ("t1", T1, 9, E.unknown_topic_or_partition, "This server does not host this topic-partition."),
        ("t1", T1, 1, 0, None),
    ]
    assert ("alter_offsets", "sg", {T1: frozenset({0, 1})}) in b.groups.share.calls
    assert b.share_coordinator.calls == [
        ("initialize_state", SharePartitionKey("sg", T1, 0), 6, 7),  # past the state's own epoch 5
        ("initialize_state", SharePartitionKey("sg", T1, 1), 3, 8),  # no state yet: the group epoch
    ]


async def test_alter_offsets_group_errors_drop_the_partition_answers():
    b = make_broker()
    b.groups.share.group_error = (E.non_empty_group, "The group is not empty.")
    topics = [dict(topic_name="t1", partitions=[dict(partition_index=0, start_offset=7)])]
    r = await call(b, alter_share_group_offsets, 0, group_id="sg", topics=topics)
    assert (r.error_code, r.error_message, r.responses) == (E.non_empty_group, "The group is not empty.", ())
    assert b.share_coordinator.calls == []
    for broker, error, text in [
        (make_broker(share_version=0), E.unsupported_version, "The version of API is not supported."),
        (
            make_broker(security=Security((Op.READ, Res.GROUP, "sg"))),
            E.group_authorization_failed,
            "Group authorization failed.",
        ),
    ]:
        r = await call(broker, alter_share_group_offsets, 0, group_id="sg", topics=topics)
        assert (r.error_code, r.error_message, r.responses) == (error, text, ())
    r = await call(make_broker(), alter_share_group_offsets, 0, group_id="", topics=topics)
    assert (r.error_code, r.error_message) == (E.invalid_group_id, "The group id is invalid.")


async def test_delete_offsets_deletes_the_state_of_topics_with_state():
    b = make_broker(security=Security((Op.READ, Res.TOPIC, "secret")))
    b.groups.share.initialized["sg"] = {T1: frozenset({0, 1})}
    topics = [dict(topic_name=n) for n in ("t2", "secret", "t1", "ghost")]
    r = await call(b, delete_share_group_offsets, 0, group_id="sg", topics=topics)
    assert r.error_code == 0
    assert [(t.topic_name, t.topic_id, t.error_code, t.error_message) for t in r.responses] == [
        ("secret", ZERO, E.topic_authorization_failed, "Topic authorization failed."),
        ("t1", T1, 0, None),
        ("t2", ZERO, E.unknown_topic_or_partition, "There is no offset information to delete."),
        ("ghost", ZERO, E.unknown_topic_or_partition, "This server does not host this topic-partition."),
    ]
    assert ("delete_offsets", "sg", [T1]) in b.groups.share.calls
    assert b.share_coordinator.calls == [
        ("delete_state", [SharePartitionKey("sg", T1, 0), SharePartitionKey("sg", T1, 1)])
    ]


async def test_delete_offsets_group_errors():
    b = make_broker()
    b.groups.share.initialized["sg"] = {T1: frozenset({0})}
    b.groups.share.group_error = (E.non_empty_group, None)
    r = await call(b, delete_share_group_offsets, 0, group_id="sg", topics=[dict(topic_name="t1")])
    assert (r.error_code, r.error_message, r.responses) == (E.non_empty_group, "The group is not empty.", ())
    assert b.share_coordinator.calls == []
    b = make_broker(security=Security((Op.DELETE, Res.GROUP, "sg")))
    r = await call(b, delete_share_group_offsets, 0, group_id="sg", topics=[dict(topic_name="t1")])
    assert (r.error_code, r.error_message) == (E.group_authorization_failed, "Group authorization failed.")
    r = await call(make_broker(share_version=0), delete_share_group_offsets, 0, group_id="sg", topics=[])
    assert (r.error_code, r.error_message) == (E.unsupported_version, "The version of API is not supported.")


# ---------------------------------------------------------------------------------- other group APIs
@pytest.mark.parametrize("version", range(0, 6))
async def test_list_groups_shows_share_groups(version):
    b = make_broker()
    b.groups.share.groups["sg"] = share_group(state="Stable")
    b.groups.share.groups["se"] = share_group("se", state="Empty")
    fields = {}
    if version >= 4:
        fields["states_filter"] = []
    if version >= 5:
        fields["types_filter"] = []
    r = await call(b, list_groups, version, **fields)
    assert {(g.group_id, g.protocol_type) for g in r.groups} == {
        ("classic-g", "consumer"),
        ("sg", "share"),
        ("se", "share"),
    }
    if version >= 5:
        assert {g.group_type for g in r.groups if g.group_id != "classic-g"} == {"share"}
        r = await call(b, list_groups, version, states_filter=[" STABLE "], types_filter=["Share"])
        assert [(g.group_id, g.group_state, g.group_type) for g in r.groups] == [("sg", "Stable", "share")]
        r = await call(b, list_groups, version, states_filter=[], types_filter=["consumer"])
        assert "sg" not in {g.group_id for g in r.groups}


async def test_delete_groups_deletes_an_empty_share_groups_state_first():
    b = make_broker()
    b.groups.share.groups["sg"] = share_group(state="Empty")
    b.groups.share.groups["busy"] = share_group("busy", state="Stable")
    b.groups.share.initialized["sg"] = {T1: frozenset({1})}
    b.share_coordinator.summaries[SharePartitionKey("sg", T2, 0)] = summary(3)
    r = await call(b, delete_groups, 2, groups_names=["classic", "sg", "busy"])
    assert [(g.group_id, g.error_code) for g in r.results] == [
        ("classic", E.group_id_not_found),
        ("sg", 0),
        ("busy", E.non_empty_group),
    ]
    assert b.groups.classic_deleted == ["classic"]
    assert b.share_coordinator.calls == [
        ("delete_state", sorted([SharePartitionKey("sg", T1, 1), SharePartitionKey("sg", T2, 0)]))
    ]
    assert [c for c in b.groups.share.calls if c[0] == "delete_group"] == [("delete_group", "sg")]


async def test_describe_groups_answers_a_share_group_as_kafka():
    b = make_broker()
    b.groups.share.groups["sg"] = share_group()
    r = await call(b, describe_groups, 6, groups=["sg"], include_authorized_operations=False)
    assert (r.groups[0].error_code, r.groups[0].error_message) == (
        E.group_id_not_found,
        "Group sg is not a classic group.",
    )


async def test_groups_of_a_partition_given_up_answer_not_coordinator():
    b = make_broker()
    b.groups.share.groups["sg"] = share_group()
    b.groups.given_up = frozenset({"sg"})
    r = await call(b, share_group_heartbeat, 1, **heartbeat_fields())
    assert r.error_code == E.not_coordinator
    r = await call(b, share_group_describe, 1, group_ids=["sg"], include_authorized_operations=False)
    assert r.groups[0].error_code == E.not_coordinator
    g = (await call(b, describe_share_group_offsets, 1, groups=[dict(group_id="sg", topics=None)])).groups[0]
    assert (g.error_code, g.error_message) == (E.not_coordinator, "This is not the correct coordinator.")
    r = await call(b, delete_share_group_offsets, 0, group_id="sg", topics=[dict(topic_name="t1")])
    assert r.error_code == E.not_coordinator
    r = await call(b, alter_share_group_offsets, 0, group_id="sg", topics=[])
    assert r.error_code == E.not_coordinator
    r = await call(b, delete_groups, 2, groups_names=["sg"])
    assert [(g.group_id, g.error_code) for g in r.results] == [("sg", E.not_coordinator)]
    assert b.groups.share.calls == [] and b.share_coordinator.calls == []
