"""CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs: admin calls and their checks."""

from conformance.cases import case, versions

CREATE, DELETE, CREATE_PARTITIONS, DESCRIBE_CONFIGS = 19, 20, 37, 32
TOPIC, BROKER = 2, 4


def new_topic(name, partitions=1, rf=1, configs=None, assignments=()):
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": list(assignments),
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


def create(s, label, version, topics, validate_only=False):
    return s.check(
        label, CREATE, version, {"topics": topics, "timeout_ms": 30000, "validate_only": validate_only}
    )


@case("create_topics/happy")
def create_happy(s):
    for v in versions(CREATE):
        create(s, f"v{v}/new", v, [new_topic(f"ct-new-{v}", 2)])
        create(s, f"v{v}/exists", v, [new_topic(f"ct-new-{v}", 2)])
        create(s, f"v{v}/validate-only", v, [new_topic(f"ct-validate-{v}", 3)], validate_only=True)
        create(s, f"v{v}/default-partitions", v, [new_topic(f"ct-default-{v}", -1, -1)], validate_only=True)


@case("create_topics/with-configs")
def create_configs(s):
    for v in versions(CREATE):
        create(
            s,
            f"v{v}",
            v,
            [new_topic(f"ct-cfg-{v}", 1, configs={"retention.ms": "1000", "cleanup.policy": "compact"})],
            validate_only=True,
        )


@case("create_topics/invalid")
def create_invalid(s):
    v = 7
    bad = {
        "zero-partitions": new_topic("ct-bad-zero", 0),
        "negative-partitions": new_topic("ct-bad-neg", -5),
        "rf-3": new_topic("ct-bad-rf", 1, 3),
        "rf-0": new_topic("ct-bad-rf0", 1, 0),
        "unknown-config": new_topic("ct-bad-cfg", configs={"no.such.config": "1"}),
        "null-config": new_topic("ct-bad-null", configs={"retention.ms": None}),
        "config-not-number": new_topic("ct-bad-nan", configs={"retention.ms": "soon"}),
        "segment-bytes-small": new_topic("ct-bad-seg", configs={"segment.bytes": "1000"}),
        "segment-bytes-1MiB": new_topic("ct-ok-seg", configs={"segment.bytes": str(1024 * 1024)}),
        "segment-ms-zero": new_topic("ct-bad-segms", configs={"segment.ms": "0"}),
        "retention-ms-minus2": new_topic("ct-bad-ret", configs={"retention.ms": "-2"}),
        "max-message-bytes-neg": new_topic("ct-bad-mmb", configs={"max.message.bytes": "-1"}),
        "segment-index-bytes-small": new_topic("ct-bad-sib", configs={"segment.index.bytes": "3"}),
        "min-cleanable-2": new_topic("ct-bad-mcr", configs={"min.cleanable.dirty.ratio": "2"}),
        "timestamp-type-bad": new_topic("ct-bad-tst", configs={"message.timestamp.type": "Now"}),
        "compression-bad": new_topic("ct-bad-comp", configs={"compression.type": "brotli"}),
        "cleanup-bad": new_topic("ct-bad-clean", configs={"cleanup.policy": "shred"}),
        "name-dotdot": new_topic(".."),
        "name-space": new_topic("bad name"),
        "name-long": new_topic("x" * 250),
        "name-empty": new_topic(""),
        "name-collides": new_topic("ct.collide"),
        "assignment-and-count": new_topic(
            "ct-bad-asg", 1, 1, assignments=[{"partition_index": 0, "broker_ids": [1]}]
        ),
        "assignment-unknown-broker": new_topic(
            "ct-bad-asg2", -1, -1, assignments=[{"partition_index": 0, "broker_ids": [7]}]
        ),
        "assignment-gap": new_topic(
            "ct-bad-asg3",
            -1,
            -1,
            assignments=[
                {"partition_index": 0, "broker_ids": [1]},
                {"partition_index": 2, "broker_ids": [1]},
            ],
        ),
        "assignment-from-1": new_topic(
            "ct-bad-asg4", -1, -1, assignments=[{"partition_index": 1, "broker_ids": [1]}]
        ),
        "assignment-ok": new_topic(
            "ct-ok-asg",
            -1,
            -1,
            assignments=[
                {"partition_index": 0, "broker_ids": [1]},
                {"partition_index": 1, "broker_ids": [1]},
            ],
        ),
        "assignment-empty-replicas": new_topic(
            "ct-bad-asg5", -1, -1, assignments=[{"partition_index": 0, "broker_ids": []}]
        ),
    }
    s.create_topic("ct_collide")
    for label, topic in bad.items():
        create(s, label, v, [topic], validate_only=True)
    create(s, "duplicate-names", v, [new_topic("ct-dup"), new_topic("ct-dup")])
    create(s, "empty-list", v, [])


@case("delete_topics")
def delete_topics(s):
    import uuid

    for v in versions(DELETE):
        s.create_topic(f"dt-{v}")
        s.check(
            f"v{v}/existing",
            DELETE,
            v,
            {"topic_names": [f"dt-{v}"], "topics": [{"name": f"dt-{v}"}], "timeout_ms": 30000},
        )
        s.check(
            f"v{v}/unknown",
            DELETE,
            v,
            {
                "topic_names": [f"dt-missing-{v}"],
                "topics": [{"name": f"dt-missing-{v}"}],
                "timeout_ms": 30000,
            },
        )
    s.check(
        "v6/unknown-id",
        DELETE,
        6,
        {"topics": [{"name": None, "topic_id": uuid.uuid4()}], "timeout_ms": 30000},
    )
    s.check("v6/invalid-name", DELETE, 6, {"topics": [{"name": "bad name"}], "timeout_ms": 30000})


@case("create_partitions")
def create_partitions(s):
    for v in versions(CREATE_PARTITIONS):
        name = f"cp-{v}"
        s.create_topic(name, 1)

        def req(count, assignments=None, validate_only=False, topic=name):
            return {
                "topics": [{"name": topic, "count": count, "assignments": assignments}],
                "timeout_ms": 30000,
                "validate_only": validate_only,
            }

        s.check(f"v{v}/grow", CREATE_PARTITIONS, v, req(3))
        s.check(f"v{v}/same", CREATE_PARTITIONS, v, req(3))
        s.check(f"v{v}/shrink", CREATE_PARTITIONS, v, req(2))
        s.check(f"v{v}/validate-only", CREATE_PARTITIONS, v, req(5, validate_only=True))
        s.check(f"v{v}/unknown-topic", CREATE_PARTITIONS, v, req(2, topic=f"cp-missing-{v}"))
        s.check(f"v{v}/assignments", CREATE_PARTITIONS, v, req(4, [{"broker_ids": [1]}]))
        s.check(
            f"v{v}/bad-assignments", CREATE_PARTITIONS, v, req(6, [{"broker_ids": [9]}, {"broker_ids": [1]}])
        )
        s.check(f"v{v}/wrong-assignment-count", CREATE_PARTITIONS, v, req(7, [{"broker_ids": [1]}]))
    s.check(
        "duplicate-topic",
        CREATE_PARTITIONS,
        3,
        {
            "topics": [
                {"name": "cp-3", "count": 9, "assignments": None},
                {"name": "cp-3", "count": 9, "assignments": None},
            ],
            "timeout_ms": 30000,
            "validate_only": True,
        },
    )
    s.check(
        "internal-topic",
        CREATE_PARTITIONS,
        3,
        {
            "topics": [{"name": "__consumer_offsets", "count": 9, "assignments": None}],
            "timeout_ms": 30000,
            "validate_only": True,
        },
    )


def describe(s, label, version, resources, synonyms=False, documentation=False):
    return s.check(
        label,
        DESCRIBE_CONFIGS,
        version,
        {
            "resources": [
                {"resource_type": t, "resource_name": n, "configuration_keys": keys}
                for t, n, keys in resources
            ],
            "include_synonyms": synonyms,
            "include_documentation": documentation,
        },
    )


TOPIC_KEYS = [
    "cleanup.policy",
    "retention.ms",
    "segment.bytes",
    "max.message.bytes",
    "message.timestamp.type",
    "min.insync.replicas",
    "compression.type",
    "unclean.leader.election.enable",
    "min.cleanable.dirty.ratio",
]


@case("describe_configs/topic")
def describe_configs_topic(s):
    s.create_topic("dc-topic", 1, {"retention.ms": "3600000", "cleanup.policy": "compact"})
    for v in versions(DESCRIBE_CONFIGS):
        describe(s, f"v{v}/keys", v, [(TOPIC, "dc-topic", TOPIC_KEYS)])
        describe(s, f"v{v}/all", v, [(TOPIC, "dc-topic", None)], synonyms=v >= 1, documentation=v >= 3)
        describe(
            s, f"v{v}/synonyms", v, [(TOPIC, "dc-topic", ["retention.ms", "segment.bytes"])], synonyms=True
        )
        describe(s, f"v{v}/documentation", v, [(TOPIC, "dc-topic", ["retention.ms"])], documentation=True)
        describe(s, f"v{v}/unknown-topic", v, [(TOPIC, "dc-missing", None)])
        describe(s, f"v{v}/unknown-key", v, [(TOPIC, "dc-topic", ["no.such.key"])])


@case("describe_configs/broker")
def describe_configs_broker(s):
    keys = [
        "num.partitions",
        "auto.create.topics.enable",
        "message.max.bytes",
        "log.segment.bytes",
        "offsets.topic.num.partitions",
        "transaction.state.log.num.partitions",
    ]
    for v in versions(DESCRIBE_CONFIGS):
        describe(s, f"v{v}/keys", v, [(BROKER, "1", keys)])
        describe(s, f"v{v}/other-broker", v, [(BROKER, "7", keys)])
        describe(s, f"v{v}/bad-type", v, [(99, "x", None)])
    describe(s, "broker-empty-name", 4, [(BROKER, "", ["num.partitions"])])
    describe(s, "broker-logger", 4, [(8, "1", None)])
