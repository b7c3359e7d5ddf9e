"""Issue 24 part 3: a clock tests move (docs/control-plane/clock.md).

A broker started with `clock="manual"` stands still until `b.clock.advance(...)`, which answers
once everything that fell due has run: a stuck transaction is aborted (and its producer fenced)
after transaction.timeout.ms, a member that stopped heartbeating is removed after its session
timeout, segments go after retention.ms, idle producer ids after producer.id.expiration.ms and
transactional ids after transactional.id.expiration.ms; LogAppendTime stamps and time-based
ListOffsets follow the clock. None of these tests waits for the configured durations: every wait
is bounded and on a condition. `clock="offset"` moves with real time too; the system clock
refuses to be moved.
"""

from __future__ import annotations

import time

import pytest
from kafka.protocol.admin.groups import DescribeGroupsRequest, DescribeGroupsResponse
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

from minibroker.control import ControlError
from minibroker.testing import broker
from tests.acceptance.test_transactions_helpers import (
    NONE,
    TRANSACTIONAL_ID_NOT_FOUND,
    ck_producer,
    committed,
    markers,
    offsets,
    txn_wire,
    uid,
    uncommitted,
)
from tests.support.helpers import create_topic, wait_until
from tests.support.wire import WireClient, build_batch

pytestmark = pytest.mark.timeout(120)

WAIT = 20.0  # bound for any single wait
TXN_TIMEOUT_MS = 60_000  # a stuck transaction would block read_committed readers for a minute
SESSION_TIMEOUT_MS = 30_000
PRODUCER_ID_EXPIRATION_MS = 600_000
TXN_ID_EXPIRATION_MS = 3_600_000
SETTINGS = {
    "producer.id.expiration.ms": PRODUCER_ID_EXPIRATION_MS,
    "transactional.id.expiration.ms": TXN_ID_EXPIRATION_MS,
    "group.min.session.timeout.ms": 500,
}
SUBSCRIPTION = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"
EARLIEST, LATEST = -2, -1


@pytest.fixture(scope="module")
def manual():
    with broker(SETTINGS, clock="manual") as b:
        yield b


@pytest.fixture(scope="module")
def offset():
    with broker(SETTINGS, clock="offset") as b:
        yield b


@pytest.fixture(params=["manual", "offset"])
def moved(request):
    """A broker on each clock the control plane moves."""
    return request.getfixturevalue(request.param)


# ------------------------------------------------------------------------------- the clock itself
def test_manual_clock_stands_still_until_advanced(manual):
    info = manual.clock.info()
    assert info["mode"] == manual.clock.mode == "manual"
    time.sleep(0.05)  # real time passes; the clock does not (not a wait for a condition)
    assert manual.clock.now_ms() == info["wall_ms"]
    moved = manual.clock.advance(1.5)
    assert moved["wall_ms"] == info["wall_ms"] + 1500
    assert moved["offset_ms"] == info["offset_ms"] + 1500
    assert manual.clock.advance_ms(250)["wall_ms"] == info["wall_ms"] + 1750


def test_offset_clock_is_wall_time_plus_what_was_advanced(offset):
    before = offset.clock.info()
    assert before["mode"] == "offset"
    answer = offset.clock.advance(3600)
    assert answer["offset_ms"] == before["offset_ms"] + 3_600_000
    assert abs(answer["wall_ms"] - (time.time() * 1000 + answer["offset_ms"])) < 5_000
    first = offset.clock.now_ms()
    wait_until(lambda: offset.clock.now_ms() > first, WAIT, message="the offset clock to move by itself")


def test_advance_refuses_bad_input(manual):
    for body in ({"ms": -1}, {"seconds": -0.5}, {}, {"ms": 1, "seconds": 1}, {"ms": "soon"}):
        with pytest.raises(ControlError) as refused:
            manual.control.post("/v1/clock/advance", body)
        assert refused.value.status == 400, body


def test_the_system_clock_refuses_to_move():
    with broker(control=True) as b:
        assert b.clock.info() == {
            "mode": "system",
            "wall_ms": pytest.approx(time.time() * 1000, abs=5_000),
            "offset_ms": 0,
        }
        with pytest.raises(ControlError) as refused:
            b.clock.advance(61)
        assert refused.value.status == 409
        assert "system clock (minibroker.control.clock=system)" in refused.value.message


# ------------------------------------------------------------------------------- transactions
def test_stuck_transaction_is_aborted_after_its_timeout(moved):
    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    topic, txn_id = uid("stuck"), uid("stuck-job")
    create_topic(moved, topic, 1)
    p = ck_producer(moved, txn_id, **{"transaction.timeout.ms": TXN_TIMEOUT_MS})
    p.init_transactions(WAIT)
    p.begin_transaction()
    p.produce(topic, b"never committed", partition=0)
    assert p.flush(WAIT) == 0
    with txn_wire(moved) as w:
        before = w.describe_transaction(txn_id)
    assert before.transaction_state == "Ongoing"
    assert offsets(moved, topic)[:2] == (1, 0)  # read_committed readers are held at the LSO

    moved.clock.advance_ms(TXN_TIMEOUT_MS - 1000)  # not yet
    with txn_wire(moved) as w:
        assert w.describe_transaction(txn_id).transaction_state == "Ongoing"
    # Kafka aborts once txnStartTimestamp + transaction.timeout.ms < now (strictly)
    moved.clock.advance_ms(1001)

    # the advance answered after the abort and its markers were written: no waiting here
    with txn_wire(moved) as w:
        after = w.describe_transaction(txn_id)
    assert after.transaction_state == "CompleteAbort"
    assert after.producer_epoch == before.producer_epoch + 1  # bumped: the producer is fenced
    assert markers(moved, topic) == [(1, after.producer_id, "ABORT")]
    assert uncommitted(moved, topic) == [b"never committed"]
    high_watermark, lso, _ = offsets(moved, topic)
    assert high_watermark == lso == 2

    # a read_committed consumer reaches the end and sees none of it
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": moved.bootstrap,
            "group.id": uid("reader"),
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        seen = []

        def at_end():
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                seen.append(msg.value())
            return consumer.position([TopicPartition(topic, 0)])[0].offset >= high_watermark

        wait_until(at_end, WAIT, interval=0, message="the read_committed consumer at the end")
        assert seen == []
    finally:
        consumer.close()

    # the producer is fenced (or its epoch refused) on its next call, as with Kafka
    with pytest.raises(KafkaException) as fenced:
        p.produce(topic, b"too late", partition=0)
        p.flush(WAIT)
        p.commit_transaction(WAIT)
    error = fenced.value.args[0]
    assert (
        error.code()
        in (
            KafkaError._FENCED,
            KafkaError.PRODUCER_FENCED,
            KafkaError.INVALID_PRODUCER_EPOCH,
        )
        or "fenced" in error.str().lower()
    ), error
    assert committed(moved, topic) == []


def test_transactional_id_expires_after_its_expiration(manual):
    topic, txn_id = uid("expiring"), uid("expiring-id")
    create_topic(manual, topic, 1)
    p = ck_producer(manual, txn_id)
    p.init_transactions(WAIT)
    p.begin_transaction()
    p.produce(topic, b"done", partition=0)
    p.commit_transaction(WAIT)
    manual.clock.advance_ms(TXN_ID_EXPIRATION_MS - 1)
    with txn_wire(manual) as w:
        assert w.describe_transaction(txn_id).error_code == NONE
    manual.clock.advance_ms(1)  # Kafka: lastUpdate <= now - transactional.id.expiration.ms
    with txn_wire(manual) as w:
        assert w.describe_transaction(txn_id).error_code == TRANSACTIONAL_ID_NOT_FOUND
    assert committed(manual, topic) == [b"done"]


# ------------------------------------------------------------------------------- groups
def _join(c, group, member_id="", session_timeout_ms=SESSION_TIMEOUT_MS):
    P = JoinGroupRequest.JoinGroupRequestProtocol
    req = JoinGroupRequest(
        group_id=group,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=session_timeout_ms,
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[P(name="range", metadata=SUBSCRIPTION)],
    )
    return c.request(req, JoinGroupResponse, 5)


def _member(b, group, session_timeout_ms=SESSION_TIMEOUT_MS):
    """A raw JoinGroup/SyncGroup member, left to itself: (member id, its connection)."""
    c = WireClient.to(b, client_id="silent-member")
    r = _join(c, group, session_timeout_ms=session_timeout_ms)
    if r.error_code == 79:  # MEMBER_ID_REQUIRED
        r = _join(c, group, r.member_id, session_timeout_ms)
    assert r.error_code == NONE and r.leader == r.member_id
    A = SyncGroupRequest.SyncGroupRequestAssignment
    s = c.request(
        SyncGroupRequest(
            group_id=group,
            generation_id=r.generation_id,
            member_id=r.member_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[A(member_id=r.member_id, assignment=b"")],
        ),
        SyncGroupResponse,
        5,
    )
    assert s.error_code == NONE
    return r.member_id, r.generation_id, c


def _describe(b, group):
    with WireClient.to(b) as c:
        d = c.request(
            DescribeGroupsRequest(groups=[group], include_authorized_operations=False),
            DescribeGroupsResponse,
            5,
        )
    return d.groups[0].group_state, [m.member_id for m in d.groups[0].members]


def test_silent_member_is_removed_after_its_session_timeout(manual):
    group = uid("g")
    member, generation, c = _member(manual, group)
    try:
        assert _describe(manual, group) == ("Stable", [member])
        manual.clock.advance_ms(SESSION_TIMEOUT_MS - 10_000)
        heartbeat = c.request(
            HeartbeatRequest(group_id=group, generation_id=generation, member_id=member), HeartbeatResponse, 4
        )
        assert heartbeat.error_code == NONE  # still a member: its deadline moves from the clock's now
        manual.clock.advance_ms(SESSION_TIMEOUT_MS - 1)
        assert _describe(manual, group) == ("Stable", [member])
        manual.clock.advance_ms(1)  # now it has been silent for the whole session timeout
        state, members = _describe(manual, group)
        # Empty, and then gone (Dead) as the advance's pass of the offsets-expiration duty
        # deletes an empty group without committed offsets, as Kafka's does
        assert (state, members) == ("Dead", [])
        heartbeat = c.request(
            HeartbeatRequest(group_id=group, generation_id=generation, member_id=member), HeartbeatResponse, 4
        )
        assert heartbeat.error_code == 25  # UNKNOWN_MEMBER_ID
    finally:
        c.close()


def test_clients_keep_working_on_a_clock_that_stands_still(manual):
    """Groups form (the initial rebalance delay's few ms run on real time), long-poll Fetches
    return after their real max wait, commits land: a manual clock only holds back its rules."""
    from confluent_kafka import Consumer, Producer

    topic, group = uid("standing"), uid("g")
    create_topic(manual, topic, 2)
    before = manual.clock.now_ms()
    consumer = Consumer(
        {
            "bootstrap.servers": manual.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 500,
        }
    )
    try:
        consumer.subscribe([topic])
        p = Producer({"bootstrap.servers": manual.bootstrap, "linger.ms": 0})
        for i in range(4):
            p.produce(topic, b"v%d" % i, partition=i % 2)
        assert p.flush(WAIT) == 0
        seen = []

        def all_seen():
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                seen.append(msg.value())
            return len(seen) == 4

        wait_until(all_seen, WAIT, interval=0, message="the group formed and consumed")
        consumer.commit(asynchronous=False)
        assert _describe(manual, group)[0] == "Stable"
    finally:
        consumer.close()
    assert manual.clock.now_ms() == before


def test_offset_clock_expires_a_member_as_real_time_passes(offset):
    group = uid("g")
    member, _generation, c = _member(offset, group, session_timeout_ms=1000)
    try:
        wait_until(lambda: _describe(offset, group)[1] == [], WAIT, message="the member expired")
    finally:
        c.close()


# ------------------------------------------------------------------------------- storage
def test_retention_deletes_after_retention_ms(manual):
    topic = uid("retained")
    # LogAppendTime: the records carry the broker's clock (a client's CreateTime is its own real
    # time, ahead of a manual clock by however long the test has run)
    create_topic(manual, topic, 1, {"retention.ms": 60_000, "message.timestamp.type": "LogAppendTime"})
    with WireClient.to(manual) as c:
        for i in range(3):
            assert c.produce(topic, 0, build_batch([(None, f"v{i}".encode(), [])])).error_code == NONE
        assert c.list_offsets(topic, 0, EARLIEST).offset == 0
        manual.clock.advance(59)
        assert c.list_offsets(topic, 0, EARLIEST).offset == 0
        manual.clock.advance(2)  # Kafka deletes once now - largest timestamp > retention.ms
        assert c.list_offsets(topic, 0, EARLIEST).offset == 3
        assert c.list_offsets(topic, 0, LATEST).offset == 3


def test_log_append_time_and_timestamp_lookups_follow_the_clock(manual):
    topic = uid("stamped")
    create_topic(manual, topic, 1, {"message.timestamp.type": "LogAppendTime"})
    with WireClient.to(manual) as c:
        first = manual.clock.now_ms()
        assert c.produce(topic, 0, build_batch([(None, b"a", [])])).log_append_time_ms == first
        manual.clock.advance(10)
        assert c.produce(topic, 0, build_batch([(None, b"b", [])])).log_append_time_ms == first + 10_000
        assert c.list_offsets(topic, 0, first + 5_000).offset == 1
        assert c.list_offsets(topic, 0, first).offset == 0
        found = c.list_offsets(topic, 0, -3)  # MAX_TIMESTAMP
        assert (found.offset, found.timestamp) == (1, first + 10_000)


def test_producer_id_expires_after_its_expiration(manual):
    from confluent_kafka import Producer

    topic = uid("idempotent")
    create_topic(manual, topic, 1, {"message.timestamp.type": "LogAppendTime"})
    p = Producer({"bootstrap.servers": manual.bootstrap, "enable.idempotence": True, "linger.ms": 0})
    p.produce(topic, b"once", partition=0)
    assert p.flush(WAIT) == 0

    def producers():
        with txn_wire(manual) as w:
            return [s.producer_id for s in w.describe_producers(topic, [0])[0].active_producers]

    assert len(producers()) == 1
    manual.clock.advance_ms(PRODUCER_ID_EXPIRATION_MS - 1)
    assert len(producers()) == 1
    manual.clock.advance_ms(1)  # Kafka: now - last timestamp >= producer.id.expiration.ms
    assert producers() == []


def test_tombstones_go_after_delete_retention_ms():
    """The cleaner keeps a tombstone delete.retention.ms past the pass that first kept it (the
    horizon is stamped from the broker's clock, KIP-534); passes run on real time, so the test
    waits for them, and only the advance lets a pass drop the tombstone."""
    from tests.acceptance.test_compaction import cleaned, consume_all

    with broker({"log.segment.bytes": 2000, "log.cleaner.backoff.ms": 200}, clock="manual") as b:
        topic = uid("compacted")
        compact = {
            "cleanup.policy": "compact",
            "min.cleanable.dirty.ratio": 0.01,
            "delete.retention.ms": 60_000,
        }
        create_topic(b, topic, 1, compact)

        with WireClient.to(b) as c:

            def write(*records):
                for key, value in records:
                    assert c.produce(topic, 0, build_batch([(key, value, [])])).error_code == NONE

            def fill(tag):  # enough to roll segments, so the ones before become cleanable
                mark = b.log_size()
                write(*((f"{tag}-{i}".encode(), b"x" * 200) for i in range(20)))
                cleaned(b, topic, mark)

            def gone():
                return [(key, value) for _, key, value in consume_all(b.bootstrap, topic) if key == b"gone"]

            write((b"gone", b"value"), (b"gone", None))
            fill("a")
            wait_until(lambda: gone() == [(b"gone", None)], WAIT, message="the value compacted away")
            fill("b")  # another pass before delete.retention.ms: the tombstone stays
            assert gone() == [(b"gone", None)]
            b.clock.advance(61)
            fill("c")  # the next pass is past the horizon
            wait_until(lambda: gone() == [], WAIT, message="the tombstone removed")
