"""ShareAcknowledge (79), v1-2: a share group member's acknowledgements outside a ShareFetch.

As Kafka 4.4's KafkaApis.handleShareAcknowledgeRequest: UNSUPPORTED_VERSION below share.version
1; a null group id, a denied READ on the group or a member id that is empty or longer than 36
characters answer at the top level (INVALID_REQUEST, GROUP_AUTHORIZATION_FAILED) with no
message; the share session's epoch must be the session's (0: INVALID_SHARE_SESSION_EPOCH; -1:
acknowledge, then close the session and release the member's records). Per partition: an
unknown topic id is UNKNOWN_TOPIC_ID, batches that fail Kafka's validation INVALID_REQUEST, an
unauthorized topic TOPIC_AUTHORIZATION_FAILED, an unknown partition UNKNOWN_TOPIC_OR_PARTITION;
the rest goes to the share-partitions, answered once persisted. v2 answers the group's
acquisition lock duration and accepts RENEW acknowledgements (IsRenewAck).

The acknowledgement part (`acknowledge`) is ShareFetch's too (broker/handlers/share_fetch.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.share_sessions import FINAL_EPOCH
from minibroker.coordinator.share_types import AckBatch, AckType, SharePartitionKey
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ShareAcknowledgeRequest, ShareAcknowledgeResponse
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 79

#: (topic id, partition)
PartitionId = tuple[uuid.UUID, int]
#: one partition's acknowledgement answer: (error code, error message)
AckAnswer = tuple[int, str | None]

LEADER_ERRORS = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch})


_ZERO = uuid.UUID(int=0)


def request_topic_id(topic: Any) -> uuid.UUID:
    """A request topic's id (a null id is Kafka's Uuid.ZERO: no topic has it)."""
    return topic.topic_id if topic.topic_id is not None else _ZERO


def share_groups_enabled(broker: HandlerServices) -> bool:
    return broker.features.level("share.version") >= 1


def member_id_valid(member_id: str | None) -> bool:
    """KafkaApis.isMemberIdValid: present, not empty, at most 36 characters."""
    return bool(member_id) and len(member_id) <= 36  # type: ignore[arg-type]


def valid_batches(batches: Sequence[AckBatch], renew_supported: bool, is_renew_ack: bool) -> bool:
    """KafkaApis.validateAcknowledgementBatches for one partition: ascending batches (a batch may
    start where the previous ended), first <= last, one type for the range or one per offset,
    every type known (RENEW only from v2), RENEW only with IsRenewAck."""
    max_type = AckType.RENEW if renew_supported else AckType.REJECT
    previous_last = -1
    for b in batches:
        if b.first_offset > b.last_offset or b.first_offset < previous_last:
            return False
        types = b.ack_types
        if not types:
            return False
        if len(types) > 1 and b.last_offset - b.first_offset != len(types) - 1:
            return False
        if any(t < 0 or t > max_type for t in types):
            return False
        if not is_renew_ack and any(t == AckType.RENEW for t in types):
            return False
        previous_last = b.last_offset
    return True


def ack_data(
    broker: HandlerServices, topics: Sequence[Any]
) -> tuple[dict[PartitionId, list[AckBatch]], dict[PartitionId, AckAnswer]]:
    """The request's acknowledgements per partition, and the partitions of unknown topic ids
    (UNKNOWN_TOPIC_ID)."""
    names = broker.logs.topic_names
    data: dict[PartitionId, list[AckBatch]] = {}
    erroneous: dict[PartitionId, AckAnswer] = {}
    for t in topics:
        tid = request_topic_id(t)
        known = tid in names
        for p in t.partitions:
            pid = (tid, p.partition_index)
            if not known:
                erroneous[pid] = (ErrorCode.unknown_topic_id, None)
                continue
            data[pid] = [
                AckBatch(b.first_offset, b.last_offset, tuple(int(x) for x in b.acknowledge_types))
                for b in p.acknowledgement_batches
            ]
    return data, erroneous


async def acknowledge(
    ctx: RequestContext,
    group_id: str,
    member_id: str,
    data: dict[PartitionId, list[AckBatch]],
    erroneous: dict[PartitionId, AckAnswer],
    authorized: set[str],
    *,
    renew_supported: bool,
    is_renew_ack: bool,
) -> dict[PartitionId, AckAnswer]:
    """KafkaApis.handleAcknowledgements: validate, then acknowledge each partition (persisted
    before this returns)."""
    broker = ctx.broker
    names = broker.logs.topic_names
    manager = broker.share_partitions
    out: dict[PartitionId, AckAnswer] = {}
    for pid, batches in data.items():
        topic_id, partition = pid
        topic = names[topic_id]
        if not valid_batches(batches, renew_supported, is_renew_ack):
            out[pid] = (ErrorCode.invalid_request, None)
        elif topic not in authorized:
            out[pid] = (ErrorCode.topic_authorization_failed, None)
        elif broker.get_log(topic, partition) is None:
            out[pid] = (ErrorCode.unknown_topic_or_partition, None)
        elif not batches:
            out[pid] = (ErrorCode.none, None)
        else:
            key = SharePartitionKey(group_id, topic_id, partition)
            out[pid] = await manager.acknowledge(member_id, key, batches)
    out.update(erroneous)
    return out


def authorized_topics(ctx: RequestContext, names: set[str]) -> set[str]:
    return {name for name in names if ctx.allowed(Op.READ, Res.TOPIC, name)}


async def close_session(ctx: RequestContext, group_id: str, member_id: str) -> None:
    """Epoch -1: the session goes and the member's records in its partitions are released
    (Kafka's releaseSession)."""
    broker = ctx.broker
    session = broker.share_sessions.remove(group_id, member_id)
    if session is None:
        return
    keys = [SharePartitionKey(group_id, topic_id, p) for topic_id, p in session.partitions]
    await broker.share_partitions.release(group_id, member_id, keys)


def lock_timeout(broker: HandlerServices, group_id: str) -> timedelta:
    """The group's share.record.lock.duration.ms (AcquisitionLockTimeoutMs)."""
    return timedelta(
        milliseconds=broker.share_partitions.share_partition_config(group_id).record_lock_duration_ms
    )


def error_response(ctx: RequestContext, error: ErrorCode) -> Any:
    """ShareFetchRequest/ShareAcknowledgeRequest.getErrorResponse: the code alone, no partitions,
    lock timeout 0."""
    return ctx.response(
        throttle_time_ms=0,
        error_code=error,
        error_message=None,
        acquisition_lock_timeout=timedelta(0),
        responses=[],
        node_endpoints=[],
    )


def share_response(
    ctx: RequestContext, group_id: str, responses: list[dict[str, Any]], leader_error: bool
) -> Any:
    """A ShareFetch or ShareAcknowledge answer: the group's lock timeout, the topics, and this
    node's endpoint when a partition answers a leader error (the client then looks it up)."""
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.none,
        error_message=None,
        acquisition_lock_timeout=lock_timeout(ctx.broker, group_id),
        responses=responses,
        node_endpoints=leader_endpoints(ctx) if leader_error else [],
    )


def leader_endpoints(ctx: RequestContext) -> list[dict[str, Any]]:
    """NodeEndpoints: this node, the leader of every partition it answers for."""
    host, port = ctx.advertised
    return [{"node_id": ctx.broker.node_id, "host": host, "port": port, "rack": None}]


async def handle(ctx: RequestContext, req: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
    broker = ctx.broker
    if not share_groups_enabled(broker):
        return error_response(ctx, ErrorCode.unsupported_version)
    group_id = req.group_id
    if group_id is None:  # Kafka: "Invalid group id in the request." (not sent)
        return error_response(ctx, ErrorCode.invalid_request)
    if not ctx.allowed(Op.READ, Res.GROUP, group_id):
        return error_response(ctx, ErrorCode.group_authorization_failed)
    member_id = req.member_id
    if not member_id_valid(member_id):  # Kafka: "Invalid member id in the request." (not sent)
        return error_response(ctx, ErrorCode.invalid_request)
    assert member_id is not None
    epoch = req.share_session_epoch
    error = broker.share_sessions.acknowledge_context(group_id, member_id, epoch)
    if error:
        return error_response(ctx, error)
    names = broker.logs.topic_names
    wanted = {names[request_topic_id(t)] for t in req.topics if request_topic_id(t) in names}
    authorized = authorized_topics(ctx, wanted)
    data, erroneous = ack_data(broker, req.topics)
    is_renew_ack = ctx.api_version >= 2 and bool(field(req, "is_renew_ack", False))
    answers = await acknowledge(
        ctx,
        group_id,
        member_id,
        data,
        erroneous,
        authorized,
        renew_supported=ctx.api_version == 2,
        is_renew_ack=is_renew_ack,
    )
    if epoch == FINAL_EPOCH:
        await close_session(ctx, group_id, member_id)
    leader_error = any(code in LEADER_ERRORS for code, _ in answers.values())
    return share_response(ctx, group_id, _topics(ctx, answers), leader_error)


def _topics(ctx: RequestContext, answers: dict[PartitionId, AckAnswer]) -> list[dict[str, Any]]:
    broker = ctx.broker
    names = broker.logs.topic_names
    by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for (topic_id, partition), (code, message) in answers.items():
        leader = {"leader_id": 0, "leader_epoch": 0}
        if code in LEADER_ERRORS:
            plog = broker.get_log(names.get(topic_id, ""), partition)
            leader = {"leader_id": broker.node_id, "leader_epoch": plog.leader_epoch if plog else -1}
        by_topic.setdefault(topic_id, []).append(
            {
                "partition_index": partition,
                "error_code": code,
                "error_message": message,
                "current_leader": leader,
            }
        )
    return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in by_topic.items()]
