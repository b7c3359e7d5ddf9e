"""Client scenarios: what real clients (kafka-python, librdkafka) observe must be the same on
both brokers: records and offsets consumed, committed offsets, transactional outcomes, admin
results. Each scenario is bounded by client timeouts; failures are observed, not raised."""

import time

from conformance.cases import case

TIMEOUT_S = 30


def _error(exc: Exception) -> str:
    return f"{type(exc).__name__}"


def _plain(value):
    """A client's result object as plain data (kafka-python's protocol objects have to_dict)."""
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v) for v in value]
    return value


def _kp_admin(s):
    from kafka import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=s.bootstrap, request_timeout_ms=20000, client_id="conformance-admin"
    )


def _consume_all(consumer, expected: int, to_tuple) -> list:
    got, deadline = [], time.monotonic() + TIMEOUT_S
    while len(got) < expected and time.monotonic() < deadline:
        got += [to_tuple(m) for m in consumer(1.0)]
    return sorted(got)


@case("clients/kafka-python-idempotent-group")
def kafka_python_group(s):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    s.create_topic("cl-kp", 2)
    producer = KafkaProducer(
        bootstrap_servers=s.bootstrap,
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
        max_block_ms=20000,
        request_timeout_ms=20000,
    )
    try:
        sent = [
            producer.send("cl-kp", key=b"k%d" % i, value=b"v%d" % i, timestamp_ms=1_700_000_000_000 + i)
            for i in range(20)
        ]
        producer.flush(TIMEOUT_S)
        s.observe("produced", sorted((f.get(5).partition, f.get(5).offset) for f in sent))
    finally:
        producer.close(5)
    consumer = KafkaConsumer(
        "cl-kp",
        bootstrap_servers=s.bootstrap,
        group_id="cl-kp-group",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        request_timeout_ms=20000,
    )
    try:

        def poll(timeout):
            return [m for batch in consumer.poll(timeout_ms=int(timeout * 1000)).values() for m in batch]

        s.observe(
            "consumed", _consume_all(poll, 20, lambda m: (m.partition, m.offset, m.key, m.value, m.timestamp))
        )
        consumer.commit()
        s.observe("committed", {p: consumer.committed(TopicPartition("cl-kp", p)) for p in (0, 1)})
        s.observe("assignment", sorted(tp.partition for tp in consumer.assignment()))
    finally:
        consumer.close()
    admin = _kp_admin(s)
    try:
        s.observe("admin-group-offsets", _plain(admin.list_group_offsets({"cl-kp-group": None})))
        s.observe("admin-group", _plain(admin.describe_groups(["cl-kp-group"])))
    finally:
        admin.close()


@case("clients/kafka-python-admin")
def kafka_python_admin(s):
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

    admin = _kp_admin(s)
    try:

        def attempt(label, fn):
            try:
                s.observe(label, _plain(fn()))
            except Exception as exc:  # noqa: BLE001 - the client's verdict is the observation
                s.observe(label, _error(exc))

        attempt(
            "create",
            lambda: admin.create_topics(
                [NewTopic("cl-admin", 2, 1, topic_configs={"retention.ms": "60000"})], raise_errors=False
            ),
        )
        s.wait_topic("cl-admin", 2)
        attempt("create-again", lambda: admin.create_topics([NewTopic("cl-admin", 2, 1)], raise_errors=False))
        attempt(
            "create-bad-config",
            lambda: admin.create_topics(
                [NewTopic("cl-admin-bad", 1, 1, topic_configs={"segment.bytes": "10"})], raise_errors=False
            ),
        )
        attempt("grow", lambda: admin.create_partitions({"cl-admin": NewPartitions(3)}, raise_errors=False))
        s.wait_topic("cl-admin", 3)
        attempt("shrink", lambda: admin.create_partitions({"cl-admin": NewPartitions(1)}, raise_errors=False))
        attempt(
            "describe-configs",
            lambda: admin.describe_configs(
                [
                    ConfigResource(
                        ConfigResourceType.TOPIC,
                        "cl-admin",
                        ["retention.ms", "cleanup.policy", "segment.bytes"],
                    )
                ],
                config_filter="all",
            ),
        )
        attempt("describe-topics", lambda: admin.describe_topics(["cl-admin"]))
        attempt("listed", lambda: "cl-admin" in admin.list_topics())
        attempt("delete", lambda: admin.delete_topics(["cl-admin", "cl-admin-missing"], raise_errors=False))
    finally:
        admin.close()


@case("clients/librdkafka-transactions")
def librdkafka_transactions(s):
    from confluent_kafka import Consumer, KafkaException, Producer

    s.create_topic("cl-txn", 1)
    producer = Producer(
        {
            "bootstrap.servers": s.bootstrap,
            "transactional.id": "cl-txn-producer",
            "transaction.timeout.ms": 60000,
            "linger.ms": 5,
        }
    )
    try:
        producer.init_transactions(TIMEOUT_S)
        for commit in (True, False, True):
            producer.begin_transaction()
            for i in range(3):
                producer.produce(
                    "cl-txn",
                    key=b"k",
                    value=b"%s-%d" % (b"c" if commit else b"a", i),
                    timestamp=1_700_000_000_000 + i,
                )
            producer.flush(TIMEOUT_S)
            (producer.commit_transaction if commit else producer.abort_transaction)(TIMEOUT_S)
        s.observe("transactions", "done")
    except KafkaException as exc:
        s.observe("transactions", str(exc.args[0].code()))
    finally:
        producer.flush(5)
    for isolation in ("read_committed", "read_uncommitted"):
        consumer = Consumer(
            {
                "bootstrap.servers": s.bootstrap,
                "group.id": f"cl-txn-{isolation}",
                "auto.offset.reset": "earliest",
                "isolation.level": isolation,
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
            }
        )
        try:
            consumer.subscribe(["cl-txn"])

            def poll(timeout, consumer=consumer):
                return [m for m in consumer.consume(10, timeout) if m.error() is None]

            expected = 6 if isolation == "read_committed" else 9
            s.observe(
                f"consumed-{isolation}", _consume_all(poll, expected, lambda m: (m.offset(), m.value()))
            )
            low, high = consumer.get_watermark_offsets(
                __import__("confluent_kafka").TopicPartition("cl-txn", 0), timeout=10
            )
            s.observe(f"watermarks-{isolation}", (low, high))
        finally:
            consumer.close()
