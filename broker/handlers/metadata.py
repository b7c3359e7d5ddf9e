"""Metadata (3): this broker is the leader of every partition, at a constant leader epoch.

Topic ids (v10+) come from storage, where they are persisted, so they stay stable across
restarts. Naming an unknown topic auto-creates it when both the broker
(auto.create.topics.enable) and the request (allow_auto_topic_creation, v4+) allow it.
"""

import uuid

from protocol.errors import ErrorCode
from storage.log_manager import LEADER_EPOCH

API_KEY = 3
MIN_VERSION, MAX_VERSION = 0, 13

_ZERO_UUID = uuid.UUID(int=0)


def topic_entry(broker, name: str, error: ErrorCode = ErrorCode.none) -> dict:
    info = broker.logs.topics.get(name) if error == ErrorCode.none else None
    if info is None:
        return dict(error_code=error or ErrorCode.unknown_topic_or_partition, name=name,
                    topic_id=_ZERO_UUID, partitions=[])
    node = broker.node_id
    return dict(
        error_code=ErrorCode.none,
        name=name,
        topic_id=info.topic_id,
        is_internal=info.internal,
        partitions=[
            dict(error_code=ErrorCode.none, partition_index=p, leader_id=node,
                 leader_epoch=LEADER_EPOCH, replica_nodes=[node], isr_nodes=[node])
            for p in range(info.num_partitions)
        ],
    )


async def handle(ctx, req):
    broker = ctx.broker
    if req.topics is None or (ctx.api_version == 0 and not req.topics):
        names = sorted(broker.logs.topics)
        entries = [topic_entry(broker, n) for n in names]
    else:
        allow_create = getattr(req, "allow_auto_topic_creation", True)
        entries = []
        for t in req.topics:
            name = t.name
            if name is None:  # v10+ lookup by id
                match = next((i for i in broker.logs.topics.values() if i.topic_id == t.topic_id), None)
                entries.append(topic_entry(broker, match.name) if match else
                               dict(error_code=ErrorCode.unknown_topic_id, name=None,
                                    topic_id=t.topic_id, partitions=[]))
                continue
            if name not in broker.logs.topics:
                error = broker.auto_create_topic(name) if allow_create else ErrorCode.unknown_topic_or_partition
                entries.append(topic_entry(broker, name, error))
            else:
                entries.append(topic_entry(broker, name))
    return ctx.response(
        throttle_time_ms=0,
        brokers=[dict(node_id=broker.node_id, host=ctx.advertised[0], port=ctx.advertised[1])],
        cluster_id=broker.logs.cluster_id,
        controller_id=broker.node_id,
        topics=entries,
        error_code=ErrorCode.none,
    )
