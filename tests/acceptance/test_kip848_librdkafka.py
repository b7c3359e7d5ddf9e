"""KIP-848 consumer groups with librdkafka (confluent-kafka 2.16.1, `group.protocol=consumer`):
subscribe, consume and commit; a second and a third member join and leave with no record lost or
read twice by the committed offsets; a regex subscription picks up a topic created later.

librdkafka 2.16 in consumer mode sends a subscription's regexes (those starting with `^`) as
ConsumerGroupHeartbeat v1's SubscribedTopicRegex, each in parentheses and joined with `|`
(`["^a.*", "b", "^c"]` -> names `["b"]`, regex `(^c)|(^a.*)`; checked on the wire), evaluated
by the broker with RE2 as a full match. It refuses the classic group settings
(session.timeout.ms, heartbeat.interval.ms, partition.assignment.strategy) in consumer mode: the
tests set none of them and lower the broker's group.consumer.* timings instead.
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.support.helpers import create_topic, unique_name, wait_until

#: The broker: KIP-848 on (group.version 1) and short consumer group timings.
KIP848 = {
    "minibroker.features": "group.version=1",
    "group.consumer.min.session.timeout.ms": 1000,
    "group.consumer.session.timeout.ms": 6000,
    "group.consumer.min.heartbeat.interval.ms": 100,
    "group.consumer.heartbeat.interval.ms": 300,
    "group.consumer.assignment.interval.ms": 0,
}
WAIT = 60.0


def produce(bootstrap: str, topic: str, values: list[str], partitions: int) -> None:
    """Each value once, round robin over the partitions, acknowledged."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    errors = []
    for i, value in enumerate(values):
        producer.produce(
            topic,
            value=value.encode(),
            partition=i % partitions,
            on_delivery=lambda e, m: e and errors.append(e),
        )
    assert producer.flush(30) == 0 and not errors, errors


class Member:
    """A librdkafka consumer-protocol member consuming in a thread. Every record is committed
    (synchronously, its offset + 1) before it counts as `done`: a record whose commit failed is
    `uncommitted` (its next owner reads it again from the committed offset), so across the
    members of a group `done` holds each record once when the committed offsets are right."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], name: str, **extra) -> None:
        from confluent_kafka import Consumer

        self.name = name
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 100,
                **extra,
            }
        )
        self.topics = topics
        self.done: list[tuple[str, int, int, str]] = []  # (topic, partition, offset, value)
        self.uncommitted: list[tuple[str, int, int, str]] = []
        self.assignments: list[set[tuple[str, int]]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Member:
        def assigned(consumer, partitions):
            self.assignments.append(self.assignment() | {(p.topic, p.partition) for p in partitions})

        def revoked(consumer, partitions):
            self.assignments.append(self.assignment() - {(p.topic, p.partition) for p in partitions})

        self.consumer.subscribe(self.topics, on_assign=assigned, on_revoke=revoked)
        self._thread.start()
        return self

    def assignment(self) -> set[tuple[str, int]]:
        return set(self.assignments[-1]) if self.assignments else set()

    def _run(self) -> None:
        from confluent_kafka import KafkaException

        while not self._stop.is_set():
            msg = self.consumer.poll(0.1)
            if msg is None:
                continue
            if msg.error():
                self.errors.append(str(msg.error()))
                continue
            record = (msg.topic(), msg.partition(), msg.offset(), (msg.value() or b"").decode())
            try:
                committed = self.consumer.commit(message=msg, asynchronous=False)
                failed = [tp.error for tp in committed or () if tp.error is not None]
            except KafkaException as exc:
                failed = [exc]
            (self.uncommitted if failed else self.done).append(record)
        self.consumer.close()  # leaves the group (member epoch -1)

    def stop(self, check: bool = True) -> None:
        """Stop consuming and close (leave the group); `check`: it must be done within 30 s."""
        self._stop.set()
        self._thread.join(30)
        assert not check or not self._thread.is_alive(), f"{self.name} did not stop"

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def values(self) -> list[str]:
        return [r[3] for r in self.done]


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
        return {tp.partition: tp.offset for tp in got}
    finally:
        c.close()


def assert_each_record_once(members: list[Member], expected: list[str]) -> None:
    """Across the members, the records their commits covered are exactly the ones produced,
    each once."""
    done = [v for m in members for v in m.values()]
    dupes = sorted({v for v in done if done.count(v) > 1})
    assert not dupes, f"{len(dupes)} records read twice by the committed offsets, e.g. {dupes[:5]}"
    missing = sorted(set(expected) - set(done))
    assert not missing, f"{len(missing)} records never committed, e.g. {missing[:5]}"
    assert set(done) == set(expected)


@pytest.mark.timeout(240)
def test_members_join_and_leave_without_losing_or_rereading(broker_factory):
    b = broker_factory(KIP848)
    topic, group, parts = unique_name("k848-rd"), unique_name("k848-rd-g"), 6
    create_topic(b, topic, parts)
    first = [f"one-{i}" for i in range(60)]
    produce(b.bootstrap, topic, first, parts)
    c1 = Member(b.bootstrap, group, [topic], "c1").start()
    members = [c1]
    try:
        wait_until(lambda: len(c1.done) == len(first), WAIT, message="c1 consumed the first records")
        assert c1.assignment() == {(topic, p) for p in range(parts)}
        # a second and a third member: the partitions are split three ways, each handed over
        # only after its owner revoked it (and committed what it read)
        c2 = Member(b.bootstrap, group, [topic], "c2").start()
        c3 = Member(b.bootstrap, group, [topic], "c3").start()
        members += [c2, c3]
        wait_until(
            lambda: all(len(m.assignment()) == 2 for m in members),
            WAIT,
            message="the six partitions split 2+2+2",
        )
        owned = [m.assignment() for m in members]
        assert set().union(*owned) == {(topic, p) for p in range(parts)}
        second = [f"two-{i}" for i in range(120)]
        produce(b.bootstrap, topic, second, parts)
        wait_until(
            lambda: sum(len(m.done) for m in members) >= len(first) + len(second),
            WAIT,
            message="the three members consumed the second records",
        )
        assert all(any(v.startswith("two-") for v in m.values()) for m in members), "a member read nothing"
        # the second and third leave: the first gets every partition back
        c2.stop()
        c3.stop()
        wait_until(lambda: len(c1.assignment()) == parts, WAIT, message="c1 owns every partition again")
        third = [f"three-{i}" for i in range(60)]
        produce(b.bootstrap, topic, third, parts)
        expected = first + second + third
        wait_until(
            lambda: len({v for m in members for v in m.values()}) >= len(expected),
            WAIT,
            message="every record consumed",
        )
        assert {r[1] for r in c1.done if r[3].startswith("three-")} == set(range(parts))
    finally:
        for m in members:
            m.stop(check=False)
    assert not [m.name for m in members if m.running], "members did not close"
    assert_each_record_once(members, expected)
    ends = {p: len(expected) // parts for p in range(parts)}
    assert committed_offsets(b.bootstrap, group, topic, parts) == ends


@pytest.mark.timeout(180)
def test_regex_subscription_picks_up_a_topic_created_later(broker_factory):
    b = broker_factory(KIP848)
    prefix = unique_name("k848rx")
    group = unique_name("k848-rx-g")
    create_topic(b, f"{prefix}-a", 2)
    create_topic(b, f"other-{prefix}", 1)  # not matched: a full match of the regex
    produce(b.bootstrap, f"{prefix}-a", [f"a-{i}" for i in range(10)], 2)
    produce(b.bootstrap, f"other-{prefix}", ["other"], 1)
    member = Member(b.bootstrap, group, [f"^{prefix}-.*"], "rx").start()
    try:
        wait_until(lambda: len(member.done) == 10, WAIT, message="the records of the matching topic")
        assert member.assignment() == {(f"{prefix}-a", 0), (f"{prefix}-a", 1)}
        created = time.monotonic()
        create_topic(b, f"{prefix}-b", 3)
        produce(b.bootstrap, f"{prefix}-b", [f"b-{i}" for i in range(9)], 3)
        # the group resolves its regexes again once a topic was created, at most every 10 s
        # (Kafka's floor): the new topic's partitions are assigned after that
        wait_until(lambda: len(member.done) == 19, WAIT, message="the records of the topic created later")
        assert time.monotonic() - created < WAIT
        assert {(f"{prefix}-b", p) for p in range(3)} <= member.assignment()
    finally:
        member.stop(check=False)
    assert not member.running, "the member did not close"
    assert sorted(member.values()) == sorted([f"a-{i}" for i in range(10)] + [f"b-{i}" for i in range(9)])
    assert all(t != f"other-{prefix}" for t, *_ in member.done)
