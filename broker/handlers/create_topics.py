"""CreateTopics (19): one replica on this broker; configs use Kafka's topic property names."""

import asyncio

from broker.limits import partition_limit_error
from broker.security.acls import CLUSTER_NAME, Operation as Op, ResourceType as Res
from protocol.errors import ErrorCode
from storage.errors import KafkaStorageError

API_KEY = 19
MIN_VERSION, MAX_VERSION = 2, 7


def _create(broker, t, validate_only: bool) -> dict:
    out = dict(name=t.name, error_code=ErrorCode.none, error_message=None)
    partitions = t.num_partitions if t.num_partitions != -1 else broker.config["num.partitions"]
    if t.assignments:
        if t.num_partitions != -1 or t.replication_factor != -1:
            return {**out, "error_code": ErrorCode.invalid_request,
                    "error_message": "give either assignments or num_partitions/replication_factor"}
        if any(list(a.broker_ids) != [broker.node_id] for a in t.assignments):
            return {**out, "error_code": ErrorCode.invalid_replica_assignment,
                    "error_message": f"this cluster has one broker, node {broker.node_id}"}
        partitions = len(t.assignments)
    if partitions <= 0:
        return {**out, "error_code": ErrorCode.invalid_partitions,
                "error_message": f"number of partitions must be positive, got {partitions}"}
    if t.replication_factor not in (-1, 1):
        return {**out, "error_code": ErrorCode.invalid_replication_factor,
                "error_message": f"replication factor {t.replication_factor} is larger than the 1 available broker"}
    configs = {c.name: c.value for c in t.configs}
    try:
        if validate_only:
            broker.logs.validate_new_topic(t.name, partitions, configs)
            info = None
        else:
            info = broker.logs.create_topic(t.name, partitions, configs)
    except KafkaStorageError as exc:
        return {**out, "error_code": exc.error_code, "error_message": exc.message}
    return {**out, "topic_id": info.topic_id if info else None, "num_partitions": partitions,
            "replication_factor": 1, "configs": []}


def _refused(t, error: ErrorCode, message: str | None = None) -> dict:
    return dict(name=t.name, error_code=error, error_message=message)


async def handle(ctx, req):
    broker = ctx.broker
    # authorization (Kafka: CREATE on the cluster, or CREATE on each topic)
    may_create_any = ctx.allowed(Op.CREATE, Res.CLUSTER, CLUSTER_NAME)
    denied = {t.name for t in req.topics if not may_create_any and not ctx.allowed(Op.CREATE, Res.TOPIC, t.name)}
    # limits: the partitions this request would create, all or nothing (Kafka: POLICY_VIOLATION)
    requested = sum(len(t.assignments) or (t.num_partitions if t.num_partitions > 0 else broker.config["num.partitions"])
                    for t in req.topics if t.name not in denied and t.name not in broker.logs.topics)
    refusal = partition_limit_error(broker.config, sum(i.num_partitions for i in broker.logs.topics.values()),
                                    requested) if requested else None
    topics = []
    for t in req.topics:
        if t.name in denied:
            topics.append(_refused(t, ErrorCode.topic_authorization_failed))
        elif refusal:
            topics.append(_refused(t, ErrorCode.policy_violation, refusal))
        else:
            topics.append(_create(broker, t, req.validate_only))
            await asyncio.sleep(0)  # let other clients in between topics (creation is synchronous)
    return ctx.response(throttle_time_ms=0, topics=topics)
