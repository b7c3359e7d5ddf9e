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


def _result(
    p: OffsetForLeaderPartition, error_code: int, leader_epoch: int = -1, end_offset: int = -1
) -> dict:
    return dict(
        error_code=error_code, partition=p.partition, leader_epoch=leader_epoch, end_offset=end_offset
    )


def _answer(broker: HandlerServices, topic: str, p: OffsetForLeaderPartition) -> dict:
    plog = broker.get_log(topic, p.partition)
    if plog is None:
        return _result(p, ErrorCode.unknown_topic_or_partition)
    error = leader_epoch_error(p.current_leader_epoch, plog.leader_epoch)
    if error:
        return _result(p, error)
    if p.leader_epoch > plog.leader_epoch or p.leader_epoch < 0:
        # An epoch this log never had: Kafka answers UNDEFINED_EPOCH (-1) / UNDEFINED_OFFSET.
        return _result(p, ErrorCode.none)
    return _result(p, ErrorCode.none, plog.leader_epoch, plog.log_end_offset)


async def handle(ctx: RequestContext, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    # authorization (Kafka: DESCRIBE on each topic)
    denied = {t.topic for t in req.topics if not ctx.allowed(Op.DESCRIBE, Res.TOPIC, t.topic)}
    refused = ErrorCode.topic_authorization_failed
    topics = [
        dict(topic=t.topic, partitions=[_result(p, refused) for p in t.partitions])
        if t.topic in denied
        else dict(topic=t.topic, partitions=[_answer(ctx.broker, t.topic, p) for p in t.partitions])
        for t in req.topics
    ]
    return ctx.response(throttle_time_ms=0, topics=topics)
