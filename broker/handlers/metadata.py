"""Metadata (3): this broker is the leader of every partition, at a constant leader epoch.

Topic ids (v10+) come from storage, where they are persisted, so they stay stable across
restarts. Naming an unknown topic auto-creates it when both the broker
(auto.create.topics.enable) and the request (allow_auto_topic_creation, v4+) allow it, within
the partition limits of broker/limits.py (the rest answer the retriable UNKNOWN_TOPIC_OR_PARTITION,
so a client retrying creates them over several requests instead of one long stall).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import structlog
from minibroker.broker.cluster import partition_leadership
from minibroker.broker.limits import partition_limit_error
from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.security.authorizer import OPERATIONS_NOT_REQUESTED
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log_manager import validate_topic_name

if TYPE_CHECKING:
    from minibroker.broker.api_types import MetadataRequest, MetadataRequestTopic, MetadataResponse
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 3

_ZERO_UUID = uuid.UUID(int=0)
log = structlog.get_logger("broker.metadata")


def topic_entry(
    broker: HandlerServices,
    name: str,
    error: ErrorCode = ErrorCode.none,
    authorized_operations: int = OPERATIONS_NOT_REQUESTED,
) -> dict:
    info = broker.logs.topics.get(name) if error == ErrorCode.none else None
    if info is None:
        return dict(
            error_code=error or ErrorCode.unknown_topic_or_partition,
            name=name,
            topic_id=_ZERO_UUID,
            partitions=[],
        )
    node = broker.node_id
    return dict(
        error_code=ErrorCode.none,
        name=name,
        topic_id=info.topic_id,
        is_internal=info.internal,
        partitions=[partition_leadership(node, p) for p in range(info.num_partitions)],
        topic_authorized_operations=authorized_operations,
    )


def _topic_id(t: MetadataRequestTopic) -> uuid.UUID:
    """The requested topic id; zero when absent (v0-9) or null (kio's zero uuid)."""
    return field(t, "topic_id", None) or _ZERO_UUID


def _request_error(ctx: RequestContext, req: MetadataRequest) -> ErrorCode | None:
    """Kafka refuses the whole request (every topic gets the error, no brokers) when v10-11 name a
    topic by id or leave a name null, and fails with UNKNOWN_SERVER_ERROR when v12+ give neither
    a name nor an id."""
    for t in req.topics or ():
        topic_id = _topic_id(t)
        if ctx.api_version < 12 and (t.name is None or topic_id != _ZERO_UUID):
            return ErrorCode.invalid_request
        if t.name is None and topic_id == _ZERO_UUID:
            return ErrorCode.unknown_server_error
    return None


def _error_response(ctx: RequestContext, req: MetadataRequest, error: ErrorCode) -> MetadataResponse:
    topics: list[dict] = [
        dict(error_code=error, name=t.name or "", topic_id=_topic_id(t), partitions=[])
        for t in req.topics or ()
    ]
    return ctx.response(
        throttle_time_ms=0, brokers=[], cluster_id=None, controller_id=-1, topics=topics, error_code=error
    )


def _unknown_topic(ctx: RequestContext, name: str, allow_create: bool, budget: list[Any]) -> ErrorCode:
    if allow_create:
        return _created_or_refused(ctx, name, budget)
    try:
        validate_topic_name(name)
    except KafkaStorageError as exc:
        return exc.error_code
    return ErrorCode.unknown_topic_or_partition


def _created_or_refused(ctx: RequestContext, name: str, budget: list[Any]) -> ErrorCode:
    """Auto-create `name` if the principal may and the per-request partition budget allows."""
    # authorization (Kafka: CREATE on the cluster or on the topic)
    if not (ctx.allowed(Op.CREATE, Res.CLUSTER, CLUSTER_NAME) or ctx.allowed(Op.CREATE, Res.TOPIC, name)):
        return ErrorCode.topic_authorization_failed
    broker = ctx.broker
    partitions = broker.config["num.partitions"]
    refusal = partition_limit_error(broker.config, budget[1], budget[0] + partitions)
    if refusal is not None:
        budget[2] += 1
        budget[3] = refusal
        return ErrorCode.unknown_topic_or_partition  # retriable: a later request may create it
    error = broker.auto_create_topic(name)
    if error == ErrorCode.none:
        budget[0] += partitions
    return error


async def handle(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse:
    broker = ctx.broker
    error = _request_error(ctx, req)
    if error is not None:
        return _error_response(ctx, req, error)
    if req.topics is None or (ctx.api_version == 0 and not req.topics):
        # authorization (Kafka: DESCRIBE on each topic; an all-topics request leaves out the others)
        entries = [
            topic_entry(broker, n)
            for n in sorted(broker.logs.topics)
            if ctx.allowed(Op.DESCRIBE, Res.TOPIC, n)
        ]
    else:
        allow_create = field(req, "allow_auto_topic_creation", True)
        # [partitions created here, partitions existing, topics refused, why]
        budget = [0, sum(i.num_partitions for i in broker.logs.topics.values()), 0, ""]
        requested: Sequence[MetadataRequestTopic] = req.topics
        if any(_topic_id(t) != _ZERO_UUID for t in requested):
            # v12+: once any topic is named by id, Kafka looks up by id only and ignores names.
            requested = [t for t in requested if _topic_id(t) != _ZERO_UUID]
        entries, seen = [], set()
        for t in requested:
            key = t.name if _topic_id(t) == _ZERO_UUID else _topic_id(t)
            if key in seen:  # Kafka answers each topic once, however often it is named
                continue
            seen.add(key)
            name = t.name if _topic_id(t) == _ZERO_UUID else None
            if name is None:  # v12+ lookup by id
                match = next((i for i in broker.logs.topics.values() if i.topic_id == _topic_id(t)), None)
                if match and ctx.allowed(Op.DESCRIBE, Res.TOPIC, match.name):
                    entries.append(topic_entry(broker, match.name))
                else:
                    entries.append(
                        dict(
                            error_code=ErrorCode.unknown_topic_id,
                            name=None,
                            topic_id=_topic_id(t),
                            partitions=[],
                        )
                    )
                continue
            if not ctx.allowed(Op.DESCRIBE, Res.TOPIC, name):
                entries.append(topic_entry(broker, name, ErrorCode.topic_authorization_failed))
            elif name not in broker.logs.topics:
                entries.append(topic_entry(broker, name, _unknown_topic(ctx, name, allow_create, budget)))
                if allow_create:
                    await asyncio.sleep(0)  # let other clients in between auto-created topics
            else:
                entries.append(topic_entry(broker, name))
        if budget[2]:
            log.warning("topics not auto-created", count=budget[2], reason=budget[3])
    if field(req, "include_topic_authorized_operations", False):
        for entry in entries:
            if entry["error_code"] == ErrorCode.none:
                entry["topic_authorized_operations"] = ctx.authorized_operations(Res.TOPIC, entry["name"])
    cluster_operations = (
        ctx.authorized_operations(Res.CLUSTER, CLUSTER_NAME)
        if field(req, "include_cluster_authorized_operations", False)
        else OPERATIONS_NOT_REQUESTED
    )
    return ctx.response(
        throttle_time_ms=0,
        brokers=[dict(node_id=broker.node_id, host=ctx.advertised[0], port=ctx.advertised[1])],
        cluster_id=broker.logs.cluster_id,
        controller_id=broker.node_id,
        topics=entries,
        cluster_authorized_operations=cluster_operations,
        error_code=ErrorCode.none,
    )
