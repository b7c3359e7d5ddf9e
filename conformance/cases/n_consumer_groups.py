"""KIP-848 consumer groups: ConsumerGroupHeartbeat (68) joins, heartbeats, revocation before
assignment across two members, leave, static membership and every refusal.

Member ids are chosen by the case (v1 lets the client choose them, KIP-1082) so that the
server-side assignor's answer is the same on both brokers; a v0 join lets the broker choose.
Error messages are dropped by the comparison (conformance/normalise.py), so the ones clients
show are compared as observations. Both brokers assign at each change
(group.consumer.assignment.interval.ms=0, conformance/brokers.py)."""

from __future__ import annotations

import time
import uuid

from conformance.cases import case, versions

HEARTBEAT, METADATA, FIND_COORDINATOR = 68, 3, 10
#: bound on waiting for a regex to be resolved (Kafka resolves it asynchronously)
REGEX_WAIT_S = 20.0


def topic_id(s, name: str) -> uuid.UUID:
    md = s.call(METADATA, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False})
    return uuid.UUID(str(md["topics"][0]["topic_id"]))


def hb(
    s,
    label,
    v,
    group,
    member_id,
    epoch,
    *,
    names=None,
    regex=None,
    owned=None,
    rebalance_ms=-1,
    instance=None,
    rack=None,
    assignor=None,
):
    """One ConsumerGroupHeartbeat; compared under `label` unless it is empty."""
    fields = {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": epoch,
        "instance_id": instance,
        "rack_id": rack,
        "rebalance_timeout_ms": rebalance_ms,
        "subscribed_topic_names": names,
        "server_assignor": assignor,
        "topic_partitions": None
        if owned is None
        else [{"topic_id": t, "partitions": sorted(parts)} for t, parts in owned.items()],
    }
    if v >= 1:
        fields["subscribed_topic_regex"] = regex
    if label:
        return s.check(label, HEARTBEAT, v, fields)
    return s.call(HEARTBEAT, v, fields)


def join(s, label, v, group, member_id, topic, **kw):
    return hb(s, label, v, group, member_id, 0, names=[topic], owned={}, rebalance_ms=30000, **kw)


def owned_of(answer) -> dict:
    """What an answer assigned: topic id -> partitions."""
    if not answer.get("assignment"):
        return {}
    return {
        uuid.UUID(str(tp["topic_id"])): tp["partitions"] for tp in answer["assignment"]["topic_partitions"]
    }


def message(s, label, answer) -> None:
    """Compare an error's code and message (the message is what a client shows)."""
    s.observe(label, [answer["error_code"], answer["error_message"]])


@case("consumer_groups/heartbeat-flow")
def heartbeat_flow(s):
    for v in versions(HEARTBEAT):
        group, topic = f"cg-flow-{v}", f"cg-flow-t{v}"
        s.create_topic(topic, 3)
        s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        tid = topic_id(s, topic)
        a_id = "" if v == 0 else f"AAAAAAAAAAAAAAAAAAAA{v}a"
        a = join(s, f"v{v}/join-first", v, group, a_id, topic)
        a_id = a["member_id"]
        a = hb(s, f"v{v}/heartbeat-steady", v, group, a_id, a["member_epoch"])
        a = hb(
            s,
            f"v{v}/heartbeat-full",
            v,
            group,
            a_id,
            a["member_epoch"],
            names=[topic],
            owned={tid: [0, 1, 2]},
            rebalance_ms=30000,
        )
        b_id = "" if v == 0 else f"BBBBBBBBBBBBBBBBBBBB{v}b"
        b = join(s, f"v{v}/join-second", v, group, b_id, topic)
        b_id = b["member_id"]
        # A is told to give partitions up, keeps owning them until it acknowledges
        a2 = hb(s, f"v{v}/first-revokes", v, group, a_id, a["member_epoch"], owned={tid: [0, 1, 2]})
        kept = owned_of(a2).get(tid, [])
        b = hb(s, f"v{v}/second-waits", v, group, b_id, b["member_epoch"], owned={})
        a = hb(s, f"v{v}/first-acknowledges", v, group, a_id, a2["member_epoch"], owned={tid: kept})
        b = hb(s, f"v{v}/second-assigned", v, group, b_id, b["member_epoch"], owned={})
        # a bump behind: the previous epoch is accepted while owning nothing unassigned
        hb(s, f"v{v}/previous-epoch-ok", v, group, a_id, a2["member_epoch"], owned={tid: kept})
        hb(s, f"v{v}/fenced-greater", v, group, b_id, b["member_epoch"] + 10)
        hb(s, f"v{v}/fenced-smaller", v, group, b_id, 1, owned={tid: [0, 1, 2]})
        hb(s, f"v{v}/unknown-member", v, group, "ZZZZZZZZZZZZZZZZZZZZZZ", 5)
        hb(s, f"v{v}/leave-first", v, group, a_id, -1)
        hb(s, f"v{v}/leave-again", v, group, a_id, -1)
        b = hb(s, f"v{v}/second-takes-all", v, group, b_id, b["member_epoch"], owned=owned_of(b))
        hb(s, f"v{v}/leave-second", v, group, b_id, -1)
        hb(
            s,
            f"v{v}/rejoin-empty-group",
            v,
            group,
            b_id or "",
            0,
            names=[topic],
            owned={},
            rebalance_ms=30000,
        )


@case("consumer_groups/refusals")
def refusals(s):
    topic = "cg-refuse-t"
    s.create_topic(topic, 1)
    s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["cg-refuse"]})
    for v in versions(HEARTBEAT):
        m = f"MMMMMMMMMMMMMMMMMMMMM{v}"
        cases = {
            "blank-member": dict(
                member_id=" ", epoch=0 if v >= 1 else 3, names=[topic], owned={}, rebalance_ms=1
            ),
            "blank-group": dict(group="", epoch=0, names=[topic], owned={}, rebalance_ms=1),
            "blank-instance": dict(epoch=0, names=[topic], owned={}, rebalance_ms=1, instance=" "),
            "blank-rack": dict(epoch=0, names=[topic], owned={}, rebalance_ms=1, rack=""),
            "no-rebalance-timeout": dict(epoch=0, names=[topic], owned={}),
            "owned-null-on-join": dict(epoch=0, names=[topic], rebalance_ms=1),
            "owned-on-join": dict(epoch=0, names=[topic], owned={uuid.uuid4(): [0]}, rebalance_ms=1),
            "no-subscription": dict(epoch=0, owned={}, rebalance_ms=1),
            "static-leave-without-instance": dict(epoch=-2),
            "bad-epoch": dict(epoch=-3),
            "unsupported-assignor": dict(epoch=0, names=[topic], owned={}, rebalance_ms=1, assignor="sticky"),
            "group-not-found": dict(group="cg-refuse-none", epoch=4),
            "leave-group-not-found": dict(group="cg-refuse-none", epoch=-1),
        }
        for label, kw in cases.items():
            kw = dict(kw)
            group = kw.pop("group", "cg-refuse")
            member = kw.pop("member_id", m)
            epoch = kw.pop("epoch")
            answer = hb(s, f"v{v}/{label}", v, group, member, epoch, **kw)
            message(s, f"v{v}/{label}/message", answer)
    # v1: a regex RE2J refuses
    answer = hb(
        s,
        "v1/invalid-regex",
        1,
        "cg-refuse",
        "RRRRRRRRRRRRRRRRRRRRRR",
        0,
        regex="(",
        owned={},
        rebalance_ms=1,
    )
    message(s, "v1/invalid-regex/message", answer)


@case("consumer_groups/static-members")
def static_members(s):
    v, group, topic = 1, "cg-static", "cg-static-t"
    s.create_topic(topic, 2)
    s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
    tid = topic_id(s, topic)
    a = join(s, "join", v, group, "SSSSSSSSSSSSSSSSSSSSS1", topic, instance="inst-a")
    taken = join(s, "instance-owned", v, group, "SSSSSSSSSSSSSSSSSSSSS2", topic, instance="inst-a")
    message(s, "instance-owned/message", taken)
    fenced = hb(
        s, "instance-fenced", v, group, "SSSSSSSSSSSSSSSSSSSSS2", a["member_epoch"], instance="inst-a"
    )
    message(s, "instance-fenced/message", fenced)
    unknown = hb(s, "instance-unknown", v, group, "SSSSSSSSSSSSSSSSSSSSS2", 3, instance="inst-z")
    message(s, "instance-unknown/message", unknown)
    hb(s, "temporary-leave", v, group, "SSSSSSSSSSSSSSSSSSSSS1", -2, instance="inst-a")
    # back under a new member id: it replaces the old one and keeps its partitions
    back = join(s, "rejoin", v, group, "SSSSSSSSSSSSSSSSSSSSS3", topic, instance="inst-a")
    hb(s, "old-id-gone", v, group, "SSSSSSSSSSSSSSSSSSSSS1", a["member_epoch"], instance="inst-a")
    hb(
        s,
        "steady",
        v,
        group,
        "SSSSSSSSSSSSSSSSSSSSS3",
        back["member_epoch"],
        instance="inst-a",
        owned={tid: [0, 1]},
    )
    hb(s, "leave", v, group, "SSSSSSSSSSSSSSSSSSSSS3", -1, instance="inst-a")


@case("consumer_groups/regex")
def regex(s):
    v, group = 1, "cg-regex"
    s.create_topic("cg-regex-a", 2)
    s.create_topic("cg-regex-other", 1)
    s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
    member = "XXXXXXXXXXXXXXXXXXXXXX"
    a = hb(s, "join", v, group, member, 0, regex="cg-regex-a.*", owned={}, rebalance_ms=30000)
    deadline = time.monotonic() + REGEX_WAIT_S
    epoch, owned = a["member_epoch"], owned_of(a)
    while not owned and time.monotonic() < deadline:  # resolved asynchronously on both brokers
        time.sleep(0.1)
        answer = hb(s, "", v, group, member, epoch, owned={})
        epoch, owned = answer["member_epoch"], owned_of(answer) or owned
    s.observe("resolved", sorted(p for parts in owned.values() for p in parts))
    hb(s, "full", v, group, member, epoch, regex="cg-regex-a.*", owned=owned, rebalance_ms=30000)
    hb(s, "leave", v, group, member, -1)
