"""The classic group state machine with a fake clock: join/sync/heartbeat/leave, timeouts,
static membership, MEMBER_ID_REQUIRED, offsets, transactional offsets and replay."""

from __future__ import annotations

import heapq
import itertools
import struct

import pytest
from minibroker.common.clock import SYSTEM_CLOCK
from minibroker.coordinator.group_join import INITIAL_JOIN_MIN_DELAY_MS
from minibroker.coordinator.group_metadata import GroupState, parse_subscription_topics
from minibroker.coordinator.group_metadata_manager import RETRY_INTERVAL_MS
from minibroker.coordinator.group_records import (
    GroupValue,
    MemberValue,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
)
from minibroker.coordinator.group_requests import JoinRequest, SyncRequest
from minibroker.coordinator.group_store import LogOffsetsStore
from minibroker.coordinator.partitioning import java_string_hash, partition_for
from minibroker.protocol.errors import ErrorCode as E
from minibroker.storage.errors import KafkaStorageError

from tests.unit.coordinator_fakes import MemoryOffsetsStore, commit, group_coordinator, run_now, stage


class FakeScheduler:
    """call_later on a fake millisecond clock; advance() runs due timers in order."""

    def __init__(self, start_ms: int = 1_000_000):
        self.now = start_ms
        self._heap: list = []
        self._seq = itertools.count()

    # common.clock.Clock: the same fake time
    def wall_ms(self) -> int:
        return self.now

    def monotonic(self) -> float:
        return self.now / 1000

    class Handle:
        def __init__(self):
            self.cancelled = False

        def cancel(self):
            self.cancelled = True

    def bind(self, shard) -> None:
        """The coordinator whose operations the timers fire (as the runtime's ShardTimer)."""
        self.shard = shard

    def call_later(self, delay_ms, operation):
        handle = self.Handle()
        heapq.heappush(self._heap, (self.now + max(delay_ms, 0), next(self._seq), handle, operation))
        return handle

    def advance(self, ms: int = 0) -> None:
        target = self.now + ms
        while self._heap and self._heap[0][0] <= target:
            when, _, handle, fn = heapq.heappop(self._heap)
            self.now = max(self.now, when)
            if not handle.cancelled:
                run_now(self.shard, fn())
        self.now = target


#: The initial join phase of members that joined together with a 0 ms initial delay: the
#: least delay (coordinator/group_join.py), extended once because members were added in it.
INITIAL_JOIN_MS = 2 * INITIAL_JOIN_MIN_DELAY_MS

CONFIG = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 100,
    "group.max.session.timeout.ms": 600_000,
    "offsets.topic.num.partitions": 1,
}


def subscription(*topics: str) -> bytes:
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


PROTOS = [("range", subscription("t")), ("roundrobin", subscription("t"))]


class Box:
    """A JoinGroup's or SyncGroup's answer as the test sees it: parked, or done with a value."""

    def __init__(self, answer):
        self.answer = answer

    @property
    def done(self):
        return self.answer.done

    @property
    def value(self):
        return self.answer.result()


@pytest.fixture
def clock():
    return FakeScheduler()


@pytest.fixture
def store():
    return MemoryOffsetsStore(1)


@pytest.fixture
def gc(clock, store):
    return group_coordinator(dict(CONFIG), scheduler=clock, store=store)


def join(
    gc,
    group="g",
    member_id="",
    instance=None,
    protocols=PROTOS,
    session=1000,
    rebalance=2000,
    require_known=True,
    ptype="consumer",
    skip=False,
    client="c",
):
    request = JoinRequest(
        group_id=group,
        member_id=member_id,
        group_instance_id=instance,
        client_id=client,
        client_host="/127.0.0.1",
        session_timeout_ms=session,
        rebalance_timeout_ms=rebalance,
        protocol_type=ptype,
        protocols=tuple(protocols),
        require_known_member_id=require_known,
        supports_skip_assignment=skip,
    )
    return Box(run_now(gc, gc.join_group(request)))


def sync(gc, member_id, generation, assignments=None, group="g", instance=None, ptype=None, pname=None):
    request = SyncRequest(group, generation, member_id, instance, ptype, pname, assignments or {})
    return Box(run_now(gc, gc.sync_group(request)))


def join_new(gc, clock, **kw):
    """MEMBER_ID_REQUIRED round trip; returns the pending second join's box."""
    first = join(gc, **kw)
    assert first.value.error == E.member_id_required
    member_id = first.value.member_id
    assert member_id.startswith("c-")
    return join(gc, member_id=member_id, **kw)


def form_group(gc, clock, n, **kw):
    """n members join (initial delay 0) and the leader syncs; returns (generation, [ids])."""
    boxes = [join_new(gc, clock, **kw) for _ in range(n)]
    clock.advance(INITIAL_JOIN_MS)
    assert all(b.done for b in boxes)
    results = [b.value for b in boxes]
    generation = results[0].generation_id
    ids = [r.member_id for r in results]
    leader = results[0].leader_id
    assignments = {mid: mid.encode() for mid in ids}
    sync_boxes = {}
    for mid in ids:
        sync_boxes[mid] = sync(
            gc, mid, generation, assignments if mid == leader else None, group=kw.get("group", "g")
        )
    for mid, box in sync_boxes.items():
        assert box.value.error == E.none
        assert box.value.assignment == mid.encode()
    return generation, ids


# --- joining ------------------------------------------------------------------------------------
def test_member_id_required_then_single_member_becomes_leader(gc, clock):
    first = join(gc)
    assert first.value.error == E.member_id_required
    assert first.value.generation_id == -1
    mid = first.value.member_id
    second = join(gc, member_id=mid)
    assert not second.done  # waits for the initial delay (0 ms: at least INITIAL_JOIN_MIN_DELAY_MS)
    clock.advance(INITIAL_JOIN_MS)
    r = second.value
    assert r.error == E.none and r.generation_id == 1 and r.leader_id == mid and r.member_id == mid
    assert r.protocol_name == "range" and r.protocol_type == "consumer"
    assert [m[0] for m in r.members] == [mid]
    assert gc.groups["g"].state is GroupState.COMPLETING_REBALANCE
    s = sync(gc, mid, 1, {mid: b"A"})
    assert s.value.error == E.none and s.value.assignment == b"A"
    assert s.value.protocol_name == "range"
    assert gc.groups["g"].state is GroupState.STABLE


def test_old_versions_join_without_member_id_required(gc, clock):
    box = join(gc, require_known=False)
    clock.advance(INITIAL_JOIN_MS)
    assert box.value.error == E.none and box.value.generation_id == 1


def test_second_member_triggers_rebalance_and_only_leader_gets_members(gc, clock):
    gen, (a,) = form_group(gc, clock, 1)
    b_join = join_new(gc, clock)
    assert gc.groups["g"].state is GroupState.PREPARING_REBALANCE
    assert not b_join.done
    assert run_now(gc, gc.heartbeat("g", a, None, gen)) == E.rebalance_in_progress
    a_join = join(gc, member_id=a)
    assert a_join.done and b_join.done  # everyone rejoined: completes at once
    ra, rb = a_join.value, b_join.value
    assert ra.generation_id == rb.generation_id == gen + 1
    assert ra.leader_id == rb.leader_id == a
    assert len(ra.members) == 2 and rb.members == []
    b = rb.member_id
    sb = sync(gc, b, gen + 1)
    assert not sb.done  # waits for the leader
    sa = sync(gc, a, gen + 1, {a: b"1", b: b"2"})
    assert sa.value.assignment == b"1" and sb.value.assignment == b"2"
    assert run_now(gc, gc.heartbeat("g", b, None, gen + 1)) == E.none


def test_initial_rebalance_delay_collects_members(clock, store):
    gc = group_coordinator(
        dict(CONFIG, **{"group.initial.rebalance.delay.ms": 300}), scheduler=clock, store=store
    )
    a = join_new(gc, clock)
    clock.advance(200)
    b = join_new(gc, clock)
    clock.advance(200)  # 400 ms: first delay expired but a member was added -> extended
    assert not a.done and not b.done
    clock.advance(300)
    assert a.done and b.done
    assert a.value.generation_id == 1 and len(a.value.members) + len(b.value.members) == 2


def test_initial_delay_is_bounded_by_rebalance_timeout(clock, store):
    gc = group_coordinator(
        dict(CONFIG, **{"group.initial.rebalance.delay.ms": 300}), scheduler=clock, store=store
    )
    boxes = [join_new(gc, clock, rebalance=1000)]
    for _ in range(10):  # keep adding members every 250 ms
        clock.advance(250)
        if boxes[0].done:
            break
        boxes.append(join_new(gc, clock, rebalance=1000))
    assert boxes[0].done
    assert clock.now - 1_000_000 <= 1300


def test_inconsistent_protocols_rejected(gc, clock):
    form_group(gc, clock, 1)
    assert join(gc, ptype="connect").value.error == E.inconsistent_group_protocol
    assert join(gc, protocols=[("sticky", b"x")]).value.error == E.inconsistent_group_protocol
    assert join(gc, group="h", ptype="").value.error == E.inconsistent_group_protocol
    assert join(gc, group="h", protocols=[]).value.error == E.inconsistent_group_protocol


def test_protocol_selection_uses_common_protocols(gc, clock):
    a = join_new(gc, clock, protocols=[("roundrobin", b"a"), ("range", b"a")])
    b = join_new(gc, clock, protocols=[("range", b"b")])
    clock.advance(INITIAL_JOIN_MS)
    assert a.value.protocol_name == b.value.protocol_name == "range"


def test_invalid_session_timeout_and_group_id(gc):
    assert join(gc, session=50).value.error == E.invalid_session_timeout
    assert join(gc, session=10_000_000).value.error == E.invalid_session_timeout
    assert join(gc, group="").value.error == E.invalid_group_id


def test_unknown_member_rejoin(gc, clock):
    assert join(gc, member_id="nobody").value.error == E.unknown_member_id
    form_group(gc, clock, 1)
    assert join(gc, member_id="nobody").value.error == E.unknown_member_id


def test_follower_rejoin_in_stable_returns_current_generation(gc, clock):
    gen, (a, b) = form_group(gc, clock, 2)
    r = join(gc, member_id=b).value
    assert r.error == E.none and r.generation_id == gen and r.members == []
    assert gc.groups["g"].state is GroupState.STABLE


def test_leader_rejoin_in_stable_forces_rebalance(gc, clock):
    gen, (a, b) = form_group(gc, clock, 2)
    ja = join(gc, member_id=a)
    assert gc.groups["g"].state is GroupState.PREPARING_REBALANCE and not ja.done
    jb = join(gc, member_id=b)
    assert ja.value.generation_id == jb.value.generation_id == gen + 1


def test_sync_errors(gc, clock):
    gen, (a,) = form_group(gc, clock, 1)
    assert sync(gc, a, gen + 5).value.error == E.illegal_generation
    assert sync(gc, "x", gen).value.error == E.unknown_member_id
    assert sync(gc, a, gen, group="nope").value.error == E.unknown_member_id
    assert sync(gc, a, gen, ptype="connect").value.error == E.inconsistent_group_protocol
    assert sync(gc, a, gen, pname="roundrobin").value.error == E.inconsistent_group_protocol
    ok = sync(gc, a, gen, ptype="consumer", pname="range").value
    assert ok.error == E.none and ok.protocol_type == "consumer" and ok.protocol_name == "range"


def test_heartbeat_errors(gc, clock):
    assert run_now(gc, gc.heartbeat("g", "m", None, 1)) == E.unknown_member_id
    gen, (a,) = form_group(gc, clock, 1)
    assert run_now(gc, gc.heartbeat("g", a, None, gen)) == E.none
    assert run_now(gc, gc.heartbeat("g", a, None, gen - 1)) == E.illegal_generation
    assert run_now(gc, gc.heartbeat("g", "zz", None, gen)) == E.unknown_member_id
    assert run_now(gc, gc.heartbeat("", a, None, gen)) == E.invalid_group_id


def test_rejoin_during_completing_rebalance_with_same_metadata(gc, clock):
    a_join = join_new(gc, clock)
    clock.advance(INITIAL_JOIN_MS)
    a = a_join.value.member_id
    again = join(gc, member_id=a).value
    assert again.error == E.none and again.generation_id == 1 and again.leader_id == a
    assert len(again.members) == 1


# --- leaving and expiry -------------------------------------------------------------------------
def test_leave_triggers_rebalance_for_the_rest(gc, clock):
    gen, (a, b, c) = form_group(gc, clock, 3)
    top, per = run_now(gc, gc.leave_group("g", [(b, None)]))
    assert top == E.none and per == [(b, None, E.none)]
    assert gc.groups["g"].state is GroupState.PREPARING_REBALANCE
    ja, jc = join(gc, member_id=a), join(gc, member_id=c)
    assert ja.value.generation_id == jc.value.generation_id == gen + 1
    assert {m[0] for m in ja.value.members} == {a, c}
    assert run_now(gc, gc.leave_group("g", [("ghost", None)]))[1] == [("ghost", None, E.unknown_member_id)]
    assert run_now(gc, gc.leave_group("nope", [("x", None)]))[1] == [("x", None, E.unknown_member_id)]


def test_last_member_leaving_empties_group(gc, clock, store):
    gen, (a,) = form_group(gc, clock, 1)
    run_now(gc, gc.leave_group("g", [(a, None)]))
    group = gc.groups["g"]
    assert group.state is GroupState.EMPTY and group.generation_id == gen + 1
    assert not group.members


def test_session_timeout_removes_silent_member(gc, clock):
    gen, (a, b) = form_group(gc, clock, 2, session=1000)
    for _ in range(5):  # a keeps heartbeating, b is silent
        clock.advance(400)
        run_now(gc, gc.heartbeat("g", a, None, gen))
    group = gc.groups["g"]
    assert b not in group.members and a in group.members
    assert group.state is GroupState.PREPARING_REBALANCE
    assert run_now(gc, gc.heartbeat("g", a, None, gen)) == E.rebalance_in_progress
    ja = join(gc, member_id=a)
    assert ja.value.generation_id == gen + 1 and [m[0] for m in ja.value.members] == [a]


def test_rebalance_timeout_removes_members_that_do_not_rejoin(gc, clock):
    gen, (a, b) = form_group(gc, clock, 2, session=10_000, rebalance=2000)
    ja = join(gc, member_id=a)  # leader rejoins, b never does
    assert not ja.done
    clock.advance(1999)
    assert not ja.done
    clock.advance(1)
    assert ja.value.error == E.none and [m[0] for m in ja.value.members] == [a]
    assert b not in gc.groups["g"].members


def test_pending_sync_timeout_removes_members_that_never_sync(gc, clock):
    ja, jb = (
        join_new(gc, clock, rebalance=1000, session=10_000),
        join_new(gc, clock, rebalance=1000, session=10_000),
    )
    clock.advance(INITIAL_JOIN_MS)
    a, b = ja.value.member_id, jb.value.member_id
    leader = ja.value.leader_id
    follower = b if leader == a else a
    s = sync(gc, leader, 1, {a: b"x", b: b"y"})
    assert s.value.error == E.none
    clock.advance(1000)
    group = gc.groups["g"]
    assert follower not in group.members
    assert group.state is GroupState.PREPARING_REBALANCE


def test_leader_never_syncs_followers_get_rebalance_in_progress(gc, clock):
    ja, jb = (
        join_new(gc, clock, rebalance=1000, session=10_000),
        join_new(gc, clock, rebalance=1000, session=10_000),
    )
    clock.advance(INITIAL_JOIN_MS)
    leader = ja.value.leader_id
    follower = jb.value.member_id if leader == ja.value.member_id else ja.value.member_id
    sf = sync(gc, follower, 1)
    assert not sf.done
    clock.advance(1000)
    assert sf.value.error == E.rebalance_in_progress
    assert leader not in gc.groups["g"].members


def test_pending_member_expires(gc, clock):
    first = join(gc, session=500)
    mid = first.value.member_id
    assert mid in gc.groups["g"].pending_members
    clock.advance(500)
    assert mid not in gc.groups["g"].pending_members
    assert join(gc, member_id=mid).value.error == E.unknown_member_id


def test_pending_member_delays_rebalance_completion(gc, clock):
    gen, (a,) = form_group(gc, clock, 1, session=1000)
    pending = join(gc, session=1000)  # MEMBER_ID_REQUIRED, not rejoined yet
    ja = join(gc, member_id=a)
    assert not ja.done  # the pending member may still join
    jb = join(gc, member_id=pending.value.member_id, session=1000)
    assert ja.done and jb.done and ja.value.generation_id == gen + 1


def test_new_member_join_abandoned_is_removed(gc, clock):
    gen, (a,) = form_group(gc, clock, 1, session=10_000, rebalance=600_000)
    jb = join_new(gc, clock, session=10_000, rebalance=600_000)
    # a never rejoins; after the rebalance timeout a is dropped and b completes
    clock.advance(600_000)
    assert jb.value.error == E.none and jb.value.leader_id == jb.value.member_id


# --- static membership --------------------------------------------------------------------------
def test_static_member_rejoin_in_stable_keeps_generation(gc, clock):
    ja = join(gc, instance="i-a")  # static members skip MEMBER_ID_REQUIRED
    jb = join(gc, instance="i-b")
    clock.advance(INITIAL_JOIN_MS)
    a, b = ja.value.member_id, jb.value.member_id
    assert a.startswith("i-a-") and b.startswith("i-b-")
    gen = ja.value.generation_id
    leader = ja.value.leader_id
    sync(gc, a, gen, {a: b"A", b: b"B"} if leader == a else None, instance="i-a")
    sync(gc, b, gen, {a: b"A", b: b"B"} if leader == b else None, instance="i-b")
    assert gc.groups["g"].state is GroupState.STABLE
    # b restarts: same instance id, unknown member id
    rb = join(gc, instance="i-b").value
    assert rb.error == E.none and rb.generation_id == gen and rb.member_id != b
    assert gc.groups["g"].state is GroupState.STABLE
    # the old incarnation is fenced
    assert run_now(gc, gc.heartbeat("g", b, "i-b", gen)) == E.fenced_instance_id
    assert sync(gc, b, gen, instance="i-b").value.error == E.fenced_instance_id
    assert join(gc, member_id=b, instance="i-b").value.error == E.fenced_instance_id
    # the new one gets its previous assignment
    s = sync(gc, rb.member_id, gen, instance="i-b").value
    assert s.error == E.none and s.assignment == b"B"


def test_static_leader_rejoin_skip_assignment(gc, clock):
    ja = join(gc, instance="i-a")
    clock.advance(INITIAL_JOIN_MS)
    a = ja.value.member_id
    sync(gc, a, 1, {a: b"A"}, instance="i-a")
    old_style = join(gc, instance="i-a").value  # < v9: told the old leader id
    assert old_style.leader_id == a and old_style.member_id != a and old_style.members == []
    new_style = join(gc, instance="i-a", skip=True).value  # v9: leader with skip_assignment
    assert new_style.skip_assignment and new_style.leader_id == new_style.member_id
    assert len(new_style.members) == 1


def test_static_member_survives_rebalance_without_rejoining(gc, clock):
    ja = join(gc, instance="i-a", session=10_000)
    jb = join(gc, instance="i-b", session=10_000)
    clock.advance(INITIAL_JOIN_MS)
    a, b = ja.value.member_id, jb.value.member_id
    gen = ja.value.generation_id
    leader = ja.value.leader_id
    sync(gc, leader, gen, {a: b"A", b: b"B"}, instance="i-a" if leader == a else "i-b")
    follower = b if leader == a else a
    jc = join(gc)  # dynamic new member triggers a rebalance
    jc = join(gc, member_id=jc.value.member_id)
    jl = join(gc, member_id=leader, instance="i-a" if leader == a else "i-b")
    clock.advance(2000)  # rebalance timeout: static follower did not rejoin but stays
    assert jl.value.error == E.none
    assert follower in gc.groups["g"].members
    assert len(jl.value.members) == 3


def test_static_member_removed_by_session_timeout_and_admin_leave(gc, clock):
    ja = join(gc, instance="i-a", session=1000)
    clock.advance(INITIAL_JOIN_MS)
    a = ja.value.member_id
    sync(gc, a, 1, {a: b"A"}, instance="i-a")
    top, per = run_now(gc, gc.leave_group("g", [("", "i-a")]))
    assert per == [("", "i-a", E.none)]
    assert not gc.groups["g"].members
    ja = join(gc, instance="i-x", session=1000)
    clock.advance(INITIAL_JOIN_MS)
    x = ja.value.member_id
    sync(gc, x, ja.value.generation_id, {x: b""}, instance="i-x")
    clock.advance(1000)
    assert not gc.groups["g"].members


# --- offsets ------------------------------------------------------------------------------------
def test_simple_commit_and_fetch(gc, store):
    res = commit(gc, "simple", "", None, -1, [("t", 0, 42, 3, "meta"), ("t", 1, 7, -1, None)])
    assert res == {("t", 0): E.none, ("t", 1): E.none}
    err, parts = gc.fetch_offsets("simple", [("t", 0), ("t", 1), ("t", 2)])
    assert err == E.none
    assert parts == [
        ("t", 0, 42, 3, "meta", E.none),
        ("t", 1, 7, -1, "", E.none),
        ("t", 2, -1, -1, "", E.none),
    ]
    assert gc.fetch_offsets("simple", None)[1] == parts[:2]
    assert gc.fetch_offsets("nobody", None) == (E.none, [])
    assert gc.fetch_offsets("nobody", [("t", 0)])[1] == [("t", 0, -1, -1, "", E.none)]


def test_commit_generation_and_member_checks(gc, clock):
    gen, (a,) = form_group(gc, clock, 1)
    assert commit(gc, "g", a, None, gen, [("t", 0, 1, -1, "")]) == {("t", 0): E.none}
    assert commit(gc, "g", a, None, gen + 1, [("t", 0, 1, -1, "")]) == {("t", 0): E.illegal_generation}
    assert commit(gc, "g", "x", None, gen, [("t", 0, 1, -1, "")]) == {("t", 0): E.unknown_member_id}
    # simple commit into a group with members is refused
    assert commit(gc, "g", "", None, -1, [("t", 0, 1, -1, "")]) == {("t", 0): E.unknown_member_id}
    # unknown group with a generation: stale
    assert commit(gc, "zz", "m", None, 3, [("t", 0, 1, -1, "")]) == {("t", 0): E.illegal_generation}
    # too much metadata
    assert commit(gc, "g", a, None, gen, [("t", 0, 1, -1, "x" * 5000)]) == {
        ("t", 0): E.offset_metadata_too_large
    }


def test_commit_during_completing_rebalance(gc, clock):
    ja = join_new(gc, clock)
    clock.advance(INITIAL_JOIN_MS)
    a = ja.value.member_id
    assert commit(gc, "g", a, None, 1, [("t", 0, 1, -1, "")]) == {("t", 0): E.rebalance_in_progress}


def test_commit_storage_failure(gc, store):
    store.fail_with = KafkaStorageError(E.message_too_large, "too big")
    assert commit(gc, "s", "", None, -1, [("t", 0, 1, -1, "")]) == {("t", 0): E.invalid_commit_offset_size}
    assert gc.fetch_offsets("s", [("t", 0)])[1][0][2] == -1


def test_delete_offsets_and_groups(gc, clock):
    commit(gc, "s", "", None, -1, [("t", 0, 5, -1, ""), ("u", 0, 6, -1, "")])
    err, res = run_now(gc, gc.delete_offsets("s", [("t", 0)]))
    assert err == E.none and res == {("t", 0): E.none}
    assert gc.fetch_offsets("s", None)[1] == [("u", 0, 6, -1, "", E.none)]
    assert run_now(gc, gc.delete_offsets("none", [("t", 0)])) == (E.group_id_not_found, {})
    gen, (a,) = form_group(gc, clock, 1)
    commit(gc, "g", a, None, gen, [("t", 0, 1, -1, ""), ("other", 0, 1, -1, "")])
    err, res = run_now(gc, gc.delete_offsets("g", [("t", 0), ("other", 0)]))
    assert res == {("t", 0): E.group_subscribed_to_topic, ("other", 0): E.none}
    assert run_now(gc, gc.delete_groups(["s", "g", "missing"])) == {
        "s": E.none,
        "g": E.non_empty_group,
        "missing": E.group_id_not_found,
    }
    assert "s" not in gc.groups


def test_list_and_describe(gc, clock):
    gen, (a, b) = form_group(gc, clock, 2)
    commit(gc, "simple", "", None, -1, [("t", 0, 1, -1, "")])
    groups = {g["group_id"]: g for g in gc.list_groups()}
    assert groups["g"]["group_state"] == "Stable" and groups["g"]["protocol_type"] == "consumer"
    assert groups["simple"]["group_state"] == "Empty" and groups["simple"]["protocol_type"] == ""
    assert [g["group_id"] for g in gc.list_groups(["stable"])] == ["g"]
    assert gc.list_groups(types=["consumer"]) == []
    err, d = gc.describe_group("g")
    assert d["group_state"] == "Stable" and d["protocol_data"] == "range"
    assert {m["member_id"]: m["member_assignment"] for m in d["members"]} == {a: a.encode(), b: b.encode()}
    assert all(m["member_metadata"] == subscription("t") for m in d["members"])
    assert gc.describe_group("nope")[1]["group_state"] == "Dead"


# --- transactional offsets ----------------------------------------------------------------------
def test_txn_offsets_pending_until_commit(gc, store):
    topics = [("t", 0, 10, 2, "m")]
    res = stage(gc, 1000, 0, "tx", -1, "", None, topics)
    assert res == {("t", 0): E.none}
    assert gc.fetch_offsets("tx", [("t", 0)])[1] == [("t", 0, -1, -1, "", E.none)]
    assert gc.fetch_offsets("tx", [("t", 0)], require_stable=True)[1][0][5] == E.unstable_offset_commit
    assert store.logs[0][-1].is_transactional and store.logs[0][-1].producer_id == 1000
    store.append_marker(0, 1000, True)
    gc.complete_txn(1000, True)
    assert gc.fetch_offsets("tx", [("t", 0)], require_stable=True)[1] == [("t", 0, 10, 2, "m", E.none)]


def test_txn_offsets_abort_drops_them(gc, store):
    commit(gc, "tx", "", None, -1, [("t", 0, 3, -1, "")])
    stage(gc, 7, 0, "tx", -1, "", None, [("t", 0, 99, -1, None)])
    store.append_marker(0, 7, False)
    gc.complete_txn(7, False)
    assert gc.fetch_offsets("tx", [("t", 0)], True)[1] == [("t", 0, 3, -1, "", E.none)]


def test_txn_offsets_member_validation(gc, clock):
    gen, (a,) = form_group(gc, clock, 1)
    topics = [("t", 0, 1, -1, "")]
    assert stage(gc, 1, 0, "g", gen + 1, a, None, topics) == {("t", 0): E.illegal_generation}
    assert stage(gc, 1, 0, "g", gen, "bogus", None, topics) == {("t", 0): E.unknown_member_id}
    assert stage(gc, 1, 0, "g", gen, a, None, topics) == {("t", 0): E.none}
    # pre-v3 style (no member info) is allowed even with members
    assert stage(gc, 2, 0, "g", -1, "", None, topics) == {("t", 0): E.none}
    ji = join(gc, group="s", instance="inst")
    clock.advance(INITIAL_JOIN_MS)
    assert stage(gc, 3, 0, "s", ji.value.generation_id, "other", "inst", topics) == {
        ("t", 0): E.fenced_instance_id
    }


def test_txn_commit_older_than_plain_commit_does_not_win(gc, store):
    stage(gc, 5, 0, "tx", -1, "", None, [("t", 0, 10, -1, "")])
    commit(gc, "tx", "", None, -1, [("t", 0, 20, -1, "")])
    store.append_marker(0, 5, True)
    gc.complete_txn(5, True)
    assert gc.fetch_offsets("tx", [("t", 0)])[1][0][2] == 20


# --- durability: replay -------------------------------------------------------------------------
def test_replay_rebuilds_offsets_groups_and_txn_state(gc, clock, store):
    gen, (a, b) = form_group(gc, clock, 2)
    commit(gc, "g", a, None, gen, [("t", 0, 11, 1, "x"), ("t", 1, 12, -1, "")])
    commit(gc, "s", "", None, -1, [("t", 0, 5, -1, "")])
    commit(gc, "gone", "", None, -1, [("t", 0, 5, -1, "")])
    run_now(gc, gc.delete_groups(["gone"]))
    run_now(gc, gc.delete_offsets("s", [("t", 0)]))
    commit(gc, "s", "", None, -1, [("t", 2, 8, -1, "")])
    tp = [("t", 3, 30, -1, "")]
    stage(gc, 100, 0, "s", -1, "", None, tp)  # committed
    stage(gc, 200, 0, "s", -1, "", None, [("t", 4, 40, -1, "")])  # aborted
    stage(gc, 300, 0, "s", -1, "", None, [("t", 5, 50, -1, "")])  # undecided
    store.append_marker(0, 100, True)
    gc.complete_txn(100, True)
    store.append_marker(0, 200, False)
    gc.complete_txn(200, False)

    clock2 = FakeScheduler(clock.now)
    gc2 = group_coordinator(dict(CONFIG), scheduler=clock2, store=store)
    gc2.load()
    assert "gone" not in gc2.groups
    assert gc2.fetch_offsets("g", None)[1] == [("t", 0, 11, 1, "x", E.none), ("t", 1, 12, -1, "", E.none)]
    assert gc2.fetch_offsets("s", None)[1] == [("t", 2, 8, -1, "", E.none), ("t", 3, 30, -1, "", E.none)]
    assert gc2.fetch_offsets("s", [("t", 5)], True)[1][0][5] == E.unstable_offset_commit
    assert gc2.has_pending_txn_offsets(300) and not gc2.has_pending_txn_offsets(200)
    gc2.complete_txn(300, True)
    assert gc2.fetch_offsets("s", [("t", 5)], True)[1][0][2] == 50
    # the group comes back Stable with its members, assignments and generation
    group = gc2.groups["g"]
    assert group.state is GroupState.STABLE and group.generation_id == gen
    assert set(group.members) == {a, b}
    assert run_now(gc2, gc2.heartbeat("g", a, None, gen)) == E.none
    assert sync(gc2, b, gen).value.assignment == b.encode()
    # members that never come back expire after their session timeout
    clock2.advance(1000)
    assert b not in group.members


def test_replay_of_empty_group_after_members_left(gc, clock, store):
    gen, (a,) = form_group(gc, clock, 1)
    commit(gc, "g", a, None, gen, [("t", 0, 9, -1, "")])
    run_now(gc, gc.leave_group("g", [(a, None)]))
    gc2 = group_coordinator(dict(CONFIG), scheduler=FakeScheduler(), store=store)
    gc2.load()
    g = gc2.groups["g"]
    assert g.state is GroupState.EMPTY and g.generation_id == gen + 1 and g.protocol_type == "consumer"
    assert gc2.fetch_offsets("g", None)[1] == [("t", 0, 9, -1, "", E.none)]


# --- formats ------------------------------------------------------------------------------------
def test_record_formats_round_trip():
    key = encode_offset_key("grp", "topic", 7)
    assert key[:2] == b"\x00\x01"
    k = decode_key(key)
    assert (k.group, k.topic, k.partition) == ("grp", "topic", 7)
    v = decode_offset_value(encode_offset_value(OffsetValue(5, 3, "meta", 1234)))
    assert (v.offset, v.leader_epoch, v.metadata, v.commit_timestamp) == (5, 3, "meta", 1234)
    gv = GroupValue(
        "consumer", 4, "range", "m1", 99, (MemberValue("m1", "inst", "cid", "/h", 300, 100, b"sub", b"asg"),)
    )
    back = decode_group_value(encode_group_value(gv))
    assert back == gv
    # Kafka's OffsetCommitValue v1 (with expire timestamp)
    v1 = struct.pack(">hq", 1, 77) + struct.pack(">h", 1) + b"m" + struct.pack(">qq", 10, 20)
    d = decode_offset_value(v1)
    assert (d.offset, d.metadata, d.commit_timestamp, d.expire_timestamp, d.leader_epoch) == (
        77,
        "m",
        10,
        20,
        -1,
    )


def test_partition_for_matches_kafka():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # UTF-16 surrogate pair
    gc = group_coordinator(dict(CONFIG), scheduler=FakeScheduler(), store=MemoryOffsetsStore(50))
    assert gc.partition_for("polygenelubricants") == 0  # Utils.abs(MIN_VALUE) = 0
    assert gc.partition_for("hello") == 99162322 % 50
    # a negative hash: Kafka takes the absolute value (not the low 31 bits)
    assert java_string_hash("my-group") < 0
    assert gc.partition_for("my-group") == abs(java_string_hash("my-group")) % 50
    assert gc.partition_for("my-group") == partition_for("my-group", 50) == 12


def test_parse_subscription_topics():
    assert parse_subscription_topics(subscription("a", "b")) == {"a", "b"}
    with pytest.raises(ValueError):
        parse_subscription_topics(b"\x00")


def test_commit_to_unknown_group_with_member_id_is_rejected(gc):
    assert commit(gc, "new", "someone", None, -1, [("t", 0, 1, -1, "")]) == {("t", 0): E.unknown_member_id}
    assert "new" not in gc.groups
    topics = [("t", 0, 1, -1, "")]
    # Kafka 4.4: a generation >= 0 for a group it does not know (GROUP_ID_NOT_FOUND from v6)
    assert stage(gc, 1, 0, "new", 3, "m", None, topics) == {("t", 0): E.illegal_generation}
    assert stage(gc, 1, 0, "new", 3, "", None, topics, api_version=6) == {("t", 0): E.group_id_not_found}
    assert stage(gc, 1, 0, "new", -1, "m", None, topics) == {("t", 0): E.unknown_member_id}


def test_txn_offset_sequences_continue_per_producer_and_epoch(gc, store, clock):
    def stage_one(pid, epoch, offset):
        return stage(gc, pid, epoch, "tx", -1, "", None, [("t", 0, offset, -1, "")])

    # (the store continues each producer's sequence, as storage/internal_topic.py does)
    assert stage_one(1, 0, 1) == {("t", 0): E.none}
    assert stage_one(1, 0, 2) == {("t", 0): E.none}
    store.append_marker(0, 1, True)
    gc.complete_txn(1, True)
    assert stage_one(1, 0, 3) == {("t", 0): E.none}  # same epoch: continues
    store.append_marker(0, 1, True, producer_epoch=1)  # marker with a bumped epoch (TV2)
    gc.complete_txn(1, True)
    assert stage_one(1, 1, 4) == {("t", 0): E.none}  # new epoch: from 0
    assert [b.base_sequence for b in store.logs[0] if not b.is_control] == [0, 1, 2, 0]
    # after a restart the sequence continues from the log
    gc2 = group_coordinator(dict(CONFIG), scheduler=FakeScheduler(), store=store)
    gc2.load()
    assert stage(gc2, 1, 1, "tx", -1, "", None, [("t", 0, 5, -1, "")]) == {("t", 0): E.none}
    assert store.logs[0][-1].base_sequence == 1


def test_remove_topic_offsets_on_topic_deletion(gc, store):
    commit(gc, "a", "", None, -1, [("gone", 0, 1, -1, ""), ("kept", 0, 2, -1, "")])
    commit(gc, "b", "", None, -1, [("gone", 1, 3, -1, "")])
    assert run_now(gc, gc.remove_topic_offsets("gone")) == 2
    assert gc.fetch_offsets("a", None)[1] == [("kept", 0, 2, -1, "", E.none)]
    assert gc.fetch_offsets("b", None)[1] == []
    gc2 = group_coordinator(dict(CONFIG), scheduler=FakeScheduler(), store=store)
    gc2.load()
    assert gc2.fetch_offsets("a", None)[1] == [("kept", 0, 2, -1, "", E.none)]
    assert "b" not in gc2.groups  # nothing left of an offsets-only group


# --- the real storage engine underneath ---------------------------------------------------------
def _logs(path):
    from minibroker.storage.log_manager import LogManager

    m = LogManager(str(path), {}, clock=SYSTEM_CLOCK)
    m.open()
    return m


def test_durability_through_storage_with_transactional_offsets(tmp_path):
    logs = _logs(tmp_path)
    logs.create_topic("t", 2, {})
    clock = FakeScheduler()
    gc = group_coordinator(
        dict(CONFIG), store=LogOffsetsStore(logs, 1, clock=clock), topics=logs, scheduler=clock
    )
    assert "__consumer_offsets" not in logs.topics  # created on first use
    gen, (a,) = form_group(gc, clock, 1)
    info = logs.topics["__consumer_offsets"]
    assert info.internal and info.configs.get("cleanup.policy") == "compact"
    assert commit(gc, "g", a, None, gen, [("t", 0, 5, 1, "m"), ("nope", 0, 1, -1, "")]) == {
        ("t", 0): E.none,
        ("nope", 0): E.unknown_topic_or_partition,
    }

    def stage_one(pid, epoch, offset):
        return stage(gc, pid, epoch, "g", gen, a, None, [("t", 1, offset, -1, "x")])

    plog = logs.get_log("__consumer_offsets", gc.partition_for("g"))
    assert stage_one(42, 0, 7) == {("t", 1): E.none}
    assert stage_one(42, 0, 8) == {("t", 1): E.none}  # second batch in the same txn: sequence 1
    assert plog.last_stable_offset < plog.log_end_offset  # the offsets are an open transaction
    plog.append_marker(42, 0, True, 0)
    gc.complete_txn(42, True)
    assert plog.last_stable_offset == plog.log_end_offset
    assert stage_one(42, 0, 9) == {("t", 1): E.none}  # next transaction, same epoch
    plog.append_marker(42, 0, False, 0)
    gc.complete_txn(42, False)
    assert stage_one(42, 1, 10) == {("t", 1): E.none}  # a new epoch starts again at sequence 0
    # (left undecided)
    logs.close()

    logs = _logs(tmp_path)
    gc2 = group_coordinator(
        dict(CONFIG),
        store=LogOffsetsStore(logs, 1, clock=SYSTEM_CLOCK),
        topics=logs,
        scheduler=FakeScheduler(),
    )
    gc2.load()
    assert gc2.fetch_offsets("g", [("t", 0), ("t", 1)], require_stable=True)[1] == [
        ("t", 0, 5, 1, "m", E.none),
        ("t", 1, -1, -1, "", E.unstable_offset_commit),
    ]
    assert gc2.fetch_offsets("g", [("t", 1)])[1] == [("t", 1, 8, -1, "x", E.none)]
    group = gc2.groups["g"]
    assert group.state is GroupState.STABLE and group.generation_id == gen and set(group.members) == {a}
    # the undecided transaction continues after the restart with the right sequence
    assert stage(gc2, 42, 1, "g", -1, "", None, [("t", 1, 11, -1, "")]) == {("t", 1): E.none}
    plog = logs.get_log("__consumer_offsets", gc2.partition_for("g"))
    plog.append_marker(42, 1, True, 0)
    gc2.complete_txn(42, True)
    assert gc2.fetch_offsets("g", [("t", 1)], require_stable=True)[1] == [("t", 1, 11, -1, "", E.none)]
    logs.close()


def test_describe_shows_last_assignment_during_rebalance(gc, clock):
    """Kafka's describe shows each member's last synced assignment in every state; metadata only
    when Stable (issue 11)."""
    gen, (a, b) = form_group(gc, clock, 2)
    join(gc, member_id=a)  # a rejoins: the group is rebalancing
    err, d = gc.describe_group("g")
    assert d["group_state"] == "PreparingRebalance"
    assert {m["member_id"]: m["member_assignment"] for m in d["members"]} == {a: a.encode(), b: b.encode()}
    assert all(m["member_metadata"] == b"" for m in d["members"]) and d["protocol_data"] == ""


# --- a __consumer_offsets partition that cannot be written (full disk) --------------------------
# The group state machine gives it up (its groups unloaded, NOT_COORDINATOR) instead of
# rebalancing on every failed write, and loads it again from what was written once there is room.

DISK_FULL = KafkaStorageError(E.kafka_storage_error, "cannot write: [Errno 28] No space left on device")


def test_failed_sync_store_gives_the_partition_up_without_a_new_generation(gc, clock, store):
    generation, (a,) = form_group(gc, clock, 1)
    b_join = join_new(gc, clock)  # a second member: rebalance
    a_join = join(gc, member_id=a)
    clock.advance(INITIAL_JOIN_MS)
    assert a_join.value.error == E.none and b_join.value.error == E.none
    gen2 = a_join.value.generation_id
    assert gen2 == generation + 1
    b = b_join.value.member_id
    b_sync = sync(gc, b, gen2)
    store.fail_with = DISK_FULL
    a_sync = sync(gc, a, gen2, {a: b"x", b: b"y"})
    # Kafka's storeGroup mapping: KAFKA_STORAGE_ERROR -> NOT_COORDINATOR, to every waiting member
    assert a_sync.value.error == E.not_coordinator and b_sync.value.error == E.not_coordinator
    clock.advance(0)  # the unload runs once the failed operation has answered
    assert "g" not in gc.groups
    # clients retrying at once get NOT_COORDINATOR: no join completes, no generation is made
    for _ in range(50):
        assert join(gc, member_id=a).value.error == E.not_coordinator
        assert run_now(gc, gc.heartbeat("g", a, None, gen2)) == E.not_coordinator
        assert commit(gc, "g", a, None, gen2, [("t", 0, 1, -1, "")]) == {("t", 0): E.not_coordinator}
        assert gc.fetch_offsets("g", [("t", 0)])[0] == E.not_coordinator
        assert not gc.coordinates("g")
        clock.advance(10)
    # once the retry interval has passed (and, on a real disk, there is room) it is loaded again
    # as last written: the generation of the last stored sync, with its member
    clock.advance(RETRY_INTERVAL_MS)
    assert gc.coordinates("g")
    assert gc.groups["g"].generation_id == generation
    assert set(gc.groups["g"].members) == {a}
    assert run_now(gc, gc.heartbeat("g", a, None, generation)) == E.none
    assert commit(gc, "g", a, None, generation, [("t", 0, 7, -1, "")]) == {("t", 0): E.none}


def test_failed_commit_gives_up_only_its_partition_once(gc, clock, store):
    generation, (a,) = form_group(gc, clock, 1)
    store.fail_with = DISK_FULL
    assert commit(gc, "g", a, None, generation, [("t", 0, 5, -1, "")]) == {("t", 0): E.not_coordinator}
    clock.advance(INITIAL_JOIN_MS)
    assert not gc.coordinates("g")
    assert gc.describe_group("g")[0] == E.not_coordinator
    assert run_now(gc, gc.delete_groups(["g"])) == {"g": E.not_coordinator}
    clock.advance(RETRY_INTERVAL_MS)
    assert gc.coordinates("g")
    # the member's session restarted at the reload
    assert run_now(gc, gc.heartbeat("g", a, None, generation)) == E.none
