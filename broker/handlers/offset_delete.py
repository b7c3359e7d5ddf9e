"""OffsetDelete (47): delete committed offsets of partitions the group is not consuming
(GROUP_SUBSCRIBED_TO_TOPIC for topics a live consumer group subscribes to)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.partition_answers import error_codes, per_partition
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import OffsetDeleteRequest, OffsetDeleteResponse
    from minibroker.broker.context import RequestContext

API_KEY = 47


async def handle(ctx: RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse:
    # authorization (Kafka: DELETE on the group, then READ on each topic)
    if not ctx.allowed(Op.DELETE, Res.GROUP, req.group_id):
        return ctx.response(error_code=ErrorCode.group_authorization_failed, throttle_time_ms=0, topics=[])
    denied = {t.name for t in req.topics if not ctx.allowed(Op.READ, Res.TOPIC, t.name)}
    wanted = [(t.name, p.partition_index) for t in req.topics if t.name not in denied for p in t.partitions]
    groups = ctx.broker.groups
    error, results = await ctx.broker.coordinators.run(groups, groups.delete_offsets(req.group_id, wanted))
    results.update(
        {
            (t.name, p.partition_index): ErrorCode.topic_authorization_failed
            for t in req.topics
            if t.name in denied
            for p in t.partitions
        }
    )
    topics = []
    if error == ErrorCode.none:
        requested = ((t.name, [p.partition_index for p in t.partitions]) for t in req.topics)
        topics = per_partition(requested, error_codes(results, default=ErrorCode.none))
    return ctx.response(error_code=error, throttle_time_ms=0, topics=topics)
