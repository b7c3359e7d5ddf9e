"""DeleteRecords (21): move partitions' log start offsets forward (Admin deleteRecords,
kafka-delete-records.sh). Records below become unreadable at once; whole segments below go at
the next retention check. As in Kafka: internal topics refuse (INVALID_TOPIC_EXCEPTION), a
topic whose cleanup.policy lacks delete refuses (POLICY_VIOLATION), an offset above the high
watermark is OFFSET_OUT_OF_RANGE, -1 means the high watermark."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from minibroker.broker.partition_answers import answer_partitions
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        DeleteRecordsPartition,
        DeleteRecordsRequest,
        DeleteRecordsResponse,
    )
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 21


def _result(p: DeleteRecordsPartition, error_code: int, low_watermark: int = -1) -> dict:
    return dict(partition_index=p.partition_index, low_watermark=low_watermark, error_code=error_code)


def _delete(broker: HandlerServices, topic: str, p: DeleteRecordsPartition) -> dict:
    info = broker.logs.topics.get(topic)
    plog = broker.get_log(topic, p.partition_index)
    if info is None or plog is None:
        return _result(p, ErrorCode.unknown_topic_or_partition)
    if info.internal:
        return _result(p, ErrorCode.invalid_topic_exception)
    if "delete" not in plog.config.cleanup_policy.split(","):
        return _result(p, ErrorCode.policy_violation)
    try:
        return _result(p, ErrorCode.none, broker.logs.delete_records(topic, p.partition_index, p.offset))
    except KafkaStorageError as exc:
        return _result(p, exc.error_code)


async def handle(ctx: RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse:
    # authorization (Kafka: DELETE on each topic)
    denied = {t.name for t in req.topics if not ctx.allowed(Op.DELETE, Res.TOPIC, t.name)}
    deleted = partial(_delete, ctx.broker)
    return ctx.response(throttle_time_ms=0, topics=answer_partitions(req.topics, denied, deleted, _result))
