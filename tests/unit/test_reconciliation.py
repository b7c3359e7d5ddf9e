"""Kafka 4.4's CurrentAssignmentBuilder (coordinator/reconciliation.py): each member state with
the owned partitions not sent, sent empty and sent in part; revoke-before-assign between two
members of a real ConsumerGroup; the epoch flow of three members to a Stable group."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from uuid import UUID

import pytest
from minibroker.coordinator.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupState,
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
    EpochValue,
    TargetMetaValue,
    TopicPartitions,
)
from minibroker.coordinator.reconciliation import FencedMemberEpoch, next_member

T1 = UUID(int=1)
T2 = UUID(int=2)
S, UNREV, UNREL, UNK = (
    MemberState.STABLE,
    MemberState.UNREVOKED_PARTITIONS,
    MemberState.UNRELEASED_PARTITIONS,
    MemberState.UNKNOWN,
)


def member(
    state: MemberState = S,
    epoch: int = 5,
    assigned: Mapping[UUID, Mapping[int, int]] | None = None,
    pending: Mapping[UUID, Mapping[int, int]] | None = None,
    previous: int = 4,
) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        "m",
        member_epoch=epoch,
        previous_member_epoch=previous,
        state=state,
        subscribed_topic_names=frozenset({"t1", "t2"}),
        assigned=assigned or {},
        pending_revocation=pending or {},
    )


def free(topic_id: UUID, partition: int) -> int:
    return -1


def owned_by_other(*owned: tuple[UUID, int]) -> Callable[[UUID, int], int]:
    taken = set(owned)
    return lambda t, p: 9 if (t, p) in taken else -1


def step(
    m: ConsumerGroupMember,
    *,
    target: Mapping[UUID, frozenset[int]],
    target_epoch: int = 6,
    owned: Mapping[UUID, Collection[int]] | None = None,
    subscribed: Collection[UUID] = (T1, T2),
    cpe: Callable[[UUID, int], int] = free,
    changed: bool = False,
) -> ConsumerGroupMember:
    return next_member(
        m,
        target_epoch=target_epoch,
        target=target,
        subscribed_topic_ids=frozenset(subscribed),
        current_partition_epoch=cpe,
        owned=owned,
        subscription_changed=changed,
    )


NONE: None = None
EMPTY: dict[UUID, list[int]] = {}
OWNS_KEPT = {T1: [0]}  # in part: a kept partition, not the revoked one
OWNS_REVOKED = {T1: [0, 1]}  # in part: still holds the revoked one


def expect(
    got: ConsumerGroupMember,
    state: MemberState,
    epoch: int,
    assigned: Mapping[UUID, Mapping[int, int]],
    pending: Mapping[UUID, Mapping[int, int]],
    previous: int,
) -> None:
    assert (got.state, got.member_epoch, got.previous_member_epoch) == (state, epoch, previous)
    assert got.assigned == assigned
    assert got.pending_revocation == pending


# --- STABLE ---------------------------------------------------------------------------------------
def test_stable_reconciled_and_unchanged_returns_the_same_member() -> None:
    m = member(epoch=6, assigned={T1: {0: 3}})
    for owned in (NONE, EMPTY, OWNS_KEPT):
        assert step(m, target={T1: frozenset({0, 1})}, owned=owned) is m


@pytest.mark.parametrize("owned", [NONE, EMPTY, OWNS_KEPT], ids=["none", "empty", "partial"])
def test_stable_behind_gets_new_free_partitions_at_the_target_epoch(owned) -> None:
    m = member(assigned={T1: {0: 3}})
    got = step(m, target={T1: frozenset({0, 1}), T2: frozenset({4})}, owned=owned)
    # kept partitions keep the epoch they were assigned in; new ones take the target epoch
    expect(got, S, 6, {T1: {0: 3, 1: 6}, T2: {4: 6}}, {}, previous=5)


@pytest.mark.parametrize(
    ("owned", "revokes"),
    [(NONE, True), (EMPTY, False), (OWNS_KEPT, False), (OWNS_REVOKED, True)],
    ids=["none-counts-as-owning", "empty", "partial-without-revoked", "partial-with-revoked"],
)
def test_stable_behind_revokes_first_while_the_member_owns_the_revoked(owned, revokes) -> None:
    m = member(assigned={T1: {0: 3, 1: 3}})
    got = step(m, target={T1: frozenset({0}), T2: frozenset({2})}, owned=owned)
    if revokes:
        # the member's epoch stays (previous becomes it); nothing new until it lets go
        expect(got, UNREV, 5, {T1: {0: 3}}, {T1: {1: 3}}, previous=5)
    else:
        expect(got, S, 6, {T1: {0: 3}, T2: {2: 6}}, {}, previous=5)


def test_stable_behind_waits_for_partitions_another_member_owns() -> None:
    m = member(assigned={T1: {0: 3}})
    got = step(m, target={T1: frozenset({0, 1, 2})}, cpe=owned_by_other((T1, 1)))
    expect(got, UNREL, 6, {T1: {0: 3, 2: 6}}, {}, previous=5)
    # nothing to give at all: still UNRELEASED at the target epoch
    got = step(member(assigned={T1: {0: 3}}), target={T1: frozenset({0, 1})}, cpe=owned_by_other((T1, 1)))
    expect(got, UNREL, 6, {T1: {0: 3}}, {}, previous=5)


def test_unsubscribed_topics_are_dropped_from_the_target() -> None:
    m = member(assigned={T1: {0: 3}, T2: {0: 3}})
    got = step(m, target={T1: frozenset({0}), T2: frozenset({0})}, subscribed=[T1], owned=EMPTY)
    expect(got, S, 6, {T1: {0: 3}}, {}, previous=5)


@pytest.mark.parametrize(
    ("owned", "result"),
    [
        (NONE, (UNREV, {}, {T1: {0: 3, 1: 3}})),
        (EMPTY, (S, {}, {})),
        ({T1: [1]}, (UNREV, {}, {T1: {0: 3, 1: 3}})),
    ],
    ids=["none", "empty", "partial"],
)
def test_stable_subscription_change_to_nothing_revokes_everything(owned, result) -> None:
    state, assigned, pending = result
    m = member(epoch=6, assigned={T1: {0: 3, 1: 3}})
    got = step(m, target={T1: frozenset({0, 1})}, subscribed=[], owned=owned, changed=True)
    expect(got, state, 6, assigned, pending, previous=6)


def test_stable_subscription_change_revokes_only_the_topics_left() -> None:
    m = member(epoch=6, assigned={T1: {0: 3}, T2: {1: 4}})
    got = step(m, target={T1: frozenset({0}), T2: frozenset({1})}, subscribed=[T1], owned=None, changed=True)
    expect(got, UNREV, 6, {T1: {0: 3}}, {T2: {1: 4}}, previous=6)
    # still subscribed to everything it holds: nothing to do
    m = member(epoch=6, previous=6, assigned={T1: {0: 3}})
    assert step(m, target={T1: frozenset({0})}, subscribed=[T1, T2], changed=True) is m


# --- UNREVOKED_PARTITIONS -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("owned", "waits"),
    [(NONE, True), (EMPTY, False), (OWNS_KEPT, False), (OWNS_REVOKED, True)],
    ids=["none", "empty", "partial-without-revoked", "partial-with-revoked"],
)
def test_unrevoked_waits_while_owning_then_moves_on(owned, waits) -> None:
    m = member(UNREV, epoch=5, previous=5, assigned={T1: {0: 3}}, pending={T1: {1: 3}})
    got = step(m, target={T1: frozenset({0}), T2: frozenset({2})}, owned=owned)
    if waits:
        assert got is m
    else:
        expect(got, S, 6, {T1: {0: 3}, T2: {2: 6}}, {}, previous=5)


def test_unrevoked_may_take_back_its_own_pending_partition() -> None:
    # T1-1 is this member's own partition pending revocation: its epoch is the member's, yet
    # it is assignable to it again (the "own pending revocation" exception)
    m = member(UNREV, epoch=5, previous=5, assigned={T1: {0: 3}}, pending={T1: {1: 3}})
    got = step(m, target={T1: frozenset({0, 1})}, owned=OWNS_KEPT, cpe=owned_by_other((T1, 1)))
    expect(got, S, 6, {T1: {0: 3, 1: 6}}, {}, previous=5)


def test_unrevoked_subscription_change_while_owning_revokes_more() -> None:
    m = member(UNREV, epoch=5, previous=5, assigned={T1: {0: 3}, T2: {0: 4}}, pending={T1: {1: 3}})
    got = step(m, target={T1: frozenset({0})}, subscribed=[T1], owned=None, changed=True)
    expect(got, UNREV, 5, {T1: {0: 3}}, {T1: {1: 3}, T2: {0: 4}}, previous=5)


# --- UNRELEASED_PARTITIONS ------------------------------------------------------------------------
@pytest.mark.parametrize("owned", [NONE, EMPTY, OWNS_KEPT], ids=["none", "empty", "partial"])
def test_unreleased_gets_the_partition_once_released(owned) -> None:
    m = member(UNREL, epoch=6, previous=5, assigned={T1: {0: 6}})
    target = {T1: frozenset({0, 1})}
    assert step(m, target=target, owned=owned, cpe=owned_by_other((T1, 1))).state is UNREL
    got = step(m, target=target, owned=owned)
    expect(got, S, 6, {T1: {0: 6, 1: 6}}, {}, previous=6)


def test_unreleased_still_waiting_and_already_recorded_is_the_same_member() -> None:
    m = member(UNREL, epoch=6, previous=6, assigned={T1: {0: 6}})
    assert step(m, target={T1: frozenset({0, 1})}, cpe=owned_by_other((T1, 1))) is m


# --- UNKNOWN --------------------------------------------------------------------------------------
@pytest.mark.parametrize("owned", [NONE, OWNS_KEPT], ids=["none", "partial"])
def test_unknown_state_fences_a_member_that_may_own_partitions(owned) -> None:
    m = member(UNK, assigned={T1: {0: 3}})
    with pytest.raises(FencedMemberEpoch) as e:
        step(m, target={T1: frozenset({0})}, owned=owned)
    assert str(e.value) == (
        "The consumer group member is in a unknown state. "
        "The member must abandon all its partitions and rejoin."
    )


def test_unknown_state_owning_nothing_starts_at_the_target_epoch() -> None:
    m = member(UNK, epoch=5, assigned={T1: {0: 3, 1: 3}})
    got = step(m, target={T1: frozenset({0}), T2: frozenset({1})}, owned=EMPTY)
    # computed at the target epoch: the revoked T1-1 is not owned, so it is simply dropped
    expect(got, S, 6, {T1: {0: 3}, T2: {1: 6}}, {}, previous=5)


# --- with a group: revoke before assign, and an epoch flow -----------------------------------------
GROUP = "g"


def heartbeat(
    group: ConsumerGroup,
    member_id: str,
    *,
    owned: Mapping[UUID, Collection[int]] | None,
    groups: dict[str, ConsumerGroup],
) -> ConsumerGroupMember:
    """What the heartbeat operation does for reconciliation: build, write (replay) the member."""
    m = group.members[member_id]
    new = next_member(
        m,
        target_epoch=group.assignment_epoch,
        target=group.target.get(member_id, {}),
        subscribed_topic_ids=group.subscribed_topic_ids(m, {"t1": T1, "t2": T2}),
        current_partition_epoch=group.current_partition_epoch,
        owned=owned,
        subscription_changed=False,
    )
    if new is not m:
        replay(groups, CgCurrent(GROUP, member_id, new.current_value()))
    return group.members[member_id]


def set_targets(
    groups: dict[str, ConsumerGroup], epoch: int, targets: dict[str, dict[UUID, set[int]]]
) -> None:
    replay(groups, CgEpoch(GROUP, EpochValue(epoch)))
    for member_id, t in targets.items():
        tps = tuple(TopicPartitions(tid, tuple(sorted(ps))) for tid, ps in t.items())
        replay(groups, CgTarget(GROUP, member_id, tps))
    replay(groups, CgTargetMeta(GROUP, TargetMetaValue(epoch, 1000)))


def join(groups: dict[str, ConsumerGroup], member_id: str) -> None:
    m = new_member(member_id)
    replay(groups, CgMember(GROUP, member_id, m.metadata_value()._replace(subscribed_topic_names=("t1",))))


def owned_of(m: ConsumerGroupMember) -> dict[UUID, list[int]]:
    """What the group's records give a member: assigned and pending revocation."""
    out: dict[UUID, list[int]] = {}
    for a in (m.assigned, m.pending_revocation):
        for t, ps in a.items():
            out.setdefault(t, []).extend(ps)
    return out


def test_revoke_before_assign_between_two_members() -> None:
    groups: dict[str, ConsumerGroup] = {}
    join(groups, "A")
    group = groups[GROUP]
    set_targets(groups, 2, {"A": {T1: {0, 1}}})
    a = heartbeat(group, "A", owned=EMPTY, groups=groups)
    assert (a.state, a.member_epoch, a.assigned) == (S, 2, {T1: {0: 2, 1: 2}})
    assert group.state == ConsumerGroupState.STABLE

    join(groups, "B")
    assert group.state == ConsumerGroupState.RECONCILING  # B not yet at the target epoch
    replay(groups, CgEpoch(GROUP, EpochValue(3)))
    assert group.state == ConsumerGroupState.ASSIGNING
    set_targets(groups, 3, {"A": {T1: {0}}, "B": {T1: {1}}})
    assert group.state == ConsumerGroupState.RECONCILING

    b = heartbeat(group, "B", owned=EMPTY, groups=groups)
    assert (b.state, b.member_epoch, b.assigned) == (UNREL, 3, {})  # T1-1 is still A's
    a = heartbeat(group, "A", owned=None, groups=groups)
    assert (a.state, a.member_epoch, a.pending_revocation) == (UNREV, 2, {T1: {1: 2}})
    assert group.current_partition_epoch(T1, 1) == 2
    b = heartbeat(group, "B", owned=EMPTY, groups=groups)
    assert (b.state, b.assigned) == (UNREL, {})  # A has not let go yet
    a = heartbeat(group, "A", owned={T1: [0]}, groups=groups)  # A revoked T1-1
    assert (a.state, a.member_epoch, a.previous_member_epoch, a.assigned) == (S, 3, 2, {T1: {0: 2}})
    assert group.current_partition_epoch(T1, 1) == -1
    assert group.state == ConsumerGroupState.RECONCILING
    b = heartbeat(group, "B", owned=EMPTY, groups=groups)
    assert (b.state, b.member_epoch, b.assigned) == (S, 3, {T1: {1: 3}})
    assert group.current_partition_epoch(T1, 1) == 3
    assert group.state == ConsumerGroupState.STABLE


def test_epoch_flow_of_three_members_never_gives_a_partition_twice() -> None:
    groups: dict[str, ConsumerGroup] = {}
    ids = ["A", "B", "C"]
    seen: set[MemberState] = set()
    for n, member_id in enumerate(ids, start=1):
        join(groups, member_id)
        group = groups[GROUP]
        epoch = n + 1
        # a round-robin target over the members so far: 6 partitions of T1
        members = ids[:n]
        targets = {m: {T1: {p for p in range(6) if p % n == i}} for i, m in enumerate(members)}
        replay(groups, CgEpoch(GROUP, EpochValue(epoch)))
        assert group.state == ConsumerGroupState.ASSIGNING
        set_targets(groups, epoch, targets)
        for _ in range(6):  # heartbeats in turn until every member is reconciled
            for member_id in members:
                # the client has revoked what the last answer left out: it owns its assigned
                held = group.members[member_id].assigned
                m = heartbeat(group, member_id, owned={t: list(ps) for t, ps in held.items()}, groups=groups)
                seen.add(m.state)
                holders: dict[tuple[UUID, int], str] = {}
                for m in group.members.values():
                    for t, ps in owned_of(m).items():
                        for p in ps:
                            assert (t, p) not in holders, (
                                f"{t}-{p} held by {holders[(t, p)]} and {m.member_id}"
                            )
                            holders[(t, p)] = m.member_id
            if group.state == ConsumerGroupState.STABLE:
                break
        assert group.state == ConsumerGroupState.STABLE
        for member_id in members:
            m = group.members[member_id]
            assert m.member_epoch == epoch
            assert {t: frozenset(ps) for t, ps in m.assigned.items()} == group.target[member_id]
    assert seen == {S, UNREV, UNREL}  # partitions moved through revocation and release
