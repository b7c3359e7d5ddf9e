"""OffsetCommit (8), v2-9: group members commit with their generation; a group with no members
also accepts "simple" commits (generation -1, empty member id). committed_leader_epoch (v6+)
and metadata are stored and returned by OffsetFetch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.partition_answers import error_codes, per_partition
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import OffsetCommitRequest, OffsetCommitResponse
    from minibroker.broker.context import RequestContext

API_KEY = 8


async def handle(ctx: RequestContext, req: OffsetCommitRequest) -> OffsetCommitResponse:
    # authorization (Kafka: READ on the group, then READ on each topic)
    group_denied = not ctx.allowed(Op.READ, Res.GROUP, req.group_id)
    denied = {t.name for t in req.topics if group_denied or not ctx.allowed(Op.READ, Res.TOPIC, t.name)}
    offsets = [
        (
            t.name,
            p.partition_index,
            p.committed_offset,
            field(p, "committed_leader_epoch", -1),
            p.committed_metadata,
        )
        for t in req.topics
        if t.name not in denied
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
        {(t.name, p.partition_index): refused for t in req.topics if t.name in denied for p in t.partitions}
    )
    requested = ((t.name, [p.partition_index for p in t.partitions]) for t in req.topics)
    return ctx.response(throttle_time_ms=0, topics=per_partition(requested, error_codes(results)))
