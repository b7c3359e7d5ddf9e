"""The pytest plugin (minibroker.pytest_plugin, loaded through the pytest11 entry point), run
inside pytester sub-sessions exactly as a user's suite would load it."""

from __future__ import annotations

import json

import minibroker.testing

pytest_plugins = ("pytester",)

INI = """
[pytest]
asyncio_default_fixture_loop_scope = function
filterwarnings = ignore::DeprecationWarning
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
