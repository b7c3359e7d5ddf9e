"""broker/dynamic_config.py: dynamic broker configs (cluster default and per broker) and topic
overrides, their precedence, validation, persistence and the logs' effective configs."""

import json

import pytest
from minibroker.broker.config import BrokerConfig
from minibroker.broker.dynamic_config import APPEND, BROKER, DELETE, SET, SUBTRACT, TOPIC, DynamicConfigs
from minibroker.broker.telemetry import ClientTelemetry
from minibroker.common.clock import SYSTEM_CLOCK
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log_manager import LogManager

pytestmark = pytest.mark.timeout(10)


def setup(path, **static):
    config = BrokerConfig({"log.dirs": str(path), **static})
    logs = LogManager(str(path), config, clock=SYSTEM_CLOCK)
    dynamic = DynamicConfigs(str(path), config, logs, ClientTelemetry(SYSTEM_CLOCK, 1048576))
    dynamic.load()
    logs.open()
    return config, logs, dynamic


def test_precedence_persistence_and_effect_on_logs(tmp_path):
    config, logs, dynamic = setup(tmp_path, **{"log.retention.bytes": "100"})
    logs.create_topic("t", 1)
    assert logs.get_log("t", 0).config.retention_bytes == 100
    dynamic.alter(BROKER, "", [("log.retention.bytes", SET, "200")], incremental=True, validate_only=False)
    assert config.source("log.retention.bytes") == "cluster"
    assert logs.get_log("t", 0).config.retention_bytes == 200
    dynamic.alter(BROKER, "1", [("log.retention.bytes", SET, "300")], incremental=True, validate_only=False)
    assert logs.get_log("t", 0).config.retention_bytes == 300
    dynamic.alter(
        TOPIC,
        "t",
        [("retention.bytes", SET, "400"), ("cleanup.policy", APPEND, "compact")],
        incremental=True,
        validate_only=False,
    )
    plog_cfg = logs.get_log("t", 0).config
    assert (plog_cfg.retention_bytes, plog_cfg.cleanup_policy, plog_cfg.compact) == (
        400,
        "delete,compact",
        True,
    )
    dynamic.alter(TOPIC, "t", [("cleanup.policy", SUBTRACT, "delete")], incremental=True, validate_only=False)
    assert logs.get_log("t", 0).config.cleanup_policy == "compact"
    logs.close()
    saved = json.loads((tmp_path / "dynamic-broker-configs.json").read_text())
    # min.insync.replicas: the cluster-wide default a new data directory gets, as Kafka's format
    assert saved == {
        "broker": {"log.retention.bytes": "300"},
        "cluster": {"log.retention.bytes": "200", "min.insync.replicas": "1"},
    }
    config, logs, dynamic = setup(tmp_path, **{"log.retention.bytes": "100"})
    assert config["log.retention.bytes"] == 300
    dynamic.alter(BROKER, "1", [("log.retention.bytes", DELETE, None)], incremental=True, validate_only=False)
    assert config["log.retention.bytes"] == 200 and config.source("log.retention.bytes") == "cluster"
    logs.close()


@pytest.mark.parametrize(
    "resource,name,ops,code",
    [
        (BROKER, "1", [("node.id", SET, "2")], ErrorCode.invalid_request),
        (BROKER, "7", [("log.retention.bytes", SET, "2")], ErrorCode.invalid_request),
        (BROKER, "1", [("no.such", SET, "2")], ErrorCode.invalid_config),
        (BROKER, "1", [("log.retention.bytes", SET, "x")], ErrorCode.invalid_request),
        (BROKER, "1", [("log.retention.bytes", APPEND, "1")], ErrorCode.invalid_config),
        (TOPIC, "t", [("retention.ms", SET, "-5")], ErrorCode.invalid_config),
        (TOPIC, "t", [("retention.ms", SET, None)], ErrorCode.invalid_config),
        (TOPIC, "t", [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)], ErrorCode.invalid_request),
        (TOPIC, "nope", [("retention.ms", SET, "1")], ErrorCode.unknown_topic_or_partition),
        (3, "x", [], ErrorCode.invalid_request),
    ],
)
def test_errors_change_nothing(tmp_path, resource, name, ops, code):
    config, logs, dynamic = setup(tmp_path)
    logs.create_topic("t", 1, {"retention.ms": "5000"})
    with pytest.raises(KafkaStorageError) as exc:
        dynamic.alter(resource, name, ops, incremental=True, validate_only=False)
    assert exc.value.error_code == code
    assert logs.topics["t"].configs == {"retention.ms": "5000"}
    assert config.dynamic("broker") == {} and config.dynamic("cluster") == {"min.insync.replicas": "1"}
    dynamic.alter(TOPIC, "t", [("retention.ms", SET, "9")], incremental=True, validate_only=True)
    assert logs.topics["t"].configs == {"retention.ms": "5000"}
    logs.close()


def test_every_kafka_dynamic_broker_config_is_accepted_and_stored(tmp_path):
    """librdkafka's 0081 admin test sets sasl.kerberos.min.time.before.relogin and
    background.threads; Kafka 4.4 accepts every name of its dynamic list, with its rules."""
    config, logs, dynamic = setup(tmp_path)
    dynamic.alter(
        BROKER,
        "1",
        [("sasl.kerberos.min.time.before.relogin", SET, "58000"), ("background.threads", SET, "7")],
        incremental=True,
        validate_only=False,
    )
    assert config["background.threads"] == "7" and config.source("background.threads") == "broker"
    dynamic.alter(BROKER, "", [("min.insync.replicas", SET, "2")], incremental=True, validate_only=False)
    assert logs.describe_topic_configs  # topics fall back to it
    for name, value, code in [
        ("background.threads", "many", ErrorCode.invalid_request),  # Kafka's type: INT
        ("ssl.keystore.location", "/x", ErrorCode.invalid_request),  # only with a listener prefix
        ("no.such.config", "1", ErrorCode.invalid_config),
        ("broker.rack", "r", ErrorCode.invalid_request),  # Kafka knows it: not dynamic
    ]:
        with pytest.raises(KafkaStorageError) as info:
            dynamic.alter(BROKER, "1", [(name, SET, value)], incremental=True, validate_only=False)
        assert info.value.error_code == code, name
    with pytest.raises(KafkaStorageError) as info:  # per-broker only
        dynamic.alter(
            BROKER, "", [("sasl.kerberos.kinit.cmd", SET, "k")], incremental=True, validate_only=False
        )
    assert info.value.error_code == ErrorCode.invalid_request
    logs.close()
    config, logs, dynamic = setup(tmp_path)
    assert config["background.threads"] == "7" and config["min.insync.replicas"] == "2"
    logs.close()


@pytest.mark.parametrize(
    "name,value",
    [
        ("compression.type", "bogus"),
        ("min.insync.replicas", "0"),
        ("unclean.leader.election.enable", "maybe"),
    ],
)
def test_a_log_default_follows_the_topic_config_rules(tmp_path, name, value):
    """Kafka's DynamicLogConfig checks a broker default with LogConfig's rules: INVALID_REQUEST."""
    config, logs, dynamic = setup(tmp_path)
    with pytest.raises(KafkaStorageError) as info:
        dynamic.alter(BROKER, "", [(name, SET, value)], incremental=True, validate_only=False)
    assert info.value.error_code == ErrorCode.invalid_request
    logs.close()
