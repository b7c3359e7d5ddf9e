"""The KIP-848 server-side assignors (coordinator/assignors.py) and the Java iteration orders
they rebuild (coordinator/java_order.py): a few cases by hand, then ~200 seeded random cases
compared with Kafka 4.4's own assignor classes run by a small Java main
(jvm/assignor-oracle/AssignorOracle.java, compiled here against the Kafka 4.4.0 libs)."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path
from uuid import UUID

import pytest
from minibroker.coordinator.assignors import (
    ASSIGNORS,
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    range_,
    uniform,
)
from minibroker.coordinator.java_order import (
    hash_int,
    hash_string,
    hash_uuid,
    hashset_capacity,
    java_hash_order,
    signed_long,
)

from conformance.reference_kafka import cache_dir

ORACLE_SOURCE = Path(__file__).resolve().parents[2] / "jvm" / "assignor-oracle" / "AssignorOracle.java"
T1 = UUID(int=(1 << 64) | 1)
T2 = UUID(int=(2 << 64) | 2)
T3 = UUID(int=(3 << 64) | 3)


def member(member_id, topics, target=None, instance_id=None):
    return MemberSpec(member_id, instance_id, None, frozenset(topics), target or {})


def counts(partitions):
    return lambda topic_id: partitions.get(topic_id, -1)


def flat(assignment):
    return {m: {t: sorted(p) for t, p in topics.items() if p} for m, topics in assignment.items()}


# -- Java orders ------------------------------------------------------------------------------


def test_java_hash_codes():
    assert hash_string("") == 0
    assert hash_string("hello") == 99162322
    assert hash_string("polygenelubricants") == -(2**31)  # the classic Integer.MIN_VALUE string
    assert hash_string("\U0001f600") == 0xD83D * 31 + 0xDE00  # UTF-16 code units
    assert hash_uuid(UUID(int=(1 << 64) | 2)) == 3
    assert hash_uuid(UUID(int=(1 << 128) - 1 - ((1 << 64) - 1))) == 0  # msb -1, lsb 0
    assert hash_int(-5) == -5
    assert signed_long(1 << 63) == -(2**63)


def test_java_hash_order():
    # 16 buckets: by value modulo 16, then insertion order within a bucket
    assert java_hash_order([17, 3, 1, 33], hash_int) == [17, 1, 33, 3]
    # 13 keys do not fit 16 buckets at 0.75: the table doubles to 32
    assert java_hash_order(range(20, 7, -1), hash_int) == sorted(range(8, 21))
    # new HashSet<>(collection of 12): 17/0.75 rounds to a table of 32
    assert hashset_capacity(12) == 32
    assert hashset_capacity(3) == 16
    assert java_hash_order([40, 8], hash_int, hashset_capacity(2)) == [40, 8]
    assert java_hash_order([8, 40], hash_int, 64) == [8, 40]


# -- by hand ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("assignor", "expected"),
    [
        # "a" (hash 97) iterates before "b" (98); with nothing to keep, the extra partition goes
        # to the last members in order (only they are sure to need it)
        (uniform, {"a": {T1: [0]}, "b": {T1: [1, 2]}}),
        # range sorts by member id and gives the extra partitions to the first
        (range_, {"a": {T1: [0, 1]}, "b": {T1: [2]}}),
    ],
)
def test_two_plus_one(assignor, expected):
    spec = GroupSpec((member("b", [T1]), member("a", [T1])), "HOMOGENEOUS")
    assert flat(assignor(spec, counts({T1: 3}))) == expected


def test_range_static_members_first():
    spec = GroupSpec(
        (member("a", [T1]), member("b", [T1], instance_id="z"), member("c", [T1], instance_id="y")),
        "HOMOGENEOUS",
    )
    assert flat(range_(spec, counts({T1: 4}))) == {"c": {T1: [0, 1]}, "b": {T1: [2]}, "a": {T1: [3]}}


def test_uniform_heterogeneous_three_members():
    # a: T1 only, b: T1 and T2, c: T2 and T3 (T1 6 partitions, T2 4, T3 2)
    spec = GroupSpec((member("a", [T1]), member("b", [T1, T2]), member("c", [T2, T3])), "HETEROGENEOUS")
    result = flat(uniform(spec, counts({T1: 6, T2: 4, T3: 2})))
    # Kafka 4.4's answer (the oracle's): T1 (3 partitions per subscriber) round-robin over a and
    # b, then T3 (2 per subscriber, fewer subscribers than T2) to c, then T2 by load
    assert result == {"a": {T1: [0, 2, 4]}, "b": {T1: [1, 3, 5], T2: [2]}, "c": {T2: [0, 1, 3], T3: [0, 1]}}
    sizes = sorted(sum(len(p) for p in topics.values()) for topics in result.values())
    assert sizes == [3, 4, 5]
    every = sorted((t, p) for topics in result.values() for t, parts in topics.items() for p in parts)
    assert every == sorted(
        [(T1, p) for p in range(6)] + [(T2, p) for p in range(4)] + [(T3, p) for p in range(2)]
    )


def test_uniform_keeps_previous_targets():
    old = {"a": {T1: frozenset({0, 1, 2})}, "b": {T1: frozenset({3, 4, 5})}}
    spec = GroupSpec(
        (member("a", [T1], old["a"]), member("b", [T1], old["b"]), member("c", [T1])),
        "HOMOGENEOUS",
    )
    result = uniform(spec, counts({T1: 6}))
    for member_id in ("a", "b"):  # sticky: what the old members keep is part of what they had
        assert result[member_id][T1] <= old[member_id][T1]
        assert len(result[member_id][T1]) == 2
    assert len(result["c"][T1]) == 2
    assert set().union(*(r[T1] for r in result.values())) == set(range(6))
    # unchanged group: unchanged targets
    again = GroupSpec(tuple(m._replace(target=result[m.member_id]) for m in spec.members), "HOMOGENEOUS")
    assert uniform(again, counts({T1: 6})) == result


def test_uniform_heterogeneous_keeps_previous_targets_and_drops_unsubscribed():
    spec = GroupSpec(
        (member("a", [T1], {T1: frozenset({0, 1}), T2: frozenset({0})}), member("b", [T1, T2])),
        "HETEROGENEOUS",
    )
    result = flat(uniform(spec, counts({T1: 4, T2: 2})))
    assert result["a"][T1][:2] == [0, 1] and T2 not in result["a"]
    assert result["b"][T2] == [0, 1]


def test_missing_topic_and_empty_groups():
    spec = GroupSpec((member("a", [T1]),), "HOMOGENEOUS")
    with pytest.raises(PartitionAssignorError, match="doesn't exist in the topic metadata"):
        uniform(spec, counts({}))
    with pytest.raises(PartitionAssignorError, match="non-existent topic"):
        range_(spec, counts({}))
    assert uniform(GroupSpec((), "HOMOGENEOUS"), counts({})) == {}
    assert flat(uniform(GroupSpec((member("a", []),), "HOMOGENEOUS"), counts({}))) == {"a": {}}
    assert set(ASSIGNORS) == {"uniform", "range"}


# -- against Kafka's classes --------------------------------------------------------------------

ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def random_case(rng: random.Random):
    topics = {
        UUID(int=rng.getrandbits(128)): (f"t{i}-{rng.randrange(1000)}", rng.randint(1, 40))
        for i in range(rng.randint(1, 6))
    }
    ids = list(topics)
    homogeneous = rng.random() < 0.5
    common = rng.sample(ids, rng.randint(1, len(ids)))
    members = []
    for _ in range(rng.randint(1, 12)):
        member_id = "".join(rng.choice(ID_CHARS) for _ in range(22))
        instance_id = f"i{rng.randrange(10**6)}" if rng.random() < 0.3 else None
        subscribed = common if homogeneous else rng.sample(ids, rng.randint(0, len(ids)))
        members.append([member_id, instance_id, tuple(rng.sample(subscribed, len(subscribed)))])
    targets: dict[str, dict[UUID, list[int]]] = {m[0]: {} for m in members}
    if rng.random() < 0.6:  # previous targets: any member (subscribed or not) held a partition
        for topic_id, (_, count) in topics.items():
            for partition in range(count):
                if rng.random() < 0.7:
                    owner = rng.choice(members)[0]
                    targets[owner].setdefault(topic_id, []).append(partition)
        for target in targets.values():  # the record's order, as a client's target record lists it
            for parts in target.values():
                rng.shuffle(parts)
    specs = tuple(
        MemberSpec(m[0], m[1], None, m[2], {t: tuple(p) for t, p in targets[m[0]].items()})  # type: ignore[arg-type]
        for m in members
    )
    assignor = rng.choice(["uniform", "range"])
    return assignor, GroupSpec(specs, "HOMOGENEOUS" if homogeneous else "HETEROGENEOUS"), topics


def oracle_input(assignor, spec, topics):
    lines = [f"case {assignor} {spec.subscription_type}"]
    for topic_id, (name, count) in topics.items():
        lines.append(f"topic {signed_long(topic_id.int >> 64)} {signed_long(topic_id.int)} {name} {count}")
    for m in spec.members:
        lines.append(f"member {m.member_id} {m.instance_id or '-'} -")
        lines.append(" ".join(["sub", *(topics[t][0] for t in m.topic_ids)]))
        for topic_id, parts in m.target.items():
            lines.append(
                " ".join(
                    [
                        "target",
                        str(signed_long(topic_id.int >> 64)),
                        str(signed_long(topic_id.int)),
                        *map(str, parts),
                    ]
                )
            )
    lines.append("end")
    return lines


def parse_oracle(output):
    results, current = [], {}
    for line in output.splitlines():
        if line == "done":
            results.append(current)
            current = {}
        elif line.startswith("error "):
            current = {"error": line.split(" ", 2)[1]}
        else:
            _, member_id, msb, lsb, parts = line.split(" ")
            topic_id = UUID(int=((int(msb) & (2**64 - 1)) << 64) | (int(lsb) & (2**64 - 1)))
            current.setdefault(member_id, {})[topic_id] = [int(p) for p in parts.split(",")]
    return results


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    libs = cache_dir() / "libs"
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("needs a JDK (make test installs one)")
    if not (libs / "kafka-group-coordinator-4.4.0.jar").exists():
        pytest.skip(f"needs the Kafka 4.4.0 libs in {libs} (make conformance fetches them)")
    out = tmp_path_factory.mktemp("assignor-oracle")
    classpath = f"{libs}/*"
    subprocess.run(["javac", "-d", str(out), "-cp", classpath, str(ORACLE_SOURCE)], check=True, timeout=120)

    def run(lines):
        done = subprocess.run(
            ["java", "-cp", f"{out}:{classpath}", "minibroker.oracle.AssignorOracle"],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return parse_oracle(done.stdout)

    return run


def test_matches_kafka_on_random_cases(oracle):
    rng = random.Random(848)
    cases = [random_case(rng) for _ in range(200)]
    expected = oracle([line for case in cases for line in oracle_input(*case)])
    assert len(expected) == len(cases)
    mismatches = []
    for (assignor, spec, topics), want in zip(cases, expected, strict=True):
        name = {t: n for t, (n, _) in topics.items()}
        try:
            got = flat(
                ASSIGNORS[assignor](
                    spec, counts({t: c for t, (_, c) in topics.items()}), topic_name=name.__getitem__
                )
            )
            got = {m: t for m, t in got.items() if t}
        except PartitionAssignorError:
            got = {"error": "PartitionAssignorException"}
        if got != want:
            mismatches.append((assignor, spec, got, want))
    assert not mismatches, f"{len(mismatches)} of {len(cases)} differ from Kafka; first: {mismatches[0]}"
    # the cases cover what they should
    assert {a for a, _, _ in cases} == {"uniform", "range"}
    assert {s.subscription_type for _, s, _ in cases} == {"HOMOGENEOUS", "HETEROGENEOUS"}
    assert any(any(m.target for m in s.members) for _, s, _ in cases)
    assert any(any(m.instance_id for m in s.members) for _, s, _ in cases)
