"""CreateTopics (19): one replica on this broker; configs use Kafka's topic property names.

From v5 a created (or validated) topic is answered with every topic config it ends up with, as
Kafka does, so clients need no DescribeConfigs round trip.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from minibroker.broker.config_descriptions import topic_default_source
from minibroker.broker.context import each_once
from minibroker.broker.durability import registry_written
from minibroker.broker.limits import partition_limit_error
from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.config import effective_topic_configs
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log_manager import INTERNAL_TOPICS

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        CreatableReplicaAssignment,
        CreatableTopic,
        CreateTopicsRequest,
        CreateTopicsResponse,
    )
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 19

# DescribeConfigsResponse ConfigSource values.
TOPIC_CONFIG = 1
#: Kafka's controller writes at most this many metadata records for one request (a topic record,
#: one per partition, one per config); a request that would go past it fails with POLICY_VIOLATION.
MAX_RECORDS_PER_REQUEST = 10000


def _error(name: str, code: ErrorCode, message: str | None) -> dict:
    return dict(
        name=name,
        error_code=code,
        error_message=message,
        num_partitions=-1,
        replication_factor=-1,
        configs=[],
    )


def _assignment_error(broker: HandlerServices, t: CreatableTopic) -> dict | None:
    if t.num_partitions != -1 or t.replication_factor != -1:
        return _error(
            t.name, ErrorCode.invalid_request, "give either assignments or num_partitions/replication_factor"
        )
    assignments: Sequence[CreatableReplicaAssignment] = t.assignments
    for expected, a in enumerate(sorted(assignments, key=lambda a: a.partition_index)):
        if a.partition_index != expected:
            return _error(
                t.name,
                ErrorCode.invalid_replica_assignment,
                f"partitions of a manual assignment must be numbered from 0 without gaps; "
                f"partition {expected} is missing",
            )
        if list(a.broker_ids) != [broker.node_id]:
            return _error(
                t.name,
                ErrorCode.invalid_replica_assignment,
                f"this cluster has one broker, node {broker.node_id}",
            )
    return None


def _config_entries(broker: HandlerServices, overrides: dict[str, str]) -> list[dict]:
    return [
        dict(
            name=name,
            value=value,
            read_only=False,
            is_sensitive=False,
            config_source=topic_default_source(broker.config, name) if is_default else TOPIC_CONFIG,
        )
        for name, (value, is_default) in sorted(effective_topic_configs(broker.config, overrides).items())
    ]


def _partition_count(broker: HandlerServices, t: CreatableTopic) -> int:
    return (
        len(t.assignments)
        if t.assignments
        else (t.num_partitions if t.num_partitions != -1 else broker.config["num.partitions"])
    )


def _records(broker: HandlerServices, t: CreatableTopic) -> int:
    partitions = _partition_count(broker, t)
    return 1 + partitions + len(t.configs) if partitions > 0 else 0


def _create(broker: HandlerServices, t: CreatableTopic, validate_only: bool) -> dict:
    if t.name in INTERNAL_TOPICS:  # the coordinators create these, with their own settings
        return _error(t.name, ErrorCode.topic_already_exists, f"{t.name} is an internal topic")
    partitions = t.num_partitions if t.num_partitions != -1 else broker.config["num.partitions"]
    if t.assignments:
        error = _assignment_error(broker, t)
        if error is not None:
            return error
        partitions = len(t.assignments)
    if partitions <= 0:
        return _error(
            t.name, ErrorCode.invalid_partitions, f"number of partitions must be positive, got {partitions}"
        )
    if t.replication_factor not in (-1, 1):
        return _error(
            t.name,
            ErrorCode.invalid_replication_factor,
            f"replication factor {t.replication_factor} is larger than the 1 available broker",
        )
    configs = {c.name: c.value for c in t.configs}
    try:
        if validate_only:
            overrides = broker.logs.validate_new_topic(t.name, partitions, configs)
            topic_id = uuid.uuid4()  # Kafka also answers a validation with a fresh id
        else:
            info = broker.logs.create_topic(t.name, partitions, configs)
            overrides, topic_id = info.configs, info.topic_id
            broker.groups.on_topics_changed(created=(t.name,))  # KIP-848 regexes, share groups
    except KafkaStorageError as exc:
        return _error(t.name, exc.error_code, exc.message)
    return dict(
        name=t.name,
        error_code=ErrorCode.none,
        error_message=None,
        topic_id=topic_id,
        num_partitions=partitions,
        replication_factor=1,
        configs=_config_entries(broker, overrides),
    )


def _timeout_ms(req: CreateTopicsRequest) -> int:
    return int(req.timeout.total_seconds() * 1000)


async def handle(ctx: RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse:
    broker = ctx.broker
    counts = Counter(t.name for t in req.topics)
    unique = [t for t in req.topics if counts[t.name] == 1]
    # authorization (Kafka: CREATE on the cluster, or CREATE on each topic)
    may_create_any = ctx.allowed(Op.CREATE, Res.CLUSTER, CLUSTER_NAME)
    denied = {t.name for t in unique if not may_create_any and not ctx.allowed(Op.CREATE, Res.TOPIC, t.name)}
    wanted = [t for t in unique if t.name not in denied]
    timed_out = _timeout_ms(req) <= 0
    too_large = sum(_records(broker, t) for t in wanted) > MAX_RECORDS_PER_REQUEST
    # limits: the partitions this request would create, all or nothing (Kafka: POLICY_VIOLATION)
    requested = sum(_partition_count(broker, t) for t in wanted if t.name not in broker.logs.topics)
    refusal = (
        partition_limit_error(
            broker.config, sum(i.num_partitions for i in broker.logs.topics.values()), requested
        )
        if requested
        else None
    )
    topics = []
    named: Sequence[CreatableTopic] = req.topics
    for t, repeated in each_once(named, lambda t: t.name):
        if repeated:  # Kafka answers a name given twice once, with INVALID_REQUEST, and creates nothing
            topics.append(
                _error(
                    t.name, ErrorCode.invalid_request, f"topic {t.name} appears more than once in the request"
                )
            )
        elif t.name in denied:
            topics.append(_error(t.name, ErrorCode.topic_authorization_failed, None))
        elif timed_out:  # Kafka's controller gives up at once on a deadline already past
            topics.append(_error(t.name, ErrorCode.request_timed_out, "timeout_ms must be positive"))
        elif too_large:
            topics.append(
                _error(
                    t.name,
                    ErrorCode.policy_violation,
                    f"the request would write more than {MAX_RECORDS_PER_REQUEST} metadata records",
                )
            )
        elif refusal:
            topics.append(_error(t.name, ErrorCode.policy_violation, refusal))
        else:
            created = _create(broker, t, req.validate_only)
            if created["error_code"] == ErrorCode.none and not req.validate_only:
                failed = await registry_written(broker.logs, t.name, 0)  # its file on disk
                if failed is not None:
                    created = _error(t.name, failed.error_code, failed.message)
            topics.append(created)
            await asyncio.sleep(0)  # let other clients in between topics (creation is synchronous)
    return ctx.response(throttle_time_ms=0, topics=topics)
