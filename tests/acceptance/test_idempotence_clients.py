"""Issue 3 with real clients: librdkafka (confluent-kafka), kafka-python and aiokafka idempotent
producers send numbered records through a fault-injecting Kafka proxy (tests/support/proxy.py):

* mode A: every n-th Produce is written by the broker but its response is swallowed and the
  connection dropped, so the client retries batches the broker already has;
* mode B: responses to Produce requests are held back (in order), with up to five in flight;
* SIGKILL: the broker is killed -9 in the middle of the stream and restarted on the same port.

The broker advertises the proxy (advertised.listeners), so clients never bypass it. Records are
read back directly from the broker (not through the proxy) with the raw wire client, which also
checks CRCs and offset contiguity. Asserted: zero duplicates, zero gaps, per-partition send order,
and each offset a client was told is the offset of that very record.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

import pytest

from tests.support.broker import BrokerProcess
from tests.support.helpers import create_topic, unique_name, wait_until
from tests.support.proxy import KafkaFaultProxy, free_port, wait_port_closed
from tests.support.wire import WireClient, build_batch, build_produce_request, read_partition

PARTITIONS = 3
RECORDS = 15_000
RUN_TIMEOUT = 60.0  # bound for one producer run
PAD = b"." * 24  # small records, ~40 bytes each


# ------------------------------------------------------------------------------ environment
@dataclass
class Setup:
    broker: BrokerProcess
    proxy: KafkaFaultProxy
    port: int  # the broker's real listening port (clients only know the proxy)

    @property
    def direct(self) -> tuple[str, int]:
        return "127.0.0.1", self.port

    def wire(self) -> WireClient:
        return WireClient(*self.direct)


@pytest.fixture
def proxy():
    p = KafkaFaultProxy(lifetime=150).start()
    yield p
    p.stop()


@pytest.fixture
def setup(broker_factory, proxy) -> Setup:
    port = free_port()
    broker = broker_factory(
        {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"}, extra_args=["--port", str(port)]
    )
    proxy.set_upstream("127.0.0.1", port)
    return Setup(broker, proxy, port)


def make_topic(s: Setup, prefix: str) -> str:
    name = unique_name(prefix)
    create_topic(s.broker, name, PARTITIONS)
    return name


# ------------------------------------------------------------------------------ producer runs
@dataclass
class Run:
    """One producer's stream: record i (value b'<tag>:<i>') goes to partition i % PARTITIONS."""

    client: str
    topic: str
    n: int
    tag: str = field(default_factory=lambda: unique_name("n"))
    delivered: dict = field(default_factory=dict)  # i -> (partition, offset) as reported
    failed: dict = field(default_factory=dict)  # i -> error text
    fatal: list = field(default_factory=list)  # client-level errors
    done: threading.Event = field(default_factory=threading.Event)
    exc: BaseException | None = None

    def value(self, i: int) -> bytes:
        return f"{self.tag}:{i}:".encode() + PAD

    def number(self, value: bytes) -> int:
        tag, i, _ = value.split(b":", 2)
        assert tag.decode() == self.tag, f"foreign record {value!r}"
        return int(i)

    @property
    def acked(self) -> int:
        return len(self.delivered)


def _ck(run: Run, bootstrap: str) -> None:
    from confluent_kafka import KafkaError, Producer

    def on_error(e):
        if e.fatal() or e.code() not in (
            KafkaError._TRANSPORT,
            KafkaError._ALL_BROKERS_DOWN,
            KafkaError._RESOLVE,
            KafkaError._TIMED_OUT,
        ):
            run.fatal.append(str(e))

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "idem-ck",
            "enable.idempotence": True,
            "max.in.flight.requests.per.connection": 5,
            "acks": "all",
            "linger.ms": 2,
            "batch.num.messages": 50,
            "message.timeout.ms": 45000,
            "retry.backoff.ms": 50,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 300,
            "socket.timeout.ms": 10000,
            "request.timeout.ms": 10000,
            "error_cb": on_error,
            "log_level": 3,
        }
    )

    def cb(i):
        def done(err, msg):
            if err is None:
                run.delivered[i] = (msg.partition(), msg.offset())
            else:
                run.failed[i] = str(err)

        return done

    deadline = time.monotonic() + RUN_TIMEOUT
    for i in range(run.n):
        while True:
            try:
                p.produce(run.topic, value=run.value(i), partition=i % PARTITIONS, on_delivery=cb(i))
                break
            except BufferError:
                assert time.monotonic() < deadline, "librdkafka queue full for too long"
                p.poll(0.05)
        p.poll(0)
    left = p.flush(max(1.0, deadline - time.monotonic()))
    assert left == 0, f"librdkafka: {left} records neither delivered nor failed in time"


def _kp(run: Run, bootstrap: str) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(
        bootstrap_servers=bootstrap,
        client_id="idem-kp",
        enable_idempotence=True,
        acks="all",
        max_in_flight_requests_per_connection=5,
        linger_ms=2,
        batch_size=2048,
        request_timeout_ms=10000,
        retry_backoff_ms=50,
        reconnect_backoff_ms=50,
        reconnect_backoff_max_ms=300,
        delivery_timeout_ms=45000,
        max_block_ms=20000,
    )
    try:
        for i in range(run.n):
            f = p.send(run.topic, value=run.value(i), partition=i % PARTITIONS)
            f.add_callback(lambda md, i=i: run.delivered.__setitem__(i, (md.partition, md.offset)))
            f.add_errback(lambda e, i=i: run.failed.__setitem__(i, repr(e)))
        p.flush(timeout=RUN_TIMEOUT)
    finally:
        p.close(timeout=5)


def _aio(run: Run, bootstrap: str) -> None:
    from aiokafka import AIOKafkaProducer

    async def main():
        p = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            client_id="idem-aio",
            enable_idempotence=True,
            acks="all",
            linger_ms=2,
            max_batch_size=2048,
            request_timeout_ms=10000,
            retry_backoff_ms=50,
        )
        await p.start()
        try:
            futs = []
            for i in range(run.n):
                fut = await p.send(run.topic, value=run.value(i), partition=i % PARTITIONS)

                def done(f, i=i):
                    if f.cancelled():
                        run.failed[i] = "cancelled"
                    elif f.exception() is not None:
                        run.failed[i] = repr(f.exception())
                    else:
                        md = f.result()
                        run.delivered[i] = (md.partition, md.offset)

                fut.add_done_callback(done)
                futs.append(fut)
            await asyncio.wait_for(asyncio.gather(*futs, return_exceptions=True), RUN_TIMEOUT)
        finally:
            await asyncio.wait_for(p.stop(), 10)

    asyncio.run(main())


RUNNERS = {"librdkafka": _ck, "kafka-python": _kp, "aiokafka": _aio}


def start_run(client: str, topic: str, bootstrap: str, n: int = RECORDS) -> tuple[Run, threading.Thread]:
    run = Run(client, topic, n)

    def target():
        try:
            RUNNERS[client](run, bootstrap)
        except BaseException as exc:  # noqa: BLE001 - reported by finish_run
            run.exc = exc
        finally:
            run.done.set()

    t = threading.Thread(target=target, name=f"producer-{client}", daemon=True)
    t.start()
    return run, t


def finish_run(run: Run, thread: threading.Thread, timeout: float = RUN_TIMEOUT + 20) -> None:
    thread.join(timeout)
    assert not thread.is_alive(), (
        f"{run.client}: producer did not finish within {timeout}s ({run.acked} acked)"
    )
    if run.exc is not None:
        raise AssertionError(f"{run.client}: producer raised {run.exc!r}") from run.exc


# ------------------------------------------------------------------------------ verification
def read_back(s: Setup, run: Run) -> dict[int, list[tuple[int, int]]]:
    """{partition: [(offset, record number)]} read directly from the broker."""
    out = {}
    with s.wire() as c:
        for p in range(PARTITIONS):
            recs, hw = read_partition(c, run.topic, p, timeout=30)
            assert len(recs) == hw, f"partition {p}: {len(recs)} records below high watermark {hw}"
            out[p] = [(r.offset, run.number(r.value)) for r in recs]
    return out


def verify(s: Setup, run: Run, *, all_delivered: bool = True) -> dict[int, list[tuple[int, int]]]:
    log = read_back(s, run)
    problems = []
    present: dict[int, tuple[int, int]] = {}
    for p, rows in log.items():
        nums = [n for _, n in rows]
        dups = len(nums) - len(set(nums))
        if dups:
            seen, first = set(), None
            for off, n in rows:
                if n in seen:
                    first = (off, n)
                    break
                seen.add(n)
            problems.append(
                f"partition {p}: {dups} duplicate records (first: record {first[1]} again at offset "
                f"{first[0]})"
            )
        wrong = [n for n in nums if n % PARTITIONS != p]
        if wrong:
            problems.append(f"partition {p}: records of other partitions: {wrong[:5]}")
        back = next((k for k in range(1, len(nums)) if nums[k] <= nums[k - 1]), None)
        if back is not None:
            problems.append(
                f"partition {p}: order broken at offset {rows[back][0]}: record {nums[back]} "
                f"after {nums[back - 1]}"
            )
        for off, n in rows:
            present.setdefault(n, (p, off))
    missing = sorted(i for i in run.delivered if i not in present)
    if missing:
        problems.append(f"{len(missing)} records reported delivered are not in the log, first {missing[:5]}")
    wrong_offsets = [
        (i, po, present.get(i))
        for i, po in run.delivered.items()
        if po[1] >= 0 and present.get(i) != po and i in present
    ]
    if wrong_offsets:
        problems.append(
            f"{len(wrong_offsets)} records reported at an offset holding another record, first "
            f"(record, reported, actual): {sorted(wrong_offsets)[:3]}"
        )
    if all_delivered:
        if run.failed:
            problems.append(f"{len(run.failed)} delivery failures, first: {sorted(run.failed.items())[:2]}")
        if run.fatal:
            problems.append(f"client errors: {run.fatal[:3]}")
        gaps = sorted(set(range(run.n)) - set(present))
        if gaps:
            problems.append(f"{len(gaps)} records never written (gaps), first {gaps[:5]}")
        if run.acked != run.n:
            problems.append(f"only {run.acked} of {run.n} records reported delivered")
    assert not problems, f"{run.client}: " + "; ".join(problems) + f"\n{s.proxy.summary()}"
    return log


# ------------------------------------------------------------------------------ the proxy itself
def test_proxy_drop_mode_loses_response_after_broker_wrote(setup):
    """The harness does what it claims: in mode A the broker appends the batch, the client gets
    no response and a closed connection; an exact retry is then answered with the original
    offset (no second copy)."""
    s = setup
    topic = make_topic(s, "idem-proxy")
    b = build_batch([(None, b"once", [])], producer_id=123_456_789, producer_epoch=0, base_sequence=0)
    s.proxy.drop_every(1)
    with WireClient(*s.proxy.address) as c:
        c.send_request(build_produce_request(topic, 0, b), 9)
        got = c.wait_closed(timeout=5)
        assert got == b"", f"the proxy let {len(got)} response bytes through in drop mode"
    assert s.proxy.stats.dropped_responses == 1
    with s.wire() as c:
        assert c.list_offsets(topic, 0, -1).offset == 1, "the broker did not write the batch"
    s.proxy.passthrough()
    with WireClient(*s.proxy.address) as c:
        r = c.produce(topic, 0, b)
        assert (r.error_code, r.base_offset) == (0, 0)
    with s.wire() as c:
        assert c.list_offsets(topic, 0, -1).offset == 1, "the retry was appended again"
    assert s.proxy.retransmitted_batches == 1
    assert not s.proxy.stats.errors, s.proxy.stats.errors


def test_port_file_holds_bound_port_with_advertised_listeners(broker_factory):
    """--port-file must name the port the broker is bound to (the CLI help: 'write the bound
    port here'), also when advertised.listeners names another address (a proxy, a NAT)."""
    port = free_port()
    advertised = free_port()
    b = broker_factory(
        {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{advertised}"}, extra_args=["--port", str(port)]
    )
    with WireClient("127.0.0.1", port) as c:
        md = c.metadata([])
    assert [(x.host, x.port) for x in md.brokers] == [("127.0.0.1", advertised)]
    assert b.port_file.read_text() == f"{port}\n", (
        f"port file says {b.port_file.read_text()!r}; the broker is bound to {port} (advertised {advertised})"
    )


# ------------------------------------------------------------------------------ clients
CLIENTS = list(RUNNERS)


@pytest.mark.parametrize("client", CLIENTS)
def test_dropped_produce_responses_no_duplicates_no_gaps(setup, client):
    """Mode A: every 9th Produce is written but its response is lost with the connection; the
    client resends those batches (and whatever else was in flight) and the broker answers them
    from its window of five instead of appending them again."""
    s = setup
    topic = make_topic(s, f"idem-drop-{client}")
    s.proxy.drop_every(9)
    run, t = start_run(client, topic, s.proxy.bootstrap)
    finish_run(run, t)
    verify(s, run)
    assert s.proxy.stats.dropped_responses >= 5, s.proxy.summary()
    lost, resent = s.proxy.lost_and_resent()
    assert lost >= 5 and resent == lost, (
        f"{client}: of {lost} written-but-unacknowledged batches {resent} were sent again: "
        f"{s.proxy.summary()}"
    )
    assert not s.proxy.stats.errors, s.proxy.stats.errors


@pytest.mark.parametrize("client", CLIENTS)
def test_delayed_produce_responses_keep_order(setup, client):
    """Mode B: every 8th Produce response is held back 100 ms (the ones after it queue behind),
    so the client keeps up to five requests in flight per connection: order per partition kept."""
    s = setup
    topic = make_topic(s, f"idem-delay-{client}")
    s.proxy.delay_every(8, 0.1)
    run, t = start_run(client, topic, s.proxy.bootstrap)
    finish_run(run, t)
    verify(s, run)
    assert s.proxy.stats.delayed_responses >= 5, s.proxy.summary()
    assert not s.proxy.stats.errors, s.proxy.stats.errors


@pytest.mark.parametrize("client", CLIENTS)
def test_sigkill_mid_stream_no_duplicates(setup, client):
    """Kill -9 while batches the broker has written are still unacknowledged (their responses are
    held by the proxy and die with the connections), restart on the same port: the client resends
    them and the broker, with producer state rebuilt from its log, deduplicates them."""
    s = setup
    topic = make_topic(s, f"idem-kill-{client}")
    s.proxy.drop_every(25)
    run, t = start_run(client, topic, s.proxy.bootstrap)
    wait_until(
        lambda: run.acked >= RECORDS // 3 or run.done.is_set(),
        40,
        interval=0.01,
        message=f"{client}: a third of the records acknowledged",
    )
    s.proxy.hold()
    wait_until(
        lambda: s.proxy.stats.delayed_responses >= 1 or run.done.is_set(),
        8,
        interval=0.005,
        message=f"{client}: written batches whose acknowledgement is held back",
    )
    assert not run.done.is_set(), f"{client} finished before the kill"
    acked_at_kill = run.acked
    s.broker.kill()
    wait_port_closed(*s.direct)
    s.proxy.passthrough()
    s.broker.start()  # same data dir, same --port
    finish_run(run, t)
    assert acked_at_kill < run.n
    log = verify(s, run, all_delivered=True)
    assert sum(len(v) for v in log.values()) == run.n
    lost, resent = s.proxy.lost_and_resent()
    assert lost >= 1 and resent == lost, (
        f"{client}: of {lost} written-but-unacknowledged batches only {resent} were sent again "
        f"(nothing to deduplicate): {s.proxy.summary()}"
    )
