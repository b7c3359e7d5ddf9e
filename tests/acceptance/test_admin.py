"""Issue 2, admin basics through kafka-python's KafkaAdminClient and confluent-kafka's
AdminClient: create/delete topics, create partitions, describe configs, describe cluster, list
topics; auto-creation; topic ids (Metadata v10+) stable across a restart."""

from __future__ import annotations

import pytest

from tests.support.helpers import admin_client, unique_name, wait_for_topic, wait_until
from tests.support.wire import (
    UNKNOWN_TOPIC_OR_PARTITION,
    ZERO_UUID,
    WireClient,
    build_batch,
)

CK_TIMEOUT = 10


def metadata_topic(broker, name, version=12):
    with WireClient.to(broker) as c:
        md = c.metadata([name], version=version)
    (t,) = md.topics
    return t


def test_kafka_python_admin(shared_broker):
    import kafka.errors as Errors
    from kafka.admin import ConfigResource, ConfigResourceType

    name = unique_name("kpadm")
    admin = admin_client(shared_broker.bootstrap)
    try:
        res = admin.create_topics(
            {
                name: {
                    "num_partitions": 3,
                    "replication_factor": 1,
                    "configs": {"retention.ms": "86400000", "cleanup.policy": "delete"},
                }
            }
        )
        assert [(t["name"], t["error_code"]) for t in res["topics"]] == [(name, 0)]
        wait_for_topic(shared_broker, name, 3)
        assert name in admin.list_topics()

        (desc,) = admin.describe_topics([name])
        assert desc["error_code"] == 0 and desc["is_internal"] is False
        cluster = admin.describe_cluster()
        assert cluster["cluster_id"], cluster
        (node,) = cluster["brokers"]
        assert (node["host"], node["port"]) == (shared_broker.host, shared_broker.port)
        assert sorted(p["partition_index"] for p in desc["partitions"]) == [0, 1, 2]
        assert {p["leader_id"] for p in desc["partitions"]} == {node["broker_id"]}
        assert all(p["replica_nodes"] == [node["broker_id"]] == p["isr_nodes"] for p in desc["partitions"])

        with pytest.raises(Errors.TopicAlreadyExistsError):
            admin.create_topics({name: {"num_partitions": 1, "replication_factor": 1}})

        admin.create_partitions({name: 5})
        wait_for_topic(shared_broker, name, 5)
        with pytest.raises(Errors.InvalidPartitionsError):
            admin.create_partitions({name: 4})
        with WireClient.to(shared_broker) as c:
            r = c.produce(name, 4, build_batch([(b"k", b"new partition", [])]))
            assert (r.error_code, r.base_offset) == (0, 0)

        resource = ConfigResource(ConfigResourceType.TOPIC, name)
        configs = admin.describe_configs([resource], config_filter="all")["topic"][name]
        assert configs["retention.ms"]["value"] == "86400000"
        assert configs["cleanup.policy"]["value"] == "delete"
        assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        modified = admin.describe_configs([resource])["topic"][name]  # default filter: overrides only
        assert {"retention.ms", "cleanup.policy"} <= set(modified), sorted(modified)

        broker_cfg = admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, str(node["broker_id"]))], config_filter="all"
        )
        assert broker_cfg["broker"][str(node["broker_id"])]["message.max.bytes"]["value"] == "1048588"

        old_id = metadata_topic(shared_broker, name).topic_id
        admin.delete_topics([name])
        wait_until(lambda: name not in admin.list_topics(), 10, message=f"{name} gone from list_topics")
        assert metadata_topic(shared_broker, name).error_code == UNKNOWN_TOPIC_OR_PARTITION
        with pytest.raises(Errors.UnknownTopicOrPartitionError):
            admin.delete_topics([name])

        # the name can be reused: a new topic id and an empty log
        admin.create_topics({name: {"num_partitions": 1, "replication_factor": 1}})
        wait_for_topic(shared_broker, name, 1)
        t = metadata_topic(shared_broker, name)
        assert t.topic_id not in (old_id, ZERO_UUID)
        with WireClient.to(shared_broker) as c:
            assert c.list_offsets(name, 0, -1).offset == 0
    finally:
        admin.close()


def test_confluent_admin(shared_broker):
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic, ResourceType

    name = unique_name("ckadm")
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap, "socket.timeout.ms": 10000})
    fs = admin.create_topics(
        [NewTopic(name, num_partitions=3, replication_factor=1, config={"retention.ms": "7200000"})],
        operation_timeout=CK_TIMEOUT,
    )
    fs[name].result(CK_TIMEOUT)
    wait_for_topic(shared_broker, name, 3)

    md = admin.list_topics(timeout=CK_TIMEOUT)
    assert name in md.topics and len(md.topics[name].partitions) == 3
    assert md.topics[name].error is None
    assert list(md.brokers) and md.cluster_id

    with pytest.raises(KafkaException) as exc:
        admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])[name].result(CK_TIMEOUT)
    assert exc.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS

    admin.create_partitions([NewPartitions(name, 6)])[name].result(CK_TIMEOUT)
    wait_for_topic(shared_broker, name, 6)
    assert len(admin.list_topics(name, timeout=CK_TIMEOUT).topics[name].partitions) == 6

    res = ConfigResource(ResourceType.TOPIC, name)
    configs = admin.describe_configs([res])[res].result(CK_TIMEOUT)
    assert configs["retention.ms"].value == "7200000"

    cluster = admin.describe_cluster(request_timeout=CK_TIMEOUT).result(CK_TIMEOUT)
    assert cluster.cluster_id == md.cluster_id
    assert [(n.host, n.port) for n in cluster.nodes] == [(shared_broker.host, shared_broker.port)]

    admin.delete_topics([name], operation_timeout=CK_TIMEOUT)[name].result(CK_TIMEOUT)
    wait_until(
        lambda: name not in admin.list_topics(timeout=CK_TIMEOUT).topics, 10, message=f"{name} deleted"
    )
    with pytest.raises(KafkaException) as exc:
        admin.delete_topics([name])[name].result(CK_TIMEOUT)
    assert exc.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_confluent_admin_list_offsets(shared_broker):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

    name = unique_name("cklo")
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])[name].result(CK_TIMEOUT)
    wait_for_topic(shared_broker, name, 1)
    base = 1_700_000_000_000
    with WireClient.to(shared_broker) as c:
        r = c.produce(name, 0, build_batch([(None, b"v%d" % i, [], base + 100 * i) for i in range(8)]))
        assert r.error_code == 0
    tp = TopicPartition(name, 0)
    for spec, want in [
        (OffsetSpec.earliest(), 0),
        (OffsetSpec.latest(), 8),
        (OffsetSpec.for_timestamp(base + 250), 3),
        (OffsetSpec.max_timestamp(), 7),
    ]:
        got = admin.list_offsets({tp: spec}, request_timeout=CK_TIMEOUT)[tp].result(CK_TIMEOUT)
        assert got.offset == want, f"{spec}: {got.offset} != {want}"


def test_topic_ids_stable_across_restart(broker):
    name = unique_name("ids")
    with WireClient.to(broker) as c:
        r = c.create_topics([(name, 2)], version=7)
        (created,) = r.topics
        assert created.error_code == 0 and created.topic_id not in (None, ZERO_UUID)
    wait_for_topic(broker, name, 2)
    ids = {v: metadata_topic(broker, name, version=v).topic_id for v in (10, 11, 12, 13)}
    assert set(ids.values()) == {created.topic_id}, ids
    with WireClient.to(broker) as c:
        cluster_id = c.metadata([name], version=12).cluster_id
    broker.restart()
    assert metadata_topic(broker, name, version=12).topic_id == created.topic_id
    broker.kill()
    broker.start()
    assert metadata_topic(broker, name, version=13).topic_id == created.topic_id
    with WireClient.to(broker) as c:
        assert c.metadata([name], version=12).cluster_id == cluster_id


def test_auto_create_topics(broker_factory):
    broker = broker_factory({"num.partitions": 2})
    off = unique_name("noauto")
    assert metadata_topic(broker, off).error_code == UNKNOWN_TOPIC_OR_PARTITION  # allow_auto false
    with WireClient.to(broker) as c:
        assert off not in {t.name for t in c.metadata(None).topics}

    on = unique_name("auto")

    def created():
        with WireClient.to(broker) as c:
            (t,) = c.metadata([on], version=12, allow_auto_topic_creation=True).topics
        # Kafka may answer LEADER_NOT_AVAILABLE (5) while creating; anything else is wrong
        assert t.error_code in (0, 5), t.error_code
        return t.error_code == 0 and len(t.partitions) == 2

    wait_until(created, 10, message="auto-created topic with num.partitions=2")

    # a producer naming an unknown topic creates it too
    from tests.support import clients
    from tests.support.helpers import make_messages

    prod_topic = unique_name("autoprod")
    msgs = [m for m in make_messages(20, 2, tag="auto")]
    acked = clients.kp_produce(broker.bootstrap, prod_topic, msgs)
    assert sorted(acked) == sorted((m.partition, i // 2) for i, m in enumerate(msgs))
