"""A share group through a broker SIGKILL in the middle of a run (KIP-932's durability, Kafka's
guarantee): after the restart on the same data directory no record whose ACCEPT the broker
confirmed is delivered again, no record is lost, and the records that were acquired but not
acknowledged at the crash are delivered again with the delivery count the broker had persisted
(acquisition is not persisted: a record RELEASEd once and acquired again comes back with delivery
count 2, not 3; one acquired once comes back with 1).

librdkafka's ShareConsumer in explicit mode, committing synchronously after each poll, so the test
knows which acknowledgements the broker confirmed (and which were in flight at the crash: written
or not, the broker did not say). The crash comes when a worker stops at a trigger record, its
poll's records acquired and unacknowledged, so it is always in the middle of the run however fast
the broker is. MINIBROKER_SHARE_TARGET=kafka runs it on the reference Kafka.
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.support.helpers import create_topic, unique_name
from tests.support.share import (
    ACCEPT,
    RELEASE,
    WAIT,
    ShareMember,
    accepted,
    deliveries,
    keep_port,
    produce_keyed,
    record_value,
    set_group_configs,
    share_broker_factory,  # noqa: F401 - the fixture
    wait_for,
)

PARTS = 2


@pytest.mark.timeout(400)
def test_no_accepted_record_redelivered_and_none_lost_after_a_broker_sigkill(share_broker_factory):  # noqa: F811
    b = share_broker_factory()
    keep_port(b)
    topic, side, group = (
        unique_name("share-crash"),
        unique_name("share-crash-held"),
        unique_name("share-crash-g"),
    )
    create_topic(b, topic, PARTS)
    create_topic(b, side, 1)
    # locks outlast the run: only the crash gives records back
    set_group_configs(
        b.bootstrap, group, {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "60000"}
    )
    # A member of the group subscribed to `side` alone RELEASEs its 10 records (persisted:
    # available, delivered once), then gets them again (acquired with delivery count 2, in
    # memory only) and holds them while the broker dies.
    side_records = produce_keyed(b.bootstrap, side, 10, 1, start=100_000)
    releaser = ShareMember(
        b.bootstrap, group, [side], "releaser", policy=lambda d: RELEASE if d.count == 1 else None
    ).start()
    wait_for(releaser.holding.is_set, message="the releaser holds redelivered records")
    held = {d.value for d in releaser.snapshot() if d.count == 2}
    assert held == set(side_records), "the RELEASEd records came back to the releaser in one poll"
    # two workers subscribed to both topics accept every record they get, a poll at a time; a
    # worker that meets one of the trigger records (one per partition, in the second lot) stops
    # there, its poll's records acquired and not acknowledged, until the broker is back
    placed = produce_keyed(b.bootstrap, topic, 2000, PARTS)
    triggers = {record_value(5000), record_value(5001)}
    reached, resume = threading.Event(), threading.Event()

    def policy(d):
        if d.value in triggers and not resume.is_set():
            reached.set()
            resume.wait(WAIT * 3)
        return ACCEPT

    workers = [
        ShareMember(
            b.bootstrap, group, [topic, side], f"w{i}", policy=policy, config={"max.poll.records": 10}
        ).start()
        for i in range(2)
    ]
    members = [releaser, *workers]
    try:
        wait_for(
            lambda: len(accepted(workers)) >= len(placed), message="the workers accepted the first records"
        )
        placed.update(produce_keyed(b.bootstrap, topic, 6000, PARTS, start=2000))
        wait_for(reached.is_set, message="a worker at a trigger record")
        b.kill()
        crashed_at = time.monotonic()
        crashed_with = len(accepted(workers))
        assert crashed_with < len(placed), "the workers accepted everything before the crash"
        b.start()
        resume.set()
        everything = set(placed.values()) | set(side_records.values())
        wait_for(
            lambda: set(accepted(workers)) | _in_doubt(workers) >= everything,
            timeout=WAIT * 2,
            message="every record accepted after the restart",
        )
        assert len(accepted(workers)) > crashed_with
    finally:
        resume.set()
        for m in members:
            m.stop(check=False)
    assert not [m.name for m in members if m.running], "members did not close"

    acks = accepted(workers)
    twice = {k: v for k, v in acks.items() if len(v) > 1}
    assert not twice, f"{len(twice)} records accepted twice, e.g. {list(twice.items())[:3]}"
    # no confirmed ACCEPT is followed by a delivery of the same record
    acked_at = {k: t for m in workers for k, t in m.acked_at.items() if k in acks}
    after = [d for d in deliveries(workers) if d.at > acked_at.get(d.key, d.at)]
    assert not after, f"{len(after)} accepted records delivered again, e.g. {after[:3]}"
    lost = everything - set(acks) - _in_doubt(workers)
    assert not lost, f"{len(lost)} records never accepted, e.g. {sorted(lost)[:5]}"
    # the records the releaser held: delivered to a worker only after the restart, with their
    # persisted delivery count (1, from the RELEASE) + 1 = 2
    again = [d for d in deliveries(workers) if d.topic == side]
    assert {d.value for d in again} == held
    early = [d for d in again if d.at <= crashed_at]
    assert not early, f"records the releaser held went to a worker before the crash: {early[:3]}"
    assert {d.count for d in again} == {2}, sorted((d.value, d.count) for d in again)
    # the others with count 1, also those a worker had acquired and not acknowledged at the crash
    counts = {d.count for d in deliveries(workers) if d.topic == topic}
    assert counts == {1}, counts


def _in_doubt(members: list[ShareMember]) -> set[tuple[str, int, int]]:
    return {k for m in members for k, acks in m.in_doubt.items() if any(kind == ACCEPT for _, kind in acks)}
