"""Issue 26, KIP-932 share groups with the Java kafka-clients 4.4.0 KafkaShareConsumer and Admin:
three consumers of a two-partition topic accept 10,000 records exactly once (explicit and
implicit acknowledgement), RELEASE redelivers with delivery count 2, REJECT archives, the
delivery-count limit archives, a consumer killed (or hung) with records acquired has them
redelivered to the others, and the Admin share-group calls (describeShareGroups,
listShareGroupOffsets, listGroups(SHARE), alterShareGroupOffsets, deleteShareGroupOffsets,
deleteShareGroups).

The Java side is jvm/clients/src/main/java/minibroker/ShareCheck.java (compiled by `make jvm`).
Every scenario first sets the group config share.auto.offset.reset=earliest (Kafka's default is
latest). Both brokers get the same lowered group.share.* timings (Kafka's property names and
bounds): heartbeats every 500 ms, each change assigned at once, record locks allowed down to 1 s
(the hung-consumer test sets the group's share.record.lock.duration.ms to 2 s).

The same expectations hold against Apache Kafka 4.4 itself: with MINIBROKER_SHARE_REFERENCE=1
every test also runs against the reference Kafka of conformance/reference_kafka.py (the
`[kafka]` parameter; skipped otherwise, it costs a Kafka start)."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import time

import pytest

from conformance.reference_kafka import ReferenceKafka
from tests.support.broker import BrokerFactory
from tests.support.helpers import unique_name
from tests.support.java import java_command, parse_result

JAVA_TIMEOUT = 240
VERSION = "4.4.0"
#: Kafka's group.share.* properties, lowered (within Kafka's own bounds) for fast tests
SHARE_TIMINGS = {
    "group.share.min.heartbeat.interval.ms": 100,
    "group.share.heartbeat.interval.ms": 500,
    "group.share.min.session.timeout.ms": 1000,
    "group.share.session.timeout.ms": 10000,
    "group.share.assignment.interval.ms": 0,
    "group.share.min.record.lock.duration.ms": 1000,
}
#: minibroker serves share groups at share.version 1 (not yet finalized by default)
MINIBROKER_ONLY = {"minibroker.features": "share.version=1"}
LOCK_MS = 2000

pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)"),
]


class _Reference:
    """The reference Kafka as the tests see a broker: its bootstrap address."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap


@pytest.fixture(scope="module", params=["minibroker", "kafka"])
def share_broker(request, tmp_path_factory):
    """One broker for the module (tests use unique names): minibroker, or the reference Kafka 4.4
    when MINIBROKER_SHARE_REFERENCE=1 (or the host:port of one already running with SHARE_TIMINGS)."""
    if request.param == "kafka":
        reference = os.environ.get("MINIBROKER_SHARE_REFERENCE", "")
        if not reference:
            pytest.skip("the reference Kafka run is opt-in: MINIBROKER_SHARE_REFERENCE=1")
        if reference != "1":  # host:port of a reference Kafka already running with SHARE_TIMINGS
            yield _Reference(reference)
            return
        kafka = ReferenceKafka(tmp_path_factory.mktemp("kafka"), SHARE_TIMINGS)
        kafka.start()
        try:
            yield _Reference(f"127.0.0.1:{kafka.port}")
        finally:
            if request.session.testsfailed:
                print(kafka.log_tail(80))
            kafka.stop()
        return
    factory = BrokerFactory(tmp_path_factory.mktemp("share"))
    broker = factory({**SHARE_TIMINGS, **MINIBROKER_ONLY})
    yield broker
    factory.teardown(request.session.testsfailed > 0)


def run_check(broker, scenario: str, name: str, *extra: str) -> dict[str, str]:
    args = (broker.bootstrap, scenario, name, *extra)
    proc = subprocess.run(
        java_command("ShareCheck", VERSION, *args), capture_output=True, text=True, timeout=JAVA_TIMEOUT
    )
    # (the broker's log tail is printed by the fixture's teardown after a failure)
    assert proc.returncode == 0, f"ShareCheck {args} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return parse_result(proc.stdout)


def assert_nothing_left(offsets: str, ends: dict[int, int]) -> None:
    """listShareGroupOffsets ("partition=startOffset/lag,...") once every record was accepted or
    archived: each partition with lag 0. The start offset is the one last persisted, which Kafka
    moves with the next state write after the acknowledgement that completes a prefix, so it may
    still be below the end (the lag counts the records acknowledged above it as delivered)."""
    got = {int(p): tuple(map(int, v.split("/"))) for p, v in (i.split("=") for i in offsets.split(","))}
    assert set(got) == set(ends), offsets
    for p, (start, lag) in got.items():
        assert lag == 0 and 0 <= start <= ends[p], offsets


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["explicit", "implicit"])
def test_three_consumers_accept_every_record_exactly_once(share_broker, mode):
    n = 10_000
    result = run_check(share_broker, "consume", unique_name(f"share-{mode}"), mode, str(n))
    result.pop("consumers_with_records")  # how the records spread over the three is the broker's choice
    assert_nothing_left(result.pop("offsets"), {0: n // 2, 1: n // 2})
    assert result == {
        "sent": str(n),
        "delivered": str(n),  # no record delivered twice (locks last 30 s, nothing released)
        "distinct": str(n),
        "accepted": str(n),  # each acknowledged as ACCEPT and confirmed by the broker ...
        "accepted_twice": "0",  # ... once
        "lost": "0",
        "ack_errors": "0",
        # describeShareGroups once the three were in: every member assigned (partitions are shared)
        "state": "STABLE",
        "members": "3",
        "assigned_partitions": "[0,1]",
        # listGroups(ListGroupsOptions.forShareGroups()): GroupType.SHARE / GroupState.EMPTY
        "listed": "Share/Empty",
    }


@pytest.mark.timeout(180)
def test_released_record_is_delivered_again_with_delivery_count_2(share_broker):
    """RELEASE of record 0 at its first delivery: it comes again (to the same consumer, alone in
    the group) with deliveryCount 2 and is then accepted."""
    result = run_check(share_broker, "release", unique_name("share-release"))
    assert_nothing_left(result.pop("offsets"), {0: 10})
    assert result == {"counts": "[1,2]", "accepted": "10", "accepted_twice": "0", "delivered": "11"}


@pytest.mark.timeout(180)
def test_rejected_record_is_archived_never_delivered_again(share_broker):
    result = run_check(share_broker, "reject", unique_name("share-reject"))
    assert_nothing_left(result.pop("offsets"), {0: 20})  # the rejected record counts as done
    assert result == {
        "rejected": "0:0",
        "counts": "[1]",  # delivered once, never again (also not after 10 more records)
        "rejected_accepted": "false",
        "accepted": "19",
        "accepted_twice": "0",
        "delivered": "20",
    }


@pytest.mark.timeout(180)
def test_delivery_count_limit_archives_the_record(share_broker):
    """share.delivery.count.limit=2 (group config): record 0, released at each delivery, comes
    twice and is then archived."""
    result = run_check(share_broker, "limit", unique_name("share-limit"))
    assert_nothing_left(result.pop("offsets"), {0: 10})  # record 0, archived, counts as done
    assert result == {
        "counts": "[1,2]",
        "accepted": "9",
        "accepted_twice": "0",
        "delivered": "11",
    }


def _start_holder(broker, name: str, n: int) -> tuple[subprocess.Popen, int, list[str]]:
    """ShareCheck hold: it acquires records and keeps them unacknowledged. Returns the process,
    when it got them (epoch ms) and what it got ("partition:offset/deliveryCount")."""
    proc = subprocess.Popen(
        java_command("ShareCheck", VERSION, broker.bootstrap, "hold", name, str(n), str(LOCK_MS)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    line = ""
    while not line.startswith("ACQUIRED "):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or proc.poll() is not None:
            proc.kill()
            out, err = proc.communicate(timeout=30)
            raise AssertionError(f"the holder acquired nothing:\n{out}\n{err[-4000:]}")
        ready, _, _ = select.select([proc.stdout], [], [], min(remaining, 1.0))
        if ready:
            line = proc.stdout.readline()
    fields = dict(item.split("=", 1) for item in line.split()[1:])
    return proc, int(fields["at_ms"]), fields["records"].split(",")


def redelivered_counts(text: str) -> dict[str, list[int]]:
    """drain's "partition:offset/deliveryCount,..." (deliveries with a count above 1) by record."""
    out: dict[str, list[int]] = {}
    for item in text.split(",") if text != "none" else []:
        key, count = item.split("/")
        out.setdefault(key, []).append(int(count))
    return out


def assert_held_came_back(held: list[str], redelivered: dict[str, list[int]]) -> None:
    """Every record the holder got (delivery count 1) reached the others again, counted as a
    redelivery (2 when nothing else happened; a count of 3 can come from the Java client alone: a
    consumer whose assignment changes as the others join releases the records it fetched ahead
    for the partition it loses, before its application saw them)."""
    assert held and all(h.endswith("/1") for h in held), held
    for h in held:
        key = h.rsplit("/", 1)[0]
        assert key in redelivered, (h, redelivered)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=30)


@pytest.mark.timeout(240)
def test_killed_consumer_records_are_redelivered_to_the_others(share_broker):
    """SIGKILL of a consumer holding acquired records: the two others get every record, those it
    held again (delivery count 2, see assert_held_came_back). (Kafka releases them when the
    connection closes, before the lock would expire.)"""
    n, name = 200, unique_name("share-kill")
    holder, _, held = _start_holder(share_broker, name, n)
    holder.kill()
    _stop(holder)
    result = run_check(share_broker, "drain", name, str(n))
    redelivered = redelivered_counts(result.pop("redelivered"))
    result.pop("first_redelivery_ms")
    result.pop("polled")
    assert result == {"accepted": str(n), "accepted_twice": "0", "lost": "0"}
    assert_held_came_back(held, redelivered)


@pytest.mark.timeout(240)
def test_hung_consumer_records_are_redelivered_after_the_lock_duration(share_broker):
    """A consumer frozen (SIGSTOP: its connection stays open, it neither heartbeats nor fetches)
    while holding records: they come back to the others when their acquisition lock (the group's
    share.record.lock.duration.ms, 2 s) expires, delivered again (delivery count 2 or more). (Frozen
    rather than merely not polling: the client's background thread could otherwise fetch the
    expired records again itself.)"""
    n, name = 200, unique_name("share-hung")
    holder, acquired_ms, held = _start_holder(share_broker, name, n)
    holder.send_signal(signal.SIGSTOP)
    try:
        result = run_check(share_broker, "drain", name, str(n))
    finally:
        _stop(holder)
    redelivered = redelivered_counts(result.pop("redelivered"))
    first = int(result.pop("first_redelivery_ms"))
    result.pop("polled")
    assert result == {"accepted": str(n), "accepted_twice": "0", "lost": "0"}
    assert_held_came_back(held, redelivered)
    # not before the lock expired (the broker took the lock a little before the holder saw the
    # records, hence the margin)
    assert first - acquired_ms >= LOCK_MS - 250, (first, acquired_ms)


@pytest.mark.timeout(240)
def test_admin_share_group_calls(share_broker):
    result = run_check(share_broker, "admin", unique_name("share-admin"))
    assert_nothing_left(result.pop("offsets_consumed"), {0: 10})
    assert result == {
        "describe_unknown": "GroupIdNotFoundException",
        "active_state": "STABLE",
        "active_members": "1",
        "alter_active": "GroupNotEmptyException",
        "delete_active": "GroupNotEmptyException",
        "listed": "Share/Empty",
        "offsets_altered": "0=4/6",
        "after_alter": "[0:4,0:5,0:6,0:7,0:8,0:9]",
        "offsets_deleted": "none",
        "after_delete": "10",  # read again from the start (share.auto.offset.reset=earliest)
        "after_delete_counts": "[1]",
        "listed_after_delete": "absent",
        "describe_deleted": "GroupIdNotFoundException",
    }
