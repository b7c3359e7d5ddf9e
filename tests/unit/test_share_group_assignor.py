"""Kafka 4.4's SimpleAssignor for share groups (coordinator/share_assignor.py): exact answers
of Kafka's own SimpleAssignor for the same inputs (recorded from kafka-group-coordinator-4.4.0
with GroupSpecImpl over HashMaps/HashSets; the builders were also compared with Kafka's on
1,500 random groups, equal on all where Kafka does not throw), and the invariants: the sharing
factor, the per-member counts, stickiness, subscriptions and assignable partitions."""

from __future__ import annotations

import math
import random
import uuid

import pytest
from minibroker.coordinator.assignors import GroupSpec, MemberSpec, PartitionAssignorError
from minibroker.coordinator.share_assignor import simple_assign

U = uuid.UUID


def tid(n: int) -> uuid.UUID:
    return U(int=n)


def spec(kind, members):
    """members: (id, subscribed topic numbers, {topic number: partitions})"""
    return GroupSpec(
        tuple(
            MemberSpec(
                m, None, None, frozenset(tid(t) for t in subs), {tid(t): frozenset(p) for t, p in old.items()}
            )
            for m, subs, old in members
        ),
        kind,
    )


def run(kind, topics, members):
    """topics: {topic number: (partition count, assignable partitions)}"""
    result = simple_assign(
        spec(kind, members),
        lambda t: topics[t.int][0] if t.int in topics else -1,
        lambda t, p: p in topics[t.int][1],
    )
    return {m: {t.int: sorted(ps) for t, ps in a.items() if ps} for m, a in result.items()}


ALL = range(100)

#: (kind, topics, members, Kafka's answer)
KAFKA = [
    (
        "HOMOGENEOUS",
        {1: (2, ALL)},
        [("A", [1], {}), ("B", [1], {}), ("C", [1], {})],
        {"A": {1: [0, 1]}, "B": {1: [1]}, "C": {1: [0]}},
    ),
    (
        "HOMOGENEOUS",
        {1: (8, ALL), 2: (6, ALL), 3: (2, ALL)},
        [("m817", [1, 2, 3], {}), ("m516", [1, 2, 3], {}), ("m643", [1, 2, 3], {})],
        {
            "m516": {1: [3, 5], 2: [1, 3], 3: [0]},
            "m643": {1: [1, 4, 7], 2: [0, 4]},
            "m817": {1: [0, 2, 6], 2: [2, 5], 3: [1]},
        },
    ),
    (
        "HOMOGENEOUS",
        {1: (5, ALL), 2: (5, [1, 2, 3, 4])},
        [
            ("m324", [1, 2], {1: [1]}),
            ("m254", [1, 2], {1: [0, 2], 2: [1, 2, 4]}),
            ("m275", [1, 2], {}),
            ("m542", [1, 2], {}),
            ("m50", [1, 2], {}),
        ],
        {
            "m254": {1: [0], 2: [1]},
            "m275": {1: [3], 2: [2]},
            "m324": {1: [1]},
            "m50": {1: [2, 4]},
            "m542": {2: [3, 4]},
        },
    ),
    (
        "HETEROGENEOUS",
        {1: (3, ALL), 2: (4, ALL)},
        [
            ("a", [1], {1: [0, 1, 2]}),
            ("b", [1, 2], {2: [0, 1]}),
            ("c", [2], {}),
            ("d", [1, 2], {}),
            ("e", [1], {}),
        ],
        {"a": {1: [1, 2]}, "b": {1: [0], 2: [0, 1]}, "c": {2: [2]}, "d": {1: [0, 2], 2: [3]}, "e": {1: [1]}},
    ),
]


@pytest.mark.parametrize(("kind", "topics", "members", "expected"), KAFKA)
def test_the_same_answer_as_kafkas_simple_assignor(kind, topics, members, expected):
    assert run(kind, topics, members) == expected


def test_no_members_or_no_topics_assign_nothing():
    assert simple_assign(GroupSpec((), "HOMOGENEOUS"), lambda t: 1, lambda t, p: True) == {}
    assert run("HOMOGENEOUS", {}, [("a", [], {})]) == {}


def test_a_subscribed_topic_that_does_not_exist_fails_the_assignment():
    with pytest.raises(PartitionAssignorError, match="doesn't exist in the topic metadata"):
        run("HOMOGENEOUS", {}, [("a", [1], {})])
    with pytest.raises(PartitionAssignorError):
        run("HETEROGENEOUS", {1: (1, ALL)}, [("a", [1], {}), ("b", [2], {})])


def test_only_assignable_partitions_are_given_out():
    result = run("HOMOGENEOUS", {1: (4, [1, 3])}, [("a", [1], {}), ("b", [1], {})])
    assert sorted(p for a in result.values() for p in a.get(1, [])) == [1, 3]
    assert all(len(a.get(1, [])) == 1 for a in result.values())
    assert run("HOMOGENEOUS", {1: (4, [])}, [("a", [1], {})]) == {"a": {}}


def _check_fresh(kind, topics, members, result):
    """A group without previous assignments: every assignable partition gets desiredSharing =
    ceil(members / partitions) members (over all topics for a homogeneous group, per topic
    for a heterogeneous one), the counts spread evenly, nothing outside a subscription."""
    subs = {m: set(s) for m, s, _ in members}
    if kind == "HOMOGENEOUS":
        groups = [(sorted(topics), list(subs))]
    else:
        groups = [([t], [m for m in subs if t in subs[m]]) for t in topics]
    for topic_set, subscribers in groups:
        if not subscribers:
            continue
        targets = [(t, p) for t in topic_set for p in range(topics[t][0]) if p in topics[t][1]]
        sharing = math.ceil(len(subscribers) / len(targets)) if targets else 0
        for t, p in targets:
            assert sum(p in result[m].get(t, []) for m in subscribers) == sharing, (t, p)
        counts = [sum(p in result[m].get(t, []) for t, p in targets) for m in subscribers]
        assert max(counts) - min(counts) <= 1 and sum(counts) == sharing * len(targets)
    for m in subs:
        assert set(result[m]) <= subs[m]


@pytest.mark.parametrize("seed", range(40))
def test_invariants_and_stickiness_on_random_groups(seed):
    rng = random.Random(seed)
    topics = {t: (rng.randint(1, 8), ALL) for t in range(1, rng.randint(1, 3) + 1)}
    hetero = rng.random() < 0.5
    names = [f"m{i}" for i in range(rng.randint(1, 10))]
    members = [
        (m, sorted(rng.sample(sorted(topics), rng.randint(1, len(topics)))) if hetero else sorted(topics), {})
        for m in names
    ]
    kind = "HETEROGENEOUS" if hetero else "HOMOGENEOUS"
    first = run(kind, topics, members)
    _check_fresh(kind, topics, members, first)
    # sticky: the same group again keeps every assignment as it is
    again = [(m, s, first[m]) for m, s, _ in members]
    assert run(kind, topics, again) == first
    # a new member takes a share; the others keep partitions they had
    second = run(kind, topics, [*again, ("new", sorted(topics), {})])
    assert second["new"]
    kept = sum(len(set(first[m].get(t, [])) & set(second[m].get(t, []))) for m in names for t in topics)
    assert kept >= sum(len(ps) for m in names for ps in second[m].values()) // 2
