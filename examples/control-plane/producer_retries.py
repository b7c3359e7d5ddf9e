"""Recipe: a producer retries through NOT_LEADER_OR_FOLLOWER and every record lands once."""

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import minibroker.testing

with minibroker.testing.broker(control=True) as b:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("orders", 1)])["orders"].result(30)
    # the first three Produce requests for orders-0 are answered NOT_LEADER_OR_FOLLOWER
    # (nothing appended); the producer refreshes its metadata and retries
    fault = b.faults.add(api="Produce", topic="orders", partition=0, error="NOT_LEADER_OR_FOLLOWER", count=3)
    producer = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "enable.idempotence": True})
    delivered = []
    for i in range(100):
        producer.produce(
            "orders",
            value=f"order-{i}",
            partition=0,
            on_delivery=lambda err, msg: delivered.append((err, msg.offset())),
        )
    assert producer.flush(30) == 0
    fault.wait(3, timeout=10)  # it fired three times
    assert all(err is None for err, _ in delivered) and len(delivered) == 100
    assert sorted(offset for _, offset in delivered) == list(range(100))  # each record once
    assert b.state.partition("orders", 0)["high_watermark"] == 100
    print("producer retries: 100 records acknowledged once after", fault.count, "NOT_LEADER_OR_FOLLOWER")
