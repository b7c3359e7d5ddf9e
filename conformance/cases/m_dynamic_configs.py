"""Dynamic broker configs (issue 23): every name Kafka 4.4's DynamicBrokerConfig accepts at
runtime is accepted (librdkafka's 0081 admin test sets sasl.kerberos.min.time.before.relogin and
background.threads), Kafka's refusals (per-broker names at cluster level, security configs
without a listener prefix, non-dynamic names), and the sources DescribeConfigs reports, among them
the cluster-wide min.insync.replicas Kafka's format writes."""

from conformance.cases import case

DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL = 32, 33, 44
BROKER, TOPIC = 4, 2


def _alter(s, label, name, configs, *, op=0, validate_only=False):
    s.check(
        label,
        INCREMENTAL,
        1,
        {
            "resources": [
                {
                    "resource_type": BROKER,
                    "resource_name": name,
                    "configs": [{"name": k, "config_operation": op, "value": v} for k, v in configs.items()],
                }
            ],
            "validate_only": validate_only,
        },
    )


def _describe(s, label, resource_type, name, keys):
    s.check(
        label,
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}
            ],
            "include_synonyms": True,
            "include_documentation": False,
        },
    )


@case("dynamic-configs/broker")
def broker_configs(s):
    kerberos = {"sasl.kerberos.min.time.before.relogin": "58000", "background.threads": "7"}
    _alter(s, "librdkafka-0081", "1", kerberos)
    s.wait_config(BROKER, "1", "background.threads", "7")
    _describe(s, "after-set", BROKER, "1", [*kerberos, "log.retention.bytes"])
    _alter(s, "cluster-default", "", {"log.cleaner.threads": "1", "num.io.threads": "8"})
    s.wait_config(BROKER, "", "num.io.threads", "8")
    _describe(s, "cluster-defaults", BROKER, "", None)
    for label, name, configs in [
        ("not-a-number", "1", {"background.threads": "many"}),
        ("declared-not-a-number", "1", {"log.retention.bytes": "x"}),
        ("bad-log-default", "", {"compression.type": "bogus"}),
        ("bad-min-insync", "", {"min.insync.replicas": "0"}),
        ("bad-boolean", "", {"unclean.leader.election.enable": "maybe"}),
        ("security-without-listener", "1", {"ssl.keystore.location": "/tmp/none.jks"}),
        ("per-broker-at-cluster-level", "", {"sasl.kerberos.kinit.cmd": "/bin/true"}),
        ("not-dynamic", "1", {"broker.rack": "r1"}),
        ("validate-only", "1", {"log.cleaner.threads": "2"}),
    ]:
        _alter(s, f"refused/{label}", name, configs, validate_only=label == "validate-only")
    _alter(s, "delete", "1", {k: None for k in kerberos}, op=1)
    _alter(s, "delete-cluster", "", {"log.cleaner.threads": None, "num.io.threads": None}, op=1)
    s.wait_config(BROKER, "1", "background.threads", "10")
    _describe(s, "after-delete", BROKER, "1", [*kerberos])


@case("dynamic-configs/min-insync-replicas")
def min_insync_replicas(s):
    s.create_topic("dyn-misr")
    _describe(s, "topic", TOPIC, "dyn-misr", ["min.insync.replicas", "compression.type"])
    _describe(s, "cluster-default", BROKER, "", ["min.insync.replicas"])
    _alter(s, "cluster-compression", "", {"compression.type": "gzip"})
    s.wait_config(TOPIC, "dyn-misr", "compression.type", "gzip")
    _describe(s, "topic-after", TOPIC, "dyn-misr", ["min.insync.replicas", "compression.type"])
    _alter(s, "cluster-compression-delete", "", {"compression.type": None}, op=1)
    s.wait_config(TOPIC, "dyn-misr", "compression.type", "producer")
