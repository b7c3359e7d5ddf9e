"""OffsetFetch (9), v1-10: committed offsets of a group (v8+: of several groups). topics=null
(v2+) means every partition the group has committed. With require_stable (v7+) a partition with
transactional offsets still pending answers UNSTABLE_OFFSET_COMMIT; committed_leader_epoch v5+.
v10 names topics by id: an id this broker does not know answers UNKNOWN_TOPIC_ID, and the
all-topics answer leaves out topics that no longer exist (they have no id to name them by).
v9+ groups name the fetching member of a KIP-848 consumer group (member id and epoch; an admin
sends none): an unknown member or another epoch is the group's error, with no topics."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    import uuid

    from minibroker.broker.api_types import (
        OffsetFetchRequest,
        OffsetFetchRequestTopics,
        OffsetFetchResponse,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 9

#: A KIP-848 consumer group's refusal of a member's fetch (v9+): answered as Kafka's groupError
_MEMBER_ERRORS = frozenset(
    {ErrorCode.unknown_member_id, ErrorCode.stale_member_epoch, ErrorCode.illegal_generation}
)


class _Named:
    """A v10 topic entry given its name (empty: an id this broker does not know)."""

    __slots__ = ("name", "topic_id", "partition_indexes")

    def __init__(self, name: str, topic_id: uuid.UUID | None, partition_indexes: Sequence[int]) -> None:
        self.name = name
        self.topic_id = topic_id
        self.partition_indexes = partition_indexes


def _unknown_id(partition: int) -> dict:
    return dict(
        partition_index=partition,
        committed_offset=-1,
        committed_leader_epoch=-1,
        metadata="",
        error_code=ErrorCode.unknown_topic_id,
    )


def _fetch_by_id(
    ctx: RequestContext,
    group_id: str,
    topics: Iterable[OffsetFetchRequestTopics] | None,
    require_stable: bool,
    member: tuple[str | None, int] = (None, -1),
) -> tuple[int, list[dict]]:
    """v10: topics by id in and out."""
    names = ctx.broker.logs.topic_names
    if topics is None:
        error, out = _fetch(ctx, group_id, None, require_stable, member)
        ids = {info.name: info.topic_id for info in ctx.broker.logs.topics.values()}
        return error, [dict(t, topic_id=ids[t["name"]]) for t in out if t["name"] in ids]
    named = []
    for t in topics:
        topic_id = field(t, "topic_id", None)
        named.append(
            _Named(names.get(topic_id, "") if topic_id is not None else "", topic_id, t.partition_indexes)
        )
    error, out = _fetch(ctx, group_id, [n for n in named if n.name], require_stable, member)
    if error in _MEMBER_ERRORS:
        return error, []
    by_name = {entry["name"]: entry for entry in out}
    answer = []
    for n in named:
        if n.name:
            answer.append(dict(by_name[n.name], topic_id=n.topic_id))
        elif error:  # the group's error (authorization) on every partition, as for the others
            answer.append(
                dict(
                    topic_id=n.topic_id,
                    partitions=[dict(_unknown_id(p), error_code=error) for p in n.partition_indexes],
                )
            )
        else:
            answer.append(dict(topic_id=n.topic_id, partitions=[_unknown_id(p) for p in n.partition_indexes]))
    return error, answer


def _fetch(
    ctx: RequestContext,
    group_id: str,
    topics: Iterable[Any] | None,  # OffsetFetchRequestTopic(s) up to v9, _Named at v10
    require_stable: bool,
    member: tuple[str | None, int] = (None, -1),  # v9+: the member id and epoch, if any
) -> tuple[int, list[dict]]:
    # authorization (Kafka: DESCRIBE on the group; DESCRIBE on each topic, whose offsets are
    # otherwise TOPIC_AUTHORIZATION_FAILED, or left out when all topics were asked for)
    if not ctx.allowed(Op.DESCRIBE, Res.GROUP, group_id):
        denied = ErrorCode.group_authorization_failed
        return denied, [
            dict(
                name=t.name,
                partitions=[
                    dict(
                        partition_index=p,
                        committed_offset=-1,
                        committed_leader_epoch=-1,
                        metadata="",
                        error_code=denied,
                    )
                    for p in t.partition_indexes
                ],
            )
            for t in topics or ()
        ]
    if topics is None:
        wanted = None
    else:
        wanted = [(t.name, p) for t in topics for p in t.partition_indexes]
    error, rows = ctx.broker.groups.fetch_offsets(group_id, wanted, require_stable, *member)
    if error in _MEMBER_ERRORS:  # a KIP-848 member's fetch refused: the group's error, no topics
        return error, []
    by_topic: dict[str, list[dict]] = {}
    for topic, partition, offset, leader_epoch, metadata, part_error in rows:
        if not ctx.allowed(Op.DESCRIBE, Res.TOPIC, topic):
            if topics is None:
                continue
            offset, leader_epoch, metadata, part_error = -1, -1, "", ErrorCode.topic_authorization_failed
        by_topic.setdefault(topic, []).append(
            dict(
                partition_index=partition,
                committed_offset=offset,
                committed_leader_epoch=leader_epoch,
                metadata=metadata,
                error_code=part_error,
            )
        )
    if topics is not None:  # keep requested topics even when they have no partitions listed
        for t in topics:
            by_topic.setdefault(t.name, [])
    return error, [dict(name=name, partitions=parts) for name, parts in by_topic.items()]


async def handle(ctx: RequestContext, req: OffsetFetchRequest) -> OffsetFetchResponse:
    require_stable = bool(field(req, "require_stable", False))
    if ctx.api_version >= 8:
        out = []
        fetch = _fetch_by_id if ctx.api_version >= 10 else _fetch
        for g in field(req, "groups", ()):
            member = (field(g, "member_id", None), field(g, "member_epoch", -1))
            error, topics = fetch(ctx, g.group_id, g.topics, require_stable, member)
            out.append(dict(group_id=g.group_id, topics=topics, error_code=error))
        return ctx.response(throttle_time_ms=0, groups=out)
    error, topics = _fetch(ctx, field(req, "group_id", ""), field(req, "topics", None), require_stable)
    if ctx.api_version < 2 and error != ErrorCode.none:
        # v1 has no top-level error code: report it on every partition
        for t in topics:
            for p in t["partitions"]:
                p["error_code"] = error
    return ctx.response(throttle_time_ms=0, topics=topics, error_code=error)
