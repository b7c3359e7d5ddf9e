"""The KIP-848 heartbeat (coordinator/consumer_groups.py) on a fake clock: joins and the epoch
flow over three members with revoke-before-assign, session and rebalance timeouts, static
membership, regex subscriptions, the assignment interval, topic changes, reload; and the
handler's validation (broker/handlers/consumer_group_heartbeat.py) with Kafka's messages."""

from __future__ import annotations

import datetime
import itertools
import uuid
from types import SimpleNamespace

import pytest
from minibroker.broker.context import RequestContext
from minibroker.broker.coordinator_runtime import CoordinatorRuntime
from minibroker.broker.handlers import consumer_group_heartbeat
from minibroker.broker.handlers.consumer_group_heartbeat import Invalid, validate
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.common.clock import SYSTEM_CLOCK
from minibroker.coordinator.consumer_groups import REGEX_MIN_REFRESH_MS, ConsumerHeartbeat, HeartbeatAnswer
from minibroker.protocol.codec import build, encode_response, request_class
from minibroker.protocol.errors import ErrorCode as E

from tests.unit.coordinator_fakes import MemoryOffsetsStore, MemoryTopicCatalog, group_coordinator, run_now
from tests.unit.handler_fakes import FakeBroker
from tests.unit.test_groups import FakeScheduler

pytestmark = pytest.mark.timeout(30)

SESSION_MS, HEARTBEAT_MS, REBALANCE_MS = 1000, 100, 3000
CONFIG = {
    "offsets.topic.num.partitions": 1,
    "group.consumer.session.timeout.ms": SESSION_MS,
    "group.consumer.min.session.timeout.ms": 100,
    "group.consumer.heartbeat.interval.ms": HEARTBEAT_MS,
    "group.consumer.min.heartbeat.interval.ms": 10,
    "group.consumer.assignment.interval.ms": 0,
}


class Harness:
    """A GroupCoordinator over an in-memory __consumer_offsets, a fake clock and a topic catalog."""

    def __init__(self, config=None, topics=None):
        self.clock = FakeScheduler()
        self.store = MemoryOffsetsStore(1)
        self.catalog = MemoryTopicCatalog(topics if topics is not None else {"t": 3})
        self.config = {**CONFIG, **(config or {})}
        self.gc = group_coordinator(self.config, store=self.store, scheduler=self.clock, topics=self.catalog)
        self.ids = itertools.count(1)

    @property
    def cg(self):
        return self.gc.consumer

    def heartbeat(self, group="g", member="", epoch=0, **fields) -> HeartbeatAnswer:
        fields.setdefault("api_version", 1)
        if epoch == 0:
            fields.setdefault("rebalance_timeout_ms", REBALANCE_MS)
            if "subscribed_topic_regex" not in fields:
                fields.setdefault("subscribed_topic_names", ("t",))
            fields.setdefault("owned", ())
        request = ConsumerHeartbeat(group_id=group, member_id=member, member_epoch=epoch, **fields)
        return run_now(self.gc, self.cg.heartbeat(request))

    def join(self, member=None, **fields) -> HeartbeatAnswer:
        member = member or f"member-{next(self.ids)}"
        answer = self.heartbeat(member=member, epoch=0, **fields)
        assert answer.error_code == 0, answer
        return answer

    def poll(self, answer: HeartbeatAnswer, owned=None, group="g") -> HeartbeatAnswer:
        """A heartbeat as the Java client sends it after reconciling: its owned partitions (by
        default what it was last assigned)."""
        if owned is None:
            owned = self.owned(answer.member_id, group)
        return self.heartbeat(group=group, member=answer.member_id, epoch=answer.member_epoch, owned=owned)

    def group(self, group="g"):
        return self.gc.manager.consumer_groups[group]

    def member(self, member_id, group="g"):
        return self.group(group).members[member_id]

    def owned(self, member_id, group="g"):
        member = self.member(member_id, group)
        return tuple((t, tuple(sorted(p))) for t, p in member.assigned.items())

    def partitions(self, member_id, group="g") -> set[int]:
        member = self.member(member_id, group)
        return {p for parts in member.assigned.values() for p in parts} | {
            p for parts in member.pending_revocation.values() for p in parts
        }

    def reopened(self) -> Harness:
        """A coordinator loaded from this one's __consumer_offsets (a broker restart)."""
        other = Harness.__new__(Harness)
        other.clock, other.store, other.catalog, other.config = (
            self.clock,
            self.store,
            self.catalog,
            self.config,
        )
        other.gc = group_coordinator(self.config, store=self.store, scheduler=self.clock, topics=self.catalog)
        other.ids = itertools.count(100)
        other.gc.load()
        return other


def assigned(answer: HeartbeatAnswer) -> set[int]:
    assert answer.assignment is not None
    return {p for _, parts in answer.assignment for p in parts}


def owners_disjoint(h: Harness, group="g") -> None:
    """No partition is held (assigned or pending revocation) by two members at once."""
    seen: dict[int, str] = {}
    for member_id in h.group(group).members:
        for p in h.partitions(member_id, group):
            assert p not in seen, f"partition {p} held by {seen[p]} and {member_id}"
            seen[p] = member_id


@pytest.fixture
def h():
    return Harness()


# --- join, heartbeat, leave ------------------------------------------------------------------
def test_first_member_gets_every_partition(h):
    a = h.join("A")
    assert a.member_id == "A" and a.heartbeat_interval_ms == HEARTBEAT_MS
    group = h.group()
    assert a.member_epoch == group.group_epoch == group.assignment_epoch
    assert assigned(a) == {0, 1, 2}
    assert group.state == "Stable"
    # a plain heartbeat changes nothing and writes nothing
    written = sum(len(b.records) for b in h.store.logs[0])
    again = h.heartbeat(member="A", epoch=a.member_epoch)
    assert again.error_code == 0 and again.member_epoch == a.member_epoch and again.assignment is None
    assert sum(len(b.records) for b in h.store.logs[0]) == written
    assert h.cg.has_timer("session", "g", "A")


def test_v0_join_gets_a_member_id_from_the_coordinator(h):
    answer = h.heartbeat(member="", epoch=0, api_version=0)
    assert answer.error_code == 0 and len(answer.member_id) == 22 and not answer.member_id.startswith("-")
    assert answer.member_id in h.group().members


def test_three_members_share_with_revocation_before_assignment(h):
    a = h.join("A")
    b = h.join("B")
    # B is in the new epoch's target but A still owns everything: B gets nothing yet
    assert assigned(b) == set() and b.member_epoch == h.group().group_epoch
    owners_disjoint(h)
    # A learns it must give some up: what it keeps comes back, the rest is pending revocation
    a = h.poll(a)
    assert a.error_code == 0 and a.member_epoch < h.group().group_epoch
    assert h.member("A").state.label == "unrevoked_partitions"
    kept = assigned(a)
    assert len(kept) in (1, 2)
    owners_disjoint(h)
    # A acknowledges: it now owns only what it kept, and moves to the new epoch
    a = h.poll(a, owned=((h.catalog.id_of("t"), tuple(sorted(kept))),))
    assert a.member_epoch == h.group().group_epoch
    b = h.poll(b)
    assert assigned(b) | kept == {0, 1, 2} and not assigned(b) & kept
    owners_disjoint(h)
    # a third member
    c = h.join("C")
    for _ in range(4):  # heartbeats until everyone reconciled
        for name in ("A", "B", "C"):
            m = h.member(name)
            answer = h.heartbeat(
                member=name,
                epoch=m.member_epoch,
                owned=tuple((t, tuple(sorted(p))) for t, p in m.assigned.items()),
            )
            assert answer.error_code == 0
            owners_disjoint(h)
    assert {len(h.partitions(n)) for n in "ABC"} == {1}
    assert h.group().state == "Stable"
    assert c.member_id == "C"


def test_leave_gives_partitions_back(h):
    a = h.join("A")
    b = h.join("B")
    a = h.poll(h.poll(a))
    h.poll(b)
    epoch = h.group().group_epoch
    left = h.heartbeat(member="B", epoch=-1)
    assert left.error_code == 0 and left.member_id == "B" and left.member_epoch == -1
    assert "B" not in h.group().members and h.group().group_epoch == epoch + 1
    assert not h.cg.has_timer("session", "g", "B")
    a = h.poll(a)
    assert assigned(a) == {0, 1, 2}


def test_last_member_leaving_leaves_an_empty_group(h):
    a = h.join("A")
    assert h.heartbeat(member="A", epoch=-1).error_code == 0
    group = h.group()
    assert group.state == "Empty" and group.assignment_epoch == group.group_epoch
    assert a.member_epoch < group.group_epoch


# --- errors ------------------------------------------------------------------------------------
def test_unknown_group_member_and_epochs(h):
    answer = h.heartbeat(group="nope", member="A", epoch=3)
    assert (answer.error_code, answer.error_message) == (
        E.group_id_not_found,
        "Consumer group nope not found.",
    )
    answer = h.heartbeat(group="nope", member="A", epoch=-1)
    assert (answer.error_code, answer.error_message) == (E.group_id_not_found, "Group nope not found.")
    a = h.join("A")
    answer = h.heartbeat(member="Z", epoch=1)
    assert (answer.error_code, answer.error_message) == (
        E.unknown_member_id,
        "Member Z is not a member of group g.",
    )
    answer = h.heartbeat(member="Z", epoch=-1)
    assert answer.error_code == E.unknown_member_id
    answer = h.heartbeat(member="A", epoch=a.member_epoch + 1)
    assert answer.error_code == E.fenced_member_epoch
    assert "greater member epoch" in answer.error_message
    answer = h.heartbeat(member="A", epoch=a.member_epoch - 1, owned=())
    assert answer.error_code == E.fenced_member_epoch and "smaller member epoch" in answer.error_message


def test_a_classic_group_is_not_a_consumer_group(h):
    group = h.gc.manager.add_group("classic")
    group.protocol_type = "consumer"
    answer = h.heartbeat(group="classic", member="A", epoch=1)
    assert (answer.error_code, answer.error_message) == (
        E.group_id_not_found,
        "Group classic is not a consumer group.",
    )


def test_an_empty_classic_group_becomes_a_consumer_group(h):
    h.gc.manager.add_group("g")  # e.g. offsets committed by a simple consumer
    a = h.join("A")
    assert h.gc.manager.group_type("g") == "consumer" and assigned(a) == {0, 1, 2}


def test_group_max_size(h):
    h = Harness({"group.consumer.max.size": 1})
    h.join("A")
    answer = h.heartbeat(member="B", epoch=0)
    assert (answer.error_code, answer.error_message) == (
        E.group_max_size_reached,
        "The consumer group has reached its maximum capacity of 1 members.",
    )
    assert h.heartbeat(member="A", epoch=0).error_code == 0  # a member rejoining is no newcomer


def test_invalid_regular_expression(h):
    answer = h.heartbeat(member="A", epoch=0, subscribed_topic_regex="(")
    assert (answer.error_code, answer.error_message) == (
        E.invalid_regular_expression,
        "SubscribedTopicRegex `(` is not a valid regular expression: missing closing ).",
    )
    answer = h.heartbeat(member="A", epoch=0, subscribed_topic_regex="a**")
    assert answer.error_message.endswith("invalid nested repetition operator.")


# --- timeouts ----------------------------------------------------------------------------------
def test_session_expiry_fences_the_member(h):
    h.join("A")
    b = h.join("B")
    epoch = h.group().group_epoch
    for _ in range(3):  # B keeps heartbeating, A goes silent
        h.clock.advance(SESSION_MS // 2)
        b = h.poll(b)
    assert "A" not in h.group().members and h.group().group_epoch > epoch
    assert not h.cg.has_timer("session", "g", "A")
    h.poll(h.poll(b))
    assert h.partitions("B") == {0, 1, 2}


def test_rebalance_timeout_fences_a_member_that_does_not_revoke(h):
    a = h.join("A", rebalance_timeout_ms=SESSION_MS // 2)
    b = h.join("B")
    a = h.poll(a)  # A is told to revoke; it never acknowledges
    assert h.member("A").state.label == "unrevoked_partitions"
    assert h.cg.has_timer("rebalance", "g", "A")
    epoch = h.member("A").member_epoch
    for _ in range(3):
        h.clock.advance(SESSION_MS // 4)
        h.heartbeat(member="A", epoch=epoch)  # owned not sent: still owning
        b = h.poll(b)
    assert "A" not in h.group().members
    h.poll(h.poll(b))
    assert h.partitions("B") == {0, 1, 2}


# --- static membership -------------------------------------------------------------------------
def test_static_member_temporary_leave_and_rejoin_keeps_its_assignment(h):
    a = h.join("A1", instance_id="i-a")
    h.join("B", instance_id="i-b")
    a = h.poll(h.poll(a))
    b = h.poll(h.poll(h.heartbeat(member="B", epoch=h.member("B").member_epoch)))
    before = h.partitions("A1")
    epoch = h.group().group_epoch
    left = h.heartbeat(member="A1", epoch=-2, instance_id="i-a")
    assert (left.error_code, left.member_id, left.member_epoch) == (0, "A1", -2)
    assert h.member("A1").member_epoch == -2 and h.group().group_epoch == epoch
    # the same instance comes back with a new member id: it takes A1's place, no rebalance
    back = h.join("A2", instance_id="i-a")
    assert "A1" not in h.group().members and h.group().group_epoch == epoch
    assert assigned(back) == before
    assert b.error_code == 0


def test_static_member_owned_elsewhere_is_unreleased(h):
    h.join("A1", instance_id="i-a")
    answer = h.heartbeat(member="A2", epoch=0, instance_id="i-a")
    assert (answer.error_code, answer.error_message) == (
        E.unreleased_instance_id,
        "Static member A2 with instance id i-a cannot join the group because the instance id is owned "
        "by A1 member.",
    )
    answer = h.heartbeat(member="A2", epoch=1, instance_id="i-a")
    assert answer.error_code == E.fenced_instance_id
    assert answer.error_message == "Static member A2 with instance id i-a was fenced by member A1."
    answer = h.heartbeat(member="A2", epoch=1, instance_id="i-z")
    assert (answer.error_code, answer.error_message) == (E.unknown_member_id, "Instance id i-z is unknown.")


def test_static_member_that_never_returns_is_fenced_by_its_session(h):
    h.join("A1", instance_id="i-a")
    assert h.heartbeat(member="A1", epoch=-2, instance_id="i-a").error_code == 0
    h.clock.advance(SESSION_MS + 1)
    assert h.group().members == {}


# --- assignment interval, topic changes, assignors ----------------------------------------------
def test_assignment_interval_delays_the_next_target():
    h = Harness({"group.consumer.assignment.interval.ms": 1000, "group.consumer.session.timeout.ms": 60_000})
    h.join("A")
    first = h.group().assignment_epoch
    h.join("B")
    group = h.group()
    assert group.group_epoch > group.assignment_epoch == first and group.state == "Assigning"
    h.clock.advance(1000)
    h.heartbeat(member="B", epoch=h.member("B").member_epoch)
    assert h.group().assignment_epoch == h.group().group_epoch


def test_group_config_overrides_the_heartbeat_interval(h):
    h.cg.group_configs = SimpleNamespace(group_config=lambda g: {"consumer.heartbeat.interval.ms": 777})
    assert h.join("A").heartbeat_interval_ms == 777


def test_new_partitions_bump_the_epoch(h):
    a = h.join("A")
    epoch = h.group().group_epoch
    h.catalog.grow("t", 5)
    h.cg.on_topics_changed(created=(), changed=("t",))
    a = h.poll(a)
    assert h.group().group_epoch == epoch + 1
    h.poll(a)
    assert h.partitions("A") == {0, 1, 2, 3, 4}


def test_preferred_assignor_change_bumps_the_epoch(h):
    h.join("A")
    epoch = h.group().group_epoch
    h.join("B", server_assignor="range")
    assert h.group().group_epoch == epoch + 1  # B's subscription is A's: only the assignor changed it


# --- regex subscriptions -----------------------------------------------------------------------
def test_regex_subscription_resolves_and_picks_up_a_new_topic():
    h = Harness({"group.consumer.session.timeout.ms": 60_000}, topics={"orders-1": 2, "other": 1})
    a = h.join("A", subscribed_topic_regex="orders-.*", subscribed_topic_names=None)
    assert assigned(a) == set()  # the heartbeat that brings a regex does not resolve it
    h.clock.advance(0)  # the resolution runs in an operation of its own
    group = h.group()
    assert set(group.resolved_regexes["orders-.*"].topics) == {"orders-1"}
    a = h.poll(a)
    assert assigned(a) == {0, 1}
    # a topic created later: picked up once the 10 s floor since the last resolution passed
    h.catalog.create("orders-2", 1)
    h.cg.on_topics_changed(created=("orders-2",), changed=())
    a = h.poll(a)
    h.clock.advance(0)
    assert set(h.group().resolved_regexes["orders-.*"].topics) == {"orders-1"}
    h.clock.advance(REGEX_MIN_REFRESH_MS + 1)
    a = h.poll(a)
    h.clock.advance(0)
    assert set(h.group().resolved_regexes["orders-.*"].topics) == {"orders-1", "orders-2"}
    a = h.poll(a)
    a = h.poll(a)
    assert {(t, p) for t, parts in h.member("A").assigned.items() for p in parts} == {
        (h.catalog.id_of("orders-1"), 0),
        (h.catalog.id_of("orders-1"), 1),
        (h.catalog.id_of("orders-2"), 0),
    }


def test_a_regex_no_member_uses_is_removed_when_its_member_leaves():
    h = Harness(topics={"orders-1": 1})
    h.join("A", subscribed_topic_regex="orders-.*", subscribed_topic_names=None)
    h.clock.advance(0)
    assert "orders-.*" in h.group().resolved_regexes
    assert h.heartbeat(member="A", epoch=-1).error_code == 0
    assert h.group().resolved_regexes == {}


# --- reload ------------------------------------------------------------------------------------
def test_a_reload_restores_the_group_and_its_timers(h):
    a = h.join("A")
    b = h.join("B")
    h.poll(a)
    h.poll(b)
    again = h.reopened()
    before, after = h.group(), again.group()
    assert after.group_epoch == before.group_epoch and after.assignment_epoch == before.assignment_epoch
    assert after.members.keys() == before.members.keys()
    for member_id in before.members:
        assert after.members[member_id].assigned == before.members[member_id].assigned
        assert again.cg.has_timer("session", "g", member_id)
    assert again.cg.has_timer("rebalance", "g", "A") == (
        after.members["A"].state.label == "unrevoked_partitions"
    )


# --- the handler's validation ------------------------------------------------------------------
def request(version=1, **fields):
    """A ConsumerGroupHeartbeat request as kio decodes it (v1 unless told)."""
    base = dict(
        group_id="g",
        member_id="m",
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=300000,
        subscribed_topic_names=["t"],
        server_assignor=None,
        topic_partitions=[],
    )
    if version >= 1:
        base["subscribed_topic_regex"] = None
    base.update(fields)
    return build(request_class(68, version), base)


@pytest.mark.parametrize(
    "fields, version, message",
    [
        (dict(member_id=" "), 1, "MemberId can't be empty."),
        (dict(member_id="", member_epoch=3), 0, "MemberId can't be empty."),
        (dict(member_id="", member_epoch=-1), 0, "MemberId can't be empty."),
        (dict(group_id=""), 1, "GroupId can't be empty."),
        (dict(instance_id=" "), 1, "InstanceId can't be empty."),
        (dict(rack_id=""), 1, "RackId can't be empty."),
        (dict(rebalance_timeout_ms=-1), 1, "RebalanceTimeoutMs must be provided in first request."),
        (dict(topic_partitions=None), 1, "TopicPartitions must be empty when (re-)joining."),
        (
            dict(topic_partitions=[dict(topic_id=uuid.uuid4(), partitions=[0])]),
            1,
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            dict(subscribed_topic_names=None),
            1,
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
        ),
        (dict(member_epoch=-2), 1, "InstanceId can't be null."),
        (dict(member_epoch=-3), 1, "MemberEpoch is invalid."),
    ],
)
def test_invalid_requests(fields, version, message):
    with pytest.raises(Invalid) as info:
        validate(request(version, **fields), version, ("uniform", "range"))
    assert (info.value.code, info.value.message) == (E.invalid_request, message)


def test_valid_requests_pass():
    validate(request(0, member_id="", member_epoch=0), 0, ("uniform", "range"))  # v0 join: no id yet
    validate(request(member_epoch=-2, instance_id="i"), 1, ("uniform", "range"))
    validate(request(member_epoch=5, rebalance_timeout_ms=-1, topic_partitions=None), 1, ("uniform", "range"))
    validate(request(subscribed_topic_names=None, subscribed_topic_regex="t.*"), 1, ("uniform", "range"))


def test_unsupported_assignor():
    with pytest.raises(Invalid) as info:
        validate(request(server_assignor="sticky"), 1, ("uniform", "range"))
    assert (info.value.code, info.value.message) == (
        E.unsupported_assignor,
        "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
    )


# --- the handler ---------------------------------------------------------------------------------
class Security:
    """broker.security: everything allowed but what `denied` names ((resource type, name))."""

    authorizer = None

    def __init__(self, denied=()):
        self.denied = set(denied)
        if denied:
            self.authorizer = object()

    def allowed(self, session, operation, resource_type, name):
        return (resource_type, name) not in self.denied


def handler_broker(group_version=1, denied=()):
    runtime = CoordinatorRuntime(durability=None)  # no fsync: group records go to the page cache
    gc = group_coordinator(
        dict(CONFIG),
        store=MemoryOffsetsStore(1),
        scheduler=runtime.timer(),
        topics=MemoryTopicCatalog({"t": 2}),
        clock=SYSTEM_CLOCK,
    )
    return FakeBroker(
        groups=gc,
        coordinators=runtime,
        security=Security(denied),
        features=SimpleNamespace(level=lambda name: group_version if name == "group.version" else 0),
    )


async def call_handler(broker, version, **fields):
    ctx = RequestContext(broker, 68, version, 1, "client-x", "127.0.0.1:5555")
    response = await consumer_group_heartbeat.handle(ctx, request(version, **fields))
    encode_response(response)  # encodable at this version
    return response


@pytest.mark.parametrize("version", [0, 1])
async def test_handler_join_and_leave(version):
    broker = handler_broker()
    joined = await call_handler(broker, version, member_id="" if version == 0 else "m1")
    assert joined.error_code == 0 and joined.member_id and joined.member_epoch > 0
    assert joined.heartbeat_interval == datetime.timedelta(milliseconds=HEARTBEAT_MS)
    assert [sorted(tp.partitions) for tp in joined.assignment.topic_partitions] == [[0, 1]]
    member = broker.groups.consumer.groups["g"].members[joined.member_id]
    assert (member.client_id, member.client_host, member.rebalance_timeout_ms) == (
        "client-x",
        "/127.0.0.1",
        300000,
    )
    left = await call_handler(broker, version, member_id=joined.member_id, member_epoch=-1)
    assert (left.error_code, left.member_epoch, left.assignment) == (0, -1, None)


async def test_handler_refusals():
    answer = await call_handler(handler_broker(group_version=0), 1)
    assert answer.error_code == E.unsupported_version
    answer = await call_handler(handler_broker(denied=[(Res.GROUP, "g")]), 1)
    assert answer.error_code == E.group_authorization_failed
    answer = await call_handler(handler_broker(denied=[(Res.TOPIC, "t")]), 1)
    assert answer.error_code == E.topic_authorization_failed
    answer = await call_handler(handler_broker(), 1, group_id=" ")
    assert (answer.error_code, answer.error_message) == (E.invalid_request, "GroupId can't be empty.")


def test_a_heartbeat_writes_its_records_in_one_batch(h):
    h.join("A")
    request = ConsumerHeartbeat(
        api_version=1,
        group_id="g",
        member_id="B",
        member_epoch=0,
        rebalance_timeout_ms=REBALANCE_MS,
        subscribed_topic_names=("t",),
        owned=(),
    )
    op = h.cg.heartbeat(request)
    step = next(op)
    kinds = [type(r).__name__ for r in step.records]
    # member metadata, epoch bump, both targets (or the changed one), target metadata, B's assignment
    assert kinds[0] == "CgMember" and "CgEpoch" in kinds and kinds[-1] == "CgCurrent" and not step.durable
    assert "B" not in h.group().members  # nothing changes before the records are replayed
    for record in step.records:
        h.gc.replay(record)
    with pytest.raises(StopIteration) as done:
        op.send(None)
    assert done.value.value.member_id == "B" and "B" in h.group().members


def test_rebalance_timeout_is_ignored_once_the_member_moved_on(h):
    a = h.join("A", rebalance_timeout_ms=SESSION_MS // 2)
    h.join("B")
    a = h.poll(a)
    assert h.cg.has_timer("rebalance", "g", "A")
    kept = h.owned("A")
    h.poll(a, owned=kept)  # A revoked in time: its next epoch
    assert h.member("A").state.label == "stable" and not h.cg.has_timer("rebalance", "g", "A")
    h.clock.advance(SESSION_MS // 2 + 1)
    assert "A" in h.group().members


# --- ConsumerGroupDescribe under an authorizer ------------------------------------------------------
async def describe_handler(broker, version=1):
    from minibroker.broker.handlers import consumer_group_describe

    cls = request_class(69, version)
    ctx = RequestContext(broker, 69, version, 2, "client-x", "127.0.0.1:5555")
    response = await consumer_group_describe.handle(
        ctx, build(cls, dict(group_ids=["g"], include_authorized_operations=False))
    )
    encode_response(response)  # encodable at this version
    return response.groups[0]


@pytest.mark.parametrize("version", [0, 1])
async def test_describe_refuses_a_group_naming_a_topic_the_principal_may_not_describe(version):
    broker = handler_broker()
    broker.logs = SimpleNamespace(topic_names={uuid.uuid5(uuid.NAMESPACE_URL, "topic:t"): "t"})
    joined = await call_handler(broker, 1, member_id="m1")
    assert joined.error_code == 0
    described = await describe_handler(broker, version)
    assert (described.error_code, len(described.members)) == (0, 1)
    # Kafka's KafkaApis.handleConsumerGroupDescribe: the whole group is refused, no members
    broker.security = Security(denied=[(Res.TOPIC, "t")])
    refused = await describe_handler(broker, version)
    assert (refused.error_code, refused.error_message, refused.members, refused.group_state) == (
        E.topic_authorization_failed,
        "The group has described topic(s) that the client is not authorized to describe.",
        (),
        "",
    )
    # a topic the principal may describe leaves the group described
    broker.security = Security(denied=[(Res.TOPIC, "other")])
    assert (await describe_handler(broker, version)).error_code == 0
