"""ListOffsets (2): earliest (-2), latest (-1: high watermark, or LSO for read_committed),
max timestamp (-3), earliest local (-4), latest tiered (-5), earliest pending upload (-6, v11:
none without tiered storage) and first offset at or after a timestamp. A special timestamp older
than the version that introduced it, or a negative one Kafka does not know, gets
UNSUPPORTED_VERSION; a partition named twice gets INVALID_REQUEST."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from minibroker.broker.context import each_once
from minibroker.broker.handlers.fetch import leader_epoch_error
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        ListOffsetsPartition,
        ListOffsetsRequest,
        ListOffsetsResponse,
        ListOffsetsTopic,
    )
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 2


#: Special timestamps and the first version that may send them.
_SPECIAL_SINCE = {-1: 0, -2: 0, -3: 7, -4: 8, -5: 9, -6: 11}  # -6: earliest pending upload (KIP-1023)


def _result(p: ListOffsetsPartition, error_code: int) -> dict:
    return dict(partition_index=p.partition_index, error_code=error_code, timestamp=-1, offset=-1)


def _lookup(
    broker: HandlerServices, topic: str, p: ListOffsetsPartition, isolation: int, version: int
) -> dict:
    if p.timestamp < 0 and version < _SPECIAL_SINCE.get(p.timestamp, version + 1):
        return _result(p, ErrorCode.unsupported_version)
    plog = broker.get_log(topic, p.partition_index)
    if plog is None:
        return _result(p, ErrorCode.unknown_topic_or_partition)
    error = leader_epoch_error(field(p, "current_leader_epoch", -1), plog.leader_epoch)
    if error:
        return _result(p, error)
    try:
        found = plog.offset_for_timestamp(p.timestamp, isolation)
    except KafkaStorageError as exc:
        return _result(p, exc.error_code)
    out = _result(p, ErrorCode.none)
    if found is not None:
        out["offset"], out["timestamp"] = found
        out["leader_epoch"] = plog.leader_epoch
    return out


def _partitions(ctx: RequestContext, t: ListOffsetsTopic, isolation: int) -> list[dict]:
    asked: Sequence[ListOffsetsPartition] = t.partitions
    return [
        _result(p, ErrorCode.invalid_request)
        if repeated
        else _lookup(ctx.broker, t.name, p, isolation, ctx.api_version)
        for p, repeated in each_once(asked, lambda p: p.partition_index)
    ]


async def handle(ctx: RequestContext, req: ListOffsetsRequest) -> ListOffsetsResponse:
    isolation = field(req, "isolation_level", 0)
    # authorization (Kafka: DESCRIBE on each topic)
    denied = {t.name for t in req.topics if not ctx.allowed(Op.DESCRIBE, Res.TOPIC, t.name)}
    refused = ErrorCode.topic_authorization_failed
    # A topic named with no partitions is left out of the answer, as Kafka does.
    topics = [
        dict(name=t.name, partitions=[_result(p, refused) for p in t.partitions])
        if t.name in denied
        else dict(name=t.name, partitions=_partitions(ctx, t, isolation))
        for t in req.topics
        if t.partitions
    ]
    return ctx.response(throttle_time_ms=0, topics=topics)
