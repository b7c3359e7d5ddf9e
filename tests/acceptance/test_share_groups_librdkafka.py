"""Share groups (KIP-932) with librdkafka: confluent-kafka 2.16.1's `ShareConsumer` (librdkafka 2.16.0).

What librdkafka 2.16 does (checked against the reference Kafka 4.4.0 with `debug=protocol`): it
sends ShareGroupHeartbeat v1, ShareFetch v1 and ShareAcknowledge v1 (never v2: no RENEW, no
record_limit acquisition), FindCoordinator v2 and Metadata v13. `Message.delivery_count()` is
the broker's AcquiredRecords DeliveryCount; `acknowledge(msg, AcknowledgeType.ACCEPT|RELEASE|
REJECT)` in explicit mode, acknowledgements sent on the next poll or commit (the tests commit
synchronously after each poll); the acknowledgement commit callback reports the offsets the
broker confirmed. A member that closes, or whose connection dies, with records acquired gets
them released at once (Kafka releases a share session's records when it closes); a member that
is silent (SIGSTOP) keeps them until the acquisition lock expires.

Every test runs against the reference Kafka with MINIBROKER_SHARE_TARGET=kafka (tests/support/share.py).
"""

from __future__ import annotations

import signal
import time
from collections import Counter

import pytest

from tests.support.helpers import create_topic, unique_name
from tests.support.share import (
    ACCEPT,
    REJECT,
    RELEASE,
    ProcessMember,
    ShareMember,
    accepted,
    assigned_members,
    deliveries,
    produce_keyed,
    record_value,
    request_versions,
    set_group_configs,
    share_broker_factory,  # noqa: F401 - the fixture
    wait_for,
)

EARLIEST = {"share.auto.offset.reset": "earliest"}
SHARE_APIS = ("ShareGroupHeartbeat", "ShareFetch", "ShareAcknowledge")


def _setup(broker, partitions: int, group_configs: dict[str, str] | None = None) -> tuple[str, str]:
    topic, group = unique_name("share-rd"), unique_name("share-rd-g")
    create_topic(broker, topic, partitions)
    set_group_configs(broker.bootstrap, group, {**EARLIEST, **(group_configs or {})})
    return topic, group


def _stop(members: list[ShareMember]) -> None:
    for m in members:
        m.stop(check=False)
    assert not [m.name for m in members if m.running], "members did not close"


@pytest.mark.timeout(300)
def test_three_members_share_two_partitions_and_accept_each_record_once(share_broker_factory):  # noqa: F811
    b = share_broker_factory()
    topic, group = _setup(b, 2)
    members = [ShareMember(b.bootstrap, group, [topic], f"c{i}").start() for i in range(3)]
    try:
        # the simple assignor shares the two partitions among the three members: each gets one or two
        wait_for(
            lambda: (
                (a := assigned_members(b.bootstrap, group))
                and len(a) == 3
                and all(a.values())
                and set().union(*a.values()) == {0, 1}
            ),
            message="three members, each assigned a partition, both partitions assigned",
        )
        placed = produce_keyed(b.bootstrap, topic, 10_000, 2)
        wait_for(lambda: len(accepted(members)) >= len(placed), message="every record accepted")
    finally:
        _stop(members)
    assert not [e for m in members for e in m.errors + m.ack_errors]
    acks = accepted(members)
    assert set(acks) == set(placed.values())
    twice = {k: v for k, v in acks.items() if len(v) > 1}
    assert not twice, f"{len(twice)} records accepted more than once, e.g. {list(twice.items())[:3]}"
    got = deliveries(members)
    assert sorted(d.value for d in got) == sorted(placed), "a record delivered twice or not at all"
    assert {d.count for d in got} == {1}
    assert all(placed[d.value] == d.key for d in got)
    per_member = Counter(d.member for d in got)
    assert len(per_member) == 3, f"a member got nothing: {per_member}"


@pytest.mark.timeout(180)
def test_release_redelivers_with_delivery_count_two_and_reject_archives(share_broker_factory):  # noqa: F811
    b = share_broker_factory(minibroker={"minibroker.request.log.enable": True})
    topic, group = _setup(b, 1)
    placed = produce_keyed(b.bootstrap, topic, 20, 1)
    released, rejected = record_value(3), record_value(5)

    def policy(d):
        if d.value == released and d.count == 1:
            return RELEASE
        return REJECT if d.value == rejected else ACCEPT

    member = ShareMember(b.bootstrap, group, [topic], "explicit", policy=policy).start()
    try:
        wait_for(lambda: len(accepted([member])) == 19, message="19 records accepted")
        # a record after the rest: delivered only once nothing before it is available again
        placed.update(produce_keyed(b.bootstrap, topic, 1, 1, start=20))
        wait_for(lambda: len(accepted([member])) == 20, message="the last record accepted")
    finally:
        _stop([member])
    assert not member.errors and not member.ack_errors, member.errors + member.ack_errors
    counts = {}
    for d in member.deliveries:
        counts.setdefault(d.value, []).append(d.count)
    assert counts[released] == [1, 2], "the RELEASEd record comes back once, with delivery count 2"
    assert counts[rejected] == [1], "the REJECTed record is archived, never delivered again"
    assert all(c == [1] for v, c in counts.items() if v not in (released, rejected))
    assert set(counts) == set(placed)
    kinds = {member.acked[placed[v]][-1][1] for v in (released, rejected)}
    assert kinds == {ACCEPT, REJECT}
    assert [k for _, k in member.acked[placed[released]]] == [RELEASE, ACCEPT]
    if not share_broker_factory.is_kafka:  # librdkafka 2.16 speaks v1 of the share APIs
        versions = request_versions(b, "explicit")
        assert {"ShareGroupHeartbeat", "ShareFetch"} <= set(versions), versions
        assert all(versions[api] == {1} for api in SHARE_APIS if api in versions), versions


@pytest.mark.timeout(180)
def test_delivery_count_limit_reached_archives_the_record(share_broker_factory):  # noqa: F811
    b = share_broker_factory()
    topic, group = _setup(b, 1, {"share.delivery.count.limit": "3"})
    placed = produce_keyed(b.bootstrap, topic, 10, 1)
    poison = record_value(4)
    member = ShareMember(
        b.bootstrap, group, [topic], "limit", policy=lambda d: RELEASE if d.value == poison else ACCEPT
    ).start()
    try:
        wait_for(lambda: len(accepted([member])) == 9, message="the other 9 records accepted")
        placed.update(produce_keyed(b.bootstrap, topic, 1, 1, start=10))
        wait_for(lambda: len(accepted([member])) == 10, message="the last record accepted")
    finally:
        _stop([member])
    assert not member.errors and not member.ack_errors, member.errors + member.ack_errors
    poison_counts = [d.count for d in member.deliveries if d.value == poison]
    assert poison_counts == [1, 2, 3], "delivered up to the limit, then archived"
    assert len(member.deliveries) == len(placed) + 2


@pytest.mark.timeout(180)
def test_records_of_a_closed_member_go_to_another(share_broker_factory):  # noqa: F811
    """close() with records acquired and not acknowledged: the share session ends and the broker
    releases them at once (long before the 30 s lock), the other member gets them with delivery
    count 2."""
    b = share_broker_factory()
    topic, group = _setup(b, 1)
    placed = produce_keyed(b.bootstrap, topic, 30, 1)
    holder = ShareMember(b.bootstrap, group, [topic], "holder", policy=lambda d: None).start()
    other = ShareMember(b.bootstrap, group, [topic], "other")
    try:
        wait_for(holder.holding.is_set, message="the holder acquired records")
        held = {d.value for d in holder.snapshot()}
        assert held
        other.start()
        # the holder leaves with its records acquired
        closed_at = time.monotonic()
        holder.stop()
        wait_for(lambda: len(accepted([other])) == len(placed), message="the other accepted every record")
        late = time.monotonic() - closed_at
    finally:
        _stop([holder, other] if other.running else [holder])
    assert late < 20, f"released records came back only after {late:.1f}s (lock is 30 s)"
    assert not holder.acked, "the holder acknowledged nothing"
    again = {d.value: d.count for d in other.deliveries if d.value in held}
    assert again == dict.fromkeys(held, 2)
    assert sorted(d.value for d in other.deliveries) == sorted(placed)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("how", ["sigkill", "sigstop"])
def test_records_of_a_dead_member_are_redelivered_to_the_others(share_broker_factory, how):  # noqa: F811
    """A member process SIGKILLed with records acquired: its connection closes and the records
    come back at once. A member SIGSTOPped (connection open, silent): they come back when the
    acquisition lock (share.record.lock.duration.ms 2000) expires, before its session (6 s) ends.
    Either way the next member gets them with delivery count 2."""
    lock_ms = 2000
    b = share_broker_factory()
    topic, group = _setup(b, 1, {"share.record.lock.duration.ms": str(lock_ms)})
    placed = produce_keyed(b.bootstrap, topic, 30, 1)
    dead = ProcessMember(b.bootstrap, group, topic)
    other = None
    try:
        records = dead.acquired()
        held = {r[2] for r in records}
        assert held and {r[3] for r in records} == {1}
        dead.signal(signal.SIGKILL if how == "sigkill" else signal.SIGSTOP)
        other = ShareMember(b.bootstrap, group, [topic], "other").start()
        wait_for(lambda: held <= {d.value for d in other.snapshot()}, message="the held records redelivered")
        back_after = time.monotonic() - dead.acquired_at
        wait_for(lambda: len(accepted([other])) == len(placed), message="every record accepted")
    finally:
        if how == "sigstop":
            dead.signal(signal.SIGCONT)
        dead.close()
        if other is not None:
            _stop([other])
    assert not other.errors and not other.ack_errors
    again = {d.value: d.count for d in other.deliveries if d.value in held}
    assert again == dict.fromkeys(held, 2)
    if how == "sigstop":
        assert back_after >= lock_ms / 1000 * 0.75, f"redelivered {back_after:.2f}s after acquisition"
        assert back_after < 6, "not redelivered when the lock expired (only when the session ended?)"
    assert sorted(d.value for d in other.deliveries) == sorted(placed)
