"""Order events from several transactional producers, with aborts, a fenced zombie and bad events.

Producer i has `transactional.id` `order-producer-i` and writes its share of the orders in
transactions of `txn_size` events (JSON keyed by order id). A seeded share of transactions is
aborted. Halfway through, producer 0 is replaced by a second instance with the same
transactional.id while the first still has a transaction open: the coordinator aborts that
transaction and fences the first instance, whose later sends and commit must fail (the run fails
if they do not). Now and then an event inside a committed transaction is malformed (bad JSON or a
negative amount); the pipeline must route it to the dead-letter output."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from confluent_kafka import KafkaException, Producer
from minibroker.pipelines.kafka_admin import ensure_topic
from minibroker.pipelines.orders import Order

DAY_MS = 86_400_000


@dataclass
class GeneratorConfig:
    bootstrap: str = "127.0.0.1:9092"
    topic: str = "order-events"
    partitions: int = 6
    orders: int = 10_000
    producers: int = 3
    txn_size: int = 50
    abort_ratio: float = 0.1
    malformed_ratio: float = 0.02
    customers: int = 50
    days: int = 3
    start_date: str = "2026-01-01"
    rate: float = 0.0  # events per second over all producers; 0 = as fast as possible
    seed: int = 1
    fence: bool = True
    kafka_options: dict = field(default_factory=dict)


@dataclass
class GeneratorReport:
    committed_events: int = 0  # visible to read_committed consumers
    committed_valid: int = 0
    committed_malformed: int = 0
    aborted_events: int = 0  # aborted by the producer
    fenced_events: int = 0  # the zombie's, aborted by the coordinator or refused
    committed_txns: int = 0
    aborted_txns: int = 0
    zombie_fenced: bool = False
    fenced_error: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


class OrderGenerator:
    def __init__(self, config: GeneratorConfig, progress=None):
        self.config = config
        self.report = GeneratorReport()
        self.progress = progress or (lambda report: None)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._errors: list[BaseException] = []
        self._base_ts = int(
            datetime.strptime(config.start_date, "%Y-%m-%d").replace(tzinfo=UTC).timestamp() * 1000
        )

    # ------------------------------------------------------------------ public
    def run(self) -> GeneratorReport:
        self.ensure_topic()
        shares = [self.config.orders // self.config.producers] * self.config.producers
        shares[0] += self.config.orders - sum(shares)
        threads = [
            threading.Thread(target=self._guard, args=(i, shares[i]), name=f"order-producer-{i}")
            for i in range(self.config.producers)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self._errors:
            raise self._errors[0]
        return self.report

    def stop(self) -> None:
        """Finish the open transactions and return early."""
        self._stop.set()

    def ensure_topic(self) -> None:
        ensure_topic(
            self.config.bootstrap, self.config.topic, self.config.partitions, self.config.kafka_options
        )

    # ------------------------------------------------------------------ producers
    def _producer(self, index: int) -> Producer:
        p = Producer(
            {
                "bootstrap.servers": self.config.bootstrap,
                "transactional.id": f"order-producer-{index}",
                "linger.ms": 5,
                **self.config.kafka_options,
            }
        )
        p.init_transactions(60)
        return p

    def _guard(self, index: int, count: int) -> None:
        try:
            self._produce_share(index, count)
        except BaseException as exc:  # noqa: BLE001 - re-raised by run()
            self._errors.append(exc)
            self._stop.set()

    def _produce_share(self, index: int, count: int) -> None:
        rnd = random.Random(self.config.seed * 1000 + index)
        producer = self._producer(index)
        per_second = self.config.rate / self.config.producers if self.config.rate else 0.0
        started = time.monotonic()
        seq = 0
        fenced = not (self.config.fence and index == 0)
        while seq < count and not self._stop.is_set():
            if not fenced and seq >= count // 2:
                producer = self._replace_with_second_instance(index, producer, rnd)
                fenced = True
            n = min(self.config.txn_size, count - seq)
            events = [self._event(rnd, f"o-{index}-{seq + k}") for k in range(n)]
            abort = rnd.random() < self.config.abort_ratio
            producer.begin_transaction()
            for order_id, _, value in events:
                self._send(producer, order_id.encode(), value)
            if abort:
                producer.flush(60)  # the aborted events reach the log first
                producer.abort_transaction(60)
            else:
                producer.commit_transaction(60)
            self._count(events, abort)
            seq += n
            if per_second:
                ahead = seq / per_second - (time.monotonic() - started)
                if ahead > 0:
                    self._stop.wait(ahead)
        producer.flush(30)

    def _replace_with_second_instance(self, index: int, zombie: Producer, rnd: random.Random) -> Producer:
        """Start a second instance while the first has a transaction open; check it is fenced."""
        zombie.begin_transaction()
        for k in range(self.config.txn_size):
            self._send(
                zombie, f"zombie-{index}-{k}".encode(), self._order(rnd, f"zombie-{index}-{k}").to_json()
            )
        zombie.flush(60)
        successor = self._producer(index)  # InitProducerId: aborts the open txn, bumps the epoch
        try:
            self._send(zombie, b"zombie-late", self._order(rnd, "zombie-late").to_json())
            zombie.commit_transaction(30)
        except KafkaException as exc:
            with self._lock:
                self.report.zombie_fenced = True
                self.report.fenced_error = exc.args[0].name() if exc.args else str(exc)
                self.report.fenced_events += self.config.txn_size + 1
        else:
            raise AssertionError("the fenced producer instance committed a transaction")
        return successor

    def _send(self, producer: Producer, key: bytes, value: bytes) -> None:
        while True:
            try:
                producer.produce(self.config.topic, key=key, value=value)
                return
            except BufferError:
                producer.poll(0.05)

    # ------------------------------------------------------------------ events
    def _order(self, rnd: random.Random, order_id: str) -> Order:
        return Order(
            order_id=order_id,
            customer_id=f"c{rnd.randrange(self.config.customers):04d}",
            amount_cents=rnd.randint(100, 50_000),
            currency=rnd.choice(("EUR", "USD", "GBP")),
            ts=self._base_ts + rnd.randrange(self.config.days * DAY_MS),
        )

    def _event(self, rnd: random.Random, order_id: str) -> tuple[str, bool, bytes]:
        """(order id, malformed, JSON bytes)."""
        order = self._order(rnd, order_id)
        if rnd.random() >= self.config.malformed_ratio:
            return order_id, False, order.to_json()
        if rnd.random() < 0.5:
            return order_id, True, order.to_json()[:-7]  # truncated: bad JSON
        return (
            order_id,
            True,
            Order(order.order_id, order.customer_id, -order.amount_cents, order.currency, order.ts).to_json(),
        )

    def _count(self, events: list[tuple[str, bool, bytes]], aborted: bool) -> None:
        with self._lock:
            r = self.report
            if aborted:
                r.aborted_txns += 1
                r.aborted_events += len(events)
            else:
                bad = sum(1 for _, malformed, _ in events if malformed)
                r.committed_txns += 1
                r.committed_events += len(events)
                r.committed_malformed += bad
                r.committed_valid += len(events) - bad
        self.progress(self.report)
