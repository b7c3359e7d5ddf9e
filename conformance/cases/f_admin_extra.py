"""DescribeTopicPartitions (75, paged topic metadata) and ElectLeaders (43)."""

from conformance.cases import case, versions

DESCRIBE_TOPIC_PARTITIONS, ELECT_LEADERS = 75, 43


def dtp(s, label, topics, limit=2000, cursor=None):
    return s.check(
        label,
        DESCRIBE_TOPIC_PARTITIONS,
        0,
        {"topics": [{"name": t} for t in topics], "response_partition_limit": limit, "cursor": cursor},
    )


@case("describe_topic_partitions")
def describe_topic_partitions(s):
    s.create_topic("dtp-a", 3)
    s.create_topic("dtp-b", 2)
    dtp(s, "two-topics", ["dtp-b", "dtp-a"])
    dtp(s, "unknown-and-invalid", ["dtp-a", "dtp-missing", "bad name"])
    dtp(s, "limit-2", ["dtp-a", "dtp-b"], limit=2)
    dtp(s, "limit-3", ["dtp-a", "dtp-b"], limit=3)
    dtp(s, "limit-0", ["dtp-a"], limit=0)
    dtp(s, "cursor", ["dtp-a", "dtp-b"], limit=2, cursor={"topic_name": "dtp-a", "partition_index": 2})
    dtp(s, "cursor-second-topic", ["dtp-a", "dtp-b"], cursor={"topic_name": "dtp-b", "partition_index": 1})
    dtp(s, "cursor-not-requested", ["dtp-a"], cursor={"topic_name": "dtp-b", "partition_index": 0})
    dtp(s, "cursor-negative", ["dtp-a"], cursor={"topic_name": "dtp-a", "partition_index": -1})
    dtp(s, "cursor-past-end", ["dtp-a"], cursor={"topic_name": "dtp-a", "partition_index": 7})


def elect(s, label, version, topic_partitions, election_type=0):
    return s.check(
        label,
        ELECT_LEADERS,
        version,
        {"election_type": election_type, "timeout_ms": 10000, "topic_partitions": topic_partitions},
    )


@case("elect_leaders")
def elect_leaders(s):
    s.create_topic("el-topic", 2)
    for v in versions(ELECT_LEADERS):
        elect(s, f"v{v}/preferred", v, [{"topic": "el-topic", "partitions": [0, 1]}])
        elect(
            s,
            f"v{v}/unknown",
            v,
            [{"topic": "el-topic", "partitions": [5]}, {"topic": "el-none", "partitions": [0]}],
        )
        elect(s, f"v{v}/all", v, None)
        if v >= 1:
            elect(s, f"v{v}/unclean", v, [{"topic": "el-topic", "partitions": [0]}], election_type=1)
            elect(s, f"v{v}/bad-type", v, [{"topic": "el-topic", "partitions": [0]}], election_type=3)
