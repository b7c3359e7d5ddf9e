"""KIP-848 consumer groups, the admin side (issue 25): GROUP config resources (type 32) through
DescribeConfigs, IncrementalAlterConfigs and AlterConfigs (names, defaults, broker synonyms,
validation); offsets committed and fetched with member epochs (OffsetCommit/OffsetFetch v9/v10,
TxnOffsetCommit) against a group joined through ConsumerGroupHeartbeat with fixed member ids;
ConsumerGroupDescribe, DescribeGroups and ListGroups on consumer groups; DeleteGroups and
OffsetDelete."""

import time

from conformance.cases import case

DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL = 32, 33, 44
GROUP = 32
SET, DELETE = 0, 1


def _describe_group_config(s, label, name, keys=None, *, synonyms=True, documentation=False, v=4):
    return s.check(
        label,
        DESCRIBE_CONFIGS,
        v,
        {
            "resources": [{"resource_type": GROUP, "resource_name": name, "configuration_keys": keys}],
            "include_synonyms": synonyms,
            "include_documentation": documentation,
        },
    )


def _alter_group_config(s, label, name, configs, *, op=SET, validate_only=False, v=1):
    return s.check(
        label,
        INCREMENTAL,
        v,
        {
            "resources": [
                {
                    "resource_type": GROUP,
                    "resource_name": name,
                    "configs": [
                        {"name": k, "config_operation": op, "value": val} for k, val in configs.items()
                    ],
                }
            ],
            "validate_only": validate_only,
        },
    )


def _settled(s, name, key, want, timeout=15.0):
    """Kafka applies a group config when its metadata log reaches the broker, a moment after
    answering the change: wait (uncompared) until DescribeConfigs shows it, on both brokers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = s.call(
            DESCRIBE_CONFIGS,
            4,
            {
                "resources": [{"resource_type": GROUP, "resource_name": name, "configuration_keys": [key]}],
                "include_synonyms": False,
                "include_documentation": False,
            },
        )
        values = {c["name"]: c["value"] for c in answer["results"][0]["configs"]}
        if values.get(key) == want:
            return
        time.sleep(0.1)


@case("consumer-group-admin/group-configs")
def group_configs(s):
    # a group that exists nowhere: every config at its default, with the broker's synonyms
    for v in range(1, 5):
        _describe_group_config(s, f"v{v}/defaults", "gcfg-none", v=v)
    _describe_group_config(s, "defaults/no-synonyms", "gcfg-none", synonyms=False)
    _describe_group_config(s, "defaults/some-keys", "gcfg-none", ["consumer.session.timeout.ms", "nope"])
    _describe_group_config(s, "empty-name", "")
    # set, then describe (a config may exist for a group that does not)
    _alter_group_config(
        s, "set", "gcfg-a", {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}
    )
    _settled(s, "gcfg-a", "consumer.heartbeat.interval.ms", "6000")
    _describe_group_config(s, "after-set", "gcfg-a")
    _alter_group_config(s, "delete", "gcfg-a", {"consumer.heartbeat.interval.ms": None}, op=DELETE)
    _settled(s, "gcfg-a", "consumer.heartbeat.interval.ms", "5000")
    _describe_group_config(
        s, "after-delete", "gcfg-a", ["consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"]
    )
    # refusals
    for label, configs in [
        ("unknown-name", {"consumer.nope.ms": "1"}),
        ("heartbeat-below-min", {"consumer.heartbeat.interval.ms": "1000"}),
        ("heartbeat-above-max", {"consumer.heartbeat.interval.ms": "16000"}),
        ("session-below-min", {"consumer.session.timeout.ms": "1000"}),
        ("session-above-max", {"consumer.session.timeout.ms": "60001"}),
        ("assignment-above-max", {"consumer.assignment.interval.ms": "15001"}),
        ("not-a-number", {"consumer.session.timeout.ms": "soon"}),
        ("negative", {"consumer.assignment.interval.ms": "-1"}),
        (
            "session-not-above-heartbeat",
            {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "50000"},
        ),
        ("share-record-lock-low", {"share.record.lock.duration.ms": "10"}),
        ("isolation-bad", {"share.isolation.level": "maybe"}),
        ("dlq-topic", {"errors.deadletterqueue.topic.name": "dlq"}),
    ]:
        _alter_group_config(s, label, "gcfg-b", configs)
    _alter_group_config(
        s, "validate-only", "gcfg-c", {"consumer.session.timeout.ms": "55000"}, validate_only=True
    )
    _alter_group_config(s, "empty-group-name", "", {"consumer.session.timeout.ms": "55000"})
    _alter_group_config(s, "v0/set", "gcfg-d", {"consumer.assignment.interval.ms": "0"}, v=0)
    _settled(s, "gcfg-d", "consumer.assignment.interval.ms", "0")
    _describe_group_config(s, "v0/after-set", "gcfg-d", ["consumer.assignment.interval.ms"])
    # AlterConfigs replaces the whole set
    for v in (0, 1, 2):
        s.check(
            f"alter-configs/v{v}",
            ALTER_CONFIGS,
            v,
            {
                "resources": [
                    {
                        "resource_type": GROUP,
                        "resource_name": "gcfg-d",
                        "configs": [{"name": "consumer.session.timeout.ms", "value": str(46000 + v)}],
                    }
                ],
                "validate_only": False,
            },
        )
    _settled(s, "gcfg-d", "consumer.session.timeout.ms", "46002")
    _describe_group_config(
        s, "alter-configs/after", "gcfg-d", ["consumer.session.timeout.ms", "consumer.assignment.interval.ms"]
    )
    s.check(
        "alter-configs/unknown",
        ALTER_CONFIGS,
        2,
        {
            "resources": [
                {
                    "resource_type": GROUP,
                    "resource_name": "gcfg-d",
                    "configs": [{"name": "x.y", "value": "1"}],
                }
            ],
            "validate_only": False,
        },
    )


INIT_PID, ADD_OFFSETS, TXN_OFFSET_COMMIT, FIND_COORDINATOR = 22, 25, 28, 10


@case("consumer-group-admin/txn-offsets-unknown-group")
def txn_offsets_unknown_group(s):
    """A transactional commit naming a member (generation or member epoch >= 0) of a group the
    coordinator does not know: GROUP_ID_NOT_FOUND from v6, ILLEGAL_GENERATION before."""
    s.create_topic("cga-txn", 1)
    for v in (3, 4, 5):
        tid, group = f"cga-txn-{v}", f"cga-txn-group-{v}"
        s.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]})
        r = s.call(
            INIT_PID,
            5,
            {
                "transactional_id": tid,
                "transaction_timeout_ms": 60000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        pid, epoch = r["producer_id"], r["producer_epoch"]
        if v < 5:
            s.call(
                ADD_OFFSETS,
                min(v, 4),
                {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": group},
            )
        s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        for label, member, generation in (("member", "m", 3), ("no-member", "", 0)):
            s.check(
                f"v{v}/{label}",
                TXN_OFFSET_COMMIT,
                v,
                {
                    "transactional_id": tid,
                    "group_id": group,
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "generation_id": generation,
                    "member_id": member,
                    "group_instance_id": None,
                    "topics": [
                        {
                            "name": "cga-txn",
                            "partitions": [
                                {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}
                            ],
                        }
                    ],
                },
            )
