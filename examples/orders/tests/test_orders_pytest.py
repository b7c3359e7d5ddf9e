"""With the pytest plugin: a session broker, and a fresh topic per test from `kafka_topic`."""

from orders import committed_orders, publish_orders


def test_committed_orders_are_visible(kafka_bootstrap_servers, kafka_topic):
    topic = kafka_topic(partitions=3)
    orders = [{"id": f"o{i}", "qty": i} for i in range(6)]
    publish_orders(kafka_bootstrap_servers, topic, orders, transactional_id="orders-ok")
    seen = committed_orders(kafka_bootstrap_servers, topic, expected=6)
    assert sorted(seen, key=lambda o: o["id"]) == orders


def test_aborted_orders_are_not(kafka_bootstrap_servers, kafka_topic):
    topic = kafka_topic()
    publish_orders(
        kafka_bootstrap_servers,
        topic,
        [{"id": "a", "qty": 1}, {"id": "b", "qty": 2}],
        transactional_id="orders-aborted",
        fail_after=1,
    )
    publish_orders(kafka_bootstrap_servers, topic, [{"id": "c", "qty": 3}], transactional_id="orders-after")
    assert committed_orders(kafka_bootstrap_servers, topic, expected=1) == [{"id": "c", "qty": 3}]
