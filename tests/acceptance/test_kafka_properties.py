"""Issue 21: a stock Apache Kafka `server.properties` starts minibroker, as it starts Kafka.

tests/fixtures/kafka-server.properties is the `config/server.properties` of the Kafka 4 binary
distribution (KRaft combined mode: process.roles=broker,controller and a CONTROLLER listener).
The broker is started the way a user starts it, `minibroker --config server.properties`, with only
log.dirs and the two ports changed. Also: a file with several mistakes is refused with all of them
at once, and the committed list of Kafka's properties (broker/kafka_properties.py) is what
Kafka's jars say.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys

import pytest
from minibroker.broker.kafka_properties import KAFKA_BROKER_PROPERTIES

from tests.support import clients
from tests.support.broker import REPO_ROOT, BrokerProcess
from tests.support.helpers import make_messages, unique_name
from tests.support.proxy import free_port

pytestmark = pytest.mark.timeout(120)

STOCK = REPO_ROOT / "tests" / "fixtures" / "kafka-server.properties"


class ConfigFileBroker(BrokerProcess):
    """A broker started from a properties file alone (no --host/--port/--data-dir flags)."""

    def __init__(self, data_dir, config_file, host: str):
        super().__init__(data_dir, host=host)
        self.config_file = config_file

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "minibroker",
            "--config",
            str(self.config_file),
            "--port-file",
            str(self.port_file),
            "--log-format",
            self.log_format,
        ]


def stock_file(tmp_path, log_dir, port: int, controller_port: int):
    """The stock file with log.dirs and the ports (of its property lines) replaced."""
    lines = []
    for line in STOCK.read_text().splitlines():
        if line.startswith("log.dirs="):
            line = f"log.dirs={log_dir}"
        elif not line.startswith("#"):
            line = line.replace(":9092", f":{port}").replace(":9093", f":{controller_port}")
        lines.append(line)
    text = "\n".join(lines) + "\n"
    assert f"log.dirs={log_dir}\n" in text and text.count(f":{port}") == 2  # listeners, advertised
    path = tmp_path / "server.properties"
    path.write_text(text)
    return path


def log_events(broker: BrokerProcess) -> list[dict]:
    return [json.loads(line) for line in broker.log_path.read_text().splitlines() if line.startswith("{")]


def test_stock_kafka_server_properties_starts_the_broker(tmp_path):
    port, controller_port = free_port(), free_port()
    log_dir = tmp_path / "kraft-combined-logs"
    broker = ConfigFileBroker(
        tmp_path / "run", stock_file(tmp_path, log_dir, port, controller_port), "localhost"
    )
    try:
        broker.start()
        assert broker.port == port  # the file's port, bound (PLAINTEXT://:port: every address)
        # the CONTROLLER listener of the file is not bound
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", controller_port), timeout=5).close()

        topic = unique_name("stock-file")
        messages = make_messages(50, 1, "stock")
        acked = clients.kp_produce(broker.bootstrap, topic, messages)
        assert [offset for _, offset in acked] == list(range(50))
        consumed = clients.kp_consume(broker.bootstrap, topic, [0], expected=50)
        assert [(key, value) for _, key, value, _, _ in consumed[0]] == [(m.key, m.value) for m in messages]
        assert (log_dir / f"{topic}-0").is_dir(), "the data went to the file's log.dirs"

        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
        try:
            brokers = admin.describe_cluster()["brokers"]
        finally:
            admin.close()
        # one broker, advertised as the file says (localhost), node.id from the file
        assert [(b["broker_id"], b["host"], b["port"]) for b in brokers] == [(1, "localhost", port)]

        broker.stop()
        events = log_events(broker)
        cluster = [e for e in events if e["event"].startswith("Kafka cluster properties ignored")]
        other = [e for e in events if e["event"].startswith("Kafka properties ignored")]
        assert len(cluster) == 1 and len(other) == 1, "each kind is logged once, in one line"
        assert sorted(name for names in cluster[0]["reasons"].values() for name in names) == [
            "controller.listener.names",
            "controller.quorum.bootstrap.servers",
            "inter.broker.listener.name",
            "offsets.topic.replication.factor",
            "process.roles",
            "share.coordinator.state.topic.min.isr",
            "share.coordinator.state.topic.replication.factor",
            "transaction.state.log.min.isr",
            "transaction.state.log.replication.factor",
        ]
        assert other[0]["properties"] == [
            "num.io.threads",
            "num.network.threads",
            "num.recovery.threads.per.data.dir",
            "socket.receive.buffer.bytes",
            "socket.send.buffer.bytes",
        ]
        assert other[0]["level"] == "warning"
        assert not [e for e in events if e.get("level") in ("error", "critical")]
    finally:
        broker.cleanup()


def test_every_mistake_of_a_file_is_reported_at_once(tmp_path):
    props = tmp_path / "server.properties"
    props.write_text(
        "\n".join(
            [
                "node.id=1",
                "lsteners=PLAINTEXT://127.0.0.1:9092",  # typo
                "num.io.threads=8",  # Kafka's: accepted
                "log.retension.hours=24",  # typo
                "process.roles=broker,controller",  # Kafka's, cluster-only: accepted
                "num.partitions=many",  # bad value
                "auto.create.topic.enable=false",  # typo
                "",
            ]
        )
    )
    error = _refusal_line(["--config", str(props), "--data-dir", str(tmp_path / "data")])
    for problem in [
        "4 problems",
        "lsteners: unknown property (did you mean listeners?)",
        "log.retension.hours: unknown property (did you mean log.retention.hours?)",
        "num.partitions: expected an integer, got 'many'",
        "auto.create.topic.enable: unknown property (did you mean auto.create.topics.enable?)",
    ]:
        assert problem in error, error
    assert not (tmp_path / "data").exists(), "a refused configuration touches nothing"


def test_a_hardened_file_is_refused_rather_than_started_less_strict(tmp_path):
    """Review of issue 21: Kafka settings that make a broker stricter and that minibroker does not
    implement (TLS versions and ciphers, principal mapping, per-IP and per-listener connection
    limits) stop the start, all in one line, instead of being ignored with a warning."""
    hardened = {
        "ssl.enabled.protocols": "TLSv1.3",
        "ssl.cipher.suites": "TLS_AES_256_GCM_SHA384",
        "ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/,DEFAULT",
        "max.connections.per.ip.overrides": "10.0.0.1:5",
        "listener.name.plaintext.max.connections": "100",
        "num.io.threads": "8",  # not a security setting: still accepted and ignored
    }
    props = stock_file(tmp_path, tmp_path / "logs", free_port(), free_port())
    props.write_text(props.read_text() + "".join(f"{k}={v}\n" for k, v in hardened.items()))
    error = _refusal_line(["--config", str(props)])
    assert "5 problems" in error, error
    for name in [n for n in hardened if n != "num.io.threads"]:
        assert f"{name}: minibroker does not implement" in error, (name, error)
    assert error.count("ignoring it would make the broker less strict than asked") == 5
    assert "set it to TLSv1.2,TLSv1.3" in error
    assert not (tmp_path / "logs").exists(), "a refused configuration touches nothing"


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)")
def test_committed_kafka_property_list_matches_kafka_jars():
    """broker/kafka_properties.py is what Kafka's own jars say (plus the stock file's names);
    regenerate it with `python -m conformance.kafka_properties` when this fails."""
    from conformance.kafka_properties import expected_names

    expected = expected_names()
    assert sorted(KAFKA_BROKER_PROPERTIES) == expected, (
        "broker/kafka_properties.py differs from Kafka's jars: rerun `python -m conformance.kafka_properties`"
    )


def _refusal_line(args: list[str]) -> str:
    """Start minibroker with `args`, expect exit 2 and exactly one `invalid configuration` line;
    return that line."""
    done = subprocess.run(
        [sys.executable, "-m", "minibroker", *args], capture_output=True, text=True, timeout=60
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    errors = [line for line in output.splitlines() if "invalid configuration" in line]
    assert len(errors) == 1, output
    return errors[0]
