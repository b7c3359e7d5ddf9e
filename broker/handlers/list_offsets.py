"""ListOffsets (2): earliest (-2), latest (-1: high watermark, or LSO for read_committed),
max timestamp (-3) and first offset at or after a timestamp."""

from broker.security.acls import Operation as Op, ResourceType as Res
from protocol.errors import ErrorCode
from broker.handlers.fetch import leader_epoch_error
from storage.errors import KafkaStorageError

API_KEY = 2
MIN_VERSION, MAX_VERSION = 1, 10


def _lookup(broker, topic: str, p, isolation: int) -> dict:
    out = dict(partition_index=p.partition_index, error_code=ErrorCode.none, timestamp=-1, offset=-1)
    plog = broker.get_log(topic, p.partition_index)
    if plog is None:
        out["error_code"] = ErrorCode.unknown_topic_or_partition
        return out
    error = leader_epoch_error(getattr(p, "current_leader_epoch", -1), plog.leader_epoch)
    if error:
        out["error_code"] = error
        return out
    try:
        found = plog.offset_for_timestamp(p.timestamp, isolation)
    except KafkaStorageError as exc:
        out["error_code"] = exc.error_code
        return out
    if found is not None:
        out["offset"], out["timestamp"] = found
        out["leader_epoch"] = plog.leader_epoch
    return out


async def handle(ctx, req):
    isolation = getattr(req, "isolation_level", 0)
    # authorization (Kafka: DESCRIBE on each topic)
    denied = {t.name for t in req.topics if not ctx.allowed(Op.DESCRIBE, Res.TOPIC, t.name)}
    topics = [
        dict(name=t.name, partitions=[
            dict(partition_index=p.partition_index, error_code=ErrorCode.topic_authorization_failed,
                 timestamp=-1, offset=-1) if t.name in denied else _lookup(ctx.broker, t.name, p, isolation)
            for p in t.partitions])
        for t in req.topics
    ]
    return ctx.response(throttle_time_ms=0, topics=topics)
