"""KIP-714 client telemetry (issue 23): GetTelemetrySubscriptions (71) and PushTelemetry (72) as a
default Kafka 4.4 answers them (no exporter: not advertised, answered anyway), CLIENT_METRICS
config resources (type 16) through IncrementalAlterConfigs / AlterConfigs / DescribeConfigs,
and ListConfigResources (74) v0-1."""

import time
import uuid

from conformance.cases import case, versions

GET, PUSH, DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL = 71, 72, 32, 33, 44
LIST_CONFIG_RESOURCES = 74
CLIENT_METRICS = 16
ZERO = uuid.UUID(int=0)


def _alter(s, label, name, configs, *, op=0, validate_only=False):
    s.check(
        label,
        INCREMENTAL,
        1,
        {
            "resources": [
                {
                    "resource_type": CLIENT_METRICS,
                    "resource_name": name,
                    "configs": [{"name": k, "config_operation": op, "value": v} for k, v in configs.items()],
                }
            ],
            "validate_only": validate_only,
        },
    )


def _describe(s, label, name, version=4):
    s.check(
        label,
        DESCRIBE_CONFIGS,
        version,
        {
            "resources": [
                {"resource_type": CLIENT_METRICS, "resource_name": name, "configuration_keys": None}
            ],
            "include_synonyms": True,
            "include_documentation": True,
        },
    )


@case("telemetry/client-metrics-configs")
def client_metrics_configs(s):
    for label, configs in [
        ("interval-too-small", {"interval.ms": "50"}),
        ("interval-too-large", {"interval.ms": "3600001"}),
        ("interval-not-int", {"interval.ms": "soon"}),
        ("unknown-config", {"colour": "red"}),
        ("bad-match-key", {"match": "client_colour=red"}),
        ("bad-match-form", {"match": "client_id"}),
        ("bad-match-regex", {"match": "client_id=(["}),
    ]:
        _alter(s, f"invalid/{label}", "conf-sub", configs)
    _alter(s, "empty-name", "", {"interval.ms": "1000"})
    _alter(s, "validate-only", "conf-sub", {"interval.ms": "1000"}, validate_only=True)
    _describe(s, "describe-never-set", "conf-sub")
    _alter(
        s,
        "create",
        "conf-sub",
        {"metrics": "org.apache.kafka.producer., org.apache.kafka.consumer.", "interval.ms": "1000"},
    )
    s.wait_config(CLIENT_METRICS, "conf-sub", "interval.ms", "1000")
    _alter(s, "append-match", "conf-sub", {"match": "client_id=conf-.*"}, op=2)
    _alter(s, "append-interval", "conf-sub", {"interval.ms": "5"}, op=2)
    for v in versions(DESCRIBE_CONFIGS):
        _describe(s, f"describe/v{v}", "conf-sub", v)
    _describe(s, "describe-empty-name", "")
    for v in versions(LIST_CONFIG_RESOURCES):
        s.check(f"list/v{v}", LIST_CONFIG_RESOURCES, v, {"resource_types": [CLIENT_METRICS]})
    for types in ([4], [8], [32], [16, 4], [3]):
        s.check(f"list-types/{types}", LIST_CONFIG_RESOURCES, 1, {"resource_types": types})
    s.check(
        "alter-configs-replace",
        ALTER_CONFIGS,
        2,
        {
            "resources": [
                {
                    "resource_type": CLIENT_METRICS,
                    "resource_name": "conf-sub",
                    "configs": [{"name": "interval.ms", "value": "2000"}],
                }
            ],
            "validate_only": False,
        },
    )
    s.wait_config(CLIENT_METRICS, "conf-sub", "interval.ms", "2000")
    _describe(s, "after-replace", "conf-sub")
    _alter(s, "delete-all", "conf-sub", {"metrics": None, "interval.ms": None, "match": None}, op=1)
    s.wait_config(CLIENT_METRICS, "conf-sub", "interval.ms", "300000")
    s.check("list-after-delete", LIST_CONFIG_RESOURCES, 0, {})


@case("telemetry/subscriptions-and-pushes")
def subscriptions_and_pushes(s):
    # no subscription: the defaults, on a connection of its own
    first = s.check("get/zero-id", GET, 0, {"client_instance_id": ZERO}, conn="plain", client_id="nobody")
    s.check(
        "get/again-throttled",
        GET,
        0,
        {"client_instance_id": uuid.UUID(first["client_instance_id"])},
        conn="plain",
    )
    s.check("get/null-id", GET, 0, {"client_instance_id": None}, conn="plain2", client_id="nobody")
    s.check(
        "push/zero-id",
        PUSH,
        0,
        {
            "client_instance_id": ZERO,
            "subscription_id": 0,
            "terminating": False,
            "compression_type": 0,
            "metrics": b"",
        },
        conn="plain",
    )
    _alter(
        s,
        "subscribe",
        "tel-sub",
        {"metrics": "org.apache.kafka.", "interval.ms": "100", "match": "client_id=tel-.*"},
    )
    s.wait_config(CLIENT_METRICS, "tel-sub", "interval.ms", "100")
    sub = s.check("get/matching", GET, 0, {"client_instance_id": None}, conn="client", client_id="tel-1")
    instance = uuid.UUID(sub["client_instance_id"])

    def push(label, subscription_id, *, compression=0, payload=b"", terminating=False):
        return s.check(
            f"push/{label}",
            PUSH,
            0,
            {
                "client_instance_id": instance,
                "subscription_id": subscription_id,
                "terminating": terminating,
                "compression_type": compression,
                "metrics": payload,
            },
            conn="client",
            client_id="tel-1",
        )

    push("unknown-subscription", sub["subscription_id"] ^ 1)
    time.sleep(0.15)  # past the 100 ms interval: each push below is on time
    push("unsupported-compression", sub["subscription_id"], compression=7)
    time.sleep(0.15)
    push("empty", sub["subscription_id"])
    push("too-early", sub["subscription_id"])
    time.sleep(0.15)
    push("too-large", sub["subscription_id"], payload=b"x" * 1048577)
    time.sleep(0.15)
    push("not-otlp", sub["subscription_id"], payload=b"\xff\xfe not a metrics payload")
    push("terminating", sub["subscription_id"], terminating=True)
    push("after-terminating", sub["subscription_id"], terminating=True)
    _alter(s, "unsubscribe", "tel-sub", {"metrics": None, "interval.ms": None, "match": None}, op=1)
