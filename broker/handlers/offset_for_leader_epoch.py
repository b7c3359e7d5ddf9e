"""OffsetForLeaderEpoch (23): trivial with one constant leader epoch. Clients use it to validate
their position after a metadata change; any epoch at or below ours ends at the log end offset."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.handlers.fetch import leader_epoch_error
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        OffsetForLeaderEpochRequest,
        OffsetForLeaderEpochResponse,
        OffsetForLeaderPartition,
    )
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 23


def _answer(broker: HandlerServices, topic: str, p: OffsetForLeaderPartition) -> dict:
    plog = broker.get_log(topic, p.partition)
    if plog is None:
        return dict(error_code=ErrorCode.unknown_topic_or_partition, partition=p.partition)
    error = leader_epoch_error(p.current_leader_epoch, plog.leader_epoch)
    if error:
        return dict(error_code=error, partition=p.partition)
    if p.leader_epoch > plog.leader_epoch or p.leader_epoch < 0:
        # An epoch this log never had: Kafka answers UNDEFINED_EPOCH (-1) / UNDEFINED_OFFSET.
        return dict(error_code=ErrorCode.none, partition=p.partition, leader_epoch=-1, end_offset=-1)
    return dict(
        error_code=ErrorCode.none,
        partition=p.partition,
        leader_epoch=plog.leader_epoch,
        end_offset=plog.log_end_offset,
    )


async def handle(ctx: RequestContext, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    # authorization (Kafka: DESCRIBE on each topic)
    denied = {t.topic for t in req.topics if not ctx.allowed(Op.DESCRIBE, Res.TOPIC, t.topic)}
    topics = [
        dict(
            topic=t.topic,
            partitions=[
                dict(error_code=ErrorCode.topic_authorization_failed, partition=p.partition)
                if t.topic in denied
                else _answer(ctx.broker, t.topic, p)
                for p in t.partitions
            ],
        )
        for t in req.topics
    ]
    return ctx.response(throttle_time_ms=0, topics=topics)
