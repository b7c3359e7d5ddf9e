"""OffsetDelete (47): delete committed offsets of partitions the group is not consuming
(GROUP_SUBSCRIBED_TO_TOPIC for topics a live consumer group subscribes to)."""

from protocol.errors import ErrorCode

API_KEY = 47
MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx, req):
    wanted = [(t.name, p.partition_index) for t in req.topics for p in t.partitions]
    error, results = ctx.broker.groups.delete_offsets(req.group_id, wanted)
    topics = []
    if error == ErrorCode.none:
        topics = [dict(name=t.name, partitions=[
            dict(partition_index=p.partition_index,
                 error_code=results.get((t.name, p.partition_index), ErrorCode.none))
            for p in t.partitions]) for t in req.topics]
    return ctx.response(error_code=error, throttle_time_ms=0, topics=topics)
