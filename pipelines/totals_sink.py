"""Exactly-once per-customer totals into a Kafka topic, from Spark's foreachBatch.

Spark's own Kafka sink is at-least-once: a micro-batch re-run after a driver crash is written
again. This sink makes each batch id count once. Every batch is one Kafka transaction holding
(a) the batch's records and (b) a TxnOffsetCommit, to a bookkeeping consumer group, of offset
`batch_id + 1` on partition 0 of the output topic - "the next batch id to write". Both become
visible together or not at all. Before writing batch N the sink reads the group's committed
offset (read_committed: a pending commit waits); if it is already > N, Spark is replaying a batch
that did commit before the crash, and the sink skips it.

The transactional.id and the group are derived from the streaming query's id, which Spark keeps in
the checkpoint: a restarted driver uses the same ones, so its InitProducerId fences the killed
driver's producer and aborts whatever transaction it left open. A new checkpoint is a new query
(batch ids start at 0 again) and gets fresh bookkeeping.

The function runs on the driver and collects the batch: it suits outputs of one row per key
updated in the batch (here: customers), not raw event streams.
"""

from __future__ import annotations

import json
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from minibroker.pipelines.kafka_admin import ensure_topic

# the partition whose committed offset holds the next batch id (exists in every topic)
BOOKKEEPING_PARTITION = 0


class TransactionalTotalsSink:
    def __init__(
        self,
        bootstrap: str,
        topic: str,
        name: str = "customer-totals-sink",
        kafka_options: dict[str, str] | None = None,
        pause_in_batch: float = 0.0,
        partitions: int = 3,
        log=print,
    ):
        self.bootstrap = bootstrap
        self.topic = topic
        self.name = name
        self.kafka_options = dict(kafka_options or {})
        self.pause_in_batch = pause_in_batch
        self.partitions = partitions  # when the sink creates the topic
        self.log = log
        self._query_id: str | None = None
        self._producer: Producer | None = None
        self._bookkeeping: Consumer | None = None

    # ------------------------------------------------------------------ per batch
    def __call__(self, batch_df, batch_id: int) -> None:
        query_id = batch_df.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
        if query_id is None:
            raise RuntimeError("TransactionalTotalsSink must be used from a streaming query's foreachBatch")
        # always run the whole batch: Spark checks that a stateful batch committed every state store
        rows = batch_df.collect()
        self._connect(query_id)
        next_batch = self.next_batch_id()
        if batch_id < next_batch:
            self.log(f"totals batch {batch_id}: already committed (next is {next_batch}), skipped on replay")
            return
        producer, bookkeeping = self._clients()
        producer.begin_transaction()
        for row in rows:
            value = {
                "customer_id": row["customer_id"],
                "total_cents": int(row["total_cents"]),
                "orders": int(row["orders"]),
                "batch_id": batch_id,
            }
            self._produce(row["customer_id"].encode(), json.dumps(value, separators=(",", ":")).encode())
        producer.send_offsets_to_transaction(
            [TopicPartition(self.topic, BOOKKEEPING_PARTITION, batch_id + 1)],
            bookkeeping.consumer_group_metadata(),
        )
        if self.pause_in_batch:
            self.log(f"totals batch {batch_id}: transaction open with {len(rows)} records")
            time.sleep(self.pause_in_batch)
        producer.commit_transaction()
        self.log(f"totals batch {batch_id}: committed {len(rows)} customer totals")
        if self.pause_in_batch:  # committed to Kafka, not yet in Spark's commit log
            time.sleep(self.pause_in_batch)

    def _produce(self, key: bytes, value: bytes) -> None:
        producer, _ = self._clients()
        while True:
            try:
                producer.produce(self.topic, key=key, value=value)
                return
            except BufferError:
                producer.poll(0.05)

    def _clients(self) -> tuple[Producer, Consumer]:
        """The transactional producer and the bookkeeping consumer `_connect` made."""
        if self._producer is None or self._bookkeeping is None:
            raise RuntimeError("TransactionalTotalsSink used before it connected")
        return self._producer, self._bookkeeping

    # ------------------------------------------------------------------ bookkeeping
    @property
    def transactional_id(self) -> str:
        return f"{self.name}-{self._query_id}"

    def next_batch_id(self) -> int:
        """The committed bookkeeping offset: the first batch id not yet written (0 if none)."""
        tp = TopicPartition(self.topic, BOOKKEEPING_PARTITION)
        committed = self._clients()[1].committed([tp], timeout=30)[0]
        if committed.error is not None:
            raise KafkaException(committed.error)
        return max(committed.offset, 0)

    def _connect(self, query_id: str) -> None:
        if self._query_id == query_id:
            return
        self.close()
        self._query_id = query_id
        common = {"bootstrap.servers": self.bootstrap, **self.kafka_options}
        ensure_topic(self.bootstrap, self.topic, self.partitions, self.kafka_options)
        self._producer = Producer({**common, "transactional.id": self.transactional_id, "linger.ms": 5})
        # fences an earlier driver's producer and aborts (or completes) what it left open, so the
        # bookkeeping offset read next is final
        self._producer.init_transactions(60)
        self._bookkeeping = Consumer(
            {
                **common,
                "group.id": self.transactional_id,
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )

    def close(self) -> None:
        if self._bookkeeping is not None:
            self._bookkeeping.close()
        if self._producer is not None:
            self._producer.flush(10)
        self._producer = self._bookkeeping = None
        self._query_id = None
