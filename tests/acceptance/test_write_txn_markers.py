"""Issue 13, WriteTxnMarkers (27) as `kafka-transactions.sh abort` uses it: find a hanging
transaction with DescribeProducers, end it with an ABORT marker, and see the last stable offset
move and read_committed consumers skip its records; stale epochs are refused."""

from __future__ import annotations

import pytest
from kafka.protocol.admin import DescribeProducersRequest, DescribeProducersResponse
from kafka.protocol.producer import WriteTxnMarkersRequest, WriteTxnMarkersResponse

from tests.acceptance.test_compaction import consume_all
from tests.support.helpers import create_topic, unique_name, wait_until
from tests.support.wire import WireClient

pytestmark = pytest.mark.timeout(60)


def producers(broker, topic):
    req = DescribeProducersRequest(
        topics=[DescribeProducersRequest.TopicRequest(name=topic, partition_indexes=[0])]
    )
    with WireClient.to(broker) as c:
        resp = c.request(req, DescribeProducersResponse, 0)
    (part,) = resp.topics[0].partitions
    return part.active_producers


def write_marker(broker, topic, pid, epoch, coordinator_epoch, commit=False):
    M = WriteTxnMarkersRequest.WritableTxnMarker
    req = WriteTxnMarkersRequest(
        markers=[
            M(
                producer_id=pid,
                producer_epoch=epoch,
                transaction_result=commit,
                topics=[M.WritableTxnMarkerTopic(name=topic, partition_indexes=[0])],
                coordinator_epoch=coordinator_epoch,
            )
        ]
    )
    with WireClient.to(broker) as c:
        resp = c.request(req, WriteTxnMarkersResponse, 1)
    return resp.markers[0].topics[0].partitions[0].error_code


def test_abort_a_hanging_transaction(broker_factory):
    from confluent_kafka import Producer

    broker = broker_factory()
    topic = unique_name("hanging")
    create_topic(broker, topic, 1)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, b"before", partition=0)
    plain.flush(10)
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": "hang-" + topic,
            "transaction.timeout.ms": 600_000,
        }
    )
    p.init_transactions(10)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, b"hanging-%d" % i, partition=0)
    p.flush(10)  # the transaction is never ended by its producer
    plain.produce(topic, b"after", partition=0)
    plain.flush(10)
    with WireClient.to(broker) as c:
        assert c.list_offsets(topic, 0, -1, isolation_level=1).offset == 1  # LSO stuck

    (hanging,) = [s for s in producers(broker, topic) if s.current_txn_start_offset >= 0]
    assert hanging.current_txn_start_offset == 1
    # a marker from an older epoch is refused and changes nothing
    if hanging.producer_epoch > 0:
        assert (
            write_marker(
                broker, topic, hanging.producer_id, hanging.producer_epoch - 1, hanging.coordinator_epoch
            )
            == 47
        )
    assert (
        write_marker(broker, topic, hanging.producer_id, hanging.producer_epoch, hanging.coordinator_epoch)
        == 0
    )
    with WireClient.to(broker) as c:
        wait_until(
            lambda: c.list_offsets(topic, 0, -1, isolation_level=1).offset == 6,
            5,
            message="LSO past the aborted transaction",
        )
    assert [v for _, _, v in consume_all(broker.bootstrap, topic, "read_committed")] == [b"before", b"after"]
    assert not [s for s in producers(broker, topic) if s.current_txn_start_offset >= 0]
