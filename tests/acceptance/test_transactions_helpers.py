"""Shared pieces of the transaction acceptance tests (issue 4): a raw-protocol transaction client
over tests/support/wire.py (kafka-python's schema classes, an implementation independent of the
broker's codec), committed/uncommitted readers that apply the Fetch response's aborted list the
way clients do, and small client factories. No tests here."""

from __future__ import annotations

import time
import uuid

from kafka.protocol.admin.transactions import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kafka.record.default_records import DefaultRecordBatchBuilder

from tests.support.helpers import wait_until
from tests.support.wire import ProduceRequest, ProduceResponse, WireClient, iter_batches

# Kafka error codes (Errors.java)
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
OPERATION_NOT_ATTEMPTED = 55
PRODUCER_FENCED = 90
TRANSACTIONAL_ID_NOT_FOUND = 105
TRANSACTION_ABORTABLE = 120

WAIT = 20.0  # bound for any single wait in these tests


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def txn_batch(
    values, *, producer_id: int, producer_epoch: int, base_sequence: int, transactional: bool = True
) -> bytes:
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    now = int(time.time() * 1000)
    for i, v in enumerate(values):
        b.append(i, timestamp=now, key=None, value=v, headers=[])
    return bytes(b.build())


class TxnWire(WireClient):
    """WireClient plus the transaction APIs."""

    def init_producer_id(
        self, transactional_id, timeout_ms=60000, producer_id=-1, producer_epoch=-1, version=4
    ):
        req = InitProducerIdRequest(
            transactional_id=transactional_id,
            transaction_timeout_ms=timeout_ms,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )
        return self.request(req, InitProducerIdResponse, version)

    def add_partitions(self, transactional_id, pid, epoch, partitions, version=3):
        T = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        req = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=transactional_id,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[T(name=t, partitions=ps) for t, ps in by_topic.items()],
        )
        resp = self.request(req, AddPartitionsToTxnResponse, version)
        return {
            (t.name, r.partition_index): r.partition_error_code
            for t in resp.results_by_topic_v3_and_below
            for r in t.results_by_partition
        }

    def add_offsets(self, transactional_id, pid, epoch, group_id, version=3):
        req = AddOffsetsToTxnRequest(
            transactional_id=transactional_id, producer_id=pid, producer_epoch=epoch, group_id=group_id
        )
        return self.request(req, AddOffsetsToTxnResponse, version).error_code

    def end_txn(self, transactional_id, pid, epoch, commit, version=3):
        req = EndTxnRequest(
            transactional_id=transactional_id, producer_id=pid, producer_epoch=epoch, committed=commit
        )
        return self.request(req, EndTxnResponse, version).error_code

    def txn_offset_commit(
        self,
        transactional_id,
        group_id,
        pid,
        epoch,
        offsets,
        version=3,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
    ):
        T = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
        P = T.TxnOffsetCommitRequestPartition
        by_topic: dict[str, list] = {}
        for (t, p), off in offsets.items():
            by_topic.setdefault(t, []).append(
                P(partition_index=p, committed_offset=off, committed_leader_epoch=-1, committed_metadata="")
            )
        kw = {}
        if version >= 3:
            kw = dict(generation_id=generation_id, member_id=member_id, group_instance_id=group_instance_id)
        req = TxnOffsetCommitRequest(
            transactional_id=transactional_id,
            group_id=group_id,
            producer_id=pid,
            producer_epoch=epoch,
            topics=[T(name=t, partitions=ps) for t, ps in by_topic.items()],
            **kw,
        )
        resp = self.request(req, TxnOffsetCommitResponse, version)
        return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}

    def describe_transactions(self, ids):
        resp = self.request(
            DescribeTransactionsRequest(transactional_ids=list(ids)), DescribeTransactionsResponse, 0
        )
        return {s.transactional_id: s for s in resp.transaction_states}

    def describe_transaction(self, txn_id):
        return self.describe_transactions([txn_id])[txn_id]

    def list_transactions(self, states=(), pids=(), duration=-1, version=1):
        req = ListTransactionsRequest(
            state_filters=list(states), producer_id_filters=list(pids), duration_filter=duration
        )
        return self.request(req, ListTransactionsResponse, version)

    def describe_producers(self, topic, partitions):
        T = DescribeProducersRequest.TopicRequest
        req = DescribeProducersRequest(topics=[T(name=topic, partition_indexes=list(partitions))])
        resp = self.request(req, DescribeProducersResponse, 0)
        return {p.partition_index: p for t in resp.topics for p in t.partitions}

    def produce_txn(self, transactional_id, topic, partition, batch, version=9):
        T = ProduceRequest.TopicProduceData
        req = ProduceRequest(
            transactional_id=transactional_id,
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                T(name=topic, partition_data=[T.PartitionProduceData(index=partition, records=batch)])
            ],
        )
        resp = self.request(req, ProduceResponse, version)
        return resp.responses[0].partition_responses[0]


def txn_wire(broker) -> TxnWire:
    return TxnWire(broker.host, broker.port)


# ------------------------------------------------------------------------------------ reading
def read_log(
    client: WireClient,
    topic: str,
    partition: int,
    *,
    isolation_level: int,
    start: int = 0,
    timeout: float = WAIT,
):
    """Read from `start` to the HWM (isolation 0) or LSO (1) with raw Fetch v12. Returns
    (values, markers, aborted, end) where values are (offset, value) of data records that a
    client would deliver (for read_committed: minus those of aborted transactions, applied with
    the response's aborted list exactly as Kafka's consumer does), markers are (offset,
    producer_id, 'COMMIT'|'ABORT') and end is the offset reading stopped at."""
    values, markers, aborted_seen = [], [], []
    offset = start
    deadline = time.monotonic() + timeout
    aborted_pids: set[int] = set()
    pending_aborts: list[tuple[int, int]] = []
    while True:
        assert time.monotonic() < deadline, f"reading {topic}-{partition} timed out"
        _, part = client.fetch(topic, partition, offset, max_wait_ms=0, isolation_level=isolation_level)
        assert part.error_code == NONE, f"fetch {topic}-{partition}@{offset}: {part.error_code}"
        limit = part.last_stable_offset if isolation_level == 1 else part.high_watermark
        if isolation_level == 1:
            assert part.aborted_transactions is not None, "read_committed: null aborted list"
            ab = sorted((a.first_offset, a.producer_id) for a in part.aborted_transactions)
            assert ab == [(a.first_offset, a.producer_id) for a in part.aborted_transactions], (
                "aborted transactions not sorted by first offset"
            )
            for first, pid in ab:
                if (first, pid) not in aborted_seen:
                    aborted_seen.append((first, pid))
                    pending_aborts.append((first, pid))
        else:
            assert part.aborted_transactions is None, "read_uncommitted: aborted list not null"
        if offset >= limit:
            assert len(part.records or b"") == 0
            return values, markers, aborted_seen, offset
        progressed = False
        for batch in iter_batches(part.records):
            if batch.last_offset < offset:
                continue
            progressed = True
            # Kafka's consumer (CompletedFetch): a producer is aborted from the first aborted
            # transaction starting at or before this batch's last offset until its marker
            pending_aborts.sort()
            while pending_aborts and pending_aborts[0][0] <= batch.last_offset:
                aborted_pids.add(pending_aborts.pop(0)[1])
            if batch.is_control_batch:
                rec = next(iter(batch))
                kind = "COMMIT" if bytes(rec.key)[2:4] == b"\x00\x01" else "ABORT"
                markers.append((batch.base_offset, batch.producer_id, kind))
                if kind == "ABORT":
                    aborted_pids.discard(batch.producer_id)
            elif not (isolation_level == 1 and batch.is_transactional and batch.producer_id in aborted_pids):
                for r in batch:
                    if r.offset >= offset:
                        values.append((r.offset, r.value))
            offset = batch.last_offset + 1
        assert progressed, f"no whole batch at {offset}"


def committed(broker, topic, partition=0, start=0):
    with WireClient.to(broker) as c:
        return [v for _, v in read_log(c, topic, partition, isolation_level=1, start=start)[0]]


def uncommitted(broker, topic, partition=0, start=0):
    with WireClient.to(broker) as c:
        return [v for _, v in read_log(c, topic, partition, isolation_level=0, start=start)[0]]


def offsets(broker, topic, partition=0):
    """(high watermark, last stable offset, log start offset) from a read_committed Fetch."""
    with WireClient.to(broker) as c:
        _, part = c.fetch(topic, partition, 0, max_wait_ms=0, isolation_level=1)
        return part.high_watermark, part.last_stable_offset, part.log_start_offset


def markers(broker, topic, partition=0):
    with WireClient.to(broker) as c:
        return read_log(c, topic, partition, isolation_level=0)[1]


def wait_state(broker, txn_id, state, timeout=WAIT):
    def check():
        with txn_wire(broker) as w:
            d = w.describe_transaction(txn_id)
        return d if d.error_code == NONE and d.transaction_state == state else None

    return wait_until(check, timeout, message=f"{txn_id} in state {state}")


# ------------------------------------------------------------------------------------ clients
def kp_producer(broker, txn_id, **kw):
    from kafka import KafkaProducer

    kw.setdefault("transaction_timeout_ms", 30000)
    return KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        transactional_id=txn_id,
        request_timeout_ms=10000,
        max_block_ms=15000,
        linger_ms=0,
        **kw,
    )


def ck_producer(broker, txn_id, **conf):
    from confluent_kafka import Producer

    base = {
        "bootstrap.servers": broker.bootstrap,
        "transactional.id": txn_id,
        "transaction.timeout.ms": 30000,
        "linger.ms": 0,
        "socket.timeout.ms": 10000,
    }
    base.update(conf)
    return Producer(base)


def kp_consumer(broker, isolation, **kw):
    from kafka import KafkaConsumer

    return KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        isolation_level=isolation,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=10000,
        **kw,
    )


def ck_consumer(broker, isolation, group=None, **conf):
    from confluent_kafka import Consumer

    base = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": group or uid("g"),
        "isolation.level": isolation,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
    }
    base.update(conf)
    return Consumer(base)


def consume_kp(consumer, expected: int, timeout: float = WAIT) -> list[tuple[str, int, int, bytes]]:
    """Poll a kafka-python consumer until `expected` records arrived (then a little longer to
    catch extras: until one poll returns nothing). Returns (topic, partition, offset, value)."""
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = consumer.poll(timeout_ms=200)
        n = sum(len(v) for v in got.values())
        for tp, msgs in got.items():
            out.extend((tp.topic, tp.partition, m.offset, m.value) for m in msgs)
        if len(out) >= expected and n == 0:
            return out
    raise AssertionError(f"consumed {len(out)} records, expected {expected}: {out}")


def consume_ck(consumer, expected: int, timeout: float = WAIT):
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is None:
            if len(out) >= expected:
                return out
            continue
        if m.error():
            continue
        out.append((m.topic(), m.partition(), m.offset(), m.value()))
    raise AssertionError(f"consumed {len(out)} records, expected {expected}: {out}")
