"""Issue 21: the broker configuration reads Kafka property files as Kafka does. Every property
Kafka's broker knows is accepted (cluster-only ones and the ones minibroker does not implement are
logged once as ignored), unknown names are refused with a "did you mean" hint, and every problem
is reported in one pass."""

from __future__ import annotations

import pytest
import structlog
from minibroker.broker.cli import build_config, parse_args
from minibroker.broker.config import PROPERTIES, BrokerConfig, ConfigError
from minibroker.broker.kafka_compat import cluster_only_reason, kafka_knows
from minibroker.broker.kafka_properties import KAFKA_BROKER_PROPERTIES
from minibroker.broker.security.listeners import parse_listeners

from tests.support.broker import REPO_ROOT

pytestmark = pytest.mark.timeout(10)

STOCK = REPO_ROOT / "tests" / "fixtures" / "kafka-server.properties"


def problems_of(values: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        BrokerConfig(values)
    return info.value.problems


def test_unknown_names_get_the_closest_known_name_as_a_hint():
    assert problems_of({"log.retension.hours": "1"}) == [
        "log.retension.hours: unknown property (did you mean log.retention.hours?)"
    ]
    # a minibroker.* typo is unknown too, and a Kafka-only name can be the hint
    assert problems_of({"minibroker.request.log.enabled": "true"}) == [
        "minibroker.request.log.enabled: unknown property (did you mean minibroker.request.log.enable?)"
    ]
    assert problems_of({"num.network.thread": "3"}) == [
        "num.network.thread: unknown property (did you mean num.network.threads?)"
    ]
    assert problems_of({"zzzz": "1"}) == ["zzzz: unknown property"]


def test_every_problem_is_reported_at_once():
    values = {
        "lsteners": "PLAINTEXT://127.0.0.1:9092",
        "num.partition": "3",
        "log.retension.hours": "1",
        "log.segment.bytes": "a lot",
        "num.io.threads": "8",  # Kafka's: accepted
        "num.partitions": "0",  # invalid value of an implemented property
    }
    with pytest.raises(ConfigError) as info:
        BrokerConfig(values)
    assert info.value.problems == [
        "lsteners: unknown property (did you mean listeners?)",
        "num.partition: unknown property (did you mean num.partitions?)",
        "log.retension.hours: unknown property (did you mean log.retention.hours?)",
        "log.segment.bytes: expected an integer, got 'a lot'",
        "num.partitions: invalid value '0' (must be > 0)",
    ]
    assert str(info.value).startswith("5 problems: lsteners: unknown property")


def test_file_and_set_problems_are_reported_together(tmp_path):
    props = tmp_path / "server.properties"
    props.write_text("log.retension.hours=1\nnum.partitions=2\n")
    args = parse_args(
        ["--config", str(props), "--set", "num.partitions=x", "--set", "oops", "--set", "nope.nope=1"]
    )
    with pytest.raises(ConfigError) as info:
        build_config(args)
    assert info.value.problems == [
        "log.retension.hours: unknown property (did you mean log.retention.hours?)",
        "--set 'oops': expected key=value",
        "num.partitions: expected an integer, got 'x'",
        "nope.nope: unknown property",
    ]


def test_implemented_properties_work_as_before(tmp_path):
    config = BrokerConfig({"log.segment.bytes": "2048", "auto.create.topics.enable": "false", "node.id": "4"})
    assert config["log.segment.bytes"] == 2048
    assert config["auto.create.topics.enable"] is False
    assert config.source("log.segment.bytes") == "static"
    assert config.source("num.partitions") == "default"
    # the dynamic-config path (AlterConfigs) still refuses what minibroker does not implement
    with pytest.raises(ConfigError, match=r"num\.io\.threads: unknown property"):
        BrokerConfig.parse("num.io.threads", "8")
    # a per-listener override minibroker implements is read per listener
    config = BrokerConfig({"listener.name.internal.ssl.client.auth": "required"})
    assert config.for_listener("INTERNAL", "ssl.client.auth") == "required"
    assert config.for_listener("EXTERNAL", "ssl.client.auth") == "none"


def test_kafka_properties_minibroker_does_not_implement_are_accepted_and_not_described():
    config = BrokerConfig(
        {
            "num.io.threads": "8",
            "process.roles": "broker,controller",
            "offsets.topic.replication.factor": "3",
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",  # a minibroker one, per listener
            "listener.name.internal.socket.send.buffer.bytes": "102400",  # Kafka's, per listener
            "listener.name.internal.plain.sasl.login.class": "x.Y",  # per mechanism
        }
    )
    cluster, other = config.ignored()
    assert cluster == {
        "offsets.topic.replication.factor": "one node holds the only replica of every partition",
        "process.roles": "this one process is both broker and controller",
    }
    assert other == [
        "listener.name.internal.plain.sasl.login.class",
        "listener.name.internal.socket.send.buffer.bytes",
        "num.io.threads",
    ]
    assert "num.io.threads" not in dict(config.items())  # DescribeConfigs lists what minibroker does


def test_ignored_properties_are_logged_once_per_kind():
    config = BrokerConfig(
        {
            "controller.quorum.voters": "1@localhost:9093",
            "transaction.state.log.min.isr": "1",
            "inter.broker.listener.name": "PLAINTEXT",
            "num.network.threads": "3",
            "socket.send.buffer.bytes": "102400",
        }
    )
    with structlog.testing.capture_logs() as logs:
        config.log_ignored(structlog.get_logger("test"))
    assert [entry["log_level"] for entry in logs] == ["info", "warning"]
    assert logs[0]["reasons"] == {
        "no KRaft quorum: this one process is its own controller": ["controller.quorum.voters"],
        "no other broker to talk to": ["inter.broker.listener.name"],
        "one node holds the only replica of every partition": ["transaction.state.log.min.isr"],
    }
    assert logs[1]["properties"] == ["num.network.threads", "socket.send.buffer.bytes"]
    with structlog.testing.capture_logs() as logs:
        BrokerConfig({"num.partitions": "2"}).log_ignored(structlog.get_logger("test"))
    assert logs == []  # nothing ignored, nothing logged


@pytest.mark.parametrize(
    "name",
    [
        "process.roles",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "controller.listener.names",
        "inter.broker.listener.name",
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
        "min.insync.replicas",
        "replica.lag.time.max.ms",
        "metadata.log.dir",
    ],
)
def test_cluster_only_properties_have_a_reason(name):
    assert name in KAFKA_BROKER_PROPERTIES
    assert cluster_only_reason(name)


def test_kafka_property_classification():
    assert cluster_only_reason("num.io.threads") is None
    assert cluster_only_reason("not.a.kafka.replication.factor") is None  # only Kafka's names
    assert kafka_knows("listener.name.controller.ssl.cipher.suites")
    assert kafka_knows("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config")
    assert not kafka_knows("listener.name.internal.no.such.thing")
    assert not kafka_knows("num.partition")
    # every property minibroker implements under a Kafka name is one of Kafka's
    kafka_named = [n for n in PROPERTIES if not n.startswith("minibroker.")]
    assert sorted(n for n in kafka_named if n not in KAFKA_BROKER_PROPERTIES) == [
        "allow.everyone.if.no.acl.found",  # the authorizer's own configs, outside KafkaConfig
        "super.users",
    ]


def test_broker_id_and_log_dir_are_read_as_their_newer_names():
    assert BrokerConfig({"broker.id": "7"})["node.id"] == 7
    assert BrokerConfig({"broker.id": "7", "node.id": "7"})["node.id"] == 7
    with pytest.raises(ConfigError, match=r"broker\.id: 7 differs from node\.id 1"):
        BrokerConfig({"node.id": "1", "broker.id": "7"})
    with pytest.raises(ConfigError, match=r"broker\.id: 7 differs from node\.id 1"):
        BrokerConfig({"broker.id": "7", "node.id": "1"})
    assert problems_of({"broker.id": "x"}) == ["broker.id: expected an integer, got 'x'"]
    assert BrokerConfig({"log.dir": "/a"})["log.dirs"] == "/a"
    assert BrokerConfig({"log.dir": "/a", "log.dirs": "/b"})["log.dirs"] == "/b"
    assert BrokerConfig({"log.dirs": "/b", "log.dir": "/a"})["log.dirs"] == "/b"


def test_the_stock_kafka_file_is_read_without_problems():
    config = build_config(parse_args(["--config", str(STOCK)]))
    cluster, other = config.ignored()
    assert set(cluster) == {
        "process.roles",
        "controller.quorum.bootstrap.servers",
        "controller.listener.names",
        "inter.broker.listener.name",
        "offsets.topic.replication.factor",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
    }
    assert other == [
        "num.io.threads",
        "num.network.threads",
        "num.recovery.threads.per.data.dir",
        "socket.receive.buffer.bytes",
        "socket.send.buffer.bytes",
    ]
    assert config["log.dirs"] == "/tmp/kraft-combined-logs"
    assert config["log.segment.bytes"] == 1073741824
    # the controller listener is neither bound nor advertised; the empty host binds every address
    listeners = parse_listeners(config)
    assert [(lst.name, lst.protocol, lst.host, lst.port) for lst in listeners] == [
        ("PLAINTEXT", "PLAINTEXT", "0.0.0.0", 9092)
    ]
    assert (listeners[0].advertised_host, listeners[0].advertised_port) == ("localhost", 9092)


def test_sasl_max_receive_size_is_read_per_listener():
    config = BrokerConfig(
        {
            "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
            "listener.name.internal.sasl.server.max.receive.size": "1024",
        }
    )
    sizes = {lst.name: lst.sasl_max_receive_size for lst in parse_listeners(config)}
    assert sizes == {"INTERNAL": 1024, "EXTERNAL": 524288}


def test_controller_listeners_are_skipped_wherever_they_are_named():
    config = BrokerConfig(
        {
            "listeners": "CONTROLLER://:9093,PLAINTEXT://127.0.0.1:9092",
            "controller.listener.names": "controller",  # Kafka upper-cases listener names
            # no CONTROLLER entry in the protocol map: it is never bound, so it needs none
        }
    )
    assert [lst.name for lst in parse_listeners(config)] == ["PLAINTEXT"]
    config = BrokerConfig({"listeners": "CONTROLLER://:9093", "controller.listener.names": "CONTROLLER"})
    with pytest.raises(ConfigError, match="every listener is a controller listener"):
        parse_listeners(config)
    # without controller.listener.names a CONTROLLER listener is an ordinary one, as before
    config = BrokerConfig({"listeners": "CONTROLLER://:9093,PLAINTEXT://127.0.0.1:9092"})
    with pytest.raises(ConfigError, match="CONTROLLER has no entry in listener.security.protocol.map"):
        parse_listeners(config)


def test_empty_host_listener_and_the_port_flag(tmp_path):
    listeners = parse_listeners(BrokerConfig({"listeners": "PLAINTEXT://:9092"}))
    assert [(lst.host, lst.port) for lst in listeners] == [("0.0.0.0", 9092)]
    # --port rewrites the port of the first client listener, never a controller listener, and
    # keeps the empty host; the other entries stay as written
    props = tmp_path / "server.properties"
    props.write_text(
        "listeners=CONTROLLER://:9093, PLAINTEXT://:9092,SSL://[::1]:9094\ncontroller.listener.names=CONTROLLER\n"
    )
    config = build_config(parse_args(["--config", str(props), "--port", "0"]))
    assert config["listeners"] == "CONTROLLER://:9093,PLAINTEXT://:0,SSL://[::1]:9094"
    config = build_config(parse_args(["--config", str(props), "--host", "127.0.0.1"]))
    assert config["listeners"] == "CONTROLLER://:9093,PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9094"
    # without controller.listener.names the first listener is the one, as before
    props.write_text("listeners=CONTROLLER://:9093,PLAINTEXT://:9092\n")
    config = build_config(parse_args(["--config", str(props), "--port", "7"]))
    assert config["listeners"] == "CONTROLLER://:7,PLAINTEXT://:9092"
    # --set is applied after the flags, so it wins
    config = build_config(parse_args(["--set", "listeners=PLAINTEXT://:9092", "--port", "7"]))
    assert config["listeners"] == "PLAINTEXT://:9092"
    config = build_config(parse_args(["--port", "7"]))
    assert config["listeners"] == "PLAINTEXT://127.0.0.1:7"


STRICTER = {
    "ssl.enabled.protocols": "TLSv1.3",
    "ssl.cipher.suites": "TLS_AES_256_GCM_SHA384",
    "ssl.protocol": "TLSv1.2",
    "ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/L,DEFAULT",
    "principal.builder.class": "com.example.PrincipalBuilder",
    "sasl.server.callback.handler.class": "com.example.LdapCallback",
    "max.connections.per.ip.overrides": "10.0.0.1:5",
    "max.connection.creation.rate": "10",
    "connections.max.reauth.ms": "3600000",
    "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----",
    "ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----",
    "ssl.engine.factory.class": "com.example.Engine",
    "listener.name.external.ssl.cipher.suites": "TLS_AES_256_GCM_SHA384",
    "listener.name.external.max.connections": "100",
    "listener.name.external.plain.sasl.server.callback.handler.class": "com.example.LdapCallback",
}


def test_stricter_kafka_settings_minibroker_does_not_implement_are_refused_all_at_once():
    found = problems_of({**STRICTER, "num.io.threads": "8", "lsteners": "x"})
    assert [p.split(":", 1)[0] for p in found] == [*STRICTER, "lsteners"]
    for problem in found[:-1]:
        assert "minibroker does not implement" in problem
        assert "ignoring it would make the broker less strict than asked" in problem
    assert found[0] == (
        "ssl.enabled.protocols: minibroker does not implement ssl.enabled.protocols, and ignoring it "
        "would make the broker less strict than asked; remove it or set it to TLSv1.2,TLSv1.3"
    )
    listener_limit = next(p for p in found if p.startswith("listener.name.external.max.connections"))
    assert "does not implement max.connections per listener" in listener_limit


DEFAULT_PRINCIPAL_BUILDER = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"


def test_stricter_kafka_settings_are_accepted_at_what_minibroker_does_anyway(tmp_path):
    defaults = {
        "ssl.enabled.protocols": "TLSv1.3, TLSv1.2",  # Kafka's default, in any order
        "ssl.protocol": "TLSv1.3",
        "ssl.principal.mapping.rules": "DEFAULT",
        "principal.builder.class": DEFAULT_PRINCIPAL_BUILDER,
        "max.connection.creation.rate": "2147483647",
        "connections.max.reauth.ms": "0",
        "ssl.cipher.suites": "",  # empty: Kafka's default (the JVM's suites)
        "max.connections.per.ip.overrides": "",
        "listener.name.external.max.connections": "2147483647",
        "listener.name.external.ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    }
    config = BrokerConfig(defaults)
    assert config.ignored()[1] == sorted(defaults)
    # the same from a file, with Kafka's stock file around them
    path = tmp_path / "server.properties"
    path.write_text(STOCK.read_text() + "".join(f"{k}={v}\n" for k, v in defaults.items()))
    build_config(parse_args(["--config", str(path)]))
