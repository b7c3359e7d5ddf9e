"""DeleteRecords (21): move partitions' log start offsets forward (Admin deleteRecords,
kafka-delete-records.sh). Records below become unreadable at once; whole segments below go at
the next retention check. As in Kafka: internal topics refuse (INVALID_TOPIC_EXCEPTION), a
topic whose cleanup.policy lacks delete refuses (POLICY_VIOLATION), an offset above the high
watermark is OFFSET_OUT_OF_RANGE, -1 means the high watermark."""

from __future__ import annotations

from typing import TYPE_CHECKING

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


def _delete(broker: HandlerServices, topic: str, p: DeleteRecordsPartition) -> dict:
    out = dict(partition_index=p.partition_index, low_watermark=-1, error_code=ErrorCode.none)
    info = broker.logs.topics.get(topic)
    plog = broker.get_log(topic, p.partition_index)
    if info is None or plog is None:
        out["error_code"] = ErrorCode.unknown_topic_or_partition
    elif info.internal:
        out["error_code"] = ErrorCode.invalid_topic_exception
    elif "delete" not in plog.config.cleanup_policy.split(","):
        out["error_code"] = ErrorCode.policy_violation
    else:
        try:
            out["low_watermark"] = broker.logs.delete_records(topic, p.partition_index, p.offset)
        except KafkaStorageError as exc:
            out["error_code"] = exc.error_code
    return out


async def handle(ctx: RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse:
    # authorization (Kafka: DELETE on each topic)
    denied = {t.name for t in req.topics if not ctx.allowed(Op.DELETE, Res.TOPIC, t.name)}
    topics = [
        dict(
            name=t.name,
            partitions=[
                dict(
                    partition_index=p.partition_index,
                    low_watermark=-1,
                    error_code=ErrorCode.topic_authorization_failed,
                )
                if t.name in denied
                else _delete(ctx.broker, t.name, p)
                for p in t.partitions
            ],
        )
        for t in req.topics
    ]
    return ctx.response(throttle_time_ms=0, topics=topics)
