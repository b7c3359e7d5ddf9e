"""DeleteTopics (20): by name, or by topic id from v6."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError

if TYPE_CHECKING:
    from minibroker.broker.api_types import DeleteTopicsRequest, DeleteTopicsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 20


async def _delete(ctx: RequestContext, name: str | None, topic_id: uuid.UUID | None) -> dict:
    broker = ctx.broker
    if name is None:
        info = next((i for i in broker.logs.topics.values() if i.topic_id == topic_id), None)
        if info is None:
            return dict(name=None, topic_id=topic_id, error_code=ErrorCode.unknown_topic_id)
        name = info.name
    # authorization (Kafka: DELETE on the topic)
    if not ctx.allowed(Op.DELETE, Res.TOPIC, name):
        return dict(name=name, topic_id=topic_id, error_code=ErrorCode.topic_authorization_failed)
    info = broker.logs.topics.get(name)
    if info is None:
        return dict(name=name, topic_id=topic_id, error_code=ErrorCode.unknown_topic_or_partition)
    if not broker.config["delete.topic.enable"]:
        return dict(name=name, topic_id=info.topic_id, error_code=ErrorCode.topic_deletion_disabled)
    if info.internal:
        return dict(
            name=name,
            topic_id=info.topic_id,
            error_code=ErrorCode.invalid_topic_exception,
            error_message=f"{name} is an internal topic",
        )
    try:
        broker.logs.delete_topic(name)
    except KafkaStorageError as exc:
        return dict(name=name, topic_id=info.topic_id, error_code=exc.error_code, error_message=exc.message)
    # tombstones for its committed offsets, as Kafka does (an operation of the coordinator runtime)
    await broker.coordinators.run(broker.groups, broker.groups.remove_topic_offsets(name, info.topic_id))
    # and its share-partitions' state (__share_group_state tombstones)
    share = broker.share_coordinator
    await broker.coordinators.run(share, share.delete_topics((info.topic_id,)))
    broker.groups.on_topics_changed(changed=(name,))  # consumer and share groups rebalance
    broker.data_waiters.notify_all()  # fetches waiting on it answer now (unknown partition)
    return dict(name=name, topic_id=info.topic_id, error_code=ErrorCode.none)


async def _timed_out(_ctx: RequestContext, name: str | None, topic_id: uuid.UUID | None) -> dict:
    return dict(
        name=name,
        topic_id=topic_id,
        error_code=ErrorCode.request_timed_out,
        error_message="timeout_ms must be positive",
    )


async def handle(ctx: RequestContext, req: DeleteTopicsRequest) -> DeleteTopicsResponse:
    # Kafka's controller gives up at once on a deadline already past (timeout_ms <= 0).
    delete = _delete if req.timeout.total_seconds() > 0 else _timed_out
    if ctx.api_version >= 6:
        results = [await delete(ctx, t.name, t.topic_id) for t in field(req, "topics", ())]
    else:
        results = [await delete(ctx, name, None) for name in field(req, "topic_names", ())]
    return ctx.response(throttle_time_ms=0, responses=results)
