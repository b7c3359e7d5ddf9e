"""What the benchmark asks of a broker, through librdkafka (confluent-kafka), so both brokers see
exactly the same client; `java_transactions` drives a Java kafka-clients 4.4 producer instead,
the only client here that takes KIP-890 transactions V2 when the cluster finalizes
`transaction.version=2`. Every function is bounded in time and raises if records go missing."""

from __future__ import annotations

import multiprocessing
import pickle
import queue
import subprocess
import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

DEADLINE_S = 180
_SETUP_S = 60  # a client's connection, producer id or init_transactions before the start


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=60)[name].result(120)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # Kafka creates asynchronously: wait for the leaders
        meta = admin.list_topics(name, timeout=10).topics.get(name)
        if (
            meta is not None
            and meta.error is None
            and len(meta.partitions) == partitions
            and all(p.leader >= 0 for p in meta.partitions.values())
        ):
            return
        time.sleep(0.05)
    raise RuntimeError(f"topic {name} not ready")


def _producer(bootstrap: str, **extra) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.size": 1 << 20,
            **extra,
        }
    )


def _produce(p: Producer, topic: str, value: bytes, i: int, on_delivery=None) -> None:
    while True:
        try:
            p.produce(topic, value, key=str(i % 64).encode(), on_delivery=on_delivery)
            return
        except BufferError:
            p.poll(0.005)


def _clients_run(target, shares: list[tuple], deadline_s: float = DEADLINE_S) -> list[tuple]:
    """What `target(go, *share)` returned ((start, end, ...) perf_counter times: one clock for
    every process on Linux) in one spawned process per share, in share order. Each client sets up
    (producer, connection, at most _SETUP_S) and then waits on `go`, so that all of them start
    together. A client that fails, dies without an answer, or is not done within `deadline_s`
    of the start raises here, naming itself."""
    ctx = multiprocessing.get_context("spawn")  # never fork: librdkafka threads live in this process
    go = ctx.Barrier(len(shares) + 1)
    answers = ctx.Queue()
    procs = [
        ctx.Process(target=_client, args=(k, target, go, share, answers), daemon=True)
        for k, share in enumerate(shares)
    ]
    for proc in procs:
        proc.start()
    results: dict[int, object] = {}
    try:
        try:
            go.wait(_SETUP_S + 60)  # the clients' own setup is bounded by _SETUP_S
        except threading.BrokenBarrierError:
            pass  # a client failed while setting up: its answer says why
        deadline = time.monotonic() + deadline_s + 30  # the clients' own deadline comes first
        while len(results) < len(procs):
            try:
                k, result = answers.get(timeout=1.0)
                results[k] = result
                continue
            except queue.Empty:
                pass
            exited = [k for k, proc in enumerate(procs) if k not in results and not proc.is_alive()]
            if exited:  # its answer, if it wrote one before exiting, is in the pipe by now
                try:
                    k, result = answers.get(timeout=1.0)
                    results[k] = result
                    continue
                except queue.Empty:
                    k = exited[0]
                    raise RuntimeError(
                        f"bench client {k} exited with code {procs[k].exitcode} without an answer"
                    ) from None
            if time.monotonic() > deadline:
                missing = sorted(set(range(len(procs))) - set(results))
                raise RuntimeError(f"bench clients {missing} not done in {deadline_s}s") from None
    finally:
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
    failures = {k: r for k, r in results.items() if isinstance(r, BaseException)}
    if failures:  # the cause, not the BrokenBarrierError it gave the other clients
        k, exc = min(failures.items(), key=lambda kv: isinstance(kv[1], threading.BrokenBarrierError))
        raise RuntimeError(f"bench client {k} failed: {type(exc).__name__}: {exc}") from None
    return [results[k] for k in range(len(procs))]


def _elapsed(spans: list[tuple]) -> float:
    """Seconds from the first client's start to the last client's end."""
    return max(span[1] for span in spans) - min(span[0] for span in spans)


def _client(k: int, target, go, share: tuple, answers) -> None:
    try:
        result = target(go, *share)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises
        answers.put((k, RuntimeError(f"{type(exc).__name__}: {exc}") if not _picklable(exc) else exc))
        go.abort()  # after the answer, so the cause is there before the others' BrokenBarrierError
        return
    answers.put((k, result))


def _picklable(exc: BaseException) -> bool:
    try:
        pickle.dumps(exc)
    except Exception:  # noqa: BLE001 - librdkafka's KafkaError objects may not pickle
        return False
    return True


def _shares(count: int, clients: int) -> list[tuple[int, int]]:
    """(first index, count) of each client: `count` split as evenly as possible."""
    base, extra = divmod(count, clients)
    out, first = [], 0
    for k in range(clients):
        n = base + (k < extra)
        out.append((first, n))
        first += n
    return out


def produce_idempotent(
    bootstrap: str, topic: str, count: int, size: int, clients: int = 1, deadline_s: float = DEADLINE_S
) -> float:
    """Seconds to produce and get acknowledged `count` records of `size` bytes, split over
    `clients` producer processes, each done within `deadline_s`."""
    shares = [(bootstrap, topic, first, n, size, deadline_s) for first, n in _shares(count, clients)]
    return _elapsed(_clients_run(_produce_idempotent_share, shares, deadline_s))


def _produce_idempotent_share(
    go, bootstrap: str, topic: str, first: int, count: int, size: int, deadline_s: float
):
    p = _producer(bootstrap)
    p.list_topics(topic, timeout=30)  # connected before the clock starts
    value = b"x" * size
    go.wait(_SETUP_S + 60)
    t0 = time.perf_counter()
    deadline = time.monotonic() + deadline_s
    for i in range(first, first + count):
        _produce(p, topic, value, i)
        if not i % 10_000 and time.monotonic() > deadline:
            raise RuntimeError(f"{i - first} of {count} records queued in {deadline_s}s")
    if p.flush(max(1.0, deadline - time.monotonic())):
        raise RuntimeError(f"records not delivered within {deadline_s}s")
    return t0, time.perf_counter()


def produce_transactional(
    bootstrap: str, topic: str, count: int, size: int, per_txn: int, clients: int = 1
) -> float:
    """Seconds to produce `count` records (a multiple of `per_txn`) in transactions of `per_txn`,
    each committed, the transactions split over `clients` transactional producer processes (one
    transactional.id each)."""
    if count % per_txn:
        raise ValueError(f"{count} records are not whole transactions of {per_txn}")
    shares = [
        (bootstrap, topic, first * per_txn, n * per_txn, size, per_txn)
        for first, n in _shares(count // per_txn, clients)
    ]
    return _elapsed(_clients_run(_produce_transactional_share, shares))


def _produce_transactional_share(
    go, bootstrap: str, topic: str, first: int, count: int, size: int, per_txn: int
):
    p = _producer(bootstrap, **{"transactional.id": f"bench-{uuid.uuid4().hex[:8]}"})
    p.init_transactions(_SETUP_S)
    value = b"x" * size
    go.wait(_SETUP_S + 60)
    t0 = time.perf_counter()
    for start in range(first, first + count, per_txn):
        p.begin_transaction()
        for i in range(start, start + per_txn):
            _produce(p, topic, value, i)
        p.commit_transaction(60)
    return t0, time.perf_counter()


def one_record_transactions(bootstrap: str, topic: str, seconds: float) -> tuple[int, float]:
    """(transactions, elapsed) of begin/produce one record/commit in a loop for `seconds`."""
    p = _producer(bootstrap, **{"transactional.id": f"bench-1-{uuid.uuid4().hex[:8]}", "linger.ms": 0})
    p.init_transactions(60)
    done = 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        p.begin_transaction()
        _produce(p, topic, b"x" * 100, done)
        p.commit_transaction(60)
        done += 1
    return done, time.perf_counter() - t0


JAVA_CLIENT_VERSION = "4.4.0"


def java_transactions(
    bootstrap: str, topic: str, transactions: int, per_txn: int, size: int, txn_version: int
) -> float:
    """Seconds for one Java producer (jvm/clients TxnBench.java) to run `transactions`
    transactions of `per_txn` records of `size` bytes, each committed, after finalizing
    `transaction.version=txn_version` through Admin.updateFeatures. Raises
    pipelines.jars.JarsMissing without `make jvm`."""
    from minibroker.pipelines.jars import kafka_clients_classpath  # noqa: PLC0415

    cmd = ["java", "-Xmx512m", "-cp", kafka_clients_classpath(JAVA_CLIENT_VERSION), "minibroker.TxnBench"]
    args = [bootstrap, topic, str(transactions), str(per_txn), str(size), str(txn_version)]
    done = subprocess.run(cmd + args, capture_output=True, text=True, timeout=DEADLINE_S)
    result = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not result:
        raise RuntimeError(f"TxnBench failed ({done.returncode}): {done.stderr[-2000:]}")
    fields = dict(item.split("=", 1) for item in result[-1].split()[1:])
    if int(fields["txn_version"]) != txn_version or int(fields["transactions"]) != transactions:
        raise RuntimeError(f"TxnBench ran something else: {result[-1]}")
    return float(fields["seconds"])


def produce_latency(bootstrap: str, topic: str, rate: int, seconds: float) -> list[float]:
    """Acknowledgement latencies (ms) of 100 B idempotent records sent at a fixed `rate`."""
    p = _producer(bootstrap, **{"linger.ms": 0})
    latencies: list[float] = []

    def delivered(err, msg, sent=None):
        if err is not None:
            raise KafkaException(err)
        latencies.append((time.perf_counter() - sent) * 1000)

    _produce(p, topic, b"warm-up", 0)  # connections and the producer id first: not timed
    if p.flush(DEADLINE_S):
        raise RuntimeError("warm-up record not delivered")
    total = int(rate * seconds)
    t0 = time.perf_counter()
    for i in range(total):
        due = t0 + i / rate
        while (now := time.perf_counter()) < due:
            p.poll(min(due - now, 0.001))
        _produce(p, topic, b"x" * 100, i, lambda e, m, s=now: delivered(e, m, s))
        p.poll(0)
    if p.flush(DEADLINE_S):
        raise RuntimeError("records not delivered")
    return latencies


def consume(
    bootstrap: str, topic: str, partitions: int, count: int, isolation: str, clients: int = 1
) -> float:
    """Seconds to read `count` records from the start of every partition, the partitions split
    over `clients` consumer processes (round robin: with 3 partitions and 2 clients one client
    reads two, so the figure is mostly that client's)."""
    if count <= 0:
        raise ValueError("nothing to consume")
    clients = min(clients, partitions)
    total = multiprocessing.get_context("spawn").Value("q", 0)  # records read by all clients
    shares = [
        (bootstrap, topic, list(range(k, partitions, clients)), isolation, count, total)
        for k in range(clients)
    ]
    spans = _clients_run(_consume_share, shares)
    if total.value != count:
        raise RuntimeError(f"consumed {total.value} of {count} from {topic}")
    done = [end for _, end in spans if end is not None]
    return done[0] - min(start for start, _ in spans)


def _consume_share(go, bootstrap: str, topic: str, partitions: list[int], isolation: str, count: int, total):
    """(start, the moment all clients together had read `count` records or None when another
    client saw it)."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "isolation.level": isolation,
            # librdkafka postpones a partition's next Fetch by fetch.queue.backoff.ms (default
            # 1 s) once its local queue passes queued.min.messages. A broker that answers faster
            # than one Python consumer drains hits that threshold, and the 1 s pause, not the
            # broker, then set the figure: runs of the same broker gave 250k or 1.1M records/s.
            # (Not enable.partition.eof to find the end: it makes this client's consume() 5x slower.)
            "fetch.queue.backoff.ms": 10,
        }
    )
    reached = None
    try:
        c.list_topics(topic, timeout=30)  # connected before the clock starts
        go.wait(_SETUP_S + 60)
        t0 = time.perf_counter()
        c.assign([TopicPartition(topic, p, 0) for p in partitions])
        deadline = time.monotonic() + DEADLINE_S
        while total.value < count and time.monotonic() < deadline:
            batch = c.consume(10000, 0.05)
            read = sum(1 for m in batch if m.error() is None)
            if not read:
                continue
            with total.get_lock():
                before = total.value
                total.value = before + read
            if before < count <= before + read:
                reached = time.perf_counter()
    finally:
        c.close()
    return t0, reached
