"""KIP-848 consumer groups with the Java kafka-clients 4.4.0 consumer, group.protocol=consumer:
three members joining and leaving while records arrive (nothing read twice or lost by the
committed offsets, Admin.describeConsumerGroups on the way), and a broker-side regex subscription
(SubscriptionPattern) picking up a topic created later.

The Java side is jvm/clients/src/main/java/minibroker/Kip848Check.java (compiled by `make jvm`).
The broker runs with group.version=1 and lowered group.consumer.* timings (Kafka accepts the same
properties): heartbeats every 200 ms instead of 5 s, each change assigned at once."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.helpers import unique_name
from tests.support.java import java_command, parse_result

JAVA_TIMEOUT = 150
VERSION = "4.4.0"
KIP848 = {
    "minibroker.features": "group.version=1",
    "group.consumer.min.heartbeat.interval.ms": 100,
    "group.consumer.heartbeat.interval.ms": 200,
    "group.consumer.min.session.timeout.ms": 1000,
    "group.consumer.session.timeout.ms": 10000,
    "group.consumer.assignment.interval.ms": 0,
}


def run_check(broker, scenario: str, name: str) -> dict[str, str]:
    args = (broker.bootstrap, scenario, name)
    proc = subprocess.run(
        java_command("Kip848Check", VERSION, *args), capture_output=True, text=True, timeout=JAVA_TIMEOUT
    )
    assert proc.returncode == 0, f"Kip848Check {args} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return parse_result(proc.stdout)


@pytest.fixture
def kip848_broker(broker_factory):
    return broker_factory(KIP848)


@pytest.mark.timeout(240)
def test_members_join_and_leave_without_losing_or_repeating_records(kip848_broker):
    result = run_check(kip848_broker, "members", unique_name("kip848-members"))
    assert result == {
        "sent": "150",
        "read": "150",  # each record once: no revoked partition was read by its next owner twice
        "twice": "0",
        "lost": "0",
        "committed": "150",
        # Admin.describeConsumerGroups while the three members were stable
        "type": "Consumer",  # GroupType.CONSUMER as it prints
        "state": "STABLE",
        "assignor": "uniform",
        "members": "3",
        "member_partitions": "[1,1,1]",
    }


@pytest.mark.timeout(240)
def test_regex_subscription_picks_up_a_topic_created_later(kip848_broker):
    result = run_check(kip848_broker, "regex", unique_name("kip848-regex"))
    name_topics = result.pop("topics").split(",")
    took_ms = int(result.pop("new_topic_ms"))
    assert result == {"read": "10"}
    assert len(name_topics) == 2 and all(t.endswith(("-a", "-b")) for t in name_topics)
    # Kafka resolves a group's regexes again at most every 10 s, after a topic is created
    assert took_ms < 40_000
