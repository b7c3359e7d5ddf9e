"""DescribeProducers (61), version 0 (`kafka-transactions.sh --describe-producers`): the active
producers of each requested partition, from its producer state (epoch, last sequence, last
timestamp, coordinator epoch, first offset of the open transaction or -1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.partition_answers import per_partition
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DescribeProducersRequest, DescribeProducersResponse
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 61


def _refused(index: int, error: ErrorCode) -> dict:
    return dict(partition_index=index, error_code=error, error_message=None, active_producers=[])


def _partition(broker: HandlerServices, topic: str, index: int) -> dict:
    plog = broker.logs.get_log(topic, index) if topic in broker.logs.topics else None
    if plog is None:
        return _refused(index, ErrorCode.unknown_topic_or_partition)
    producers = [
        dict(
            producer_id=e.producer_id,
            producer_epoch=e.epoch,
            last_sequence=e.last_sequence,
            last_timestamp=e.last_timestamp,
            coordinator_epoch=e.coordinator_epoch,
            current_txn_start_offset=-1 if e.current_txn_first_offset is None else e.current_txn_first_offset,
        )
        for e in sorted(plog.producer_state.producers(), key=lambda e: e.producer_id)
    ]
    return dict(
        partition_index=index, error_code=ErrorCode.none, error_message=None, active_producers=producers
    )


async def handle(ctx: RequestContext, req: DescribeProducersRequest) -> DescribeProducersResponse:
    # authorization (Kafka: READ on each topic)
    denied = {t.name for t in req.topics if not ctx.allowed(Op.READ, Res.TOPIC, t.name)}

    def entry(topic: str, index: int) -> dict:
        if topic in denied:
            return _refused(index, ErrorCode.topic_authorization_failed)
        return _partition(ctx.broker, topic, index)

    topics = per_partition(((t.name, t.partition_indexes) for t in req.topics), entry)
    return ctx.response(throttle_time_ms=0, topics=topics)
