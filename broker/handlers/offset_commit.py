"""OffsetCommit (8), v2-10: group members commit with their generation; a group with no members
also accepts "simple" commits (generation -1, empty member id). committed_leader_epoch (v6+)
and metadata are stored and returned by OffsetFetch. v10 names topics by id: an id this broker
does not know answers UNKNOWN_TOPIC_ID (a classic group reads the member epoch field as its
generation, as Kafka 4.4 does). A KIP-848 consumer group's members commit with their member
epoch (v9+; coordinator/groups.py checks it, per partition for an older epoch)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.partition_answers import error_codes, per_partition
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from minibroker.broker.api_types import (
        OffsetCommitRequest,
        OffsetCommitRequestTopic,
        OffsetCommitResponse,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 8


async def handle(ctx: RequestContext, req: OffsetCommitRequest) -> OffsetCommitResponse:
    by_id = ctx.api_version >= 10
    topics: Sequence[OffsetCommitRequestTopic] = req.topics
    # v10: Kafka's getTopicName(id), the empty name for an id it does not know
    if by_id:
        ids = ctx.broker.logs.topic_names
        names = [ids.get(field(t, "topic_id", None), "") for t in topics]
    else:
        names = [field(t, "name", "") for t in topics]
    # authorization (Kafka: READ on the group, then READ on each topic)
    group_denied = not ctx.allowed(Op.READ, Res.GROUP, req.group_id)
    denied = {n for n in names if n and (group_denied or not ctx.allowed(Op.READ, Res.TOPIC, n))}
    if group_denied:
        denied.add("")
    offsets = [
        (
            name,
            p.partition_index,
            p.committed_offset,
            field(p, "committed_leader_epoch", -1),
            p.committed_metadata,
        )
        for name, t in zip(names, topics, strict=True)
        if name and name not in denied
        for p in t.partitions
    ]
    groups = ctx.broker.groups
    results = await ctx.broker.coordinators.run(
        groups,
        groups.commit_offsets(
            req.group_id,
            req.member_id,
            field(req, "group_instance_id", None),
            req.generation_id_or_member_epoch,
            offsets,
            ctx.api_version,
        ),
    )
    refused = ErrorCode.group_authorization_failed if group_denied else ErrorCode.topic_authorization_failed
    results.update(
        {
            (name, p.partition_index): refused if name in denied else ErrorCode.unknown_topic_id
            for name, t in zip(names, topics, strict=True)
            if not name or name in denied
            for p in t.partitions
        }
    )
    requested = ((n, [p.partition_index for p in t.partitions]) for n, t in zip(names, topics, strict=True))
    answer = per_partition(requested, error_codes(results))
    if by_id:
        for entry, t in zip(answer, topics, strict=True):
            entry["topic_id"] = field(t, "topic_id", None)
    return ctx.response(throttle_time_ms=0, topics=answer)
