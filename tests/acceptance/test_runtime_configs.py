"""Issue 13, runtime configs with real admin clients against a broker process:
IncrementalAlterConfigs and AlterConfigs on topics and on the broker (per broker and cluster
default), validation like CreateTopics, DescribeConfigs sources, persistence across restarts,
retention changed at runtime taking effect, DescribeLogDirs sizes."""

from __future__ import annotations

import pytest

from conformance.wire import Connection
from tests.acceptance.test_retention import ck_produce_values, watermarks
from tests.support.helpers import admin_client, create_topic, unique_name, wait_until

pytestmark = pytest.mark.timeout(90)


def ck_admin(broker):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": broker.bootstrap})


def incremental(admin, resource_type, name, entries):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    ops = {
        "SET": AlterConfigOpType.SET,
        "DELETE": AlterConfigOpType.DELETE,
        "APPEND": AlterConfigOpType.APPEND,
        "SUBTRACT": AlterConfigOpType.SUBTRACT,
    }
    res = ConfigResource(
        resource_type,
        name,
        incremental_configs=[ConfigEntry(k, v, incremental_operation=ops[op]) for k, op, v in entries],
    )
    (fut,) = admin.incremental_alter_configs([res]).values()
    return fut.result(10)


def describe(admin, resource_type, name):
    from confluent_kafka.admin import ConfigResource

    (fut,) = admin.describe_configs([ConfigResource(resource_type, name)]).values()
    return fut.result(10)


def test_topic_configs_change_at_runtime_and_survive_restart(broker_factory):
    from confluent_kafka.admin import ConfigSource

    broker = broker_factory({"log.retention.check.interval.ms": 200, "log.segment.bytes": 1000})
    topic = unique_name("cfg")
    create_topic(broker, topic, 1, {"segment.bytes": 2 * 1024 * 1024})
    admin = ck_admin(broker)
    ck_produce_values(broker.bootstrap, topic, [b"x" * 300] * 20)
    assert watermarks(broker.bootstrap, topic) == (0, 20)

    incremental(admin, "topic", topic, [("segment.bytes", "DELETE", None)])
    ck_produce_values(broker.bootstrap, topic, [b"x" * 300] * 20)  # now in 1000-byte segments
    incremental(
        admin, "topic", topic, [("retention.bytes", "SET", "2000"), ("cleanup.policy", "APPEND", "compact")]
    )
    wait_until(
        lambda: watermarks(broker.bootstrap, topic)[0] > 0,
        15,
        message="retention.bytes set at runtime to delete old segments",
    )
    d = describe(admin, "topic", topic)
    assert d["retention.bytes"].value == "2000"
    assert d["retention.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert d["cleanup.policy"].value == "delete,compact"
    assert d["segment.bytes"].value == "1000"  # back to the broker's static value
    assert d["segment.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert d["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    # validated like CreateTopics: nothing changes when one value is bad
    with pytest.raises(Exception, match="INVALID_CONFIG"):
        incremental(admin, "topic", topic, [("retention.ms", "SET", "soon"), ("retention.bytes", "SET", "5")])
    with pytest.raises(Exception, match="INVALID_CONFIG"):
        incremental(admin, "topic", topic, [("no.such.config", "SET", "1")])
    with pytest.raises(Exception, match="INVALID_CONFIG"):
        incremental(admin, "topic", topic, [("retention.ms", "APPEND", "1")])
    with pytest.raises(Exception, match="UNKNOWN_TOPIC"):
        incremental(admin, "topic", "no-such-topic", [("retention.ms", "SET", "1")])
    assert describe(admin, "topic", topic)["retention.bytes"].value == "2000"

    broker.restart()
    d = describe(ck_admin(broker), "topic", topic)
    assert (d["retention.bytes"].value, d["cleanup.policy"].value) == ("2000", "delete,compact")


def test_alter_configs_replaces_the_whole_set(broker_factory):
    import warnings

    from confluent_kafka.admin import ConfigResource as CkResource
    from kafka.admin import ConfigResource, ConfigResourceType

    broker = broker_factory()
    topic = unique_name("cfg-alter")
    create_topic(broker, topic, 1, {"retention.ms": 1000, "segment.bytes": 2 * 1024 * 1024})
    # kafka-python's non-incremental path reads the current set and sends it back merged
    kp = admin_client(broker.bootstrap)
    try:
        kp.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"max.message.bytes": "2000"})],
            incremental=False,
        )
    finally:
        kp.close()
    d = describe(ck_admin(broker), "topic", topic)
    assert (d["max.message.bytes"].value, d["retention.ms"].value) == ("2000", "1000")
    # confluent-kafka's alter_configs sends AlterConfigs as given: omitted keys are reset
    admin = ck_admin(broker)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (fut,) = admin.alter_configs(
            [CkResource("topic", topic, set_config={"retention.ms": "5000"})]
        ).values()
    fut.result(10)
    d = describe(ck_admin(broker), "topic", topic)
    assert d["retention.ms"].value == "5000" and d["segment.bytes"].value == "1073741824"
    assert d["max.message.bytes"].value == "1048588"


def test_dynamic_broker_configs_reach_topics_and_persist(broker_factory):
    from confluent_kafka.admin import ConfigSource

    broker = broker_factory({"log.retention.check.interval.ms": 200, "log.segment.bytes": 1000})
    topic = unique_name("cfg-broker")
    create_topic(broker, topic, 1)
    admin = ck_admin(broker)
    ck_produce_values(broker.bootstrap, topic, [b"y" * 300] * 20)
    incremental(admin, "broker", "1", [("log.retention.bytes", "SET", "2500")])
    wait_until(
        lambda: watermarks(broker.bootstrap, topic)[0] > 0,
        15,
        message="dynamic log.retention.bytes applied to the topic",
    )
    d = describe(admin, "topic", topic)
    assert d["retention.bytes"].value == "2500"
    assert d["retention.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    incremental(
        admin,
        "broker",
        "1",
        [("log.retention.bytes", "SET", "3000"), ("log.cleanup.policy", "APPEND", "compact")],
    )
    b = describe(admin, "broker", "1")
    assert b["log.retention.bytes"].value == "3000"
    assert b["log.retention.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert b["log.retention.bytes"].is_read_only is False and b["node.id"].is_read_only is True
    with pytest.raises(Exception, match="INVALID_REQUEST"):
        incremental(admin, "broker", "1", [("node.id", "SET", "7")])
    with pytest.raises(Exception, match="INVALID_REQUEST"):  # Kafka 4.4 too (conformance)
        incremental(admin, "broker", "1", [("log.retention.bytes", "SET", "lots")])
    broker.restart(kill=True)
    admin = ck_admin(broker)
    assert describe(admin, "topic", topic)["retention.bytes"].value == "3000"
    assert describe(admin, "topic", topic)["cleanup.policy"].value == "delete,compact"
    incremental(admin, "broker", "1", [("log.retention.bytes", "DELETE", None)])
    d = describe(admin, "topic", topic)
    assert (d["retention.bytes"].value, d["retention.bytes"].source) == (
        "-1",
        ConfigSource.DEFAULT_CONFIG.value,
    )


def test_describe_log_dirs_reports_partition_sizes(broker_factory):
    broker = broker_factory()
    topic = unique_name("logdirs")
    create_topic(broker, topic, 2)
    ck_produce_values(broker.bootstrap, topic, [b"z" * 1000] * 5)
    kp = admin_client(broker.bootstrap)
    try:
        result = kp.describe_log_dirs()
    finally:
        kp.close()
    (entry,) = result
    (log_dir,) = entry["log_dirs"]
    assert log_dir["error_code"] == 0 and log_dir["log_dir"] == str(broker.data_dir.resolve())
    assert log_dir["usable_bytes"] > 0
    sizes = {
        (t["name"], p["partition_index"]): p["partition_size"]
        for t in log_dir["topics"]
        for p in t["partitions"]
    }
    assert sizes[(topic, 0)] > 5000 and sizes[(topic, 1)] == 0, sizes


# the legacy AlterConfigs API on purpose: confluent-kafka marks its alter_configs deprecated
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_every_kafka_dynamic_broker_config_and_cluster_default_sources(broker_factory):
    """Issue 23: librdkafka's 0081 admin test sets sasl.kerberos.min.time.before.relogin and
    background.threads (AlterConfigs and IncrementalAlterConfigs), which Kafka 4.4 accepts; and
    confluent-kafka-python's integration tests see min.insync.replicas on every topic as the
    cluster-wide dynamic default Kafka 4.1+'s format writes."""
    from confluent_kafka.admin import ConfigResource, ConfigSource

    broker = broker_factory()
    admin = ck_admin(broker)
    incremental(
        admin,
        "broker",
        "1",
        [("sasl.kerberos.min.time.before.relogin", "SET", "58000"), ("background.threads", "SET", "7")],
    )
    (fut,) = admin.alter_configs(
        [ConfigResource("broker", "1", set_config={"sasl.kerberos.min.time.before.relogin": "59000"})]
    ).values()
    fut.result(10)
    b = describe(admin, "broker", "1")
    assert b["sasl.kerberos.min.time.before.relogin"].value == "59000"
    assert b["sasl.kerberos.min.time.before.relogin"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert b["background.threads"].value == "10"  # AlterConfigs replaced the whole set
    assert b["background.threads"].source == ConfigSource.DEFAULT_CONFIG.value
    topic = unique_name("cfg-misr")
    create_topic(broker, topic, 1)
    t = describe(admin, "topic", topic)
    assert t["min.insync.replicas"].value == "1"
    assert t["min.insync.replicas"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    # the cluster-wide default (librdkafka's admin API has no empty broker name)
    conn = Connection(broker.address)
    answer = conn.call(
        44,
        1,
        {
            "resources": [
                {
                    "resource_type": 4,
                    "resource_name": "",
                    "configs": [{"name": "compression.type", "config_operation": 0, "value": "gzip"}],
                }
            ],
            "validate_only": False,
        },
    )
    assert answer["responses"][0]["error_code"] == 0
    conn.close()
    assert describe(admin, "topic", topic)["compression.type"].value == "gzip"
    broker.restart()
    admin = ck_admin(broker)
    assert describe(admin, "broker", "1")["sasl.kerberos.min.time.before.relogin"].value == "59000"
    t = describe(admin, "topic", topic)
    assert t["compression.type"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    assert t["min.insync.replicas"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
