"""Recipe: an exactly-once read-process-write job survives a broker crash at each point between
prepare and commit: every input record is in the output exactly once, read_committed."""

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import minibroker.testing


def run_job(bootstrap: str) -> Consumer | None:
    """Copy what `in` holds past the group's committed offset to `out`, a transaction per batch.
    If the broker dies under a commit: the job stops and returns its consumer, to be closed once
    the broker is back (closing leaves the group, which needs the broker)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "job",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "job"})
    producer.init_transactions(30)  # fences the previous instance, finishes what it left
    consumer.subscribe(["in"])
    while batch := consumer.consume(50, timeout=5):
        producer.begin_transaction()
        for i, msg in enumerate(batch):
            producer.produce("out", value=msg.value(), partition=i % 2)
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata()
        )
        try:
            producer.commit_transaction(5)
        except KafkaException:  # the broker died under the commit
            return consumer
    consumer.close()
    return None


def read_committed(bootstrap: str) -> list[str]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "check",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    c.assign([TopicPartition("out", p, 0) for p in (0, 1)])
    values, ends = [], 0
    while ends < 2:
        msg = c.poll(10)
        assert msg is not None, "read_committed consumer got nothing for 10 s"
        if msg.error():
            ends += 1
        else:
            values.append(msg.value().decode())
    c.close()
    return values


for point, after in [("txn.after_prepare", None), ("txn.after_markers", 1), ("txn.before_complete", None)]:
    with minibroker.testing.broker(control=True) as b:
        b.extra_args = ["--port", str(b.port)]  # restart on the same port: the clients reconnect
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for topic, partitions in (("in", 1), ("out", 2)):
            admin.create_topics([NewTopic(topic, partitions)])[topic].result(30)
        producer = Producer({"bootstrap.servers": b.bootstrap})
        for i in range(50):
            producer.produce("in", value=f"r-{i}")
        assert producer.flush(30) == 0

        b.crash_at(point, after=after)  # txn.after_markers: once 1 of the 2 partitions has its marker
        crashed = run_job(b.bootstrap)
        assert crashed is not None, f"{point}: the commit went through"
        assert b.wait_crashed(timeout=30) == -9  # died as SIGKILL: no flush, no cleanup
        b.restart()  # recovery from the same data dir finishes the commit, as Kafka does
        crashed.close()
        b.state.wait_for_transactions_complete(timeout=30)
        assert run_job(b.bootstrap) is None  # the restarted job copies what is left, if anything

        out = read_committed(b.bootstrap)
        assert sorted(out) == sorted(f"r-{i}" for i in range(50)), (point, len(out))
        assert b.state.committed("job") == {("in", 0): 50}
        print(f"{point}: 50 records exactly once after the crash and the restart")
