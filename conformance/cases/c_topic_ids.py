"""Requests by topic id (KIP-516: Fetch 13-18, Produce 13) and fetch sessions (KIP-227).

Each broker has its own topic ids, so a case asks Metadata for them first. Session ids are each
broker's own too: the comparison drops them, so a case records whether one was given."""

import uuid

from conformance.cases import case
from conformance.cases.c_data import FETCH, PRODUCE, batch, produce_req, topic_id

NO_SUCH_ID = uuid.UUID("6b0a5c2e-3f4d-4e1a-9b7c-0d1e2f3a4b5c")
INT_MAX = 2**31 - 1


def fetch_by_id(parts, *, session_id=0, epoch=-1, forgotten=(), max_wait=0, min_bytes=0, isolation=0):
    topics = {}
    for tid, p, off in parts:
        topics.setdefault(tid, []).append(
            {"partition": p, "fetch_offset": off, "partition_max_bytes": 1048576, "current_leader_epoch": -1}
        )
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait,
        "min_bytes": min_bytes,
        "max_bytes": 52428800,
        "isolation_level": isolation,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()],
        "forgotten_topics_data": [{"topic_id": t, "partitions": list(ps)} for t, ps in forgotten],
        "rack_id": "",
    }


def produce_by_id(tid, partition, records, acks=-1):
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 30000,
        "topic_data": [{"topic_id": tid, "partition_data": [{"index": partition, "records": records}]}],
    }


def _session(s, label, answer):
    """Record whether the answer opened (or kept) a session: the id itself is the broker's own."""
    if isinstance(answer, dict):
        s.observe(f"{label}/has-session", answer.get("session_id", 0) != 0)
    return answer.get("session_id", 0) if isinstance(answer, dict) else 0


@case("topic_ids/fetch")
def fetch_by_topic_id(s):
    s.create_topic("ti-fetch", 2)
    tid = topic_id(s, "ti-fetch")
    s.call(PRODUCE, 9, produce_req("ti-fetch", 0, batch(3)))
    for v in range(13, 19):
        s.check(f"v{v}/both", FETCH, v, fetch_by_id([(tid, 0, 0), (tid, 1, 0)]))
        s.check(f"v{v}/mid", FETCH, v, fetch_by_id([(tid, 0, 2)]))
        s.check(f"v{v}/unknown-id", FETCH, v, fetch_by_id([(NO_SUCH_ID, 0, 0)]))
        s.check(f"v{v}/unknown-id-and-known", FETCH, v, fetch_by_id([(NO_SUCH_ID, 0, 0), (tid, 0, 0)]))
        s.check(f"v{v}/unknown-partition", FETCH, v, fetch_by_id([(tid, 7, 0)]))
        s.check(f"v{v}/read-committed", FETCH, v, fetch_by_id([(tid, 0, 0)], isolation=1))
        s.check(f"v{v}/bad-isolation", FETCH, v, fetch_by_id([(tid, 0, 0)], isolation=3), conn=f"iso{v}")
        s.check(
            f"v{v}/fenced-epoch",
            FETCH,
            v,
            {
                **fetch_by_id([(tid, 0, 0)]),
                "topics": [
                    {
                        "topic_id": tid,
                        "partitions": [
                            {
                                "partition": 0,
                                "fetch_offset": 0,
                                "partition_max_bytes": 1000,
                                "current_leader_epoch": -5,
                            }
                        ],
                    }
                ],
            },
        )
    s.check(
        "v18/replica-state",
        FETCH,
        18,
        {**fetch_by_id([(tid, 0, 0)]), "replica_state": {"replica_id": -1, "replica_epoch": -1}},
    )
    s.check(
        "v18/follower",
        FETCH,
        18,
        {**fetch_by_id([(tid, 0, 0)]), "replica_state": {"replica_id": 5, "replica_epoch": 3}},
        conn="follower",
    )


@case("topic_ids/produce")
def produce_by_topic_id(s):
    s.create_topic("ti-produce", 1)
    tid = topic_id(s, "ti-produce")
    s.check("v13/ok", PRODUCE, 13, produce_by_id(tid, 0, batch(2)))
    s.check("v13/unknown-partition", PRODUCE, 13, produce_by_id(tid, 4, batch()))
    s.check("v13/unknown-id", PRODUCE, 13, produce_by_id(NO_SUCH_ID, 0, batch()))
    s.check("v13/zero-id", PRODUCE, 13, produce_by_id(None, 0, batch()))
    s.check("v13/read-back", FETCH, 18, fetch_by_id([(tid, 0, 0)]))


@case("topic_ids/recreated")
def recreated_topic(s):
    """A topic deleted and created again under its name has a new id: the old id is unknown to
    a full fetch and a produce, and inconsistent inside a session that still holds it."""
    s.create_topic("ti-again", 1)
    old = topic_id(s, "ti-again")
    s.call(PRODUCE, 9, produce_req("ti-again", 0, batch(4)))
    opened = s.check("session-open", FETCH, 18, fetch_by_id([(old, 0, 0)], epoch=0))
    session = _session(s, "session-open", opened)
    s.call(20, 6, {"topics": [{"name": "ti-again"}], "timeout_ms": 30000})
    s.wait_until(lambda: topic_gone(s, "ti-again"), "topic deleted", 30)
    s.create_topic("ti-again", 1)
    s.call(PRODUCE, 9, produce_req("ti-again", 0, batch(2, value=b"new")))
    s.check("session-after", FETCH, 18, fetch_by_id([], session_id=session, epoch=1))
    s.check("full-old-id", FETCH, 18, fetch_by_id([(old, 0, 4)]))
    s.check("produce-old-id", PRODUCE, 13, produce_by_id(old, 0, batch()))
    s.check("full-new-id", FETCH, 18, fetch_by_id([(topic_id(s, "ti-again"), 0, 0)]))


def topic_gone(s, name):
    md = s.call(3, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False})
    return md["topics"][0]["error_code"] == 3


@case("fetch_sessions/lifecycle")
def session_lifecycle(s):
    s.create_topic("fs-life", 2)
    tid = topic_id(s, "fs-life")
    s.call(PRODUCE, 9, produce_req("fs-life", 0, batch(2)))
    for v in (7, 12, 18):
        ref = tid if v >= 13 else "fs-life"
        key = "topic_id" if v >= 13 else "topic"
        req = fetch_by_id([(ref, 0, 0), (ref, 1, 0)], epoch=0)
        req["topics"] = [{key: ref, "topic": ref, "partitions": t["partitions"]} for t in req["topics"]]
        first = s.check(f"v{v}/full", FETCH, v, req)
        sid = _session(s, f"v{v}/full", first)
        empty = fetch_by_id([], session_id=sid, epoch=1)
        s.check(f"v{v}/incremental-nothing-new", FETCH, v, empty)
        s.call(PRODUCE, 9, produce_req("fs-life", 1, batch(1, value=b"more")))
        moved = fetch_by_id([], session_id=sid, epoch=2)
        s.check(f"v{v}/incremental-new-records", FETCH, v, moved)
        s.check(f"v{v}/incremental-again-same-epoch", FETCH, v, moved)
        s.check(f"v{v}/wrong-epoch", FETCH, v, fetch_by_id([], session_id=sid, epoch=9))
        forget = fetch_by_id([], session_id=sid, epoch=3, forgotten=[(ref, [0])])
        forget["forgotten_topics_data"] = [{key: ref, "topic": ref, "partitions": [0]}]
        s.check(f"v{v}/forget-one", FETCH, v, forget)
        s.call(PRODUCE, 9, produce_req("fs-life", 0, batch(1, value=b"p0")))
        s.call(PRODUCE, 9, produce_req("fs-life", 1, batch(1, value=b"p1")))
        s.check(f"v{v}/after-forget", FETCH, v, fetch_by_id([], session_id=sid, epoch=4))
        forget_all = fetch_by_id([], session_id=sid, epoch=5)
        forget_all["forgotten_topics_data"] = [{key: ref, "topic": ref, "partitions": [1]}]
        last = s.check(f"v{v}/forget-last", FETCH, v, forget_all)
        _session(s, f"v{v}/forget-last", last)
        s.check(f"v{v}/closed", FETCH, v, fetch_by_id([], session_id=sid, epoch=6))


@case("fetch_sessions/errors")
def session_errors(s):
    s.create_topic("fs-err", 1)
    tid = topic_id(s, "fs-err")
    s.check("unknown-session", FETCH, 18, fetch_by_id([], session_id=12345, epoch=1))
    s.check("unknown-session-v12", FETCH, 12, fetch_by_id([], session_id=12345, epoch=1))
    s.check("session-id-int-max", FETCH, 18, fetch_by_id([(tid, 0, 0)], session_id=INT_MAX, epoch=1))
    s.check("session-id-int-max-full", FETCH, 18, fetch_by_id([(tid, 0, 0)], session_id=INT_MAX, epoch=0))
    s.check("session-id-negative", FETCH, 18, fetch_by_id([], session_id=-7, epoch=1))
    opened = s.check("open-v18", FETCH, 18, fetch_by_id([(tid, 0, 0)], epoch=0))
    sid = _session(s, "open-v18", opened)
    by_name = fetch_by_id([], session_id=sid, epoch=1)
    s.check("v12-on-v18-session", FETCH, 12, by_name)
    s.check("still-open", FETCH, 18, fetch_by_id([], session_id=sid, epoch=1))
    closed = s.check("close-final-epoch", FETCH, 18, fetch_by_id([(tid, 0, 0)], session_id=sid, epoch=-1))
    _session(s, "close-final-epoch", closed)
    s.check("after-close", FETCH, 18, fetch_by_id([], session_id=sid, epoch=2))
    reopened = s.check("reopen", FETCH, 18, fetch_by_id([(tid, 0, 0)], epoch=0))
    sid = _session(s, "reopen", reopened)
    replaced = s.check("full-naming-session", FETCH, 18, fetch_by_id([(tid, 0, 0)], session_id=sid, epoch=0))
    _session(s, "full-naming-session", replaced)
    s.check("replaced-session-gone", FETCH, 18, fetch_by_id([], session_id=sid, epoch=1))
    unknown = s.check("open-with-unknown-id", FETCH, 18, fetch_by_id([(NO_SUCH_ID, 0, 0)], epoch=0))
    sid = _session(s, "open-with-unknown-id", unknown)
    s.check("unknown-id-incremental", FETCH, 18, fetch_by_id([], session_id=sid, epoch=1))


OFFSET_COMMIT, OFFSET_FETCH = 8, 9


def commit_by_id(group, tid, offset, generation=-1, member="", parts=(0,)):
    return {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member,
        "topics": [
            {
                "topic_id": tid,
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
    }


def fetch_offsets_by_id(group, topics, member=None, epoch=-1):
    return {
        "require_stable": False,
        "groups": [
            {
                "group_id": group,
                "member_id": member,
                "member_epoch": epoch,
                "topics": None
                if topics is None
                else [{"topic_id": t, "partition_indexes": ps} for t, ps in topics],
            }
        ],
    }


@case("topic_ids/offsets")
def offsets_by_topic_id(s):
    from conformance.cases.d_groups import FIND_COORDINATOR, joined_member  # noqa: PLC0415

    s.create_topic("ti-offsets", 2)
    tid = topic_id(s, "ti-offsets")
    s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["ti-oc"]})
    s.check("commit-v10/simple", OFFSET_COMMIT, 10, commit_by_id("ti-oc", tid, 5, parts=(0, 1)))
    s.check("commit-v10/unknown-partition", OFFSET_COMMIT, 10, commit_by_id("ti-oc", tid, 5, parts=(7,)))
    s.check("commit-v10/unknown-id", OFFSET_COMMIT, 10, commit_by_id("ti-oc", NO_SUCH_ID, 5))
    s.check("commit-v10/zero-id", OFFSET_COMMIT, 10, commit_by_id("ti-oc", None, 5))
    s.check(
        "commit-v10/unknown-group-with-epoch",
        OFFSET_COMMIT,
        10,
        commit_by_id("ti-oc-unknown", tid, 6, generation=3, member="m1"),
    )
    s.check("fetch-v10/known", OFFSET_FETCH, 10, fetch_offsets_by_id("ti-oc", [(tid, [0, 1])]))
    s.check("fetch-v10/unknown-id", OFFSET_FETCH, 10, fetch_offsets_by_id("ti-oc", [(NO_SUCH_ID, [0])]))
    s.check(
        "fetch-v10/known-and-unknown",
        OFFSET_FETCH,
        10,
        fetch_offsets_by_id("ti-oc", [(tid, [1]), (NO_SUCH_ID, [0, 2])]),
    )
    s.check("fetch-v10/all", OFFSET_FETCH, 10, fetch_offsets_by_id("ti-oc", None))
    s.check("fetch-v10/unknown-group", OFFSET_FETCH, 10, fetch_offsets_by_id("ti-none", [(tid, [0])]))
    member, gen = joined_member(s, "ti-live")
    s.check(
        "commit-v10/classic-member",
        OFFSET_COMMIT,
        10,
        commit_by_id("ti-live", tid, 2, generation=gen, member=member),
    )
    s.check(
        "commit-v10/classic-stale-generation",
        OFFSET_COMMIT,
        10,
        commit_by_id("ti-live", tid, 2, generation=gen + 5, member=member),
    )
    s.check(
        "fetch-v10/classic-member",
        OFFSET_FETCH,
        10,
        fetch_offsets_by_id("ti-live", [(tid, [0])], member=member, epoch=gen),
    )
    s.check(
        "fetch-v10/classic-member-wrong-epoch",
        OFFSET_FETCH,
        10,
        fetch_offsets_by_id("ti-live", [(tid, [0])], member=member, epoch=gen + 5),
    )
    # the committed topic deleted: gone from the all-topics answer by id
    s.create_topic("ti-offsets-gone", 1)
    gone = topic_id(s, "ti-offsets-gone")
    s.call(OFFSET_COMMIT, 10, commit_by_id("ti-oc", gone, 3))
    s.call(20, 6, {"topics": [{"name": "ti-offsets-gone"}], "timeout_ms": 30000})
    s.wait_until(lambda: topic_gone(s, "ti-offsets-gone"), "topic deleted", 30)
    s.check("fetch-v10/all-after-delete", OFFSET_FETCH, 10, fetch_offsets_by_id("ti-oc", None))


@case("topic_ids/list-offsets")
def list_offsets_v11(s):
    from conformance.cases.c_data import list_offsets_req  # noqa: PLC0415

    s.create_topic("ti-lo", 1)
    s.call(PRODUCE, 9, produce_req("ti-lo", 0, batch(3)))
    for ts in (-6, -5, -1, -2):
        s.check(f"v11/ts={ts}", 2, 11, list_offsets_req("ti-lo", [(0, ts)]))
        s.check(f"v10/ts={ts}", 2, 10, list_offsets_req("ti-lo", [(0, ts)]))
