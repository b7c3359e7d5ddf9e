"""Classic consumer groups: FindCoordinator, Join/Sync/Heartbeat/Leave, offsets, inspection."""

from conformance.cases import case, versions

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC = 8, 9, 10, 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE = 15, 16, 42, 47


def find(s, label, v, key, key_type=0):
    return s.check(label, FIND_COORDINATOR, v, {"key": key, "key_type": key_type, "coordinator_keys": [key]})


def join(
    s,
    label,
    v,
    group,
    member_id="",
    protocol_type="consumer",
    session_ms=10000,
    rebalance_ms=10000,
    instance=None,
    conn="main",
    record=True,
):
    fields = {
        "group_id": group,
        "session_timeout_ms": session_ms,
        "rebalance_timeout_ms": rebalance_ms,
        "member_id": member_id,
        "group_instance_id": instance,
        "protocol_type": protocol_type,
        "protocols": [{"name": "range", "metadata": b"\x00\x01"}],
        "reason": None,
    }
    if record:
        return s.check(label, JOIN, v, fields, conn=conn)
    return s.call(JOIN, v, fields, conn=conn)


def joined_member(s, group, v=9):
    """Join a one-member group to the end (MEMBER_ID_REQUIRED retry included); -> (member, generation)."""
    s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
    first = join(s, "", v, group, record=False)
    member = first["member_id"]
    answer = join(s, "", v, group, member_id=member, record=False) if first["error_code"] == 79 else first
    return answer["member_id"], answer["generation_id"]


@case("find_coordinator")
def find_coordinator(s):
    for v in versions(FIND_COORDINATOR):
        find(s, f"v{v}/group", v, f"fc-group-{v}")
        find(s, f"v{v}/transaction", v, f"fc-txn-{v}", key_type=1)
        find(s, f"v{v}/bad-type", v, "x", key_type=5)
    find(s, "v6/share", 6, "g:t:0", key_type=2)
    s.check("v4/empty-keys", FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": []})
    s.check("v4/two-keys", FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["a-group", "b-group"]})


@case("groups/join-sync-heartbeat-leave")
def join_flow(s):
    s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["jg"]})
    for v in versions(JOIN):
        g = f"jg-{v}"
        s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [g]})
        first = join(s, f"v{v}/first", v, g)
        member = first["member_id"]
        if first["error_code"] == 79:
            first = join(s, f"v{v}/with-id", v, g, member_id=member)
        gen = first["generation_id"]
        sv = min(v, 5) if v >= 0 else 0
        s.check(
            f"v{v}/sync-v{sv}",
            SYNC,
            sv,
            {
                "group_id": g,
                "generation_id": gen,
                "member_id": member,
                "protocol_type": "consumer",
                "protocol_name": "range",
                "assignments": [{"member_id": member, "assignment": b"\x00\x01\x02"}],
            },
        )
        hv = min(v, 4)
        s.check(
            f"v{v}/heartbeat-v{hv}", HEARTBEAT, hv, {"group_id": g, "generation_id": gen, "member_id": member}
        )
        s.check(
            f"v{v}/heartbeat-bad-generation",
            HEARTBEAT,
            hv,
            {"group_id": g, "generation_id": gen + 5, "member_id": member},
        )
        s.check(
            f"v{v}/heartbeat-unknown-member",
            HEARTBEAT,
            hv,
            {"group_id": g, "generation_id": gen, "member_id": "nobody"},
        )
        lv = min(v, 5)
        s.check(
            f"v{v}/leave-v{lv}",
            LEAVE,
            lv,
            {"group_id": g, "member_id": member, "members": [{"member_id": member, "reason": "bye"}]},
        )
        s.check(
            f"v{v}/leave-again",
            LEAVE,
            lv,
            {"group_id": g, "member_id": member, "members": [{"member_id": member}]},
        )


@case("groups/join-errors")
def join_errors(s):
    s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["je"]})
    join(s, "session-too-small", 9, "je", session_ms=10)
    join(s, "session-too-large", 9, "je", session_ms=10**8)
    join(s, "unknown-member", 9, "je", member_id="not-a-member")
    join(s, "empty-group-id", 9, "")
    join(s, "empty-protocol-type", 9, "je2", protocol_type="")
    s.check(
        "sync-unknown-group",
        SYNC,
        5,
        {
            "group_id": "je-none",
            "generation_id": 1,
            "member_id": "m",
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        },
    )
    s.check(
        "heartbeat-unknown-group", HEARTBEAT, 4, {"group_id": "je-none", "generation_id": 1, "member_id": "m"}
    )
    s.check("leave-unknown-group", LEAVE, 5, {"group_id": "je-none", "members": [{"member_id": "m"}]})


@case("groups/static-member")
def static_member(s):
    s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["sm"]})
    first = join(s, "first", 9, "sm", instance="inst-1")
    join(s, "rejoin-unknown-id", 9, "sm", member_id="other", instance="inst-1")
    s.check(
        "heartbeat-fenced",
        HEARTBEAT,
        4,
        {
            "group_id": "sm",
            "generation_id": first["generation_id"],
            "member_id": "other",
            "group_instance_id": "inst-1",
        },
    )
    s.check(
        "leave-by-instance",
        LEAVE,
        5,
        {"group_id": "sm", "members": [{"member_id": "", "group_instance_id": "inst-1"}]},
    )


def commit(s, label, v, group, topic, offset, generation=-1, member="", parts=(0,)):
    return s.check(
        label,
        OFFSET_COMMIT,
        v,
        {
            "group_id": group,
            "generation_id_or_member_epoch": generation,
            "member_id": member,
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": p,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "meta",
                        }
                        for p in parts
                    ],
                }
            ],
        },
    )


def fetch_offsets(s, label, v, group, topics, require_stable=False):
    tlist = None if topics is None else [{"name": t, "partition_indexes": ps} for t, ps in topics]
    return s.check(
        label,
        OFFSET_FETCH,
        v,
        {
            "group_id": group,
            "topics": tlist,
            "require_stable": require_stable,
            "groups": [{"group_id": group, "topics": tlist, "member_id": None, "member_epoch": -1}],
        },
    )


@case("offsets/commit-fetch")
def offsets(s):
    s.create_topic("oc-topic", 2)
    for v in versions(OFFSET_COMMIT):
        g = f"oc-{v}"
        s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [g]})
        commit(s, f"commit-v{v}/simple", v, g, "oc-topic", 5)
        commit(s, f"commit-v{v}/unknown-partition", v, g, "oc-topic", 5, parts=(7,))
        commit(s, f"commit-v{v}/unknown-topic", v, g, "oc-missing", 5)
        commit(s, f"commit-v{v}/with-generation", v, g, "oc-topic", 6, generation=3, member="m1")
        commit(
            s,
            f"commit-v{v}/unknown-group-with-generation",
            v,
            f"oc-unknown-{v}",
            "oc-topic",
            6,
            generation=3,
            member="m1",
        )
    for v in versions(OFFSET_FETCH):
        fetch_offsets(s, f"fetch-v{v}/known", v, "oc-9", [("oc-topic", [0, 1])])
        fetch_offsets(s, f"fetch-v{v}/unknown-group", v, "oc-none", [("oc-topic", [0])])
        fetch_offsets(s, f"fetch-v{v}/unknown-topic", v, "oc-9", [("oc-missing", [0])])
        if v >= 2:
            fetch_offsets(s, f"fetch-v{v}/all", v, "oc-9", None)
        if v >= 7:
            fetch_offsets(
                s, f"fetch-v{v}/require-stable", v, "oc-9", [("oc-topic", [0])], require_stable=True
            )
    s.check(
        "fetch-v8/two-groups",
        OFFSET_FETCH,
        8,
        {
            "require_stable": False,
            "groups": [
                {"group_id": "oc-9", "topics": None},
                {"group_id": "oc-8", "topics": [{"name": "oc-topic", "partition_indexes": [0]}]},
            ],
        },
    )


@case("offsets/commit-to-live-group")
def offsets_live_group(s):
    s.create_topic("ocl-topic", 1)
    member, gen = joined_member(s, "ocl")
    for v in (2, 5, 7, 8, 9):
        commit(s, f"v{v}/right-generation", v, "ocl", "ocl-topic", 1, generation=gen, member=member)
        commit(s, f"v{v}/wrong-generation", v, "ocl", "ocl-topic", 1, generation=gen + 1, member=member)
        commit(s, f"v{v}/unknown-member", v, "ocl", "ocl-topic", 1, generation=gen, member="nobody")
        commit(s, f"v{v}/no-member", v, "ocl", "ocl-topic", 1)


@case("groups/inspect")
def inspect(s):
    s.create_topic("gi-topic", 1)
    member, gen = joined_member(s, "gi-live")
    s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["gi-empty"]})
    commit(s, "setup-commit", 9, "gi-empty", "gi-topic", 3)
    for v in versions(DESCRIBE_GROUPS):
        s.check(
            f"describe-v{v}",
            DESCRIBE_GROUPS,
            v,
            {"groups": ["gi-live", "gi-empty", "gi-none"], "include_authorized_operations": True},
        )
    for v in versions(LIST_GROUPS):
        s.check(f"list-v{v}", LIST_GROUPS, v, {"states_filter": [], "types_filter": []})
        if v >= 4:
            s.check(f"list-v{v}/stable", LIST_GROUPS, v, {"states_filter": ["Stable"], "types_filter": []})
        if v >= 5:
            s.check(f"list-v{v}/classic", LIST_GROUPS, v, {"states_filter": [], "types_filter": ["classic"]})
            s.check(
                f"list-v{v}/consumer-type",
                LIST_GROUPS,
                v,
                {"states_filter": [], "types_filter": ["consumer"]},
            )
    for v in versions(OFFSET_DELETE):
        s.check(
            f"offset-delete-v{v}/empty-group",
            OFFSET_DELETE,
            v,
            {
                "group_id": "gi-empty",
                "topics": [{"name": "gi-topic", "partitions": [{"partition_index": 0}]}],
            },
        )
        s.check(
            f"offset-delete-v{v}/unknown-group",
            OFFSET_DELETE,
            v,
            {"group_id": "gi-none", "topics": [{"name": "gi-topic", "partitions": [{"partition_index": 0}]}]},
        )
    for v in versions(DELETE_GROUPS):
        s.check(f"delete-v{v}", DELETE_GROUPS, v, {"groups_names": ["gi-live", "gi-none", "gi-empty"]})
        commit(s, f"delete-v{v}/recommit", 9, "gi-empty", "gi-topic", 3)


@case("groups/rebalance-two-members")
def rebalance(s):
    """A second member joins a stable group: the first learns of the rebalance from its heartbeat,
    both rejoin, the leader assigns, both sync."""
    s.create_topic("rb-topic", 2)
    first, gen = joined_member(s, "rb")
    s.check(
        "sync-first",
        SYNC,
        5,
        {
            "group_id": "rb",
            "generation_id": gen,
            "member_id": first,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": first, "assignment": b"all"}],
        },
    )
    probe = s.call(
        JOIN,
        9,
        {
            "group_id": "rb",
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 10000,
            "member_id": "",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x01"}],
            "reason": None,
        },
        conn="second",
    )
    second = probe["member_id"]
    # the second member's join (with its id) blocks until the first rejoins: send it on its own connection
    import threading

    answers = {}

    def second_join():
        answers["second"] = s.conn("second").call_raw(
            JOIN,
            9,
            {
                "group_id": "rb",
                "session_timeout_ms": 10000,
                "rebalance_timeout_ms": 10000,
                "member_id": second,
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b"\x00\x02"}],
                "reason": None,
            },
            timeout=30,
        )

    t = threading.Thread(target=second_join)
    t.start()
    s.wait_until(
        lambda: (
            s.call(HEARTBEAT, 4, {"group_id": "rb", "generation_id": gen, "member_id": first})["error_code"]
            == 27
        ),
        "rebalance seen by the first member",
        20,
    )
    s.check(
        "heartbeat-during-rebalance",
        HEARTBEAT,
        4,
        {"group_id": "rb", "generation_id": gen, "member_id": first},
    )
    rejoin = s.check(
        "first-rejoins",
        JOIN,
        9,
        {
            "group_id": "rb",
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 10000,
            "member_id": first,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x01"}],
            "reason": None,
        },
    )
    t.join(35)
    from conformance.wire import decode_kio

    second_answer = (
        decode_kio(JOIN, 9, answers["second"]) if isinstance(answers.get("second"), bytes) else None
    )
    s.observe(
        "second-join",
        None
        if second_answer is None
        else {k: second_answer[k] for k in ("error_code", "generation_id", "protocol_name")}
        | {
            "is_leader": second_answer["leader"] == second_answer["member_id"],
            "members": len(second_answer["members"]),
        },
    )
    new_gen = rejoin["generation_id"]
    s.check(
        "describe-completing", DESCRIBE_GROUPS, 5, {"groups": ["rb"], "include_authorized_operations": False}
    )
    leader_first = rejoin["leader"] == first
    leader, follower = (first, second) if leader_first else (second, first)
    s.check(
        "leader-sync",
        SYNC,
        5,
        {
            "group_id": "rb",
            "generation_id": new_gen,
            "member_id": leader,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [
                {"member_id": first, "assignment": b"p0"},
                {"member_id": second, "assignment": b"p1"},
            ],
        },
    )
    s.check(
        "follower-sync",
        SYNC,
        5,
        {
            "group_id": "rb",
            "generation_id": new_gen,
            "member_id": follower,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        },
    )
    s.check("describe-stable", DESCRIBE_GROUPS, 5, {"groups": ["rb"], "include_authorized_operations": False})
    s.check(
        "old-generation-commit",
        OFFSET_COMMIT,
        9,
        {
            "group_id": "rb",
            "generation_id_or_member_epoch": gen,
            "member_id": first,
            "topics": [
                {
                    "name": "rb-topic",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 1,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
    )
