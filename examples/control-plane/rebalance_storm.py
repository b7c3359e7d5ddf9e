"""Recipe: a consumer group member survives a rebalance storm and loses no record."""

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

import minibroker.testing

with minibroker.testing.broker(control=True) as b:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("events", 3)])["events"].result(30)
    producer = Producer({"bootstrap.servers": b.bootstrap})
    for i in range(300):
        producer.produce("events", value=f"e-{i}")
    assert producer.flush(30) == 0

    joins = b.faults.observe(api="JoinGroup", group_id="storm")  # counts, changes nothing
    # the group's first five heartbeats say "a rebalance is in progress": the member rejoins each time
    storm = b.faults.add(api="Heartbeat", group_id="storm", error="REBALANCE_IN_PROGRESS", count=5)
    consumer = Consumer(
        {
            "bootstrap.servers": b.bootstrap,
            "group.id": "storm",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "heartbeat.interval.ms": 100,
        }
    )
    consumer.subscribe(["events"])
    seen = set()
    try:
        while len(seen) < 300 or storm.count < 5:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.add(msg.value().decode())
                consumer.commit(msg, asynchronous=False)  # processed, then committed
    finally:
        consumer.close()
    joins.wait(2, timeout=10)  # the first join and at least one rejoin
    assert seen == {f"e-{i}" for i in range(300)}  # no record lost across the rebalances
    print(f"rebalance storm: {storm.count} forced rebalances, {joins.count} JoinGroups, 300 records")
