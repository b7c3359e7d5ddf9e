"""The KIP-932 share group coordinator (coordinator/share_groups.py) through a real
GroupCoordinator and GroupMetadataManager over an in-memory __consumer_offsets on a fake clock:
join / heartbeat / leave with Kafka's epochs and messages, the share-state handshake (only
initialized partitions are assignable), sharing of partitions, the assignment interval, session
timeouts, the shared id namespace with consumer groups, admin operations, and the reload of
what was written."""

from __future__ import annotations

import itertools
import uuid

import pytest
from minibroker.coordinator.consumer_groups import ConsumerHeartbeat
from minibroker.coordinator.group_store import LogOffsetsStore
from minibroker.coordinator.share_group_records import (
    SgCurrent,
    SgEpoch,
    SgMember,
    SgStatePartitions,
    SgTarget,
    SgTargetMeta,
    decode,
)
from minibroker.coordinator.share_groups import ShareHeartbeat, ShareHeartbeatAnswer
from minibroker.protocol.errors import ErrorCode as E

from tests.unit.coordinator_fakes import (
    MemoryOffsetsStore,
    MemoryTopicCatalog,
    commit,
    group_coordinator,
    run_now,
)
from tests.unit.test_groups import FakeScheduler, _logs, join

pytestmark = pytest.mark.timeout(30)

SESSION_MS, HEARTBEAT_MS = 1000, 100
CONFIG = {
    "offsets.topic.num.partitions": 1,
    "group.share.session.timeout.ms": SESSION_MS,
    "group.share.min.session.timeout.ms": 100,
    "group.share.heartbeat.interval.ms": HEARTBEAT_MS,
    "group.share.min.heartbeat.interval.ms": 10,
    "group.share.assignment.interval.ms": 0,
}


class Harness:
    """A GroupCoordinator over an in-memory __consumer_offsets, a fake clock and a topic catalog;
    `heartbeat` plays the broker's handler: it initializes what the answer asks for (unless
    `initialize=False`) by reporting it with partitions_initialized."""

    def __init__(self, config=None, topics=None, group_configs=None):
        self.clock = FakeScheduler()
        self.store = MemoryOffsetsStore(1)
        self.catalog = MemoryTopicCatalog(topics if topics is not None else {"t": 3})
        self.config = {**CONFIG, **(config or {})}
        self.group_configs = group_configs or {}
        self.removed: list[tuple[str, str]] = []
        self._build()
        self.ids = itertools.count(1)

    def _build(self):
        self.gc = group_coordinator(self.config, store=self.store, scheduler=self.clock, topics=self.catalog)
        configs = self.group_configs
        self.gc.share.group_configs = type("Configs", (), {"group_config": lambda _, g: configs.get(g, {})})()
        self.gc.share.on_member_removed = lambda g, m: self.removed.append((g, m))
        self.initialized: list[tuple[int, dict]] = []

    @property
    def sc(self):
        return self.gc.share

    def heartbeat(
        self, member, epoch, group="g", topics=("t",), rack=None, initialize=True
    ) -> ShareHeartbeatAnswer:
        request = ShareHeartbeat(group, member, epoch, rack, topics, "client", "/127.0.0.1")
        answer = run_now(self.gc, self.sc.heartbeat(request))
        if answer.initialize and initialize:
            self.initialized.append((answer.state_epoch, dict(answer.initialize)))
            run_now(self.gc, self.sc.partitions_initialized(group, answer.initialize))
        return answer

    def join(self, member=None, group="g", topics=("t",)) -> ShareHeartbeatAnswer:
        member = member or f"member-{next(self.ids)}"
        answer = self.heartbeat(member, 0, group=group, topics=topics)
        assert answer.error_code == 0, answer
        return answer

    def poll(self, answer: ShareHeartbeatAnswer, group="g") -> ShareHeartbeatAnswer:
        """A heartbeat as the Java client sends it: no subscription unless it changed."""
        out = self.heartbeat(answer.member_id, answer.member_epoch, group=group, topics=None)
        assert out.error_code == 0, out
        return out

    def group(self, group="g"):
        return self.gc.manager.share_groups[group]

    def member(self, member_id, group="g"):
        return self.group(group).members[member_id]

    def partitions(self, member_id, group="g") -> set[tuple[uuid.UUID, int]]:
        return {(t, p) for t, ps in self.member(member_id, group).assigned.items() for p in ps}

    def records(self):
        out = []
        for batch in self.store.logs[0]:
            for _, key, value in batch.records:
                record = decode(key, value)
                if record is not None:
                    out.append(record)
        return out

    def reopened(self) -> Harness:
        """A coordinator loaded from this one's __consumer_offsets (a broker restart)."""
        other = Harness.__new__(Harness)
        other.clock, other.store, other.catalog = self.clock, self.store, self.catalog
        other.config = self.config
        other.group_configs = self.group_configs
        other.removed = []
        other._build()
        other.ids = itertools.count(100)
        other.gc.load()
        return other


@pytest.fixture
def h():
    return Harness()


def tid(h, name="t"):
    return h.catalog.id_of(name)


def settle(h, *answers):
    """Heartbeat every member until no answer changes (each gets its current assignment)."""
    answers = list(answers)
    for _ in range(5):
        changed = False
        for i, a in enumerate(answers):
            b = h.poll(a)
            if b.member_epoch != a.member_epoch or b.assignment is not None:
                changed = True
            answers[i] = b
        if not changed:
            break
    return answers


# --- join, the share-state handshake, heartbeat, leave -----------------------------------------
def test_first_heartbeat_asks_for_share_state_and_the_next_gets_the_partitions(h):
    a = h.heartbeat("A", 0, initialize=False)
    assert a.error_code == 0 and a.member_id == "A" and a.heartbeat_interval_ms == HEARTBEAT_MS
    # nothing is assignable before the share coordinator has state: an empty assignment
    assert a.assignment == () and a.member_epoch == 2
    assert a.initialize == {tid(h): frozenset({0, 1, 2})} and a.state_epoch == 2
    group = h.group()
    assert group.state == "Stable" and group.group_epoch == group.assignment_epoch == 2
    assert group.initializing[tid(h)].partitions == frozenset({0, 1, 2}) and not group.initialized
    # a heartbeat within the retry interval does not ask again
    again = h.heartbeat("A", 2, topics=None, initialize=False)
    assert again.initialize == {} and again.assignment is None
    # the broker reports the state initialized: the next heartbeat bumps the epoch and assigns
    run_now(h.gc, h.sc.partitions_initialized("g", a.initialize))
    assert h.sc.initialized_partitions("g") == {tid(h): frozenset({0, 1, 2})}
    assert not h.group().initializing
    b = h.heartbeat("A", 2, topics=None)
    assert b.member_epoch == 3 and b.assignment == ((tid(h), (0, 1, 2)),)
    # a plain heartbeat changes nothing and writes nothing
    written = len(h.records())
    c = h.poll(b)
    assert c.member_epoch == 3 and c.assignment is None and c.initialize == {}
    assert len(h.records()) == written


def test_initialization_is_asked_again_after_the_retry_interval():
    h = Harness(group_configs={"g": {"share.session.timeout.ms": 100_000}})
    a = h.heartbeat("A", 0, initialize=False)
    h.clock.advance(29_000)
    assert h.heartbeat("A", a.member_epoch, topics=None, initialize=False).initialize == {}
    h.clock.advance(1_000)
    assert h.heartbeat("A", a.member_epoch, topics=None, initialize=False).initialize == {
        tid(h): frozenset({0, 1, 2})
    }


def test_a_failed_initialization_is_asked_again_at_once(h):
    a = h.heartbeat("A", 0, initialize=False)
    run_now(h.gc, h.sc.partitions_uninitialized("g", {tid(h): frozenset({0, 2})}))
    assert h.group().initializing[tid(h)].partitions == frozenset({1})
    again = h.heartbeat("A", a.member_epoch, topics=None, initialize=False)
    assert again.initialize == {tid(h): frozenset({0, 2})}


def test_the_records_of_a_join_in_kafkas_order(h):
    h.heartbeat("A", 0, initialize=False)
    kinds = [type(r) for r in h.records()]
    assert kinds == [SgMember, SgEpoch, SgTarget, SgTargetMeta, SgCurrent, SgStatePartitions]


def test_members_share_partitions_when_there_are_more_members_than_partitions():
    h = Harness(topics={"t": 2})
    answers = [h.join(m) for m in ("A", "B", "C")]
    answers = settle(h, *answers)
    held = {m: h.partitions(m) for m in ("A", "B", "C")}
    # desiredSharing = ceil(3 / 2) = 2: each partition held by two members; counts 2, 1, 1
    for p in (0, 1):
        assert sum((tid(h), p) in parts for parts in held.values()) == 2
    assert sorted(len(parts) for parts in held.values()) == [1, 1, 2]
    # every member is at the group's epoch (no revocation step in a share group)
    group = h.group()
    assert {h.member(m).member_epoch for m in ("A", "B", "C")} == {group.assignment_epoch}


def test_a_new_member_takes_partitions_at_once_and_the_others_keep_theirs_sticky(h):
    a = h.join("A")
    (a,) = settle(h, a)
    assert h.partitions("A") == {(tid(h), p) for p in range(3)}
    b = h.join("B")
    a, b = settle(h, a, b)
    pa, pb = h.partitions("A"), h.partitions("B")
    assert pa | pb == {(tid(h), p) for p in range(3)} and not pa & pb
    assert sorted([len(pa), len(pb)]) == [1, 2]
    # B leaves: A gets everything back, B's records are gone and the broker is told
    left = h.heartbeat("B", -1, topics=None)
    assert left.error_code == 0 and left.member_id == "B" and left.member_epoch == -1
    assert h.removed == [("g", "B")]
    assert "B" not in h.group().members
    (a,) = settle(h, a)
    assert h.partitions("A") == {(tid(h), p) for p in range(3)}


def test_leave_of_the_last_member_empties_the_group(h):
    a = h.join("A")
    assert h.heartbeat("A", -1, topics=None).member_epoch == -1
    group = h.group()
    assert group.state == "Empty" and not group.members and not group.target
    assert group.assignment_epoch == group.group_epoch  # the empty group's target metadata
    del a


def test_subscription_change_bumps_the_epoch_and_filters_the_assignment():
    h = Harness(topics={"t": 2, "u": 2})
    a = h.join("A", topics=("t", "u"))
    (a,) = settle(h, a)
    assert {t for t, _ in h.partitions("A")} == {tid(h, "t"), tid(h, "u")}
    epoch = h.group().group_epoch
    b = h.heartbeat("A", a.member_epoch, topics=("u",))
    assert b.error_code == 0 and h.group().group_epoch > epoch
    assert b.assignment is not None  # a full request gets its assignment
    assert {t for t, _ in h.partitions("A")} == {tid(h, "u")}


# --- errors with Kafka's messages ---------------------------------------------------------------
def test_errors_carry_kafkas_messages(h):
    unknown = h.heartbeat("A", 1, group="nope")
    assert unknown.error_code == E.group_id_not_found
    assert unknown.error_message == "Share group nope not found."
    h.poll(h.join("A"))  # epoch 3, previous 2
    stranger = h.heartbeat("Z", 5)
    assert (stranger.error_code, stranger.error_message) == (
        E.unknown_member_id,
        "Member Z is not a member of group g.",
    )
    epoch = h.member("A").member_epoch
    greater = h.heartbeat("A", epoch + 1, topics=None)
    assert greater.error_code == E.fenced_member_epoch
    assert greater.error_message == (
        f"The share group member has a greater member epoch ({epoch + 1}) than the one known by the "
        f"group coordinator ({epoch}). The member must abandon all its partitions and rejoin."
    )
    previous = h.member("A").previous_member_epoch
    smaller = h.heartbeat("A", previous - 1, topics=None)
    assert smaller.error_code == E.fenced_member_epoch
    assert smaller.error_message == (
        f"The share group member has a smaller member epoch ({previous - 1}) than the one known by the "
        f"group coordinator ({epoch}), and it does not match the previous member epoch ({previous}). "
        "The member must abandon all its partitions and rejoin."
    )
    # the previous epoch is accepted (a lost answer)
    assert h.heartbeat("A", previous, topics=None).error_code == 0
    leave_unknown = h.heartbeat("Q", -1, topics=None)
    assert leave_unknown.error_code == E.unknown_member_id
    leave_none = h.heartbeat("Q", -1, group="nope", topics=None)
    assert leave_none.error_code == E.group_id_not_found
    assert leave_none.error_message == "Group nope not found."


def test_the_group_is_full_at_group_share_max_size():
    h = Harness(config={"group.share.max.size": 2})
    h.join("A")
    h.join("B")
    full = h.heartbeat("C", 0)
    assert (full.error_code, full.error_message) == (
        E.group_max_size_reached,
        "The share group has reached its maximum capacity of 2 members.",
    )
    assert h.heartbeat("A", 0).error_code == 0  # a member already in may rejoin


def test_share_and_consumer_groups_share_the_id_namespace(h):
    h.join("A", group="s")
    consumer = ConsumerHeartbeat(
        api_version=1,
        group_id="s",
        member_id="c1",
        member_epoch=0,
        rebalance_timeout_ms=1000,
        subscribed_topic_names=("t",),
        owned=(),
    )
    answer = run_now(h.gc, h.gc.consumer.heartbeat(consumer))
    assert answer.error_code == E.group_id_not_found
    assert answer.error_message == "Group s is not a consumer group."
    assert "s" not in h.gc.manager.consumer_groups
    ok = run_now(h.gc, h.gc.consumer.heartbeat(consumer._replace(group_id="c")))
    assert ok.error_code == 0
    share = h.heartbeat("A", 0, group="c")
    assert (share.error_code, share.error_message) == (E.group_id_not_found, "Group c is not a share group.")
    assert h.gc.manager.group_type("s") == "share" and h.gc.manager.group_type("c") == "consumer"


# --- assignment interval and group configs ------------------------------------------------------
def test_assignment_interval_delays_the_next_target():
    h = Harness(config={"group.share.assignment.interval.ms": 500})
    a = h.join("A")
    (a,) = settle(h, a)
    b = h.join("B")
    group = h.group()
    assert group.group_epoch > group.assignment_epoch  # the interval has not passed
    assert b.assignment == () and b.member_epoch == group.assignment_epoch
    h.clock.advance(500)
    a, b = settle(h, a, b)
    assert h.group().assignment_epoch == h.group().group_epoch
    assert h.partitions("A") and h.partitions("B")


def test_group_configs_override_the_broker_settings():
    configs = {"share.heartbeat.interval.ms": 7000, "share.session.timeout.ms": 50_000}
    h = Harness(group_configs={"g": configs})
    a = h.join("A")
    assert a.heartbeat_interval_ms == 7000
    h.clock.advance(SESSION_MS + 1)
    assert "A" in h.group().members  # the group's session timeout applies
    h.clock.advance(50_000)
    assert "A" not in h.group().members


# --- session timeout -------------------------------------------------------------------------
def test_session_timeout_removes_the_member_and_tells_the_broker(h):
    a = h.join("A")
    b = h.join("B")
    a, b = settle(h, a, b)
    h.clock.advance(SESSION_MS // 2)
    h.poll(a)
    h.clock.advance(SESSION_MS // 2 + 1)
    assert "B" not in h.group().members and "A" in h.group().members
    assert h.removed == [("g", "B")]
    assert not h.sc.has_timer("g", "B") and h.sc.has_timer("g", "A")


# --- admin ------------------------------------------------------------------------------------
def test_describe_answers_kafkas_fields_and_errors(h):
    h.join("A", group="s")
    (entry, missing) = h.sc.describe(["s", "nope"])
    assert entry["group_state"] == "Stable" and entry["assignor_name"] == "simple"
    assert entry["group_epoch"] == h.group("s").group_epoch
    assert entry["assignment_epoch"] == h.group("s").assignment_epoch
    (member,) = entry["members"]
    assert member["member_id"] == "A" and member["client_id"] == "client"
    assert member["client_host"] == "/127.0.0.1" and member["subscribed_topic_names"] == ["t"]
    assert member["member_epoch"] == h.member("A", "s").member_epoch
    assert member["assignment"] == {"topic_partitions": []}  # initialized, not yet assigned
    assert missing["error_code"] == E.group_id_not_found
    assert missing["error_message"] == "Group nope not found."
    consumer = ConsumerHeartbeat(1, "c", "c1", 0, None, None, 1000, ("t",), None, None, ())
    assert run_now(h.gc, h.gc.consumer.heartbeat(consumer)).error_code == 0
    (other,) = h.sc.describe(["c"])
    assert other["error_code"] == E.group_id_not_found
    assert other["error_message"] == "Group c is not a share group."
    a = h.heartbeat("A", h.member("A", "s").member_epoch, group="s", topics=None)
    (entry,) = h.sc.describe(["s"])
    assert entry["members"][0]["assignment"]["topic_partitions"] == [
        {"topic_id": tid(h), "topic_name": "t", "partitions": [0, 1, 2]}
    ]
    del a


def test_delete_group_needs_an_empty_group_and_tombstones_everything(h):
    a = h.join("A")
    assert run_now(h.gc, h.sc.delete_group("g")) == E.non_empty_group
    h.heartbeat("A", a.member_epoch, topics=None)
    h.heartbeat("A", -1, topics=None)
    assert run_now(h.gc, h.sc.delete_group("g")) == 0
    assert "g" not in h.gc.manager.share_groups and h.gc.manager.group_type("g") is None
    tail = h.records()[-3:]
    assert [type(r) for r in tail] == [SgTargetMeta, SgStatePartitions, SgEpoch]
    assert all(r.value is None for r in tail)
    assert run_now(h.gc, h.sc.delete_group("g")) == E.group_id_not_found
    # a reload agrees: the group is gone
    assert "g" not in h.reopened().gc.manager.share_groups


def test_alter_and_delete_offsets_need_an_empty_group(h):
    a = h.join("A")
    assert run_now(h.gc, h.sc.alter_offsets("g", {tid(h): frozenset({0})})) == (
        E.non_empty_group,
        "The group is not empty.",
    )
    assert run_now(h.gc, h.sc.delete_offsets("g", [tid(h)]))[0] == E.non_empty_group
    h.heartbeat("A", a.member_epoch, topics=None)
    h.heartbeat("A", -1, topics=None)
    assert run_now(h.gc, h.sc.delete_offsets("g", [tid(h)])) == (0, None)
    assert h.sc.initialized_partitions("g") == {}
    assert run_now(h.gc, h.sc.alter_offsets("g", {tid(h): frozenset({0, 2})})) == (0, None)
    assert h.sc.initialized_partitions("g") == {tid(h): frozenset({0, 2})}
    # alter creates a share group that does not exist yet (Kafka's alterShareGroupOffsets)
    assert run_now(h.gc, h.sc.alter_offsets("new", {tid(h): frozenset({1})})) == (0, None)
    assert h.gc.manager.group_type("new") == "share"
    assert run_now(h.gc, h.sc.delete_offsets("nope", [tid(h)]))[0] == E.group_id_not_found


# --- reload -----------------------------------------------------------------------------------
def _snapshot(h):
    out = {}
    for gid, g in h.gc.manager.share_groups.items():
        out[gid] = (
            g.group_epoch,
            g.metadata_hash,
            g.assignment_epoch,
            g.assignment_timestamp_ms,
            dict(g.members),
            {m: dict(t) for m, t in g.target.items()},
            dict(g.subscribed_names),
            {t: v.partitions for t, v in g.initialized.items()},
            {t: v.partitions for t, v in g.initializing.items()},
            dict(g.deleting),
        )
    return out


def test_a_reload_rebuilds_the_same_groups_and_restarts_the_sessions():
    h = Harness(topics={"t": 2, "u": 1})
    a = h.join("A")
    b = h.join("B", topics=("t", "u"))
    c = h.join("C")
    a, b, c = settle(h, a, b, c)
    h.heartbeat("C", c.member_epoch, topics=None)
    h.heartbeat("C", -1, topics=None)
    h.heartbeat("D", 0, group="other", initialize=False)
    before = _snapshot(h)
    other = h.reopened()
    assert _snapshot(other) == before
    assert other.sc.has_timer("g", "A") and other.sc.has_timer("g", "B")
    # and the reloaded coordinator carries on: a heartbeat of the old epoch is accepted
    assert other.heartbeat("A", a.member_epoch, topics=None).error_code == 0


def test_classic_join_and_offset_apis_on_a_share_group_id_are_refused(h):
    h.join("A", group="s")
    joined = join(h.gc, group="s", session=10_000)
    assert joined.value.error == E.inconsistent_group_protocol and joined.value.member_id == ""
    assert commit(h.gc, "s", "", None, -1, [("t", 0, 5, -1, None)]) == {("t", 0): E.group_id_not_found}
    assert h.gc.fetch_offsets("s", [("t", 0)]) == (E.none, [("t", 0, -1, -1, "", E.none)])
    assert h.gc.fetch_offsets("s", None) == (E.none, [])
    assert run_now(h.gc, h.gc.delete_offsets("s", [("t", 0)])) == (E.group_id_not_found, {})
    assert h.gc.manager.group_type("s") == "share" and "s" not in h.gc.manager.groups


# --- topic changes ----------------------------------------------------------------------------
def test_new_partitions_are_initialized_from_the_start_and_then_assigned(h):
    a = h.join("A")
    (a,) = settle(h, a)
    assert h.partitions("A") == {(tid(h), p) for p in range(3)}
    h.catalog.grow("t", 5)
    h.sc.on_topics_changed(created=(), changed=("t",))
    b = h.poll(a)
    # the new metadata hash bumps the epoch; the new partitions need state first, from offset 0
    assert b.initialize == {tid(h): frozenset({3, 4})} and b.from_start == frozenset({tid(h)})
    (b,) = settle(h, b)
    assert h.partitions("A") == {(tid(h), p) for p in range(5)}


def test_a_topic_created_after_the_subscription_is_picked_up(h):
    a = h.join("A", topics=("t", "later"))
    (a,) = settle(h, a)
    later = h.catalog.create("later", 1)
    h.sc.on_topics_changed(created=("later",), changed=())
    b = h.poll(a)
    assert b.initialize == {later: frozenset({0})} and b.from_start == frozenset()
    settle(h, b)
    assert (later, 0) in h.partitions("A")


def test_a_deleted_topic_leaves_the_share_state_metadata(h):
    a = h.join("A")
    settle(h, a)
    topic_id = tid(h)
    h.catalog.delete("t")
    run_now(h.gc, h.sc.topics_deleted([topic_id]))
    assert h.sc.initialized_partitions("g") == {}
    assert h.reopened().sc.initialized_partitions("g") == {}


def test_the_records_survive_a_restart_through_the_storage_engine(tmp_path):
    logs = _logs(tmp_path)
    logs.create_topic("t", 3, {})
    clock = FakeScheduler()

    def coordinator(logs):
        gc = group_coordinator(
            dict(CONFIG), store=LogOffsetsStore(logs, 1, clock=clock), topics=logs, scheduler=clock
        )
        gc.share.on_member_removed = lambda g, m: None
        return gc

    gc = coordinator(logs)
    request = ShareHeartbeat("g", "A", 0, None, ("t",), "client", "/127.0.0.1")
    first = run_now(gc, gc.share.heartbeat(request))
    run_now(gc, gc.share.partitions_initialized("g", first.initialize))
    second = run_now(gc, gc.share.heartbeat(request._replace(member_epoch=first.member_epoch)))
    assert second.assignment is not None and {p for _, ps in second.assignment for p in ps} == {0, 1, 2}
    before = gc.manager.share_groups["g"]
    logs.close()

    logs = _logs(tmp_path)
    gc2 = coordinator(logs)
    gc2.load()
    after = gc2.manager.share_groups["g"]
    assert after.members == before.members and after.target == before.target
    assert (after.group_epoch, after.assignment_epoch) == (before.group_epoch, before.assignment_epoch)
    assert gc2.share.initialized_partitions("g") == {logs.topics["t"].topic_id: frozenset({0, 1, 2})}
    logs.close()
