"""OffsetFetch (9), v1-9: committed offsets of a group (v8+: of several groups). topics=null
(v2+) means every partition the group has committed. With require_stable (v7+) a partition with
transactional offsets still pending answers UNSTABLE_OFFSET_COMMIT; committed_leader_epoch v5+."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        OffsetFetchRequest,
        OffsetFetchRequestTopic,
        OffsetFetchRequestTopics,
        OffsetFetchResponse,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 9


def _fetch(
    ctx: RequestContext,
    group_id: str,
    topics: Iterable[OffsetFetchRequestTopic | OffsetFetchRequestTopics] | None,
    require_stable: bool,
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
    error, rows = ctx.broker.groups.fetch_offsets(group_id, wanted, require_stable)
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
        for g in field(req, "groups", ()):
            error, topics = _fetch(ctx, g.group_id, g.topics, require_stable)
            out.append(dict(group_id=g.group_id, topics=topics, error_code=error))
        return ctx.response(throttle_time_ms=0, groups=out)
    error, topics = _fetch(ctx, field(req, "group_id", ""), field(req, "topics", None), require_stable)
    if ctx.api_version < 2 and error != ErrorCode.none:
        # v1 has no top-level error code: report it on every partition
        for t in topics:
            for p in t["partitions"]:
                p["error_code"] = error
    return ctx.response(throttle_time_ms=0, topics=topics, error_code=error)
