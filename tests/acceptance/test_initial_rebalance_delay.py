"""The first classic rebalance with group.initial.rebalance.delay.ms=0 (issue 23): Kafka never
ends that join phase inside the JoinGroup that began it (coordinator/group_join.py,
INITIAL_JOIN_MIN_DELAY_MS), so two consumers whose joins arrive a moment apart form one
generation, as librdkafka's test 0089 expects of Kafka."""

from __future__ import annotations

import time

import pytest
from minibroker.coordinator.group_join import INITIAL_JOIN_MIN_DELAY_MS

from conformance.wire import Connection, decode_pair, encode_request, response_body
from tests.support.helpers import unique_name

pytestmark = pytest.mark.timeout(120)

JOIN_GROUP, VERSION = 11, 5
PROTOCOLS = [{"name": "range", "metadata": b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"}]


@pytest.fixture
def zero_delay_broker(broker_factory):
    return broker_factory({"group.initial.rebalance.delay.ms": 0})


def join_fields(group: str, member_id: str) -> dict:
    return {
        "group_id": group,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 10000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": PROTOCOLS,
    }


def send_join(conn: Connection, group: str, member_id: str) -> int:
    conn.correlation_id += 1
    conn.send(encode_request(JOIN_GROUP, VERSION, conn.correlation_id, join_fields(group, member_id)))
    return conn.correlation_id


def read_join(conn: Connection) -> dict:
    return decode_pair(JOIN_GROUP, VERSION, [response_body(JOIN_GROUP, VERSION, conn.recv_frame(30))])[0]


def test_two_members_joining_together_form_one_generation(zero_delay_broker):
    group = unique_name("together")
    a, b = Connection(zero_delay_broker.address), Connection(zero_delay_broker.address)
    try:
        member_a = a.call(JOIN_GROUP, VERSION, join_fields(group, ""))["member_id"]  # MEMBER_ID_REQUIRED
        member_b = b.call(JOIN_GROUP, VERSION, join_fields(group, ""))["member_id"]
        started = time.monotonic()
        # a consumer started alongside, its join sent right after the first: no sleep between
        # the sends (a 1 ms sleep took 8 ms on a loaded CI machine, past the 5 ms floor)
        send_join(a, group, member_a)
        send_join(b, group, member_b)
        first, second = read_join(a), read_join(b)
        elapsed_ms = (time.monotonic() - started) * 1000
    finally:
        a.close()
        b.close()
    assert (first["error_code"], second["error_code"]) == (0, 0)
    assert first["generation_id"] == second["generation_id"] == 1
    assert len(first["members"]) + len(second["members"]) == 2  # the leader sees both
    assert elapsed_ms >= INITIAL_JOIN_MIN_DELAY_MS


def test_a_lone_member_still_waits_the_least_delay(zero_delay_broker):
    group = unique_name("lone")
    conn = Connection(zero_delay_broker.address)
    try:
        member = conn.call(JOIN_GROUP, VERSION, join_fields(group, ""))["member_id"]
        started = time.monotonic()
        answer = conn.call(JOIN_GROUP, VERSION, join_fields(group, member))
        elapsed_ms = (time.monotonic() - started) * 1000
    finally:
        conn.close()
    assert answer["error_code"] == 0 and answer["generation_id"] == 1
    assert elapsed_ms >= INITIAL_JOIN_MIN_DELAY_MS
