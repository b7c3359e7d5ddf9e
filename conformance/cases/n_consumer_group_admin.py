"""KIP-848 consumer groups, the admin side (issue 25): GROUP config resources (type 32) through
DescribeConfigs, IncrementalAlterConfigs and AlterConfigs (names, defaults, broker synonyms,
validation); offsets committed and fetched with member epochs (OffsetCommit/OffsetFetch v9/v10,
TxnOffsetCommit) against a group joined through ConsumerGroupHeartbeat with fixed member ids;
ConsumerGroupDescribe, DescribeGroups and ListGroups on consumer groups; DeleteGroups and
OffsetDelete."""

import uuid

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
    s.wait_config(GROUP, "gcfg-a", "consumer.heartbeat.interval.ms", "6000")
    _describe_group_config(s, "after-set", "gcfg-a")
    _alter_group_config(s, "delete", "gcfg-a", {"consumer.heartbeat.interval.ms": None}, op=DELETE)
    s.wait_config(GROUP, "gcfg-a", "consumer.heartbeat.interval.ms", "5000")
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
    s.wait_config(GROUP, "gcfg-d", "consumer.assignment.interval.ms", "0")
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
    s.wait_config(GROUP, "gcfg-d", "consumer.session.timeout.ms", "46002")
    _describe_group_config(
        s, "alter-configs/after", "gcfg-d", ["consumer.session.timeout.ms", "consumer.assignment.interval.ms"]
    )
    # the groups with configs of their own (kafka-configs.sh --describe checks it)
    s.check("list-config-resources", 74, 1, {"resource_types": [GROUP]})
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


OFFSET_COMMIT, OFFSET_FETCH, DESCRIBE_GROUPS, LIST_GROUPS = 8, 9, 15, 16
DELETE_GROUPS, OFFSET_DELETE, HEARTBEAT_848, DESCRIBE_848 = 42, 47, 68, 69


def _heartbeat(s, group, member, epoch, *, topics=("cga-t",), owned=None):
    fields = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30000 if epoch == 0 else -1,
        "subscribed_topic_names": list(topics) if epoch == 0 else None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": owned if owned is not None else ([] if epoch == 0 else None),
    }
    return s.call(HEARTBEAT_848, 1, fields)


def _joined(s, group, member, partitions):
    """Join `group` with `member` and heartbeat until it owns `partitions` of cga-t, Stable;
    -> its member epoch."""
    answer = _heartbeat(s, group, member, 0)
    assert answer["error_code"] == 0, answer

    def stable():
        nonlocal answer
        epoch = answer["member_epoch"]
        assigned = answer.get("assignment") or {}
        owned = [
            {"topic_id": uuid.UUID(str(t["topic_id"])), "partitions": sorted(t["partitions"])}
            for t in assigned.get("topic_partitions", [])
        ]
        got = sorted(p for t in owned for p in t["partitions"])
        if got == partitions:
            again = _heartbeat(s, group, member, epoch, owned=owned)
            if again["error_code"] == 0 and again["member_epoch"] == epoch:
                return epoch
        answer = _heartbeat(s, group, member, epoch, owned=owned if assigned else None)
        assert answer["error_code"] == 0, answer
        return None

    return s.wait_until(stable, f"{member} owning cga-t {partitions}", timeout=30, interval=0.2)


def _commit(s, label, v, group, member, epoch, partitions, *, topic="cga-t", topic_id=None):
    t = {"name": topic, "topic_id": topic_id}
    t["partitions"] = [
        {
            "partition_index": p,
            "committed_offset": 10 + p,
            "committed_leader_epoch": -1,
            "committed_metadata": "m",
        }
        for p in partitions
    ]
    return s.check(
        label,
        OFFSET_COMMIT,
        v,
        {
            "group_id": group,
            "generation_id_or_member_epoch": epoch,
            "member_id": member,
            "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [t],
        },
    )


def _fetch(s, label, v, group, member, epoch, partitions=(0, 1), *, topic_id=None, all_topics=False):
    topics = (
        None
        if all_topics
        else [{"name": "cga-t", "topic_id": topic_id, "partition_indexes": list(partitions)}]
    )
    return s.check(
        label,
        OFFSET_FETCH,
        v,
        {
            "groups": [{"group_id": group, "member_id": member, "member_epoch": epoch, "topics": topics}],
            "require_stable": True,
        },
    )


@case("consumer-group-admin/offsets-and-describe")
def offsets_and_describe(s):
    from conformance.cases.c_data import topic_id

    group, member = "cga-g", "cga-member-0000000001"
    s.create_topic("cga-t", 2)
    s.create_topic("cga-other", 1)
    tid = topic_id(s, "cga-t")
    # the target assignment at once (Kafka's default assignment interval is 1 s)
    _alter_group_config(s, "assignment-interval", group, {"consumer.assignment.interval.ms": "0"})
    s.wait_config(GROUP, group, "consumer.assignment.interval.ms", "0")
    s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
    epoch = _joined(s, group, member, [0, 1])
    # OffsetCommit v9 (names) / v10 (ids) with the member epoch
    _commit(s, "commit/v9", 9, group, member, epoch, [0, 1])
    _commit(s, "commit/v10", 10, group, member, epoch, [0], topic="", topic_id=tid)
    _commit(s, "commit/newer-epoch", 9, group, member, epoch + 1, [0])
    _commit(s, "commit/older-epoch", 9, group, member, epoch - 1, [0, 1])
    _commit(s, "commit/unknown-member", 10, group, "nobody", epoch, [0], topic="", topic_id=tid)
    _commit(s, "commit/v8-member", 8, group, member, epoch, [0])
    _commit(s, "commit/admin-with-members", 9, group, "", -1, [0])
    _commit(s, "commit/unknown-topic", 9, group, member, epoch, [0], topic="cga-nope")
    _commit(s, "commit/missing-group-v9", 9, "cga-missing", member, 1, [0])
    _commit(s, "commit/missing-group-v8", 8, "cga-missing", member, 1, [0])
    # OffsetFetch v9+ with the member's id and epoch, and as an admin
    _fetch(s, "fetch/v9-member", 9, group, member, epoch)
    _fetch(s, "fetch/v10-member", 10, group, member, epoch, topic_id=tid)
    _fetch(s, "fetch/v9-stale", 9, group, member, epoch - 1)
    _fetch(s, "fetch/v10-unknown-member", 10, group, "nobody", epoch, topic_id=tid)
    _fetch(s, "fetch/v9-admin", 9, group, None, -1)
    _fetch(s, "fetch/v9-admin-all", 9, group, None, -1, all_topics=True)
    _fetch(s, "fetch/v8", 8, group, None, -1)
    _commit(s, "commit/simple-classic", 9, "cga-classic", "", -1, [0])
    # describing it
    for v in (0, 1):
        s.check(
            f"describe-848/v{v}",
            DESCRIBE_848,
            v,
            {"group_ids": [group, "cga-missing", "", "cga-classic"], "include_authorized_operations": v == 1},
        )
    for v in (0, 5, 6):
        s.check(
            f"describe-groups/v{v}",
            DESCRIBE_GROUPS,
            v,
            {"groups": [group], "include_authorized_operations": False},
        )
    s.check("list/v5-consumer", LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["consumer"]})
    s.check(
        "list/v5-stable", LIST_GROUPS, 5, {"states_filter": ["STABLE"], "types_filter": ["Consumer", "nope"]}
    )
    s.check("list/v4", LIST_GROUPS, 4, {"states_filter": ["stable"]})
    # administration while it has members
    s.check(
        "offset-delete/subscribed",
        OFFSET_DELETE,
        0,
        {
            "group_id": group,
            "topics": [
                {"name": "cga-t", "partitions": [{"partition_index": 0}]},
                {"name": "cga-other", "partitions": [{"partition_index": 0}]},
            ],
        },
    )
    s.check("delete/non-empty", DELETE_GROUPS, 2, {"groups_names": [group]})
    _txn_commits(s, group, member, epoch, tid)
    # the member leaves: the group is Empty, an admin may commit (kafka-consumer-groups
    # --reset-offsets), then delete it
    left = _heartbeat(s, group, member, -1)
    assert left["error_code"] == 0, left
    s.check(
        "describe-848/empty", DESCRIBE_848, 1, {"group_ids": [group], "include_authorized_operations": False}
    )
    _commit(s, "commit/admin-empty", 9, group, "", -1, [0, 1])
    _commit(s, "commit/left-member", 9, group, member, epoch, [0])
    _fetch(s, "fetch/after-reset", 9, group, None, -1)
    s.check("list/v5-empty", LIST_GROUPS, 5, {"states_filter": ["empty"], "types_filter": ["consumer"]})
    s.check("delete/empty", DELETE_GROUPS, 2, {"groups_names": [group]})
    s.check(
        "describe-848/deleted",
        DESCRIBE_848,
        1,
        {"group_ids": [group], "include_authorized_operations": False},
    )
    _fetch(s, "fetch/deleted", 9, group, None, -1)


END_TXN = 26


def _txn_commits(s, group, member, epoch, tid):
    """TxnOffsetCommit with the member's id and epoch (a Java consumer's groupMetadata()):
    STALE_MEMBER_EPOCH from v6, ILLEGAL_GENERATION below; then the transaction is aborted."""
    txn = "cga-txn-member"
    s.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [txn]})
    r = s.call(
        INIT_PID,
        5,
        {"transactional_id": txn, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
    )
    pid, pepoch = r["producer_id"], r["producer_epoch"]
    for v in (5, 6):
        for label, e, who in (
            ("current", epoch, member),
            ("newer", epoch + 1, member),
            ("older", epoch - 1, member),
            ("unknown-member", epoch, "nobody"),
        ):
            s.check(
                f"txn-commit/v{v}-{label}",
                TXN_OFFSET_COMMIT,
                v,
                {
                    "transactional_id": txn,
                    "group_id": group,
                    "producer_id": pid,
                    "producer_epoch": pepoch,
                    "generation_id": e,
                    "member_id": who,
                    "group_instance_id": None,
                    "topics": [
                        {
                            "name": "cga-t",
                            "topic_id": tid,
                            "partitions": [
                                {"partition_index": 0, "committed_offset": 3, "committed_metadata": ""}
                            ],
                        }
                    ],
                },
            )
    _fetch(s, "fetch/txn-pending", 9, group, None, -1, (0,))
    s.check(
        "txn-abort",
        END_TXN,
        5,
        {"transactional_id": txn, "producer_id": pid, "producer_epoch": pepoch, "committed": False},
    )
    s.wait_txn_complete(txn)

    def dropped():  # Kafka's group coordinator applies the marker a moment after it is written
        answer = s.call(
            OFFSET_FETCH,
            9,
            {
                "groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": None}],
                "require_stable": True,
            },
        )
        return all(p["error_code"] == 0 for t in answer["groups"][0]["topics"] for p in t["partitions"])

    s.wait_until(dropped, "the aborted transaction's offsets dropped", timeout=15)
