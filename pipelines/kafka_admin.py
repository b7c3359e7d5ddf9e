"""Topic creation shared by the generator and the totals sink."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic


def ensure_topic(bootstrap: str, topic: str, partitions: int, kafka_options: dict | None = None) -> None:
    """Create `topic` with `partitions` unless it exists (any partition count is kept)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **(kafka_options or {})})
    if topic in admin.list_topics(timeout=30).topics:
        return
    futures = admin.create_topics([NewTopic(topic, partitions, 1)])
    try:
        futures[topic].result(30)
    except KafkaException as exc:
        if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise
