"""Online migration between the classic and the consumer group protocols (coordinator/
group_migration.py) over hand-built groups: the embedded consumer protocol, the upgrade's
records and refusals, the downgrade's records and the classic rebalance after it, and classic
members' JoinGroup/SyncGroup/Heartbeat/LeaveGroup inside a consumer group. The consumer group
coordinator is a fake here (its reconciliation is tested in test_consumer_group*.py): this file
checks what migration decides and answers."""

from __future__ import annotations

import uuid
from dataclasses import replace
from types import SimpleNamespace

import pytest
from minibroker.coordinator.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    new_member,
    replay,
)
from minibroker.coordinator.consumer_group_records import (
    CgCurrent,
    CgEpoch,
    CgMember,
    CgTarget,
    CgTargetMeta,
    ClassicMemberMetadata,
    ClassicProtocol,
    TargetMetaValue,
)
from minibroker.coordinator.group_metadata import Group, GroupState, JoinResult, Member
from minibroker.coordinator.group_metadata_manager import (
    ClassicGroupTombstone,
    GroupMetadataManager,
    GroupMetadataRecord,
)
from minibroker.coordinator.group_migration import (
    ClassicMembers,
    MigrationRefused,
    Subscription,
    encode_assignment,
    maybe_downgrade,
    parse_assignment,
    parse_subscription,
    upgrade,
)
from minibroker.coordinator.group_requests import JoinRequest, SyncRequest
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.runtime import Deferred
from minibroker.protocol.errors import ErrorCode as E

from tests.unit.coordinator_fakes import MemoryOffsetsStore, run_now
from tests.unit.test_groups import FakeScheduler

T1, T2 = uuid.UUID(int=0x11), uuid.UUID(int=0x22)


class Topics:
    topics = {
        "t1": SimpleNamespace(num_partitions=4, topic_id=T1, internal=False),
        "t2": SimpleNamespace(num_partitions=2, topic_id=T2, internal=False),
    }


def subscription(topics, version=1, owned=(), rack=None, user_data=None) -> bytes:
    """A ConsumerProtocolSubscription as the Java client writes it."""
    import struct

    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    out += struct.pack(">i", -1) if user_data is None else struct.pack(">i", len(user_data)) + user_data
    if version >= 1:
        out += struct.pack(">i", len(owned))
        for t, parts in owned:
            out += struct.pack(">h", len(t)) + t.encode() + struct.pack(">i", len(parts))
            out += b"".join(struct.pack(">i", p) for p in parts)
    if version >= 2:
        out += struct.pack(">i", 7)
    if version >= 3:
        out += struct.pack(">h", -1) if rack is None else struct.pack(">h", len(rack)) + rack.encode()
    return out


class FakeConsumer:
    """The consumer group coordinator as migration sees it (group_migration.ConsumerSide)."""

    def __init__(self, settings: GroupSettings | None = None):
        self.settings = settings or GroupSettings()
        self.scheduler = self.clock = FakeScheduler()
        self.topics = Topics()
        self.manager = GroupMetadataManager(
            self.settings, store=MemoryOffsetsStore(1), topics=self.topics, clock=self.clock
        )
        self.groups = self.manager.consumer_groups
        self.sessions: dict[tuple[str, str], int | None] = {}
        self.updates: list[tuple[ConsumerGroupMember, ConsumerGroupMember, object]] = []
        self.fenced: list[list[str]] = []

    def update_member(self, group, member, updated, *, owned, records, classic=False, downgrade=False):
        assert classic
        self.updates.append((member, updated, owned))
        reconciled = replace(
            updated, member_epoch=group.group_epoch + 1, previous_member_epoch=member.member_epoch
        )
        records.append(CgMember(group.group_id, reconciled.member_id, None))
        return reconciled

    def fence_members(self, group, members):
        self.fenced.append([m.member_id for m in members])
        return [CgCurrent(group.group_id, m.member_id, None) for m in members]

    def schedule_session_timeout(self, group_id, member_id, timeout_ms=None):
        self.sessions[(group_id, member_id)] = timeout_ms


# ---------------------------------------------------------------------------- consumer protocol
@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_versions(version):
    data = subscription(["a", "b"], version, owned=[("a", [0, 2])], rack="r1")
    sub = parse_subscription(data)
    assert sub.topics == ("a", "b") and sub.version == version
    assert sub.owned == ((("a", (0, 2)),) if version >= 1 else ())
    assert sub.generation_id == (7 if version >= 2 else -1)
    assert sub.rack_id == ("r1" if version >= 3 else None)


def test_subscription_newer_version_is_read_as_the_latest_and_garbage_is_malformed():
    data = bytearray(subscription(["a"], 3))
    data[0:2] = (9).to_bytes(2, "big")
    assert parse_subscription(bytes(data)) == Subscription(3, ("a",), None, (), 7, None)
    from minibroker.coordinator.group_migration import MalformedProtocol

    for bad in (b"", b"\x00\x00\x00\x00\x00\x05", b"\xff\xff\x00\x00\x00\x00"):
        with pytest.raises(MalformedProtocol):
            parse_subscription(bad)


def test_assignment_round_trip():
    data = encode_assignment(1, [("t1", [0, 3]), ("t2", [1])])
    assert data[:2] == b"\x00\x01"
    assert parse_assignment(data) == ((("t1", (0, 3)), ("t2", (1,))), None)


# ------------------------------------------------------------------------------------ upgrade
def classic_group(generation=5, protocol_type="consumer", assignment_user_data=b"") -> Group:
    group = Group("g", GroupState.STABLE)
    group.generation_id = generation
    for member_id, parts in (("m1", [0, 1]), ("m2", [2, 3])):
        member = Member(
            member_id,
            None,
            "client",
            "/127.0.0.1",
            30_000,
            10_000 if member_id == "m1" else 20_000,
            protocol_type,
            [("range", subscription(["t1"], 3, rack="rack-a")), ("roundrobin", subscription(["t1"]))],
        )
        member.assignment = encode_assignment(1, [("t1", parts)])
        if assignment_user_data:
            member.assignment = member.assignment[:-4] + len(assignment_user_data).to_bytes(4, "big")
            member.assignment += assignment_user_data
        group.add(member)
    group.protocol_name = "range"
    return group


def test_upgrade_records_keep_the_generation_and_the_assignment():
    consumer = FakeConsumer()
    group = classic_group()
    waiting = Deferred()
    group.members["m2"].join_answer = waiting
    records = upgrade(consumer, group)
    assert records[0] == ClassicGroupTombstone("g")
    kinds = [type(r).__name__ for r in records[1:]]
    assert kinds == [
        "CgMember",
        "CgMember",
        "CgEpoch",
        "CgTarget",
        "CgTarget",
        "CgTargetMeta",
        "CgCurrent",
        "CgCurrent",
    ]
    m1 = records[1]
    assert isinstance(m1, CgMember) and m1.member_id == "m1"
    assert m1.value is not None
    assert m1.value.subscribed_topic_names == ("t1",) and m1.value.rack_id == "rack-a"
    assert m1.value.rebalance_timeout_ms == 30_000 and m1.value.client_host == "/127.0.0.1"
    assert m1.value.classic == ClassicMemberMetadata(
        10_000, tuple(ClassicProtocol(n, m) for n, m in group.members["m1"].protocols)
    )
    epoch = records[3]
    assert isinstance(epoch, CgEpoch) and epoch.value is not None and epoch.value.epoch == 5
    target = records[4]
    assert isinstance(target, CgTarget) and target.value is not None
    assert [(tp.topic_id, tp.partitions) for tp in target.value] == [(T1, (0, 1))]
    assert records[6] == CgTargetMeta("g", TargetMetaValue(5, 0))
    current = records[8]
    assert isinstance(current, CgCurrent) and current.member_id == "m2" and current.value is not None
    assert (current.value.member_epoch, current.value.previous_member_epoch, current.value.state) == (5, 5, 0)
    assert current.value.assigned[0].partitions == (2, 3)
    assert current.value.assigned[0].assignment_epochs == (5, 5)
    # replayed, they make the consumer group: stable at the classic generation
    groups: dict[str, ConsumerGroup] = {}
    for record in records[1:]:
        replay(groups, record)
    converted = groups["g"]
    assert (converted.group_epoch, converted.assignment_epoch, converted.state) == (5, 5, "Stable")
    assert converted.members["m1"].assigned == {T1: {0: 5, 1: 5}}
    assert converted.members["m2"].classic is not None and converted.target["m2"] == {T1: frozenset({2, 3})}
    assert converted.num_classic_members() == 2
    # the pending JoinGroup is told to rejoin; the members' sessions go on with their timeouts
    assert waiting.result() == JoinResult(E.rebalance_in_progress, "m2")
    assert consumer.sessions == {("g", "m1"): 10_000, ("g", "m2"): 20_000}


@pytest.mark.parametrize(
    ("settings", "group", "reason"),
    [
        (
            GroupSettings(consumer_migration_policy="downgrade"),
            classic_group(),
            "online upgrade is disabled.",
        ),
        (GroupSettings(consumer_migration_policy="Disabled"), classic_group(), "online upgrade is disabled."),
        (
            GroupSettings(),
            classic_group(protocol_type="connect"),
            "the group does not use the consumer embedded protocol.",
        ),
        (
            GroupSettings(consumer_max_size=1),
            classic_group(),
            "the group size exceeds the consumer group maximum size.",
        ),
        (
            GroupSettings(),
            classic_group(assignment_user_data=b"sticky"),
            "an unsupported custom assignor is in use. Please refer to the documentation or switch to a "
            "default assignor before re-attempting the upgrade.",
        ),
    ],
)
def test_upgrade_refusals(settings, group, reason):
    waiting = Deferred()
    group.members["m1"].join_answer = waiting
    with pytest.raises(MigrationRefused) as refused:
        upgrade(FakeConsumer(settings), group)
    assert str(refused.value) == f"Cannot upgrade classic group g to consumer group because {reason}"
    if "custom assignor" in reason:
        # found while converting: as in Kafka, the pending JoinGroup was answered first
        assert waiting.result() == JoinResult(E.rebalance_in_progress, "m1")
    else:
        assert not waiting.done  # refused before converting: nothing changed


def test_upgrade_of_a_malformed_subscription_is_refused_after_answering_pending_requests():
    """Kafka's convertToConsumerGroup completes the pending JoinGroup/SyncGroup with
    REBALANCE_IN_PROGRESS before it reads the members' protocol; a refusal then leaves the
    classic group (and its timers) as they were otherwise."""
    group = classic_group()
    group.members["m1"].protocols = [("range", b"\x00")]
    joining, syncing = Deferred(), Deferred()
    group.members["m1"].join_answer = joining
    group.members["m2"].sync_answer = syncing
    timer = SimpleNamespace(cancelled=False)
    timer.cancel = lambda: setattr(timer, "cancelled", True)
    group.members["m2"].heartbeat_timer = timer
    with pytest.raises(MigrationRefused, match="the embedded consumer protocol is malformed"):
        upgrade(FakeConsumer(), group)
    assert joining.result() == JoinResult(E.rebalance_in_progress, "m1")
    assert syncing.result().error == E.rebalance_in_progress
    assert not group.members["m1"].awaiting_join and not group.members["m2"].awaiting_sync
    assert group.members["m2"].heartbeat_timer is timer and not timer.cancelled


# ---------------------------------------------------------------------------------- downgrade
def classic_meta(session=15_000, names=("range", "roundrobin"), topics=("t1",)) -> ClassicMemberMetadata:
    return ClassicMemberMetadata(
        session, tuple(ClassicProtocol(n, subscription(list(topics), 2)) for n in names)
    )


def consumer_group(*members: ConsumerGroupMember, epoch=7) -> ConsumerGroup:
    group = ConsumerGroup("g")
    group.group_epoch = group.assignment_epoch = epoch
    for m in members:
        group.members[m.member_id] = m
        group.target[m.member_id] = {tid: frozenset(parts) for tid, parts in m.assigned.items()}
        if m.instance_id is not None:
            group.static_members[m.instance_id] = m.member_id
        for tid, parts in m.assigned.items():
            for p in parts:
                group.partition_epochs.setdefault(tid, {})[p] = m.member_epoch
    return group


def member(member_id, classic=None, assigned=None, epoch=7, **kw) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        member_id,
        member_epoch=epoch,
        previous_member_epoch=epoch - 1,
        rebalance_timeout_ms=30_000,
        client_id="c",
        client_host="/127.0.0.1",
        subscribed_topic_names=frozenset({"t1"}),
        assigned={tid: dict.fromkeys(parts, epoch) for tid, parts in (assigned or {}).items()},
        classic=classic,
        **kw,
    )


def downgradable():
    return consumer_group(
        member("java", assigned={T1: [0]}),
        member("kp1", classic_meta(names=("roundrobin", "range")), {T1: [1, 2]}),
        member("kp2", classic_meta(session=25_000), {T1: [3]}),
    )


def test_downgrade_when_the_last_consumer_member_leaves():
    consumer = FakeConsumer()
    group = downgradable()
    records = maybe_downgrade(consumer, group, ["java"])
    assert records is not None
    assert records[:-1] == group.tombstones()
    classic = records[-1]
    assert isinstance(classic, GroupMetadataRecord) and classic.group_id == "g"
    value = classic.value
    assert (value.protocol_type, value.generation, value.leader) == ("consumer", 7, "kp1")
    assert value.protocol == "roundrobin"  # one vote each: the first voted for wins
    members = {m.member_id: m for m in value.members}
    assert set(members) == {"kp1", "kp2"}
    assert members["kp2"].session_timeout_ms == 25_000 and members["kp2"].rebalance_timeout_ms == 30_000
    assert parse_assignment(members["kp1"].assignment) == ((("t1", (1, 2)),), None)
    assert members["kp1"].assignment[:2] == b"\x00\x02"  # the version its subscription was written in
    # once the records are replayed, the classic group rebalances and its members' sessions run
    consumer.manager.replay(classic)
    restored = consumer.manager.groups["g"]
    assert restored.is_state(GroupState.STABLE)
    consumer.clock.bind(SimpleNamespace(write=lambda records: (), replay=lambda record: None))
    consumer.clock.advance(0)
    assert restored.is_state(GroupState.PREPARING_REBALANCE)
    assert all(m.heartbeat_timer is not None for m in restored.members.values())


@pytest.mark.parametrize(
    ("settings", "leaving"),
    [
        (GroupSettings(), ["kp1"]),  # a consumer-protocol member stays
        (GroupSettings(), ["java", "kp1", "kp2"]),  # nobody stays
        (GroupSettings(consumer_migration_policy="upgrade"), ["java"]),
        (GroupSettings(consumer_migration_policy="disabled"), ["java"]),
        (GroupSettings(max_size=1), ["java"]),  # group.max.size
    ],
)
def test_no_downgrade(settings, leaving):
    assert maybe_downgrade(FakeConsumer(settings), downgradable(), leaving) is None


# ------------------------------------------------------------------- classic members inside
def join_request(member_id="", instance=None, protocols=None, require_known=True, ptype="consumer"):
    return JoinRequest(
        group_id="g",
        member_id=member_id,
        group_instance_id=instance,
        client_id="kp",
        client_host="/127.0.0.1",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=20_000,
        protocol_type=ptype,
        protocols=tuple(protocols or [("range", subscription(["t1"], 1, owned=[("t1", [1])]))]),
        require_known_member_id=require_known,
    )


class Members:
    def __init__(self, settings: GroupSettings | None = None):
        self.consumer = FakeConsumer(settings)
        self.writes: list = []
        self.classic = ClassicMembers(self.consumer, self._write)

    def _write(self, records, then):
        self.writes.append(list(records))
        then(E.none)

    def join(self, group, request):
        answer = Deferred()
        self.classic.join(group, request, answer)
        return answer.result()

    def sync(self, group, member_id, generation, ptype=None, pname=None):
        answer = Deferred()
        self.classic.sync(group, SyncRequest("g", generation, member_id, None, ptype, pname), answer)
        return answer.result()


def test_classic_join_into_a_consumer_group():
    m = Members()
    group = consumer_group(member("java", assigned={T1: [0]}))
    first = m.join(group, join_request())
    assert first.error == E.member_id_required and len(first.member_id) == 22
    result = m.join(group, join_request(first.member_id))
    assert result == JoinResult(E.none, first.member_id, 8, "consumer", "range", "", False, [])
    before, updated, owned = m.consumer.updates[-1]
    assert before == new_member(first.member_id)
    assert updated.subscribed_topic_names == frozenset({"t1"}) and updated.subscribed_topic_regex == ""
    assert updated.classic is not None and updated.classic.session_timeout_ms == 10_000
    assert updated.rebalance_timeout_ms == 20_000 and updated.client_id == "kp"
    assert owned == {T1: frozenset({1})}
    assert m.writes == [[CgMember("g", first.member_id, None)]]
    assert m.consumer.sessions[("g", first.member_id)] == 10_000
    assert ("sync", "g", first.member_id) in m.classic._timers


def test_classic_join_refusals():
    group = consumer_group(member("kp1", classic_meta(names=("roundrobin",))))
    assert Members(GroupSettings(consumer_migration_policy="disabled")).join(
        group, join_request("x")
    ).error == (E.inconsistent_group_protocol)
    m = Members()
    assert m.join(group, join_request("x")).error == E.inconsistent_group_protocol  # no common assignor
    assert m.join(group, join_request("x", ptype="connect")).error == E.inconsistent_group_protocol
    full = Members(GroupSettings(consumer_max_size=1))
    assert full.join(group, join_request("x", protocols=[("roundrobin", subscription(["t1"]))])).error == (
        E.group_max_size_reached
    )
    malformed = m.join(group, join_request("x", protocols=[("roundrobin", b"\x00")]))
    assert malformed.error == E.inconsistent_group_protocol
    assert not m.writes


def test_classic_sync_answers_the_assigned_partitions():
    m = Members()
    kp = member("kp", classic_meta(), {T1: [1, 2], T2: [0]})
    group = consumer_group(kp)
    result = m.sync(group, "kp", 7, "consumer", "range")
    assert result.error == E.none and (result.protocol_type, result.protocol_name) == ("consumer", "range")
    assert parse_assignment(result.assignment) == ((("t1", (1, 2)), ("t2", (0,))), None)
    assert m.sync(group, "kp", 6).error == E.illegal_generation
    assert m.sync(group, "nobody", 7).error == E.unknown_member_id
    assert m.sync(group, "kp", 7, "consumer", "roundrobin").error == E.inconsistent_group_protocol
    group.assignment_epoch = 8  # a new target: rejoin first (unless still revoking)
    assert m.sync(group, "kp", 7).error == E.rebalance_in_progress
    assert ("join", "g", "kp") in m.classic._timers
    group.members["kp"] = replace(kp, state=MemberState.UNREVOKED_PARTITIONS)
    assert m.sync(group, "kp", 7).error == E.none


def test_consumer_protocol_members_cannot_use_the_classic_calls():
    m = Members()
    group = consumer_group(member("java"))
    assert m.sync(group, "java", 7).error == E.unknown_member_id
    assert m.classic.heartbeat(group, "java", None, 7) == E.unknown_member_id


def test_classic_heartbeat_rebalance_in_progress_rules():
    m = Members()
    kp = member("kp", classic_meta(), {T1: [1]})
    other = member("java", assigned={T1: [2]})
    group = consumer_group(kp, other)
    assert m.classic.heartbeat(group, "kp", None, 7) == E.none
    assert m.consumer.sessions[("g", "kp")] == 15_000
    assert m.classic.heartbeat(group, "kp", None, 6) == E.illegal_generation
    group.assignment_epoch = 8
    assert m.classic.heartbeat(group, "kp", None, 7) == E.rebalance_in_progress
    group.assignment_epoch = 7
    group.members["kp"] = replace(kp, state=MemberState.UNREVOKED_PARTITIONS)
    assert m.classic.heartbeat(group, "kp", None, 7) == E.rebalance_in_progress
    # unreleased: waiting for java's partition 2 is no reason to rejoin; anything else is
    group.members["kp"] = replace(kp, state=MemberState.UNRELEASED_PARTITIONS)
    group.target["kp"] = {T1: frozenset({1, 2})}
    assert m.classic.heartbeat(group, "kp", None, 7) == E.none
    group.target["kp"] = {T1: frozenset({1, 3})}
    assert m.classic.heartbeat(group, "kp", None, 7) == E.rebalance_in_progress


def test_classic_leave_fences_the_member():
    m = Members()
    group = consumer_group(
        member("kp", classic_meta(), {T1: [1]}), member("st", classic_meta(), instance_id="inst")
    )
    results = m.classic.leave(group, [("kp", None), ("ghost", None), ("wrong", "inst"), ("", "nobody")])
    assert results == [
        ("kp", None, E.none),
        ("ghost", None, E.unknown_member_id),
        ("wrong", "inst", E.fenced_instance_id),
        ("", "nobody", E.unknown_member_id),
    ]
    assert m.consumer.fenced == [["kp"]]
    assert m.writes == [[CgCurrent("g", "kp", None)]]
    assert m.classic.leave(group, [("", "inst")]) == [("", "inst", E.none)]
    assert m.consumer.fenced[-1] == ["st"]


def test_join_timer_fences_a_member_that_does_not_rejoin():
    m = Members()
    group = consumer_group(member("kp", classic_meta(), {T1: [1]}))
    m.consumer.groups["g"] = group
    group.assignment_epoch = 8
    assert m.classic.heartbeat(group, "kp", None, 7) == E.rebalance_in_progress
    written = []
    m.consumer.clock.bind(
        SimpleNamespace(write=lambda records: written.extend(records) or (), replay=lambda r: None)
    )
    m.consumer.clock.advance(29_999)
    assert not m.consumer.fenced
    m.consumer.clock.advance(1)
    assert m.consumer.fenced == [["kp"]] and written == [CgCurrent("g", "kp", None)]


def test_static_classic_member_rejoining_replaces_its_previous_incarnation():
    m = Members()
    old = member("old", classic_meta(), {T1: [1, 2]}, instance_id="inst")
    group = consumer_group(old)
    result = m.join(group, join_request(instance="inst", protocols=[("range", subscription(["t1"]))]))
    assert result.error == E.none and result.member_id not in ("", "old")
    new_id = result.member_id
    records = m.writes[0]
    assert [(type(r).__name__, r.member_id, r.value is None) for r in records[:6]] == [
        ("CgCurrent", "old", True),
        ("CgTarget", "old", True),
        ("CgMember", "old", True),
        ("CgMember", new_id, False),
        ("CgTarget", new_id, False),
        ("CgCurrent", new_id, False),
    ]
    replaced, _, _ = m.consumer.updates[-1]
    assert (replaced.member_id, replaced.member_epoch, replaced.previous_member_epoch) == (new_id, 0, 0)
    assert replaced.assigned == old.assigned  # it keeps its partitions: no rebalance
    # the old incarnation is fenced; a static join naming an unknown instance is refused
    assert m.join(group, join_request("old", instance="nobody")).error == E.unknown_member_id
    assert m.join(group, join_request("other", instance="inst")).error == E.fenced_instance_id


def test_sync_timer_fences_a_member_that_joined_but_never_syncs():
    m = Members()
    group = consumer_group(member("java", assigned={T1: [0]}))
    m.consumer.groups["g"] = group
    joined = m.join(group, join_request("kp"))
    assert joined.error == E.none
    group.members["kp"] = replace(m.consumer.updates[-1][1], member_epoch=joined.generation_id)
    m.consumer.clock.bind(SimpleNamespace(write=lambda records: (), replay=lambda r: None))
    m.consumer.clock.advance(19_999)  # the JoinGroup's rebalance timeout
    assert not m.consumer.fenced
    assert m.sync(group, "kp", joined.generation_id).error == E.none  # syncing cancels it
    m.consumer.clock.advance(60_000)
    assert not m.consumer.fenced
    m.join(group, join_request("kp"))
    m.consumer.clock.advance(20_000)
    assert m.consumer.fenced == [["kp"]]


# ------------------------------------------------------- through the group coordinator (WP4's)
def test_upgrade_classic_rejoin_and_downgrade_through_the_coordinator():
    """A classic member alone; a consumer-protocol member joins (upgrade); the classic member is
    told to rejoin and syncs its share; the consumer member gets the rest once released; it
    leaves (downgrade) and the classic group rebalances to give the classic member everything."""
    import tests.unit.test_groups as classic
    from tests.unit.test_consumer_group_heartbeat import Harness, assigned

    h = Harness({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 100}, {"t": 4})
    gc, t = h.gc, h.catalog.id_of("t")
    kp = classic.join_new(gc, h.clock, session=1000, rebalance=2000)
    h.clock.advance(classic.INITIAL_JOIN_MS)
    kp_id, generation = kp.value.member_id, kp.value.generation_id
    everything = encode_assignment(0, [("t", [0, 1, 2, 3])])
    assert classic.sync(gc, kp_id, generation, {kp_id: everything}).value.error == E.none
    # the upgrade: the classic member keeps its partitions at its generation
    java = h.join(subscribed_topic_names=("t",))
    group = h.group()
    assert "g" not in gc.manager.groups
    assert group.members[kp_id].classic is not None
    assert group.members[kp_id].assigned == {t: dict.fromkeys(range(4), generation)}
    assert java.member_epoch == generation + 1 and assigned(java) == set()
    # the classic member must rejoin for the new target; its sync gives its share
    assert gc.heartbeat("g", kp_id, None, generation).response == E.rebalance_in_progress
    rejoin = classic.join(gc, member_id=kp_id, session=1000, rebalance=2000).value
    # (its first JoinGroup sets the member's regex from null to "": a bump, as in Kafka)
    epoch = h.member(kp_id).member_epoch
    assert (rejoin.error, rejoin.generation_id, rejoin.leader_id, rejoin.members) == (E.none, epoch, "", [])
    assert (rejoin.protocol_type, rejoin.protocol_name) == ("consumer", "range") and epoch > generation
    synced = classic.sync(gc, kp_id, epoch, ptype="consumer", pname="range").value
    kept = set(parse_assignment(synced.assignment)[0][0][1])
    assert synced.error == E.none and len(kept) == 2
    assert gc.heartbeat("g", kp_id, None, epoch).response == E.none
    released = h.poll(java)
    assert assigned(released) == {0, 1, 2, 3} - kept
    # the consumer member leaves: the group is classic again and rebalances
    assert h.heartbeat(member=java.member_id, epoch=-1).error_code == 0
    assert "g" not in gc.manager.consumer_groups
    back = gc.manager.groups["g"]
    h.clock.advance(0)
    downgraded = back.generation_id
    assert back.is_state(GroupState.PREPARING_REBALANCE) and downgraded == group.group_epoch
    assert gc.heartbeat("g", kp_id, None, downgraded).response == E.rebalance_in_progress
    again = classic.join(gc, member_id=kp_id, session=1000, rebalance=2000).value
    assert (again.error, again.leader_id, again.generation_id) == (E.none, kp_id, downgraded + 1)


def test_classic_join_of_an_empty_consumer_group_makes_it_classic_keeping_its_offsets():
    import tests.unit.test_groups as classic
    from tests.unit.test_consumer_group_heartbeat import Harness

    h = Harness({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 100})
    gc = h.gc
    member = h.join()
    committed = run_now(
        gc, gc.commit_offsets("g", member.member_id, None, member.member_epoch, [("t", 0, 7, -1, "")], 9)
    )
    assert committed == {("t", 0): E.none}
    assert h.heartbeat(member=member.member_id, epoch=-1).error_code == 0
    assert h.group().is_empty()
    box = classic.join_new(gc, h.clock, session=1000, rebalance=2000)
    h.clock.advance(classic.INITIAL_JOIN_MS)
    assert box.value.error == E.none and box.value.generation_id == 1
    assert "g" not in gc.manager.consumer_groups
    assert gc.manager.groups["g"].offsets[("t", 0)].offset == 7


def _static_consumer_and_classic_members(h, **java):
    """A consumer group of a static consumer-protocol member (instance "inst") and a classic
    member that joined and synced; (java's answer, the classic member's id)."""
    import tests.unit.test_groups as classic

    java_answer = h.join(member="java", instance_id="inst", subscribed_topic_names=("t",), **java)
    first = classic.join(h.gc, session=1000, rebalance=2000).value
    assert first.error == E.member_id_required
    joined = classic.join(h.gc, member_id=first.member_id, session=1000, rebalance=2000).value
    assert joined.error == E.none
    synced = classic.sync(h.gc, joined.member_id, joined.generation_id, ptype="consumer", pname="range")
    assert synced.value.error == E.none
    return java_answer, joined.member_id


def test_classic_static_member_replacing_the_last_consumer_member_downgrades_and_rebalances():
    """Kafka's validateOnlineDowngradeWithReplacedMember: the group becomes classic; the
    replacing member's first JoinGroup sets its regex from null to "" (an epoch bump), so the
    target is stale and the classic group rebalances."""
    import tests.unit.test_groups as classic
    from tests.unit.test_consumer_group_heartbeat import Harness

    h = Harness({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 100}, {"t": 4})
    gc = h.gc
    _, kp_id = _static_consumer_and_classic_members(h)
    epoch = h.group().group_epoch
    replacing = classic.join(gc, instance="inst", session=1000, rebalance=2000).value
    assert (replacing.error, replacing.protocol_type, replacing.protocol_name) == (
        E.none,
        "consumer",
        "range",
    )
    assert replacing.member_id not in ("", "java") and replacing.generation_id == 0  # not reconciled
    assert "g" not in gc.manager.consumer_groups
    back = gc.manager.groups["g"]
    assert set(back.members) == {kp_id, replacing.member_id} and back.generation_id == epoch
    assert back.members[replacing.member_id].group_instance_id == "inst"
    assert not gc.membership.classic_members._timers  # no sync timer: the classic group's heartbeats instead
    h.clock.advance(0)
    assert back.is_state(GroupState.PREPARING_REBALANCE)
    assert all(m.heartbeat_timer is not None for m in back.members.values())
    # the records replay into the same classic group (a coordinator loaded from the log)
    reloaded = h.reopened().gc.manager
    assert "g" not in reloaded.consumer_groups and set(reloaded.groups["g"].members) == set(back.members)
    # both members rejoin the classic group's next generation
    assert gc.heartbeat("g", kp_id, None, epoch).response == E.rebalance_in_progress
    boxes = [
        classic.join(gc, member_id=kp_id, session=1000, rebalance=2000),
        classic.join(gc, member_id=replacing.member_id, instance="inst", session=1000, rebalance=2000),
    ]
    assert all(b.done and b.value.error == E.none for b in boxes)
    assert {b.value.generation_id for b in boxes} == {epoch + 1}


def test_classic_static_member_replacing_the_last_consumer_member_with_a_current_target_downgrades_at_once():
    """The same downgrade when the group's target is up to date (here the fake coordinator
    bumps nothing; through the real one a consumer member's null regex becoming "" always
    does): the member is reconciled, the group becomes classic without a rebalance, the joining
    member taking over the replaced member's target; no session nor sync timer of the consumer
    group for it."""
    m = Members()
    group = consumer_group(
        member("java", assigned={T1: [0]}, instance_id="inst"),
        member("kp", classic_meta(names=("range",)), {T1: [1, 2]}),
    )
    m.consumer.groups["g"] = group
    result = m.join(group, join_request(instance="inst", protocols=[("range", subscription(["t1"], 2))]))
    new_id = result.member_id
    assert result == JoinResult(E.none, new_id, 8, "consumer", "range", "", False, [])
    replaced, _, _ = m.consumer.updates[-1]
    assert replaced.member_id == new_id and replaced.assigned == {T1: {0: 7}}
    (records,) = m.writes
    tombstones, classic = records[7:-1], records[-1]
    assert tombstones[:6] == [
        CgCurrent("g", new_id, None),
        CgCurrent("g", "kp", None),
        CgTarget("g", new_id, None),
        CgTarget("g", "kp", None),
        CgTargetMeta("g", None),
        CgMember("g", new_id, None),
    ]
    assert isinstance(classic, GroupMetadataRecord)
    value = classic.value
    assert (value.generation, value.protocol, value.leader) == (7, "range", "kp")
    members = {x.member_id: x for x in value.members}
    assert set(members) == {"kp", new_id} and members[new_id].group_instance_id == "inst"
    assert parse_assignment(members[new_id].assignment) == ((("t1", (0,)),), None)
    assert members[new_id].assignment[:2] == b"\x00\x02"
    assert new_id not in m.consumer.sessions and not m.classic._timers
    # replayed: the classic group is stable, its members' sessions run, no rebalance
    m.consumer.manager.replay(classic)
    restored = m.consumer.manager.groups["g"]
    m.consumer.groups.pop("g")
    m.consumer.clock.bind(SimpleNamespace(write=lambda records: (), replay=lambda record: None))
    m.consumer.clock.advance(0)
    assert restored.is_state(GroupState.STABLE) and restored.generation_id == 7
    assert all(x.heartbeat_timer is not None for x in restored.members.values())


def test_no_downgrade_when_a_classic_static_member_replaces_a_consumer_member_under_upgrade_policy():
    import tests.unit.test_groups as classic
    from tests.unit.test_consumer_group_heartbeat import Harness

    h = Harness(
        {
            "group.initial.rebalance.delay.ms": 0,
            "group.min.session.timeout.ms": 100,
            "group.consumer.migration.policy": "upgrade",
        },
        {"t": 4},
    )
    _, kp_id = _static_consumer_and_classic_members(h)
    replacing = classic.join(h.gc, instance="inst", session=1000, rebalance=2000).value
    assert replacing.error == E.none
    assert "g" not in h.gc.manager.groups  # it stays a consumer group, the member replaced
    assert set(h.group().members) == {kp_id, replacing.member_id}
    assert h.group().static_member("inst").member_id == replacing.member_id
