"""A share group with `share.isolation.level=read_committed` (group config) over a topic holding
committed and aborted transactions, plain records and a transaction still open: the members get
every committed and plain record once, never an aborted one, and the open transaction's records
only once it commits (the share-partition reads up to the last stable offset; aborted batches are
archived by the broker, KIP-932). confluent-kafka's ShareConsumer, as in
test_share_groups_librdkafka.py; MINIBROKER_SHARE_TARGET=kafka runs it on the reference Kafka.
"""

from __future__ import annotations

import pytest

from tests.support.helpers import create_topic, unique_name
from tests.support.share import (
    GAP,
    ShareMember,
    accepted,
    deliveries,
    set_group_configs,
    share_broker_factory,  # noqa: F401 - the fixture
    wait_for,
)

PARTS = 2


class Txns:
    """One transactional producer writing round robin over the topic's partitions."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "transactional.id": unique_name("share-txn"), "linger.ms": 5}
        )
        self.producer.init_transactions(30)

    def begin(self, values: list[str]) -> None:
        self.producer.begin_transaction()
        for i, value in enumerate(values):
            self.producer.produce(self.topic, key=value.encode(), value=value.encode(), partition=i % PARTS)
        assert self.producer.flush(30) == 0

    def commit(self) -> None:
        self.producer.commit_transaction(30)

    def abort(self) -> None:
        self.producer.abort_transaction(30)


def plain(bootstrap: str, topic: str, values: list[str]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i, value in enumerate(values):
        producer.produce(topic, key=value.encode(), value=value.encode(), partition=i % PARTS)
    assert producer.flush(30) == 0


@pytest.mark.timeout(240)
def test_read_committed_share_group_never_gets_aborted_records(share_broker_factory):  # noqa: F811
    b = share_broker_factory()
    topic, group = unique_name("share-rc"), unique_name("share-rc-g")
    create_topic(b, topic, PARTS)
    set_group_configs(
        b.bootstrap, group, {"share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed"}
    )
    txns = Txns(b.bootstrap, topic)
    expected: list[str] = []
    aborted: list[str] = []
    for n in range(6):
        values = [f"t{n}-{i}" for i in range(50 + n)]
        txns.begin(values)
        if n % 2:
            txns.abort()
            aborted += values
        else:
            txns.commit()
            expected += values
        if n == 2:
            between = [f"plain-{i}" for i in range(7)]
            plain(b.bootstrap, topic, between)
            expected += between
    # a transaction left open: beyond the last stable offset until it commits
    pending = [f"open-{i}" for i in range(20)]
    txns.begin(pending)

    members = [ShareMember(b.bootstrap, group, [topic], f"rc{i}").start() for i in range(2)]
    try:
        wait_for(lambda: len(accepted(members)) >= len(expected), message="every committed record accepted")
        seen = {d.value for d in deliveries(members)}
        assert not seen & set(pending), "records of an open transaction delivered"
        txns.commit()
        expected += pending
        wait_for(
            lambda: len(accepted(members)) >= len(expected),
            message="the records of the committed transaction accepted",
        )
    finally:
        for m in members:
            m.stop(check=False)
    assert not [m.name for m in members if m.running], "members did not close"
    assert not [e for m in members for e in m.errors + m.ack_errors]
    got = [d.value for d in deliveries(members)]
    assert not set(got) & set(aborted), f"aborted records delivered: {sorted(set(got) & set(aborted))[:5]}"
    assert sorted(got) == sorted(expected), "a committed record missing or delivered twice"
    assert len(accepted(members)) == len(expected)
    # librdkafka acknowledges the commit and abort markers' offsets as GAP (never delivered)
    gaps = {k for m in members for k, acks in m.acked.items() if {kind for _, kind in acks} == {GAP}}
    assert gaps and not gaps & set(accepted(members))
