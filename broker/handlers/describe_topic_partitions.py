"""DescribeTopicPartitions (75, KIP-966): what Java 3.9+/4.x Admin.describeTopics asks first.

Like Metadata but paged: topics in name order from the cursor's topic (its partitions from the
cursor's index), at most `response_partition_limit` partitions (capped at 2000, Kafka's
max.request.partition.size.limit) per answer, with `next_cursor` where the next page starts.
An empty topic list means every topic. With one replica there is no eligible-leader list to keep.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from minibroker.broker.cluster import partition_leadership
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log_manager import validate_topic_name

if TYPE_CHECKING:
    from minibroker.broker.api_types import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 75

MAX_PARTITIONS_PER_RESPONSE = 2000
_ZERO_UUID = uuid.UUID(int=0)


def _partition(node: int, index: int) -> dict:
    return dict(
        partition_leadership(node, index), eligible_leader_replicas=[], last_known_elr=[], offline_replicas=[]
    )


def _missing(ctx: RequestContext, name: str) -> dict:
    try:
        validate_topic_name(name)
        error = ErrorCode.unknown_topic_or_partition
    except KafkaStorageError as exc:
        error = exc.error_code
    return dict(
        error_code=error,
        name=name,
        topic_id=_ZERO_UUID,
        partitions=[],
        topic_authorized_operations=ctx.authorized_operations(Res.TOPIC, name),
    )


def _invalid(ctx: RequestContext, req: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    """Kafka refuses the request: every named topic gets INVALID_REQUEST."""
    topics = [
        dict(error_code=ErrorCode.invalid_request, name=t.name, topic_id=_ZERO_UUID, partitions=[])
        for t in req.topics
    ]
    return ctx.response(throttle_time_ms=0, topics=topics, next_cursor=None)


async def handle(ctx: RequestContext, req: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    broker = ctx.broker
    cursor = req.cursor
    start_topic = cursor.topic_name if cursor is not None else ""
    fetch_all = not req.topics
    requested = broker.logs.topics if fetch_all else [t.name for t in req.topics]
    names = sorted({n for n in requested if n >= start_topic})
    if cursor is not None and not fetch_all and cursor.topic_name not in names:
        return _invalid(ctx, req)  # the cursor's topic must be one of the requested topics
    if cursor is not None and cursor.partition_index < 0:
        return _invalid(ctx, req)  # a negative cursor partition
    remaining = max(min(MAX_PARTITIONS_PER_RESPONSE, req.response_partition_limit), 1)
    topics, next_cursor = [], None
    for name in names:
        if remaining == 0:
            next_cursor = dict(topic_name=name, partition_index=0)
            break
        # authorization (Kafka: DESCRIBE on each topic; listing all leaves the others out)
        if not ctx.allowed(Op.DESCRIBE, Res.TOPIC, name):
            if not fetch_all:
                topics.append(
                    dict(
                        error_code=ErrorCode.topic_authorization_failed,
                        name=name,
                        topic_id=_ZERO_UUID,
                        partitions=[],
                    )
                )
            continue
        info = broker.logs.topics.get(name)
        if info is None:
            if not fetch_all:
                topics.append(_missing(ctx, name))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        upper = min(info.num_partitions, first + remaining)
        topics.append(
            dict(
                error_code=ErrorCode.none,
                name=name,
                topic_id=info.topic_id,
                is_internal=info.internal,
                partitions=[_partition(broker.node_id, p) for p in range(first, upper)],
                topic_authorized_operations=ctx.authorized_operations(Res.TOPIC, name),
            )
        )
        if upper < info.num_partitions:
            next_cursor = dict(topic_name=name, partition_index=upper)
            break
        remaining -= max(upper - first, 0)
    return ctx.response(throttle_time_ms=0, topics=topics, next_cursor=next_cursor)
