"""The pytest plugin (minibroker.pytest_plugin, loaded through the pytest11 entry point), run
inside pytester sub-sessions exactly as a user's suite would load it."""

from __future__ import annotations

import json
import socket
import time

import pytest

import minibroker.testing

pytest_plugins = ("pytester",)

# No warning filter of the user's own: the plugin must keep kafka-python's warnings out by itself.
INI = """
[pytest]
asyncio_default_fixture_loop_scope = function
"""


def _run(pytester, *args, timeout=120):
    pytester.makeini(INI)
    return pytester.runpytest_subprocess("-q", *args, timeout=timeout)


ROUNDTRIP_TESTS = """
import time
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

def _consume(bootstrap, topic, partitions, expected):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None,
                             fetch_max_wait_ms=100)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    got, deadline = [], time.monotonic() + 15
    while len(got) < expected and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            got += [r.value for r in records]
    consumer.close()
    return got

def test_roundtrip(kafka_bootstrap_servers, kafka_topic):
    topic = kafka_topic(partitions=3, configs={"message.timestamp.type": "LogAppendTime"})
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap_servers)
    for i in range(6):
        producer.send(topic, str(i).encode(), partition=i % 3)
    producer.flush(10)
    producer.close()
    assert sorted(_consume(kafka_bootstrap_servers, topic, 3, 6)) == [str(i).encode() for i in range(6)]

def test_topics_are_unique_and_configured(kafka_topic, kafka_admin):
    a, b = kafka_topic(), kafka_topic(partitions=2, prefix="orders")
    assert a != b and b.startswith("orders-")
    assert a.startswith("test_topics_are_unique_and_configured-")
    described = {t["name"]: len(t["partitions"]) for t in kafka_admin.describe_topics([a, b])}
    assert described == {a: 1, b: 2}
"""


def test_fixtures_give_a_working_broker_and_fresh_topics(pytester):
    pytester.makepyfile(test_user=ROUNDTRIP_TESTS)
    result = _run(pytester)
    result.assert_outcomes(passed=2)


def test_failing_test_report_carries_the_broker_log(pytester):
    pytester.makepyfile(
        test_fail="""
def test_broken(kafka_topic):
    kafka_topic(prefix="made-by-the-failing-test")
    assert False, "deliberate failure"

def test_passing(kafka_bootstrap_servers):
    pass
"""
    )
    result = _run(pytester, "--minibroker-log-level", "debug")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "minibroker log" in out, out
    # the broker's own line about the topic the failing test created, and only that test's lines
    section = out.split("minibroker log", 1)[1]
    assert "made-by-the-failing-test" in section, out
    assert out.count("minibroker log") == 1, "a passing test got a broker log section"


def test_config_file_option(pytester):
    pytester.makefile(".properties", broker="num.partitions=4\n# a comment\n")
    pytester.makepyfile(
        test_cfg="""
from kafka.admin import ConfigResource, ConfigResourceType

def test_partitions(kafka_admin):
    cfg = kafka_admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
    assert cfg["broker"]["1"]["num.partitions"]["value"] == "4"
    # the test profile still applies beneath the file
    assert cfg["broker"]["1"]["group.initial.rebalance.delay.ms"]["value"] == "0"
"""
    )
    result = _run(pytester, "--minibroker-config", "broker.properties")
    result.assert_outcomes(passed=1)


def test_external_broker_from_the_environment(pytester, monkeypatch, tmp_path):
    with minibroker.testing.broker() as outside:
        monkeypatch.setenv("MINIBROKER_BOOTSTRAP_SERVERS", outside.bootstrap_servers)
        pytester.makepyfile(
            test_external=f'''
def test_uses_it(minibroker, kafka_bootstrap_servers, kafka_topic):
    assert type(minibroker).__name__ == "ExternalBroker"
    assert kafka_bootstrap_servers == "{outside.bootstrap_servers}"
    kafka_topic(partitions=2)
'''
        )
        result = _run(pytester)
        result.assert_outcomes(passed=1)
        assert "created topic" in outside.log_text(), "the test did not reach the external broker"


def test_one_broker_per_xdist_worker(pytester, tmp_path):
    record = tmp_path / "seen"
    record.mkdir()
    pytester.makepyfile(
        test_workers=f"""
import json, os, pathlib, pytest

@pytest.mark.parametrize("n", range(4))
def test_record(n, kafka_bootstrap_servers, kafka_topic):
    kafka_topic()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "none")
    pathlib.Path({str(record)!r}, f"{{n}}.json").write_text(json.dumps([worker, kafka_bootstrap_servers]))
"""
    )
    result = _run(pytester, "-p", "xdist", "-n", "2", timeout=180)
    result.assert_outcomes(passed=4)
    seen = [json.loads(p.read_text()) for p in record.iterdir()]
    by_worker: dict[str, set[str]] = {}
    for worker, bootstrap in seen:
        by_worker.setdefault(worker, set()).add(bootstrap)
    assert all(len(addresses) == 1 for addresses in by_worker.values()), by_worker
    if len(by_worker) == 2:  # xdist may hand all four tests to one worker; when both ran, they differ
        (a,), (b,) = by_worker.values()
        assert a != b, by_worker


KAFKA_PYTHON_FIXTURES_TESTS = """
import pytest
from minibroker.pytest_plugin import TopicCreationError

def test_topic_and_admin(kafka_topic, kafka_admin):
    from kafka import KafkaProducer  # already imported (quietly) by the fixtures

    topic = kafka_topic(partitions=2)
    producer = KafkaProducer(bootstrap_servers=kafka_admin.config["bootstrap_servers"])
    producer.send(topic, b"x").get(timeout=10)
    producer.close()

def test_refusal_leads_with_the_broker_message(kafka_topic):
    with pytest.raises(TopicCreationError) as info:
        kafka_topic(configs={"retention.ms": "abc"})
    message = str(info.value)
    assert message.startswith("kafka_topic: the broker refused topic "), message
    assert "invalid value 'abc' for topic config retention.ms" in message, message
    assert "(InvalidConfigurationError" in message or "(INVALID_CONFIG" in message, message
    assert "CreateTopicsRequest" not in message and len(message) < 300, message
"""


def test_kafka_python_fixtures_raise_no_deprecation_warning(pytester):
    """kafka-python builds its protocol classes with a deprecated importlib call at import (about
    200 DeprecationWarnings on Python 3.11/3.12): none may reach a session run with them as errors."""
    pytester.makepyfile(test_quiet=KAFKA_PYTHON_FIXTURES_TESTS)
    result = _run(pytester, "-W", "error::DeprecationWarning")
    result.assert_outcomes(passed=2)


def test_user_import_of_kafka_python_gives_no_warning_summary(pytester):
    """The user's own `from kafka import ...` at module level (collection) is quiet too."""
    pytester.makepyfile(
        test_user_import="""
from kafka import KafkaConsumer, KafkaProducer

def test_it(kafka_bootstrap_servers, kafka_topic):
    kafka_topic()
"""
    )
    result = _run(pytester)
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "warnings summary" not in out and "DeprecationWarning" not in out, out


def test_confluent_only_session_never_imports_kafka_python(pytester):
    pytester.makepyfile(
        test_confluent="""
import sys
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

def _kafka_python_loaded():
    return sorted(m for m in sys.modules if m == "kafka" or m.startswith("kafka."))

def test_roundtrip(kafka_bootstrap_servers):
    conf = {"bootstrap.servers": kafka_bootstrap_servers}
    admin = AdminClient(conf)
    admin.create_topics([NewTopic("plain", 1, 1)])["plain"].result(10)
    producer = Producer(conf)
    producer.produce("plain", b"hello")
    assert producer.flush(10) == 0
    consumer = Consumer({**conf, "group.id": "g", "auto.offset.reset": "earliest"})
    consumer.subscribe(["plain"])
    message = consumer.poll(15)
    consumer.close()
    assert message is not None and message.value() == b"hello"
    assert _kafka_python_loaded() == []

def test_client_fixtures(confluent_producer, confluent_consumer, minibroker_faults):
    confluent_producer().produce("plain", b"again")
    consumer = confluent_consumer()
    consumer.subscribe(["plain"])
    message = consumer.poll(15)
    assert message is not None and message.value() == b"hello"
    assert _kafka_python_loaded() == []

def test_after(minibroker):
    assert _kafka_python_loaded() == []
"""
    )
    result = _run(pytester, "-W", "error::DeprecationWarning")
    result.assert_outcomes(passed=3)


def test_unreachable_bootstrap_variable_fails_fast_and_names_it(pytester, monkeypatch):
    # a bound socket that does not listen: connections to it are refused, the port stays ours
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{placeholder.getsockname()[1]}"
        monkeypatch.setenv("MINIBROKER_BOOTSTRAP_SERVERS", address)
        pytester.makepyfile(
            test_wrong="""
def test_one(kafka_topic):
    kafka_topic()

def test_two(kafka_bootstrap_servers):
    pass
"""
        )
        started = time.monotonic()
        result = _run(pytester, timeout=60)
        elapsed = time.monotonic() - started
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert f"MINIBROKER_BOOTSTRAP_SERVERS='{address}': no broker accepts connections there" in out, out
    assert "unset MINIBROKER_BOOTSTRAP_SERVERS" in out, out
    # the session (interpreter, plugin load, both tests) instead of a client's 30 s retry
    assert elapsed < 15, f"took {elapsed:.1f}s"


# ---------------------------------------------------------------------------------------------
# The control plane's fixtures, the factories, the marker, ini options and the client fixtures:
# one inner session (its brokers start once) checks them all.

CONTROL_INI = """
[pytest]
asyncio_default_fixture_loop_scope = function
minibroker_log_level = debug
minibroker_clock = manual
minibroker_set =
    num.partitions=2
    log.retention.ms=123456
minibroker_control_token = from-the-ini
"""

CONTROL_CONFTEST = """
import os
from minibroker.pytest_factories import minibroker_noproc, minibroker_proc

extra_broker = minibroker_proc(scope="session", num_partitions=5)
outside_broker = minibroker_noproc(bootstrap_servers=os.environ["OUTSIDE_BOOTSTRAP"])
# listeners that authenticate: the control plane then needs a token (a random one unless given)
sasl_broker = minibroker_proc(
    config={
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";',
    }
)
"""

CONTROL_TESTS = """
import os
import time
import pytest
from minibroker.control import ControlClient
from minibroker.control.clock import ClockAPI
from minibroker.control.faults import FaultsAPI
from minibroker.control.state import StateAPI
from minibroker.pytest_plugin import ExternalBroker

SEEN = {}

def test_options_command_line_wins_over_ini(minibroker):
    SEEN["session"] = minibroker.bootstrap_servers
    assert minibroker.overrides["num.partitions"] == "4"  # --minibroker-set over the ini's 2
    assert minibroker.overrides["log.retention.ms"] == "123456"  # the ini's
    assert minibroker.overrides["minibroker.control.clock"] == "system"  # --minibroker-clock
    assert minibroker.overrides["minibroker.control.token"] == "from-the-ini"
    assert minibroker.log_level == "debug"

def test_control_fixtures_are_the_session_brokers(
    minibroker, minibroker_control, minibroker_faults, minibroker_clock, minibroker_state
):
    assert isinstance(minibroker_control, ControlClient)
    assert minibroker_control is minibroker.control
    assert minibroker_control.base == f"http://127.0.0.1:{minibroker.control_port}"
    assert minibroker_control.token == "from-the-ini"
    assert isinstance(minibroker_faults, FaultsAPI) and minibroker_faults is minibroker_control.faults
    assert isinstance(minibroker_clock, ClockAPI) and minibroker_clock is minibroker_control.clock
    assert isinstance(minibroker_state, StateAPI) and minibroker_state is minibroker_control.state
    assert "POST /v1/reset" not in minibroker.log_text()
    paths = [r["path"] for r in minibroker_control.routes()]
    assert any("reset" in p for p in paths), paths

def test_the_control_fixtures_reset_the_broker_after_a_test(minibroker):
    # the previous test's teardown (the broker logs control requests at debug level)
    assert minibroker.log_text().count("POST /v1/reset") == 1

@pytest.mark.minibroker(num_partitions=3, clock="manual")
def test_marker_gives_the_test_its_own_broker(
    minibroker, kafka_bootstrap_servers, kafka_admin, kafka_topic, minibroker_control
):
    assert minibroker.bootstrap_servers == kafka_bootstrap_servers != SEEN["session"]
    assert kafka_admin.config["bootstrap_servers"] == kafka_bootstrap_servers
    assert minibroker.overrides["num.partitions"] == 3
    assert minibroker.overrides["minibroker.control.clock"] == "manual"
    assert minibroker_control is minibroker.control and minibroker_control.routes()
    kafka_topic()
    assert "created topic" in minibroker.log_text()
    SEEN["marked"] = minibroker

@pytest.mark.parametrize("n", [1, pytest.param(2, marks=pytest.mark.minibroker(num_partitions=7))])
def test_marker_on_one_parameter_only(n, minibroker, kafka_bootstrap_servers):
    if n == 1:
        assert kafka_bootstrap_servers == SEEN["session"]
    else:
        assert kafka_bootstrap_servers != SEEN["session"]
        assert minibroker.overrides["num.partitions"] == 7

def test_after_the_marked_tests(minibroker, kafka_bootstrap_servers):
    assert kafka_bootstrap_servers == minibroker.bootstrap_servers == SEEN["session"]
    assert minibroker.running and not SEEN["marked"].running

def test_factory_broker_beside_the_session_one(extra_broker, minibroker):
    assert extra_broker.bootstrap_servers != minibroker.bootstrap_servers
    assert extra_broker.overrides["num.partitions"] == 5
    assert extra_broker.control.routes()

def test_factory_sasl_broker_with_its_control_plane(sasl_broker, confluent_producer):
    assert len(sasl_broker.control.token) == 32 and sasl_broker.control.routes()
    producer = confluent_producer(
        {"bootstrap.servers": sasl_broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
         "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-pw"}
    )
    producer.produce("made-over-sasl", b"x")
    assert producer.flush(10) == 0

def test_noproc_finds_the_control_plane_by_address(outside_broker):
    assert isinstance(outside_broker, ExternalBroker)
    assert outside_broker.control.base == "http://" + os.environ["MINIBROKER_CONTROL"]
    outside_broker.control.reset()
    assert outside_broker.control.routes()

def test_kafka_python_factories(kafka_topic, kafka_producer, kafka_consumer):
    topic = kafka_topic()
    producer = kafka_producer(acks="all")
    producer.send(topic, b"kp").get(timeout=10)
    consumer = kafka_consumer(topic, consumer_timeout_ms=10000, fetch_max_wait_ms=100)
    assert [r.value for r in consumer][:1] == [b"kp"]
    SEEN["kafka_python"] = (producer, consumer)

def test_confluent_factories(kafka_topic, confluent_producer, confluent_consumer):
    topic = kafka_topic()
    producer = confluent_producer(enable_idempotence=True)
    producer.produce(topic, b"ck")
    assert producer.flush(10) == 0
    consumer = confluent_consumer()
    consumer.subscribe([topic])
    message, deadline = None, time.monotonic() + 20
    while message is None and time.monotonic() < deadline:
        message = consumer.poll(1)
    assert message is not None and message.value() == b"ck"
    SEEN["confluent"] = consumer

@pytest.mark.asyncio
async def test_aiokafka_factories(kafka_topic, aiokafka_producer, aiokafka_consumer):
    topic = kafka_topic()
    producer = await aiokafka_producer()
    await producer.send_and_wait(topic, b"ak")
    consumer = await aiokafka_consumer(topic, fetch_max_wait_ms=100)
    record = await __import__("asyncio").wait_for(consumer.getone(), 20)
    assert record.value == b"ak"
    SEEN["aiokafka"] = (producer, consumer)

def test_client_factories_closed_what_they_made():
    producer, consumer = SEEN["kafka_python"]
    assert producer._closed and consumer._closed
    with pytest.raises(RuntimeError):
        SEEN["confluent"].assignment()
    producer, consumer = SEEN["aiokafka"]
    assert producer._closed and consumer._closed
"""


def test_control_fixtures_factories_marker_and_client_fixtures(pytester, monkeypatch):
    with minibroker.testing.broker(control=True) as outside:
        monkeypatch.setenv("OUTSIDE_BOOTSTRAP", outside.bootstrap_servers)
        monkeypatch.setenv("MINIBROKER_CONTROL", f"127.0.0.1:{outside.control_port}")
        pytester.makeini(CONTROL_INI)
        pytester.makeconftest(CONTROL_CONFTEST)
        pytester.makepyfile(test_control=CONTROL_TESTS)
        result = pytester.runpytest_subprocess(
            "-q", "--minibroker-clock", "system", "--minibroker-set", "num.partitions=4", timeout=180
        )
        result.assert_outcomes(passed=14)


def test_external_broker_without_a_control_address_says_which_option_to_give():
    from minibroker.pytest_plugin import ExternalBroker

    outside = ExternalBroker("127.0.0.1:9092")
    with pytest.raises(RuntimeError, match=r"pass --minibroker-control HOST:PORT .*MINIBROKER_CONTROL"):
        outside.faults  # noqa: B018 - the property raises
    assert ExternalBroker("127.0.0.1:9092", "127.0.0.1:19093", "t").control.base == "http://127.0.0.1:19093"


def test_noproc_address_that_refuses_fails_fast_naming_it():
    from minibroker.pytest_factories import check_reachable

    with socket.socket() as placeholder:  # bound, not listening: connections are refused
        placeholder.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{placeholder.getsockname()[1]}"
        with pytest.raises(pytest.fail.Exception) as info:
            check_reachable(address, "minibroker_noproc(bootstrap_servers=...)")
    message = str(info.value)
    assert message.startswith(f"minibroker_noproc(bootstrap_servers=...)='{address}': no broker accepts"), (
        message
    )
    assert message.endswith("Start that broker, or fix the address."), message
