"""broker/telemetry.py: KIP-714 subscriptions, client instances and their throttle, pushes decoded
(OTLP through opentelemetry-proto), bounded memory. Time is a ManualClock."""

from __future__ import annotations

import uuid

import pytest
from minibroker.broker.telemetry import (
    CACHE_EXPIRY_MS,
    ClientTelemetry,
    decode,
    subscription_id,
    validate,
)
from minibroker.common.clock import ManualClock
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records.compression import compress
from minibroker.storage.errors import KafkaStorageError

pytestmark = pytest.mark.timeout(10)

JAVA = {
    "client_id": "app-1",
    "client_software_name": "apache-kafka-java",
    "client_software_version": "4.4.0",
    "client_source_address": "127.0.0.1",
    "client_source_port": "50000",
}


def otlp(points: dict[str, float], *, counter: bool = False, delta: bool = False) -> bytes:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

    data = MetricsData()
    rm = data.resource_metrics.add()
    rm.resource.attributes.append(KeyValue(key="client_id", value=AnyValue(string_value="app-1")))
    scope = rm.scope_metrics.add()
    for name, value in points.items():
        metric = scope.metrics.add()
        metric.name = name
        if counter:
            metric.sum.is_monotonic = True
            metric.sum.aggregation_temporality = 1 if delta else 2  # OTLP DELTA / CUMULATIVE
            p = metric.sum.data_points.add()
            p.as_int = int(value)
        else:
            p = metric.gauge.data_points.add()
            p.as_double = value
    return data.SerializeToString()


@pytest.mark.parametrize(
    "name,configs,code",
    [
        ("s", {"interval.ms": "99"}, ErrorCode.invalid_request),
        ("s", {"interval.ms": "3600001"}, ErrorCode.invalid_request),
        ("s", {"interval.ms": "1e3"}, ErrorCode.invalid_config),
        ("s", {"colour": "red"}, ErrorCode.invalid_request),
        ("s", {"match": "client_id"}, ErrorCode.invalid_config),
        ("s", {"match": "client_id=a=b"}, ErrorCode.invalid_config),
        ("s", {"match": "owner=me"}, ErrorCode.invalid_config),
        ("s", {"match": "client_id=(["}, ErrorCode.invalid_config),
        ("", {"interval.ms": "1000"}, ErrorCode.invalid_request),
    ],
)
def test_validation_as_kafka(name, configs, code):
    with pytest.raises(KafkaStorageError) as info:
        validate(name, configs)
    assert info.value.error_code == code


def test_matching_union_of_metrics_and_smallest_interval():
    t = ClientTelemetry(ManualClock(), 1024)
    t.set_subscription(
        "java", {"metrics": "org.apache.kafka.producer.", "match": "client_software_name=apache-.*"}
    )
    t.set_subscription(
        "fast", {"metrics": "org.apache.kafka.consumer.", "interval.ms": "1000", "match": "client_id=app-\\d"}
    )
    t.set_subscription("other", {"metrics": "*", "match": "client_id=nope"})
    got = t.get_subscriptions(None, JAVA)
    assert got["error_code"] == ErrorCode.none
    assert got["requested_metrics"] == ["org.apache.kafka.consumer.", "org.apache.kafka.producer."]
    assert got["push_interval_ms"] == 1000
    assert got["subscription_id"] == subscription_id(
        got["requested_metrics"], 1000, got["client_instance_id"]
    )
    # a regex must match the whole value; a missing attribute matches nothing
    assert t.get_subscriptions(None, {**JAVA, "client_id": "app-12"})["push_interval_ms"] == 300_000
    assert t.get_subscriptions(None, {**JAVA, "client_software_name": None})["requested_metrics"] == [
        "org.apache.kafka.consumer."
    ]
    t.set_subscription("all", {"metrics": "*"})
    assert t.get_subscriptions(None, JAVA)["requested_metrics"] == ["*"]


def test_throttle_subscription_change_and_pushes_kept():
    clock = ManualClock()
    t = ClientTelemetry(clock, 4096, advertise=True)
    t.set_subscription("s", {"metrics": "org.", "interval.ms": "1000"})
    first = t.get_subscriptions(None, JAVA)
    inst, sub = first["client_instance_id"], first["subscription_id"]
    assert t.get_subscriptions(inst, JAVA)["error_code"] == ErrorCode.throttling_quota_exceeded
    payload = otlp({"org.apache.kafka.producer.record.send.rate": 3.5})
    assert t.push(inst, JAVA, sub, False, 0, payload) == ErrorCode.none  # first push after a Get
    assert t.push(inst, JAVA, sub, False, 0, payload) == ErrorCode.throttling_quota_exceeded
    clock.advance(1000)
    assert t.push(inst, JAVA, sub ^ 1, False, 0, payload) == ErrorCode.unknown_subscription_id
    clock.advance(1000)
    assert t.push(inst, JAVA, sub, False, 5, payload) == ErrorCode.unsupported_compression_type
    clock.advance(1000)
    zipped = compress(1, otlp({"org.apache.kafka.producer.record.retry.total": 2}, counter=True))
    assert t.push(inst, JAVA, sub, False, 1, zipped) == ErrorCode.none
    [snap] = t.snapshot()
    assert snap["metrics"] == [  # the gauge of the first push is kept, the counter added
        {
            "name": "org.apache.kafka.producer.record.send.rate",
            "value": 3.5,
            "attributes": {},
            "kind": "gauge",
            "monotonic": False,
        },
        {
            "name": "org.apache.kafka.producer.record.retry.total",
            "value": 2.0,
            "attributes": {},
            "kind": "sum",
            "monotonic": True,
        },
    ]
    assert snap["resource"] == {"client_id": "app-1"} and snap["pushes"] == 2
    # a change of subscriptions: the old subscription id is unknown, the next Get answers at once
    t.set_subscription("s", {"metrics": "org.", "interval.ms": "500"})
    clock.advance(1000)
    assert t.push(inst, JAVA, sub, False, 0, payload) == ErrorCode.unknown_subscription_id
    again = t.get_subscriptions(inst, JAVA)
    assert again["error_code"] == ErrorCode.throttling_quota_exceeded  # within 500 ms of the push
    clock.advance(500)
    again = t.get_subscriptions(inst, JAVA)
    assert again["error_code"] == ErrorCode.none and again["push_interval_ms"] == 500
    assert again["subscription_id"] != sub
    # terminating: accepted at once, nothing after it
    assert t.push(inst, JAVA, again["subscription_id"], True, 0, b"") == ErrorCode.none
    assert t.push(inst, JAVA, again["subscription_id"], True, 0, b"") == ErrorCode.invalid_request
    assert t.push(uuid.UUID(int=0), JAVA, 0, False, 0, b"") == ErrorCode.invalid_request


def test_payload_checks_depend_on_being_the_exporter():
    for advertise, bad in ((True, ErrorCode.invalid_record), (False, ErrorCode.none)):
        t = ClientTelemetry(ManualClock(), 64, advertise=advertise)
        got = t.get_subscriptions(None, JAVA)
        assert t.push(got["client_instance_id"], JAVA, got["subscription_id"], False, 0, b"\xff\xfe") == bad
        big = compress(1, b"\x00" * 10_000)  # small on the wire, too large decompressed
        t2 = ClientTelemetry(ManualClock(), 64, advertise=advertise)
        got = t2.get_subscriptions(None, JAVA)
        code = t2.push(got["client_instance_id"], JAVA, got["subscription_id"], False, 1, big)
        assert code == (ErrorCode.telemetry_too_large if advertise else ErrorCode.none)
        assert t2.push(got["client_instance_id"], JAVA, got["subscription_id"], True, 0, b"x" * 65) == (
            ErrorCode.telemetry_too_large
        )


def test_instances_expire_and_are_bounded():
    clock = ManualClock()
    t = ClientTelemetry(clock, 1024)
    t.get_subscriptions(None, JAVA)
    assert len(t.snapshot()) == 1
    clock.advance(max(CACHE_EXPIRY_MS, 3 * 300_000))  # max(60 s, 3 x the push interval)
    assert t.snapshot() == []
    import minibroker.broker.telemetry as telemetry

    old = telemetry.CACHE_MAX_SIZE
    telemetry.CACHE_MAX_SIZE = 3
    try:
        for _ in range(5):
            t.get_subscriptions(None, JAVA)
        assert len(t.instances) == 3
    finally:
        telemetry.CACHE_MAX_SIZE = old


def test_decode_reads_gauges_sums_and_histograms():
    from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

    data = MetricsData()
    metric = data.resource_metrics.add().scope_metrics.add().metrics.add()
    metric.name = "org.apache.kafka.producer.request.latency"
    metric.histogram.data_points.add().count = 4
    resource, points = decode(data.SerializeToString(), 0, 1024)
    assert resource == {} and [(p.name, p.value, p.kind) for p in points] == [
        ("org.apache.kafka.producer.request.latency", 4.0, "histogram")
    ]


def test_delta_sums_add_up_over_pushes():
    """The broker asks for delta temporality (as Kafka): a counter is the sum of its pushes, so a
    last push with no change (a terminating push right after a periodic one) keeps the total."""
    clock = ManualClock()
    t = ClientTelemetry(clock, 4096, advertise=True)
    t.set_subscription("s", {"metrics": "org.", "interval.ms": "1000"})
    first = t.get_subscriptions(None, JAVA)
    inst, sub = first["client_instance_id"], first["subscription_id"]
    sent = "org.apache.kafka.producer.record.send.total"
    for delta in (5, 3, 0):
        assert t.push(inst, JAVA, sub, False, 0, otlp({sent: delta}, counter=True, delta=True)) == 0
        clock.advance(1000)
    assert t.push(inst, JAVA, sub, True, 0, otlp({sent: 0}, counter=True, delta=True)) == 0
    [snap] = t.snapshot()
    assert [(m["name"], m["value"]) for m in snap["metrics"]] == [(sent, 8.0)]
    assert snap["pushes"] == 4
    # a cumulative counter is taken as pushed
    t2 = ClientTelemetry(clock, 4096, advertise=True)
    t2.set_subscription("s", {"metrics": "org.", "interval.ms": "1000"})
    g = t2.get_subscriptions(None, JAVA)
    for total in (5, 8):
        push = otlp({sent: total}, counter=True)
        assert t2.push(g["client_instance_id"], JAVA, g["subscription_id"], False, 0, push) == 0
        clock.advance(1000)
    assert [m["value"] for m in t2.snapshot()[0]["metrics"]] == [8.0]
