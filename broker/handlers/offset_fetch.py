"""OffsetFetch (9), v1-9: committed offsets of a group (v8+: of several groups). topics=null
(v2+) means every partition the group has committed. With require_stable (v7+) a partition with
transactional offsets still pending answers UNSTABLE_OFFSET_COMMIT; committed_leader_epoch v5+."""

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

API_KEY = 9


def _fetch(ctx, group_id: str, topics, require_stable: bool) -> tuple[int, list[dict]]:
    # authorization (Kafka: DESCRIBE on the group; DESCRIBE on each topic, whose offsets are
    # otherwise TOPIC_AUTHORIZATION_FAILED, or left out when all topics were asked for)
    if not ctx.allowed(Op.DESCRIBE, Res.GROUP, group_id):
        denied = ErrorCode.group_authorization_failed
        return denied, [
            dict(
                name=t.name,
                partitions=[
                    dict(
                        partition_index=p,
                        committed_offset=-1,
                        committed_leader_epoch=-1,
                        metadata="",
                        error_code=denied,
                    )
                    for p in t.partition_indexes
                ],
            )
            for t in topics or ()
        ]
    if topics is None:
        wanted = None
    else:
        wanted = [(t.name, p) for t in topics for p in t.partition_indexes]
    error, rows = ctx.broker.groups.fetch_offsets(group_id, wanted, require_stable)
    by_topic: dict[str, list[dict]] = {}
    for topic, partition, offset, leader_epoch, metadata, part_error in rows:
        if not ctx.allowed(Op.DESCRIBE, Res.TOPIC, topic):
            if topics is None:
                continue
            offset, leader_epoch, metadata, part_error = -1, -1, "", ErrorCode.topic_authorization_failed
        by_topic.setdefault(topic, []).append(
            dict(
                partition_index=partition,
                committed_offset=offset,
                committed_leader_epoch=leader_epoch,
                metadata=metadata,
                error_code=part_error,
            )
        )
    if topics is not None:  # keep requested topics even when they have no partitions listed
        for t in topics:
            by_topic.setdefault(t.name, [])
    return error, [dict(name=name, partitions=parts) for name, parts in by_topic.items()]


async def handle(ctx, req):
    require_stable = bool(getattr(req, "require_stable", False))
    if ctx.api_version >= 8:
        out = []
        for g in req.groups:
            error, topics = _fetch(ctx, g.group_id, g.topics, require_stable)
            out.append(dict(group_id=g.group_id, topics=topics, error_code=error))
        return ctx.response(throttle_time_ms=0, groups=out)
    error, topics = _fetch(ctx, req.group_id, req.topics, require_stable)
    if ctx.api_version < 2 and error != ErrorCode.none:
        # v1 has no top-level error code: report it on every partition
        for t in topics:
            for p in t["partitions"]:
                p["error_code"] = error
    return ctx.response(throttle_time_ms=0, topics=topics, error_code=error)
