"""A KIP-848 consumer group through a broker SIGKILL in the middle of a rebalance (the test control
plane's crash point `offsets.after_write`, docs/control-plane/crash-points.md): the consumer
group's records and the committed offsets are replayed at the restart, the members rejoin and the
group resumes from the committed offsets with nothing lost.

The crash comes at the first offset commit of the group once a second member has sent its
joining ConsumerGroupHeartbeat: the first member is revoking half its partitions then, and the
commit is written but never answered. A commit written before the crash counts, as in Kafka: the
record it covers is in neither member's `done` (its commit failed for the client), and nobody
reads it again.
"""

from __future__ import annotations

import contextlib
import http.client

import pytest

from minibroker.control.client import ControlError
from tests.acceptance.test_kip848_librdkafka import (
    KIP848,
    WAIT,
    Member,
    assert_each_record_once,
    committed_offsets,
    produce,
)
from tests.support.helpers import create_topic, unique_name, wait_until

PARTS = 4


@pytest.mark.timeout(300)
def test_group_resumes_from_committed_offsets_after_a_sigkill_mid_rebalance(broker_factory):
    b = broker_factory({**KIP848, "minibroker.control.port": 0})
    b.extra_args = ["--port", str(b.port)]  # come back on the address the clients know
    topic, group = unique_name("k848-crash"), unique_name("k848-crash-g")
    create_topic(b, topic, PARTS)
    first = [f"one-{i}" for i in range(4000)]
    produce(b.bootstrap, topic, first, PARTS)
    c1 = Member(b.bootstrap, group, [topic], "crash-c1").start()
    members = [c1]
    try:
        wait_until(lambda: len(c1.done) >= 40, WAIT, message="c1 consuming")
        joining = b.faults.observe(api="ConsumerGroupHeartbeat", client_id="crash-c2")
        c2 = Member(b.bootstrap, group, [topic], "crash-c2").start()
        members.append(c2)
        joining.wait(1, timeout=WAIT)  # c2's join is answered: the group is rebalancing
        committed_before = len(c1.done)
        # the next commit may kill the broker before it answers this
        with contextlib.suppress(ControlError, http.client.HTTPException, OSError):
            b.crash_at("offsets.after_write", key=group)
        assert b.wait_crashed(timeout=WAIT) == -9
        assert len(c1.done) < len(first), "c1 read everything before the crash"
        b.start()
        # the members rejoin the reloaded group and split the partitions; nothing is lost
        wait_until(
            lambda: (
                c1.assignment()
                and c2.assignment()
                and c1.assignment() | c2.assignment() == {(topic, p) for p in range(PARTS)}
            ),
            WAIT,
            message="both members own partitions after the restart",
        )
        second = [f"two-{i}" for i in range(80)]
        produce(b.bootstrap, topic, second, PARTS)
        expected = first + second

        def all_read() -> bool:
            read = {v for m in members for v in m.values()}
            return read | {r[3] for m in members for r in m.uncommitted} >= set(expected)

        wait_until(all_read, WAIT, message="every record consumed after the restart")
        assert len(c1.done) > committed_before or c2.done
    finally:
        for m in members:
            m.stop(check=False)
    assert not [m.name for m in members if m.running], "members did not close"
    # a record whose commit was written but not answered counts as committed: read by nobody
    # again; every other record was committed once by one member
    in_flight = {r[3] for m in members for r in m.uncommitted} - {v for m in members for v in m.values()}
    assert len(in_flight) <= 1, f"more than the crashed commit's record left uncommitted: {sorted(in_flight)}"
    assert_each_record_once(members, sorted(set(expected) - in_flight))
    assert committed_offsets(b.bootstrap, group, topic, PARTS) == {
        p: len(expected) // PARTS for p in range(PARTS)
    }
