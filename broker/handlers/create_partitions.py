"""CreatePartitions (37): grow a topic's partition count."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from minibroker.broker.context import each_once
from minibroker.broker.durability import registry_written
from minibroker.broker.limits import partition_limit_error
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        CreatePartitionsRequest,
        CreatePartitionsResponse,
        CreatePartitionsTopic,
    )
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 37


def _grow(broker: HandlerServices, t: CreatePartitionsTopic, validate_only: bool) -> dict:
    info = broker.logs.topics.get(t.name)
    if info is None:
        return dict(name=t.name, error_code=ErrorCode.unknown_topic_or_partition)
    if t.count <= info.num_partitions:
        return dict(
            name=t.name,
            error_code=ErrorCode.invalid_partitions,
            error_message=f"topic has {info.num_partitions} partitions; "
            f"the new count must be larger, got {t.count}",
        )
    if t.assignments is not None and len(t.assignments) != t.count - info.num_partitions:
        return dict(
            name=t.name,
            error_code=ErrorCode.invalid_replica_assignment,
            error_message=f"{len(t.assignments)} assignments given for "
            f"{t.count - info.num_partitions} new partitions",
        )
    if t.assignments and any(list(a.broker_ids) != [broker.node_id] for a in t.assignments):
        return dict(
            name=t.name,
            error_code=ErrorCode.invalid_replica_assignment,
            error_message=f"this cluster has one broker, node {broker.node_id}",
        )
    if validate_only:
        return dict(name=t.name, error_code=ErrorCode.none)
    try:
        broker.logs.create_partitions(t.name, t.count)
    except KafkaStorageError as exc:
        return dict(name=t.name, error_code=exc.error_code, error_message=exc.message)
    broker.groups.on_topics_changed(changed=(t.name,))  # consumer and share groups rebalance
    return dict(name=t.name, error_code=ErrorCode.none)


async def handle(ctx: RequestContext, req: CreatePartitionsRequest) -> CreatePartitionsResponse:
    broker = ctx.broker
    counts = Counter(t.name for t in req.topics)
    # authorization (Kafka: ALTER on each topic)
    denied = {t.name for t in req.topics if not ctx.allowed(Op.ALTER, Res.TOPIC, t.name)}
    # limits: the partitions this request would add, all or nothing (Kafka: POLICY_VIOLATION)
    topics = broker.logs.topics
    added = sum(
        max(0, t.count - topics[t.name].num_partitions)
        for t in req.topics
        if t.name in topics and t.name not in denied and counts[t.name] == 1
    )
    refusal = (
        partition_limit_error(broker.config, sum(i.num_partitions for i in topics.values()), added)
        if added
        else None
    )
    results = []
    named: Sequence[CreatePartitionsTopic] = req.topics
    for t, repeated in each_once(named, lambda t: t.name):
        if repeated:  # Kafka answers a repeated name once, with INVALID_REQUEST
            results.append(
                dict(
                    name=t.name,
                    error_code=ErrorCode.invalid_request,
                    error_message=f"topic {t.name} appears more than once",
                )
            )
        elif t.name in denied:
            results.append(dict(name=t.name, error_code=ErrorCode.topic_authorization_failed))
        elif req.timeout.total_seconds() <= 0:  # Kafka's controller gives up on a past deadline
            results.append(
                dict(
                    name=t.name,
                    error_code=ErrorCode.request_timed_out,
                    error_message="timeout_ms must be positive",
                )
            )
        elif refusal:
            results.append(dict(name=t.name, error_code=ErrorCode.policy_violation, error_message=refusal))
        else:
            before = topics[t.name].num_partitions if t.name in topics else 0
            grown = _grow(broker, t, req.validate_only)
            if grown["error_code"] == ErrorCode.none and not req.validate_only:
                failed = await registry_written(broker.logs, t.name, before)  # its file on disk
                if failed is not None:
                    grown = dict(name=t.name, error_code=failed.error_code, error_message=failed.message)
            results.append(grown)
    return ctx.response(throttle_time_ms=0, results=results)
