"""Topic ids on the data path (KIP-516) and fetch sessions (KIP-227) with a Java 4.4 consumer.

The Java side is jvm/clients/src/main/java/minibroker/TopicIdCheck.java (compiled by `make jvm`).
Expected answers are what Apache Kafka 4.4.0 gives to the same program: a consumer whose topic
is deleted and created again under its name is told INCONSISTENT_TOPIC_ID by its next fetch
(the session still names the old id), refreshes its metadata and goes on at its position in the
new topic, as Kafka's consumer does."""

from __future__ import annotations

import json
import subprocess

import pytest
from minibroker.pipelines.jars import kafka_clients_classpath

from tests.support.helpers import unique_name

JAVA_TIMEOUT = 120
JAVA_VERSION = "4.4.0"  # the newest client: Fetch v18 with sessions, Produce v13


def run_check(bootstrap: str, scenario: str, topic: str) -> tuple[dict[str, str], str]:
    proc = subprocess.run(
        [
            "java",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            kafka_clients_classpath(JAVA_VERSION),
            "minibroker.TopicIdCheck",
            bootstrap,
            scenario,
            topic,
        ],
        capture_output=True,
        text=True,
        timeout=JAVA_TIMEOUT,
    )
    assert proc.returncode == 0, f"TopicIdCheck {scenario} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stdout
    return dict(item.split("=", 1) for item in lines[-1].split()[1:]), proc.stderr


def _log_lines(broker) -> list[dict]:
    return [json.loads(line) for line in broker.log_text().splitlines() if line.startswith("{")]


@pytest.mark.timeout(240)
def test_recreated_topic_answers_inconsistent_topic_id_to_the_old_session(broker_factory):
    broker = broker_factory({"minibroker.request.log.enable": True})
    topic = unique_name("java-recreated")
    result, stderr = run_check(broker.bootstrap, "recreated-idle", topic)
    # Kafka 4.4.0 gives this same result: the consumer learns the new id and resumes at its
    # position (5) in the new topic
    assert result == {
        "before": "5",
        "after": "5:new-5,6:new-6,7:new-7",
        "position": "8",
        "ids_differ": "true",
    }
    assert "Received inconsistent topic ID error in fetch for partition" in stderr
    fetch_errors = [
        line["errors"]
        for line in _log_lines(broker)
        if line.get("event") == "request" and line.get("api") == "Fetch" and "errors" in line
    ]
    assert {"INCONSISTENT_TOPIC_ID": 1} in fetch_errors
    versions = {line["api_version"] for line in _log_lines(broker) if line.get("api") in ("Fetch", "Produce")}
    assert {18, 13} <= versions  # by topic id


@pytest.mark.timeout(240)
def test_recreated_topic_while_polling(shared_broker):
    result, stderr = run_check(shared_broker.bootstrap, "recreated", unique_name("java-recreated-poll"))
    assert result == {
        "before": "5",
        "after": "5:new-5,6:new-6,7:new-7",
        "position": "8",
        "ids_differ": "true",
    }
    assert "Received unknown topic or partition error in fetch" in stderr


@pytest.mark.timeout(240)
def test_java_consumer_fetches_in_one_incremental_session(broker_factory):
    broker = broker_factory(log_level="debug")
    result, _ = run_check(broker.bootstrap, "stream", unique_name("java-session"))
    assert result == {"read": "100"}
    lines = _log_lines(broker)
    created = [line for line in lines if line.get("event") == "fetch session created"]
    incremental = [line for line in lines if line.get("event") == "incremental fetch"]
    assert created, "no fetch session was created"
    sessions = {line["session_id"] for line in created}
    assert 0 not in sessions
    # the consumer's fetches after the first run in a session it opened
    assert len(incremental) >= 20
    assert {line["session_id"] for line in incremental} <= sessions
    # an incremental answer leaves out partitions with nothing new: of 3 partitions, most
    # answers carry fewer
    assert sum(line["answered"] < line["partitions"] for line in incremental) > len(incremental) // 2
    fetches = [line for line in lines if line.get("event") == "request" and line.get("api") == "Fetch"]
    assert fetches and {line["api_version"] for line in fetches} == {18}
