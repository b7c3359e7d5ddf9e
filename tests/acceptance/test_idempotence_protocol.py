"""Issue 3, protocol level: hand-crafted batches with chosen producer id / epoch / sequence over the
raw wire client, one assertion per rule of Kafka's ProducerAppendInfo.checkSequence /
checkProducerEpoch and the duplicate path; producer id allocation (durable, never reused); dedup
after SIGKILL + restart; expiry of idle producer state (producer.id.expiration.ms).

Batches are built by kafka-python's DefaultRecordBatchBuilder (tests/support/wire.build_batch), an
implementation independent of the broker's own protocol/records/; requests and responses
are encoded/decoded with kafka-python's schema classes."""

from __future__ import annotations

import time

import pytest
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.protocol.admin.transactions import DescribeProducersRequest, DescribeProducersResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from tests.support.helpers import admin_client, create_topic, unique_name, wait_until
from tests.support.wire import WireClient, build_batch, read_partition

NONE = 0
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47

INT32_MAX = 2**31 - 1
WINDOW = 5  # batches of metadata kept per producer and partition (Kafka: NUM_BATCHES_TO_RETAIN)


class IdemWire(WireClient):
    """WireClient + InitProducerId, DescribeProducers and idempotent produce of crafted batches."""

    def init_producer_id(self, version: int = 4):
        kw = {}
        if version >= 3:
            kw = dict(producer_id=-1, producer_epoch=-1)
        req = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000, **kw)
        return self.request(req, InitProducerIdResponse, version)

    def new_producer(self) -> int:
        r = self.init_producer_id()
        assert (r.error_code, r.producer_epoch) == (NONE, 0), r
        assert r.producer_id >= 0, r
        return r.producer_id

    def send(self, topic: str, partition: int, batch: bytes, version: int = 9):
        return self.produce(topic, partition, batch, version=version)

    def leo(self, topic: str, partition: int) -> int:
        r = self.list_offsets(topic, partition, -1)
        assert r.error_code == NONE, r
        return r.offset

    def producers(self, topic: str, partition: int) -> dict[int, tuple[int, int]]:
        """{producer_id: (epoch, last_sequence)} from DescribeProducers v0."""
        T = DescribeProducersRequest.TopicRequest
        req = DescribeProducersRequest(topics=[T(name=topic, partition_indexes=[partition])])
        resp = self.request(req, DescribeProducersResponse, 0)
        (t,) = resp.topics
        (p,) = t.partitions
        assert p.error_code == NONE, p
        return {s.producer_id: (s.producer_epoch, s.last_sequence) for s in p.active_producers}


def batch(pid: int, epoch: int, seq: int, n: int = 3, tag: str = "r", ts: int | None = None) -> bytes:
    """n records valued '<tag>-<seq + i>' (the sequence each record carries)."""
    return build_batch(
        [(None, f"{tag}-{seq + i}".encode(), []) for i in range(n)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        timestamp=ts,
    )


def values(c: WireClient, topic: str, partition: int = 0) -> list[bytes]:
    recs, _ = read_partition(c, topic, partition)
    return [r.value for r in recs]


def ok(resp, expected_base: int | None = None):
    assert resp.error_code == NONE, (
        f"expected NONE, got error {resp.error_code}: {getattr(resp, 'error_message', None)}"
    )
    if expected_base is not None:
        assert resp.base_offset == expected_base, f"base offset {resp.base_offset}, expected {expected_base}"
    return resp


def err(resp, code: int):
    assert resp.error_code == code, (
        f"expected error {code}, got {resp.error_code} (base offset {resp.base_offset}, "
        f"message {getattr(resp, 'error_message', None)!r})"
    )
    assert resp.base_offset == -1, f"rejected batch answered with base offset {resp.base_offset}"


@pytest.fixture
def topic(shared_broker):
    name = unique_name("idem")
    create_topic(shared_broker, name, 1)
    return name


@pytest.fixture
def wire(shared_broker):
    with IdemWire.to(shared_broker) as c:
        yield c


# ================================================================================ InitProducerId
def test_init_producer_id_without_txn_id_gives_distinct_ids_epoch_zero(shared_broker):
    seen = []
    for version in range(6):  # InitProducerId versions 0-5
        with IdemWire.to(shared_broker) as c:
            for _ in range(3):
                r = c.init_producer_id(version)
                assert r.error_code == NONE, f"v{version}: error {r.error_code}"
                assert r.producer_epoch == 0, f"v{version}: epoch {r.producer_epoch}"
                assert r.producer_id >= 0, f"v{version}: producer id {r.producer_id}"
                seen.append(r.producer_id)
    assert len(set(seen)) == len(seen), f"producer ids handed out twice: {sorted(seen)}"


def test_producer_ids_never_reused_across_restart_and_sigkill(broker):
    def allocate(n):
        with IdemWire.to(broker) as c:
            return [c.new_producer() for _ in range(n)]

    first = allocate(5)
    broker.restart()  # SIGTERM, clean
    second = allocate(5)
    broker.restart(kill=True)  # SIGKILL: no clean shutdown
    third = allocate(5)
    broker.restart(kill=True)  # killed again right after handing out ids
    fourth = allocate(1)
    all_ids = first + second + third + fourth
    assert len(set(all_ids)) == len(all_ids), (
        f"producer id reused across restarts: {first} | clean restart | {second} | SIGKILL | "
        f"{third} | SIGKILL | {fourth}"
    )


# ================================================================================ sequence rules
def test_in_sequence_batches_append_and_unknown_producer_accepts_any_sequence(wire, topic):
    pid = wire.new_producer()
    # a producer the partition has never seen: any first sequence is accepted (as Kafka does;
    # no UNKNOWN_PRODUCER_ID), then it must continue from there
    ok(wire.send(topic, 0, batch(pid, 0, 1000)), 0)
    ok(wire.send(topic, 0, batch(pid, 0, 1003, n=2)), 3)
    err(wire.send(topic, 0, batch(pid, 0, 1006)), OUT_OF_ORDER_SEQUENCE_NUMBER)  # 1005 expected
    # a producer id never handed out by InitProducerId is no different at the partition level
    stranger = 10**12 + (pid % 1000)
    ok(wire.send(topic, 0, batch(stranger, 3, 777_777, n=1)), 5)
    ok(wire.send(topic, 0, batch(stranger, 3, 777_778, n=1)), 6)
    assert wire.leo(topic, 0) == 7
    assert values(wire, topic) == [
        f"r-{s}".encode() for s in (1000, 1001, 1002, 1003, 1004, 777_777, 777_778)
    ]
    assert wire.producers(topic, 0) == {pid: (0, 1004), stranger: (3, 777_778)}


def test_exact_retry_of_each_of_last_five_batches_returns_original_offset(wire, topic):
    pid = wire.new_producer()
    sent = []  # (bytes, base offset)
    seq = 0
    for i in range(WINDOW + 2):  # 7 batches of 1..4 records
        n = 1 + i % 4
        b = batch(pid, 0, seq, n=n)
        r = ok(wire.send(topic, 0, b))
        sent.append((b, r.base_offset))
        seq += n
    leo = wire.leo(topic, 0)
    before = values(wire, topic)
    # every one of the last five, in any order, twice: the original base offset, nothing written
    for b, base in list(reversed(sent[-WINDOW:])) + sent[-WINDOW:]:
        ok(wire.send(topic, 0, b), base)
    assert wire.leo(topic, 0) == leo, "an exact retry appended records"
    assert values(wire, topic) == before
    # the state is undisturbed: the next sequence is still the one expected
    err(wire.send(topic, 0, batch(pid, 0, seq + 1)), OUT_OF_ORDER_SEQUENCE_NUMBER)
    ok(wire.send(topic, 0, batch(pid, 0, seq)), leo)


def test_exact_retry_returns_original_log_append_time(shared_broker, wire):
    topic = unique_name("idem-lat")
    create_topic(shared_broker, topic, 1, configs={"message.timestamp.type": "LogAppendTime"})
    pid = wire.new_producer()
    b0 = batch(pid, 0, 0, ts=1_000)
    r0 = ok(wire.send(topic, 0, b0), 0)
    assert r0.log_append_time_ms > 1_000, r0
    first_time = r0.log_append_time_ms
    wait_until(lambda: int(time.time() * 1000) > first_time + 5, 2, message="the clock to move on")
    r1 = ok(wire.send(topic, 0, b0), 0)
    assert r1.log_append_time_ms == first_time, (
        f"retry answered with append time {r1.log_append_time_ms}, original {first_time}"
    )
    assert wire.leo(topic, 0) == 3


def test_sequence_gap_is_out_of_order_and_changes_nothing(wire, topic):
    pid = wire.new_producer()
    ok(wire.send(topic, 0, batch(pid, 0, 0)), 0)  # seq 0..2
    for bad in (4, 5, 100, 2**28 + 3):  # 3 expected
        err(wire.send(topic, 0, batch(pid, 0, bad)), OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert wire.leo(topic, 0) == 3
    ok(wire.send(topic, 0, batch(pid, 0, 3)), 3)  # the rejected batches left no trace
    assert values(wire, topic) == [f"r-{s}".encode() for s in range(6)]


def test_older_batch_outside_window_is_out_of_order(wire, topic):
    pid = wire.new_producer()
    batches = [batch(pid, 0, 2 * i, n=2) for i in range(WINDOW + 1)]  # seq 0..11
    for i, b in enumerate(batches):
        ok(wire.send(topic, 0, b), 2 * i)
    leo = wire.leo(topic, 0)
    # batch 0 fell out of the window of five: it cannot be answered with its offset, and
    # Kafka 4 answers OUT_OF_ORDER_SEQUENCE_NUMBER (never DUPLICATE_SEQUENCE_NUMBER)
    err(wire.send(topic, 0, batches[0]), OUT_OF_ORDER_SEQUENCE_NUMBER)
    # batch 1 is still in the window
    ok(wire.send(topic, 0, batches[1]), 2)
    assert wire.leo(topic, 0) == leo
    # overlapping the last batch and extending past it (10-11 stored, 10-12 sent): refused,
    # so the extra record is never acknowledged without being written
    err(wire.send(topic, 0, batch(pid, 0, 10, n=3)), OUT_OF_ORDER_SEQUENCE_NUMBER)
    # a far jump ahead
    err(wire.send(topic, 0, batch(pid, 0, INT32_MAX, n=1)), OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert wire.leo(topic, 0) == leo
    # still in sequence afterwards
    ok(wire.send(topic, 0, batch(pid, 0, 12)), leo)


def test_epoch_rules(wire, topic):
    pid = wire.new_producer()
    old = batch(pid, 0, 0)
    ok(wire.send(topic, 0, old), 0)  # epoch 0, seq 0..2
    # a new epoch must start at sequence 0
    err(wire.send(topic, 0, batch(pid, 1, 3)), OUT_OF_ORDER_SEQUENCE_NUMBER)
    err(wire.send(topic, 0, batch(pid, 1, 1)), OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert wire.leo(topic, 0) == 3
    ok(wire.send(topic, 0, batch(pid, 1, 0, tag="e1")), 3)
    # the old epoch is fenced, a retry of its batch included (not deduplicated against epoch 1)
    err(wire.send(topic, 0, batch(pid, 0, 3)), INVALID_PRODUCER_EPOCH)
    err(wire.send(topic, 0, old), INVALID_PRODUCER_EPOCH)
    # epoch 1 continues from its own sequence 3; a jump of more than one epoch also starts at 0
    ok(wire.send(topic, 0, batch(pid, 1, 3, tag="e1")), 6)
    err(wire.send(topic, 0, batch(pid, 5, 6)), OUT_OF_ORDER_SEQUENCE_NUMBER)
    ok(wire.send(topic, 0, batch(pid, 5, 0, n=1, tag="e5")), 9)
    err(wire.send(topic, 0, batch(pid, 1, 6, tag="e1")), INVALID_PRODUCER_EPOCH)
    assert wire.leo(topic, 0) == 10
    assert wire.producers(topic, 0) == {pid: (5, 0)}


def test_sequence_wraps_at_int32_max(wire, topic):
    pid = wire.new_producer()
    b_end = batch(pid, 0, INT32_MAX - 2, n=3)  # ..MAX-2, MAX-1, MAX
    ok(wire.send(topic, 0, b_end), 0)
    err(wire.send(topic, 0, batch(pid, 0, 1, n=1)), OUT_OF_ORDER_SEQUENCE_NUMBER)  # 0 expected
    ok(wire.send(topic, 0, batch(pid, 0, 0, n=2)), 3)  # 0, 1

    # a batch that itself crosses the wrap: MAX-1, MAX, 0, 1 (last sequence 1)
    pid2 = wire.new_producer()
    b_cross = batch(pid2, 0, INT32_MAX - 1, n=4, tag="x")
    ok(wire.send(topic, 0, b_cross), 5)
    ok(wire.send(topic, 0, b_cross), 5)  # exact retry across the wrap: deduplicated
    err(wire.send(topic, 0, batch(pid2, 0, 3, n=1, tag="x")), OUT_OF_ORDER_SEQUENCE_NUMBER)
    ok(wire.send(topic, 0, batch(pid2, 0, 2, n=1, tag="x")), 9)
    assert wire.producers(topic, 0)[pid2] == (0, 2)

    # five more batches after the wrap push the wrapping batch out of the window; resent, it is
    # out of order (Kafka 4 has no DUPLICATE_SEQUENCE_NUMBER answer)
    seq = 2
    for _i in range(WINDOW):
        ok(wire.send(topic, 0, batch(pid, 0, seq, n=1)))
        seq += 1
    err(wire.send(topic, 0, b_end), OUT_OF_ORDER_SEQUENCE_NUMBER)
    leo = wire.leo(topic, 0)
    assert leo == 15
    recs = values(wire, topic)
    assert recs[:3] == [f"r-{s}".encode() for s in (INT32_MAX - 2, INT32_MAX - 1, INT32_MAX)]
    assert len(recs) == 15


def test_producers_are_independent_per_partition(shared_broker, wire):
    topic = unique_name("idem-parts")
    create_topic(shared_broker, topic, 2)
    pid = wire.new_producer()
    b = batch(pid, 0, 0)
    ok(wire.send(topic, 0, b), 0)
    # the same producer's sequence 0 on another partition is new data there, not a retry
    ok(wire.send(topic, 1, b), 0)
    ok(wire.send(topic, 1, batch(pid, 0, 3)), 3)
    ok(wire.send(topic, 0, b), 0)  # retry on partition 0 still answered from partition 0
    assert (wire.leo(topic, 0), wire.leo(topic, 1)) == (3, 6)


# ================================================================================ durability
def test_retry_deduplicated_after_sigkill_and_restart(broker_factory):
    """Dedup state comes back after kill -9 (log replay), after a clean restart (snapshot) and
    after a kill that follows a snapshot (snapshot + replay of the tail), also for a topic with
    small segments (snapshots at segment roll) and for LogAppendTime (original append time)."""
    plain = unique_name("idem-kill")
    small = unique_name("idem-kill-seg")
    lat = unique_name("idem-kill-lat")
    # Topics may not ask for segments under 1 MiB (Kafka 4): the small ones come from the
    # broker default, the others override it back to Kafka's 1 GiB.
    broker = broker_factory({"log.segment.bytes": 400})
    big = {"segment.bytes": 1 << 30}
    create_topic(broker, plain, 1, configs=big)
    create_topic(broker, small, 1)
    create_topic(broker, lat, 1, configs={**big, "message.timestamp.type": "LogAppendTime"})
    topics = (plain, small, lat)
    state = {t: {"sent": [], "seq": 0} for t in topics}
    with IdemWire.to(broker) as c:
        pid = c.new_producer()

    def write(n_batches):
        with IdemWire.to(broker) as c:
            for t in topics:
                st = state[t]
                for _ in range(n_batches):
                    b = batch(pid, 0, st["seq"], n=2, tag=t)
                    r = ok(c.send(t, 0, b))
                    st["sent"].append((b, r.base_offset, r.log_append_time_ms))
                    st["seq"] += 2

    def check(label):
        with IdemWire.to(broker) as c:
            for t in topics:
                st = state[t]
                leo = c.leo(t, 0)
                assert leo == 2 * len(st["sent"]), f"{label}: {t} log end {leo}"
                for b, base, append_time in st["sent"][-WINDOW:]:
                    r = c.send(t, 0, b)
                    assert r.error_code == NONE, (
                        f"{label}: {t}: retry of batch at {base}: error {r.error_code}"
                    )
                    assert r.base_offset == base, (
                        f"{label}: {t}: retry answered {r.base_offset}, original {base}"
                    )
                    if t == lat:
                        assert r.log_append_time_ms == append_time, (
                            f"{label}: retry append time {r.log_append_time_ms}, original {append_time}"
                        )
                assert c.leo(t, 0) == leo, f"{label}: {t}: a retry was appended after restart"
                # the state is really there (an unknown producer would accept any sequence)
                err(c.send(t, 0, batch(pid, 0, st["seq"] + 7, tag=t)), OUT_OF_ORDER_SEQUENCE_NUMBER)
                err(c.send(t, 0, st["sent"][-WINDOW - 1][0]), OUT_OF_ORDER_SEQUENCE_NUMBER)
                got = values(c, t)
                assert got == [f"{t}-{s}".encode() for s in range(st["seq"])], f"{label}: {t}: log content"

    write(WINDOW + 2)
    broker.restart(kill=True)
    check("after SIGKILL")
    write(3)
    broker.restart()  # clean: snapshot at the log end
    for t in topics:
        leo = 2 * len(state[t]["sent"])
        assert (broker.data_dir / f"{t}-0" / f"{leo:020d}.snapshot").exists(), (
            f"{t}: no producer snapshot at the log end ({leo}) after a clean shutdown: "
            f"{sorted(p.name for p in (broker.data_dir / f'{t}-0').iterdir())}"
        )
    check("after clean restart")
    write(4)
    broker.restart(kill=True)  # snapshot + 4 batches to replay
    check("after snapshot, more appends and SIGKILL")
    snapshots = sorted(p.name for p in broker.data_dir.glob(f"{small}-0/*.snapshot"))
    segments = sorted(p.name for p in broker.data_dir.glob(f"{small}-0/*.log"))
    assert len(segments) > 3, f"segment.bytes=400 did not roll segments: {segments}"
    assert snapshots, "no producer snapshot written at segment roll / clean shutdown"


# ================================================================================ expiry
def test_idle_producer_state_expires_after_producer_id_expiration_ms(broker_factory):
    expiration_ms = 3000
    b = broker_factory(
        {"producer.id.expiration.ms": expiration_ms, "producer.id.expiration.check.interval.ms": 500}
    )
    topic = unique_name("idem-expire")
    create_topic(b, topic, 1)
    with IdemWire.to(b) as c:
        pid = c.new_producer()
        ok(c.send(topic, 0, batch(pid, 0, 0)), 0)
        written = time.monotonic()
        # fresh state: a gap is rejected
        err(c.send(topic, 0, batch(pid, 0, 10)), OUT_OF_ORDER_SEQUENCE_NUMBER)
        assert c.producers(topic, 0) == {pid: (0, 2)}

        wait_until(
            lambda: pid not in c.producers(topic, 0),
            expiration_ms / 1000 + 5,
            interval=0.1,
            message="producer state to expire",
        )
        idle = time.monotonic() - written
        assert idle >= expiration_ms / 1000 - 0.2, (
            f"producer state expired after {idle:.2f}s, before {expiration_ms} ms"
        )
        # expired: the producer is unknown again, so the formerly out-of-order sequence is accepted
        ok(c.send(topic, 0, batch(pid, 0, 10)), 3)
        ok(c.send(topic, 0, batch(pid, 0, 13)), 6)
        err(c.send(topic, 0, batch(pid, 0, 20)), OUT_OF_ORDER_SEQUENCE_NUMBER)


def test_default_expiration_is_one_day_and_idle_state_survives(broker_factory):
    # default producer.id.expiration.ms; the expiry duty runs every 200 ms so an idle period of a
    # few of its runs would expose an expiry measured in seconds/minutes instead of a day
    b = broker_factory({"producer.id.expiration.check.interval.ms": 200})
    admin = admin_client(b.bootstrap)
    try:
        res = ConfigResource(ConfigResourceType.BROKER, "1")
        cfg = admin.describe_configs([res], config_filter="all")["broker"]["1"]
    finally:
        admin.close()
    assert cfg["producer.id.expiration.ms"]["value"] == "86400000", cfg.get("producer.id.expiration.ms")
    assert cfg["producer.id.expiration.check.interval.ms"]["value"] == "200"

    topic = unique_name("idem-idle")
    create_topic(b, topic, 1)
    with IdemWire.to(b) as c:
        pid = c.new_producer()
        b0 = batch(pid, 0, 0)
        ok(c.send(topic, 0, b0), 0)
        idle_until = time.monotonic() + 1.5  # the idle period under test (7 expiry runs)
        wait_until(lambda: time.monotonic() >= idle_until, 3, message="the idle period")
        assert c.producers(topic, 0) == {pid: (0, 2)}
        ok(c.send(topic, 0, b0), 0)  # still deduplicated
        err(c.send(topic, 0, batch(pid, 0, 10)), OUT_OF_ORDER_SEQUENCE_NUMBER)
        ok(c.send(topic, 0, batch(pid, 0, 3)), 3)


def test_rebuilt_state_does_not_expire_early_for_old_record_timestamps(broker_factory):
    """Live, a producer's idle time counts from when the broker appended its batch. The state
    rebuilt after SIGKILL must not count from the records' own CreateTime instead: a producer
    writing event-time timestamps two days old (backfill, mirroring) would otherwise lose its
    dedup state at the first expiry run after a restart, and its retry would be appended again."""
    b = broker_factory({"producer.id.expiration.check.interval.ms": 200})
    topic = unique_name("idem-oldts")
    create_topic(b, topic, 1)
    two_days_ago = int(time.time() * 1000) - 2 * 86_400_000
    with IdemWire.to(b) as c:
        pid = c.new_producer()
        b0 = batch(pid, 0, 0, ts=two_days_ago)
        ok(c.send(topic, 0, b0), 0)
    b.restart(kill=True)
    with IdemWire.to(b) as c:
        assert c.producers(topic, 0).get(pid) == (0, 2), "state not rebuilt after SIGKILL"
        idle_until = time.monotonic() + 1.0  # five expiry runs
        wait_until(lambda: time.monotonic() >= idle_until, 3, message="the idle period")
        assert c.producers(topic, 0).get(pid) == (0, 2), (
            "producer state rebuilt after SIGKILL expired within a second: its idle time was "
            "counted from the records' CreateTime (two days ago), not from when they were appended"
        )
        ok(c.send(topic, 0, b0), 0)  # the retry is still deduplicated
        assert c.leo(topic, 0) == 3


def test_exact_retry_on_create_time_topic_answers_the_batch_timestamp(wire, topic):
    """Kafka 4.4 answers a duplicate with the cached batch's timestamp as log_append_time even
    on a CreateTime topic (the first append answers -1); found by `make conformance`."""
    pid = wire.new_producer()
    b0 = batch(pid, 0, 0, ts=1_700_000_000_000)
    assert ok(wire.send(topic, 0, b0), 0).log_append_time_ms == -1
    assert ok(wire.send(topic, 0, b0), 0).log_append_time_ms == 1_700_000_000_000
