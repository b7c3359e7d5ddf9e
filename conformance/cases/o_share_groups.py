"""KIP-932 share groups (issue 26): ShareGroupHeartbeat (76), ShareGroupDescribe (77), ShareFetch
(78), ShareAcknowledge (79), DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and
DeleteShareGroupOffsets (92): the refusals and validations, with the error messages a client shows
compared as observations (the comparison drops error_message), and a scripted happy path whose
answers are deterministic (one member, records acquired, accepted, released and redelivered with
delivery count 2, rejected, the session closed; offsets described, altered and deleted).

Every ShareFetch names share-partitions a member's heartbeat has initialized: Kafka loads a
share-partition asynchronously, so a fetch of one that was never initialized gets no answer for it
at first and an error later, timing-dependent (minibroker answers the error at once).

Member ids are chosen by the case (share-group members always choose theirs). A new member's first
heartbeat is answered before its partitions' share state is initialized (both brokers: Kafka's
handshake), so the case heartbeats, uncompared, until the assignment arrives. Each share group sets
share.auto.offset.reset=earliest (GROUP config, uncompared) before its first fetch. minibroker is
brought to share.version 1 with UpdateFeatures when below (Kafka 4.4 finalizes 2 by default)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

from conformance.cases import case
from conformance.cases.c_data import PRODUCE, batch, produce_req, topic_id

HEARTBEAT, DESCRIBE, SHARE_FETCH, SHARE_ACK = 76, 77, 78, 79
DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92
APIV, UPDATE_FEATURES, INCREMENTAL_ALTER_CONFIGS, OFFSET_COMMIT = 18, 57, 44, 8
GROUP_RESOURCE = 32
ACCEPT, RELEASE, REJECT = 1, 2, 3
#: bound on waiting for a member's assignment (share state initialized, then assigned)
ASSIGN_WAIT_S = 30.0


def member(tag: str) -> str:
    """A member id as the clients make them (a base64 Uuid): fixed per tag, so both brokers see
    the same ids."""
    import base64  # noqa: PLC0415

    raw = uuid.uuid5(uuid.NAMESPACE_OID, tag).bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def enable(s) -> None:
    """share.version at least 1 on this broker (uncompared)."""

    def level():
        answer = s.call(APIV, 4, {"client_software_name": "conformance", "client_software_version": "1.0"})
        return {f["name"]: f["max_version_level"] for f in answer["finalized_features"]}.get(
            "share.version", 0
        )

    if level() < 1:
        s.call(
            UPDATE_FEATURES,
            1,
            {
                "timeout_ms": 60000,
                "feature_updates": [{"feature": "share.version", "max_version_level": 1, "upgrade_type": 1}],
                "validate_only": False,
            },
        )
        s.wait_until(lambda: level() >= 1, "share.version finalized at 1 or more", 30)


def earliest(s, group: str) -> None:
    """The group's share.auto.offset.reset=earliest (uncompared), waited for until shown."""
    s.call(
        INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": GROUP_RESOURCE,
                    "resource_name": group,
                    "configs": [
                        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}
                    ],
                }
            ],
            "validate_only": False,
        },
    )
    s.wait_config(GROUP_RESOURCE, group, "share.auto.offset.reset", "earliest")


def message(s, label, answer) -> None:
    """Compare an error's code and message (the message is what a client shows)."""
    s.observe(label, [answer["error_code"], answer["error_message"]])


def hb(s, label, group, member_id, epoch, topics=None, rack=None):
    """One ShareGroupHeartbeat v1; compared under `label` unless it is empty."""
    fields = {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": epoch,
        "rack_id": rack,
        "subscribed_topic_names": topics,
    }
    if label:
        return s.check(label, HEARTBEAT, 1, fields)
    return s.call(HEARTBEAT, 1, fields)


def assigned(answer) -> list[int]:
    if not answer.get("assignment"):
        return []
    return sorted(p for tp in answer["assignment"]["topic_partitions"] for p in tp["partitions"])


def join_until_assigned(s, group, member_id, topic, label="join") -> tuple[dict, list[int]]:
    """Join (epoch 0, compared as `label`) and heartbeat, uncompared, until partitions come."""
    answer = hb(s, label, group, member_id, 0, topics=[topic])
    epoch, parts = answer["member_epoch"], assigned(answer)

    def arrived():
        nonlocal epoch, parts
        a = hb(s, "", group, member_id, epoch)
        if a["error_code"] == 0:
            epoch, parts = a["member_epoch"], assigned(a) or parts
        return bool(parts)

    if not parts:
        s.wait_until(arrived, f"{member_id} assigned in {group}", ASSIGN_WAIT_S, 0.2)
    return {"member_epoch": epoch}, parts


def leave(s, label, group, member_id):
    return hb(s, label, group, member_id, -1)


def share_fetch(s, label, v, group, member_id, epoch, parts=(), *, wait=0, acks=None, **extra):
    """ShareFetch; `parts` [(topic id, partition)], `acks` {(topic id, partition): [(first, last,
    [types])]} piggy-backed."""
    topics: dict = {}
    for tid, p in parts:
        topics.setdefault(tid, []).append({"partition_index": p, "acknowledgement_batches": []})
    for (tid, p), batches in (acks or {}).items():
        entries = topics.setdefault(tid, [])
        entry = next((e for e in entries if e["partition_index"] == p), None)
        if entry is None:
            entry = {"partition_index": p, "acknowledgement_batches": []}
            entries.append(entry)
        entry["acknowledgement_batches"] = [
            {"first_offset": f, "last_offset": last, "acknowledge_types": t} for f, last, t in batches
        ]
    fields = {
        "group_id": group,
        "member_id": member_id,
        "share_session_epoch": epoch,
        "max_wait_ms": wait,
        "min_bytes": 1 if wait else 0,
        "max_bytes": 1048576,
        "max_records": 500,
        "batch_size": 500,
        "share_acquire_mode": 0,
        "is_renew_ack": False,
        "topics": [{"topic_id": tid, "partitions": ps} for tid, ps in topics.items()],
        "forgotten_topics_data": [],
        **extra,
    }
    return s.check(label, SHARE_FETCH, v, fields)


def share_ack(s, label, v, group, member_id, epoch, acks, **extra):
    fields = {
        "group_id": group,
        "member_id": member_id,
        "share_session_epoch": epoch,
        "is_renew_ack": False,
        "topics": [
            {
                "topic_id": tid,
                "partitions": [
                    {
                        "partition_index": p,
                        "acknowledgement_batches": [
                            {"first_offset": f, "last_offset": last, "acknowledge_types": t}
                            for f, last, t in batches
                        ],
                    }
                ],
            }
            for (tid, p), batches in acks.items()
        ],
        **extra,
    }
    return s.check(label, SHARE_ACK, v, fields)


def top_message(s, label, answer) -> None:
    message(s, label, answer)


def partition_messages(s, label, answer) -> None:
    """Each partition's error and acknowledgement error with their messages (ShareFetch and
    ShareAcknowledge answers), as a client shows them."""
    s.observe(
        label,
        [
            [
                p.get(k)
                for k in (
                    "error_code",
                    "error_message",
                    "acknowledge_error_code",
                    "acknowledge_error_message",
                )
            ]
            for t in answer.get("responses", [])
            for p in t["partitions"]
        ],
    )


def classic_group(s, group: str, topic: str) -> None:
    """A classic group holding a committed offset (OffsetCommit v8 with generation -1)."""
    s.call(
        OFFSET_COMMIT,
        8,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": topic,
                    "partitions": [{"partition_index": 0, "committed_offset": 0, "committed_metadata": None}],
                }
            ],
        },
    )


@case("share_groups/heartbeat-refusals")
def heartbeat_refusals(s):
    enable(s)
    topic, group = "sg-refuse-t", "sg-refuse"
    s.create_topic(topic, 1)
    classic_group(s, "sg-refuse-classic", topic)
    m = member("refuse")
    cases = {
        "empty-member": dict(member_id="", epoch=0, topics=[topic]),
        "long-member": dict(member_id="x" * 37, epoch=0, topics=[topic]),
        "empty-group": dict(group="", epoch=0, topics=[topic]),
        "empty-rack": dict(epoch=0, topics=[topic], rack=""),
        "no-topics-on-join": dict(epoch=0),
        "empty-topics-on-join": dict(epoch=0, topics=[]),
        "bad-epoch": dict(epoch=-2),
        "unknown-group": dict(group="sg-refuse-none", epoch=3),
        "leave-unknown-group": dict(group="sg-refuse-none", epoch=-1),
        "classic-group": dict(group="sg-refuse-classic", epoch=0, topics=[topic]),
    }
    for label, kw in cases.items():
        kw = dict(kw)
        answer = hb(s, label, kw.pop("group", group), kw.pop("member_id", m), kw.pop("epoch"), **kw)
        message(s, f"{label}/message", answer)
    # a member of an existing group: unknown member, fenced epoch, then left
    joined = hb(s, "join-unknown-topic", group, m, 0, topics=["sg-refuse-missing"])
    message(s, "join-unknown-topic/message", joined)
    other = hb(s, "unknown-member", group, member("refuse-other"), 1)
    message(s, "unknown-member/message", other)
    fenced = hb(s, "fenced-epoch", group, m, joined["member_epoch"] + 5)
    message(s, "fenced-epoch/message", fenced)
    leave(s, "leave", group, m)
    leave(s, "leave-again", group, m)


@case("share_groups/describe")
def describe(s):
    enable(s)
    topic, group = "sg-describe-t", "sg-describe"
    s.create_topic(topic, 2)
    classic_group(s, "sg-describe-classic", topic)
    for label, ids in {
        "unknown": ["sg-describe-none"],
        "classic": ["sg-describe-classic"],
        "empty-list": [],
    }.items():
        answer = s.check(label, DESCRIBE, 1, {"group_ids": ids, "include_authorized_operations": False})
        for g in answer["groups"]:
            message(s, f"{label}/message", g)
    m = member("describe")
    _, parts = join_until_assigned(s, group, m, topic)
    s.observe("assigned", parts)
    answer = s.call(DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": True})
    g = answer["groups"][0]
    s.observe(
        "stable",
        {
            "error_code": g["error_code"],
            "group_state": g["group_state"],
            "assignor_name": g["assignor_name"],
            "authorized_operations": g["authorized_operations"],
            "members": [
                {
                    "member_id": x["member_id"],
                    "rack_id": x["rack_id"],
                    "client_id": x["client_id"],
                    "client_host": x["client_host"],
                    "subscribed_topic_names": x["subscribed_topic_names"],
                    "assignment": sorted(
                        (t["topic_name"], p)
                        for t in x["assignment"]["topic_partitions"]
                        for p in t["partitions"]
                    ),
                }
                for x in g["members"]
            ],
        },
    )
    leave(s, "leave", group, m)
    answer = s.call(DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})
    g = answer["groups"][0]
    s.observe(
        "empty", {"error_code": g["error_code"], "group_state": g["group_state"], "members": g["members"]}
    )


@case("share_groups/fetch-and-acknowledge")
def fetch_and_acknowledge(s):
    enable(s)
    for v in (1, 2):
        topic, group = f"sg-fetch-t{v}", f"sg-fetch-{v}"
        s.create_topic(topic, 1)
        earliest(s, group)
        s.call(PRODUCE, 9, produce_req(topic, 0, batch(5)))
        tid = topic_id(s, topic)
        tp = (tid, 0)
        m = member(f"fetch-{v}")
        join_until_assigned(s, group, m, topic, f"v{v}/join")
        share_fetch(s, f"v{v}/first-fetch", v, group, m, 0, [tp], wait=5000)
        share_ack(s, f"v{v}/accept", v, group, m, 1, {tp: [(0, 4, [ACCEPT])]})
        share_fetch(s, f"v{v}/nothing-left", v, group, m, 2, wait=0)
        s.call(PRODUCE, 9, produce_req(topic, 0, batch(2)))
        share_fetch(s, f"v{v}/two-more", v, group, m, 3, wait=5000)
        # released with the next fetch: delivered again in its answer, delivery count 2
        share_fetch(s, f"v{v}/release-and-fetch", v, group, m, 4, wait=5000, acks={tp: [(5, 6, [RELEASE])]})
        share_ack(s, f"v{v}/reject", v, group, m, 5, {tp: [(5, 5, [REJECT]), (6, 6, [ACCEPT])]})
        share_ack(s, f"v{v}/ack-not-acquired", v, group, m, 6, {tp: [(0, 0, [ACCEPT])]})
        share_fetch(s, f"v{v}/close-session", v, group, m, -1)
        answer = share_fetch(s, f"v{v}/session-gone", v, group, m, 8)
        top_message(s, f"v{v}/session-gone/message", answer)
        leave(s, f"v{v}/leave", group, m)


def refusal_rounds(s, name: str) -> Iterator[tuple[int, str, str, tuple[uuid.UUID, int]]]:
    """The set-up of the refusal cases: share groups on, a topic of one partition, then for v1 and
    v2 a member of the group (v, group, member id, the partition) assigned the partition, so that
    the share-partition is initialized (a fetch of one that is not answers nothing on Kafka while
    its asynchronous load fails, an error on minibroker)."""
    enable(s)
    topic, group = f"sg-{name}-t", f"sg-{name}"
    s.create_topic(topic, 1)
    tp = (topic_id(s, topic), 0)
    for v in (1, 2):
        m = member(f"{name}-{v}")
        join_until_assigned(s, group, m, topic, f"v{v}/join")
        yield v, group, m, tp


def check_refusals(
    s, v: int, group: str, m: str, refusals: dict[str, dict], call: Callable[..., dict]
) -> None:
    """Each refusal {label: the request's group, member_id (the member's by default), epoch and
    the rest}: `call(label, group, member_id, epoch, **rest)`, then its top-level message."""
    for label, kw in refusals.items():
        kw = dict(kw)
        answer = call(f"v{v}/{label}", kw.pop("group", group), kw.pop("member_id", m), kw.pop("epoch"), **kw)
        top_message(s, f"v{v}/{label}/message", answer)


@case("share_groups/fetch-refusals")
def fetch_refusals(s):
    for v, group, m, tp in refusal_rounds(s, "frefuse"):
        refusals = {
            "null-group": dict(group=None, epoch=0, parts=[tp]),
            "empty-member": dict(member_id="", epoch=0, parts=[tp]),
            "no-session": dict(epoch=3, parts=[tp]),
            "acks-on-initial": dict(epoch=0, acks={tp: [(0, 0, [ACCEPT])]}),
            "unknown-topic-id": dict(
                member_id=member(f"frefuse-unknown-{v}"), epoch=0, parts=[(uuid.uuid4(), 0)]
            ),
        }

        def fetch(label, group_id, member_id, epoch, parts=(), *, v=v, **kw):
            return share_fetch(s, label, v, group_id, member_id, epoch, parts, **kw)

        check_refusals(s, v, group, m, refusals, fetch)
        # a session, then acknowledgement batches Kafka refuses per partition
        share_fetch(s, f"v{v}/open", v, group, m, 0, [tp])
        bad = {
            "first-after-last": [(3, 2, [ACCEPT])],
            "no-types": [(0, 1, [])],
            "types-length": [(0, 2, [ACCEPT, ACCEPT])],
            "type-out-of-range": [(0, 0, [9])],
            "descending": [(4, 5, [ACCEPT]), (1, 2, [ACCEPT])],
        }
        epoch = 1
        for label, batches in bad.items():
            answer = share_fetch(s, f"v{v}/{label}", v, group, m, epoch, acks={tp: batches})
            epoch += 1
            partition_messages(s, f"v{v}/{label}/message", answer)
        if v == 2:
            answer = share_fetch(s, "v2/renew-with-limits", 2, group, m, epoch, is_renew_ack=True)
            top_message(s, "v2/renew-with-limits/message", answer)
            answer = share_fetch(
                s, "v2/renew-type-without-flag", 2, group, m, epoch, acks={tp: [(0, 0, [4])]}
            )
            partition_messages(s, "v2/renew-type-without-flag/message", answer)
        share_fetch(s, f"v{v}/close", v, group, m, -1)
        leave(s, f"v{v}/leave", group, m)


@case("share_groups/acknowledge-refusals")
def acknowledge_refusals(s):
    for v, group, m, tp in refusal_rounds(s, "arefuse"):
        refusals = {
            "null-group": dict(group=None, epoch=1),
            "empty-member": dict(member_id="", epoch=1),
            "initial-epoch": dict(epoch=0),
            "no-session": dict(epoch=2),
        }

        def acknowledge(label, group_id, member_id, epoch, *, v=v, tp=tp):
            return share_ack(s, label, v, group_id, member_id, epoch, {tp: [(0, 0, [ACCEPT])]})

        check_refusals(s, v, group, m, refusals, acknowledge)
        share_fetch(s, f"v{v}/open", v, group, m, 0, [tp])
        answer = share_ack(s, f"v{v}/wrong-epoch", v, group, m, 5, {tp: [(0, 0, [ACCEPT])]})
        top_message(s, f"v{v}/wrong-epoch/message", answer)
        if v == 2:
            answer = share_ack(s, "v2/renew-without-flag", 2, group, m, 1, {tp: [(0, 0, [4])]})
            partition_messages(s, "v2/renew-without-flag/message", answer)
        share_ack(s, f"v{v}/close", v, group, m, -1, {})
        leave(s, f"v{v}/leave", group, m)


def describe_offsets(s, label, v, groups):
    """DescribeShareGroupOffsets for {group: topics (None = all, else {topic: partitions})}."""
    return s.check(
        label,
        DESCRIBE_OFFSETS,
        v,
        {
            "groups": [
                {
                    "group_id": g,
                    "topics": None
                    if topics is None
                    else [{"topic_name": t, "partitions": ps} for t, ps in topics.items()],
                }
                for g, topics in groups.items()
            ]
        },
    )


def alter_offsets(s, label, group, offsets):
    """AlterShareGroupOffsets v0 for {topic: {partition: start offset}}."""
    return s.check(
        label,
        ALTER_OFFSETS,
        0,
        {
            "group_id": group,
            "topics": [
                {
                    "topic_name": t,
                    "partitions": [{"partition_index": p, "start_offset": o} for p, o in parts.items()],
                }
                for t, parts in offsets.items()
            ],
        },
    )


def delete_offsets(s, label, group, topics):
    return s.check(
        label, DELETE_OFFSETS, 0, {"group_id": group, "topics": [{"topic_name": t} for t in topics]}
    )


@case("share_groups/offsets")
def offsets(s):
    enable(s)
    topic, group = "sg-offsets-t", "sg-offsets"
    s.create_topic(topic, 2)
    classic_group(s, "sg-offsets-classic", topic)
    earliest(s, group)
    s.call(PRODUCE, 9, produce_req(topic, 0, batch(4)))
    s.call(PRODUCE, 9, produce_req(topic, 1, batch(2)))
    tid = topic_id(s, topic)
    for v in (0, 1):
        describe_offsets(
            s, f"v{v}/unknown-group", v, {"sg-offsets-none": {topic: [0]}, "sg-offsets-classic": None}
        )
    m = member("offsets")
    join_until_assigned(s, group, m, topic)
    # partition 0 read and accepted; partition 1 untouched (not yet initialized by a fetch)
    share_fetch(s, "fetch", 1, group, m, 0, [(tid, 0)], wait=5000)
    share_ack(s, "accept", 1, group, m, 1, {(tid, 0): [(0, 3, [ACCEPT])]})
    for v in (0, 1):
        describe_offsets(s, f"v{v}/active-all-topics", v, {group: None})
        describe_offsets(s, f"v{v}/active-partitions", v, {group: {topic: [1, 0]}})
    for label, answer in {
        "alter-active": alter_offsets(s, "alter-active", group, {topic: {0: 1}}),
        "delete-active": delete_offsets(s, "delete-active", group, [topic]),
    }.items():
        top_message(s, f"{label}/message", answer)
    share_fetch(s, "close", 1, group, m, -1)
    leave(s, "leave", group, m)
    for label, (g, offs) in {
        "alter-unknown-group": ("sg-offsets-none", {topic: {0: 1}}),
        "alter-classic-group": ("sg-offsets-classic", {topic: {0: 1}}),
        "alter-unknown-topic": (group, {"sg-offsets-missing": {0: 1}}),
        "alter-unknown-partition": (group, {topic: {9: 1}}),
        "alter": (group, {topic: {0: 1, 1: 0}}),
    }.items():
        answer = alter_offsets(s, label, g, offs)
        top_message(s, f"{label}/message", answer)
        for t in answer["responses"]:
            for p in t["partitions"]:
                s.observe(
                    f"{label}/{t['topic_name']}-{p['partition_index']}", [p["error_code"], p["error_message"]]
                )
    for v in (0, 1):
        describe_offsets(s, f"v{v}/after-alter", v, {group: None})
    for label, (g, topics) in {
        # (the alter above made sg-offsets-none a share group: Kafka creates one on AlterShareGroupOffsets)
        "delete-unknown-group": ("sg-offsets-none2", [topic]),
        "delete-classic-group": ("sg-offsets-classic", [topic]),
        "delete-unknown-topic": (group, ["sg-offsets-missing"]),
        "delete": (group, [topic]),
    }.items():
        answer = delete_offsets(s, label, g, topics)
        top_message(s, f"{label}/message", answer)
        for t in answer["responses"]:
            s.observe(f"{label}/{t['topic_name']}", [t["error_code"], t["error_message"]])
    for v in (0, 1):
        describe_offsets(s, f"v{v}/after-delete", v, {group: None})
