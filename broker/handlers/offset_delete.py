"""OffsetDelete (47): delete committed offsets of partitions the group is not consuming
(GROUP_SUBSCRIBED_TO_TOPIC for topics a live consumer group subscribes to)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.partition_answers import answer_partitions
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        OffsetDeleteRequest,
        OffsetDeleteRequestPartition,
        OffsetDeleteResponse,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 47


def _result(p: OffsetDeleteRequestPartition, error_code: int) -> dict:
    return dict(partition_index=p.partition_index, error_code=error_code)


async def handle(ctx: RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse:
    # authorization (Kafka: DELETE on the group, then READ on each topic)
    if not ctx.allowed(Op.DELETE, Res.GROUP, req.group_id):
        return ctx.response(error_code=ErrorCode.group_authorization_failed, throttle_time_ms=0, topics=[])
    denied = {t.name for t in req.topics if not ctx.allowed(Op.READ, Res.TOPIC, t.name)}
    wanted = [(t.name, p.partition_index) for t in req.topics if t.name not in denied for p in t.partitions]
    groups = ctx.broker.groups
    error, results = await ctx.broker.coordinators.run(groups, groups.delete_offsets(req.group_id, wanted))
    if error != ErrorCode.none:
        return ctx.response(error_code=error, throttle_time_ms=0, topics=[])

    def deleted(topic: str, p: OffsetDeleteRequestPartition) -> dict:
        return _result(p, results.get((topic, p.partition_index), ErrorCode.none))

    topics = answer_partitions(req.topics, denied, deleted, _result)
    return ctx.response(error_code=ErrorCode.none, throttle_time_ms=0, topics=topics)
