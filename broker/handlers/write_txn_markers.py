"""WriteTxnMarkers (27): write COMMIT/ABORT markers for a producer on given partitions. Kafka's
coordinators send it to partition leaders; here the transaction coordinator writes its markers
directly, so the callers are admins: `kafka-transactions.sh abort` (Admin.abortTransaction)
ends a hanging transaction the coordinator no longer knows with an ABORT marker.

As in Kafka: a marker from an older producer epoch is refused (INVALID_PRODUCER_EPOCH), one
from an older coordinator epoch TRANSACTION_COORDINATOR_FENCED; markers written to
__consumer_offsets also apply or drop the producer's pending transactional offsets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minibroker.broker.partition_answers import per_partition
from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.coordinator.group_store import OFFSETS_TOPIC
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError

if TYPE_CHECKING:
    from minibroker.broker.api_types import WritableTxnMarker, WriteTxnMarkersRequest, WriteTxnMarkersResponse
    from minibroker.broker.context import HandlerServices, RequestContext
    from minibroker.storage.log import PartitionLog

API_KEY = 27


def _write(
    broker: HandlerServices,
    marker: WritableTxnMarker,
    topic: str,
    partition: int,
    written: list[PartitionLog],
) -> int:
    plog = broker.get_log(topic, partition)
    if plog is None:
        return ErrorCode.unknown_topic_or_partition
    commit = bool(marker.transaction_result)
    try:
        plog.append_marker(marker.producer_id, marker.producer_epoch, commit, marker.coordinator_epoch)
    except KafkaStorageError as exc:
        return exc.error_code
    written.append(plog)
    if topic == OFFSETS_TOPIC:
        broker.groups.complete_txn(marker.producer_id, commit, partition)
    return ErrorCode.none


async def handle(ctx: RequestContext, req: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    # authorization (Kafka: CLUSTER_ACTION on the cluster; only brokers send this)
    denied = not ctx.allowed(Op.CLUSTER_ACTION, Res.CLUSTER, CLUSTER_NAME)
    markers: list[dict] = []
    written: list[PartitionLog] = []
    for marker in req.markers:

        def entry(topic: str, partition: int, marker: WritableTxnMarker = marker) -> dict[str, Any]:
            if denied:
                return dict(partition_index=partition, error_code=ErrorCode.cluster_authorization_failed)
            error = _write(ctx.broker, marker, topic, partition, written)
            return dict(partition_index=partition, error_code=error)

        topics = per_partition(((t.name, t.partition_indexes) for t in marker.topics), entry)
        markers.append(dict(producer_id=marker.producer_id, topics=topics))
    # every marker durable before the answer, in one fsync round off the event loop
    if written:
        await ctx.broker.durability.sync(written)
    return ctx.response(markers=markers)
