"""ShareFetch (78), v1-2: records acquired for a share group member, acknowledgements
piggy-backed (broker/share_partitions.py, broker/share_sessions.py).

As Kafka 4.4's KafkaApis.handleShareFetchRequest: UNSUPPORTED_VERSION below share.version 1; a
null group id, a denied READ on the group, a member id that is empty or longer than 36
characters, and v2's IsRenewAck with any of MaxBytes, MinBytes, MaxRecords, MaxWaitMs not 0
answer INVALID_REQUEST / GROUP_AUTHORIZATION_FAILED at the top level (Kafka logs the message and
sends the code alone). The share session epoch then decides (broker/share_sessions.py): 0 opens
a session with the request's partitions (acknowledgements in it: INVALID_REQUEST), -1
acknowledges and closes it without fetching, any other epoch fetches the session's partitions;
at the session limit the request is answered SHARE_SESSION_LIMIT_REACHED after MaxWaitMs.

Acknowledgements go first (each partition's outcome in AcknowledgeErrorCode/Message), then the
fetch: per partition UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION,
a share-partition that cannot be loaded (not initialized) its load error; the others wait up to
MaxWaitMs for MinBytes and acquire up to MaxRecords across the partitions, answering the raw log
batches holding the acquired records and AcquiredRecords. An incremental session answers only
the partitions with records, an error, or just added. AcquisitionLockTimeoutMs is the group's
share.record.lock.duration.ms.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

import structlog
from minibroker.broker.handlers.share_acknowledge import (
    LEADER_ERRORS,
    AckAnswer,
    PartitionId,
    ack_data,
    acknowledge,
    authorized_topics,
    close_session,
    error_response,
    member_id_valid,
    request_topic_id,
    share_groups_enabled,
    share_response,
)
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.share_partitions import PartitionFetch
from minibroker.broker.share_sessions import FINAL_EPOCH
from minibroker.coordinator.share_types import AcquireMode, SharePartitionKey
from minibroker.protocol.codec import field, millis
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ShareFetchRequest, ShareFetchResponse
    from minibroker.broker.context import RequestContext
    from minibroker.broker.share_sessions import ShareSession
    from minibroker.coordinator.share_partition import SharePartition

API_KEY = 78

log = structlog.get_logger("broker.share_fetch")


def _renew_problems(req: ShareFetchRequest) -> str:
    """v2 IsRenewAck: only acknowledgements, nothing fetched (Kafka's message, logged)."""
    text = ""
    if req.max_bytes != 0:
        text += "maxBytes must be set to 0, "
    if req.min_bytes != 0:
        text += "minBytes must be set to 0, "
    if req.max_records != 0:
        text += "maxRecords must be set to 0, "
    if millis(req.max_wait) != 0:
        text += "maxWaitMs must be set to 0, "
    return text


def _refusal(ctx: RequestContext, req: ShareFetchRequest) -> ErrorCode | None:
    """The top-level checks before the share session (KafkaApis's order)."""
    if not share_groups_enabled(ctx.broker):
        return ErrorCode.unsupported_version
    group_id = req.group_id
    if group_id is None:
        log.debug("share fetch refused: Invalid group id in the request.", client_id=ctx.client_id)
        return ErrorCode.invalid_request
    if not ctx.allowed(Op.READ, Res.GROUP, group_id):
        return ErrorCode.group_authorization_failed
    if not member_id_valid(req.member_id):
        log.debug("share fetch refused: Invalid member id in the request.", client_id=ctx.client_id)
        return ErrorCode.invalid_request
    if ctx.api_version >= 2 and field(req, "is_renew_ack", False):
        problems = _renew_problems(req)
        if problems:
            log.info(
                "share fetch refused", reason=problems + "if isRenewAck is true.", client_id=ctx.client_id
            )
            return ErrorCode.invalid_request
    return None


async def handle(ctx: RequestContext, req: ShareFetchRequest) -> ShareFetchResponse:
    broker = ctx.broker
    version = ctx.api_version
    refused = _refusal(ctx, req)
    if refused is not None:
        return error_response(ctx, refused)
    group_id, member_id = req.group_id, req.member_id
    assert group_id is not None and member_id is not None
    is_renew_ack = version >= 2 and bool(field(req, "is_renew_ack", False))
    names = broker.logs.topic_names
    epoch = req.share_session_epoch
    acknowledging = any(p.acknowledgement_batches for t in req.topics for p in t.partitions)
    wanted: list[tuple[PartitionId, str | None]] = [
        ((request_topic_id(t), p.partition_index), names.get(request_topic_id(t)))
        for t in req.topics
        for p in t.partitions
    ]
    forgotten: list[PartitionId] = [
        (request_topic_id(t), p) for t in req.forgotten_topics_data for p in t.partitions
    ]
    context = broker.share_sessions.fetch_context(
        group_id, member_id, epoch, wanted, forgotten, acknowledging, ctx.connection_id
    )
    if context.error == ErrorCode.share_session_limit_reached:
        # Kafka parks the request for MaxWaitMs (an idle timer task), then answers the error
        await asyncio.sleep(max(millis(req.max_wait), 0) / 1000)
        return error_response(ctx, context.error)
    if context.error:
        return error_response(ctx, context.error)
    session = context.session
    expected_epoch = session.epoch if session is not None else None

    # the topics asked for, in the request or the session: READ on each
    asked = {name for _pid, name in wanted if name is not None}
    asked.update(name for _pid, name in context.partitions if name is not None)
    authorized = authorized_topics(ctx, asked)

    acks: dict[PartitionId, AckAnswer] = {}
    if acknowledging:
        data, erroneous = ack_data(broker, req.topics)
        acks = await acknowledge(
            ctx,
            group_id,
            member_id,
            data,
            erroneous,
            authorized,
            renew_supported=version == 2,
            is_renew_ack=is_renew_ack,
        )
        # Fetches of other members parked on these share-partitions were woken by the records
        # these acknowledgements freed: let them acquire first (their wake-up is two loop hops
        # away: DataWaiters' future, then wait_for's). Kafka processes a ShareFetch's acks and its
        # fetch concurrently, so the acking member's own fetch finds the records still locked and
        # waits behind the others; without this one member re-acquiring in the same request
        # keeps a shared partition's lock limit for itself (3 members on 2 partitions: one got
        # nothing in bench/share_groups.py).
        for _ in range(2):
            await asyncio.sleep(0)

    answers: dict[PartitionId, PartitionFetch] = {}
    if not is_renew_ack and context.kind != "final":
        answers = await _fetch(ctx, req, group_id, member_id, context.partitions, authorized)

    if context.kind == "subsequent":
        assert session is not None
        if session.epoch != expected_epoch or broker.share_sessions.get(group_id, member_id) is not session:
            log.debug("share session moved on while its fetch waited", group_id=group_id, member_id=member_id)
            return error_response(ctx, ErrorCode.invalid_share_session_epoch)
        answers = _incremental(session, answers)

    if epoch == FINAL_EPOCH:
        await close_session(ctx, group_id, member_id)
    leader_error = any(out.error_code in LEADER_ERRORS for out in answers.values())
    return share_response(ctx, group_id, _topics(ctx, answers, acks), leader_error)


def _incremental(
    session: ShareSession, answers: dict[PartitionId, PartitionFetch]
) -> dict[PartitionId, PartitionFetch]:
    """An incremental session answers the partitions with records, an error, or just added
    (ShareSessionContext.updateAndGenerateResponseData); those with records go last."""
    kept: dict[PartitionId, PartitionFetch] = {}
    for pid, out in answers.items():
        cached = session.partitions.get(pid)
        if cached is None or cached.must_respond(out.error_code, len(out.records)):
            kept[pid] = out
            if out.records:
                session.moved_last(pid)
    return kept


async def _fetch(
    ctx: RequestContext,
    req: ShareFetchRequest,
    group_id: str,
    member_id: str,
    partitions: tuple[tuple[PartitionId, str | None], ...],
    authorized: set[str],
) -> dict[PartitionId, PartitionFetch]:
    """KafkaApis.handleFetchFromShareFetchRequest and SharePartitionManager.processShareFetch:
    the partitions read (in order), then those refused."""
    broker = ctx.broker
    manager = broker.share_partitions
    erroneous: dict[PartitionId, PartitionFetch] = {}
    interested: list[tuple[PartitionId, str]] = []
    for pid, topic in partitions:
        if topic is None:
            erroneous[pid] = PartitionFetch(ErrorCode.unknown_topic_id)
        elif topic not in authorized:
            erroneous[pid] = PartitionFetch(ErrorCode.topic_authorization_failed)
        elif broker.get_log(topic, pid[1]) is None:
            erroneous[pid] = PartitionFetch(ErrorCode.unknown_topic_or_partition)
        else:
            interested.append((pid, topic))
    if not interested:
        return erroneous
    max_bytes = min(req.max_bytes, broker.config["fetch.max.bytes"])
    min_bytes = min(req.min_bytes, max_bytes)
    max_records = req.max_records
    if max_records == 0 or max_bytes == 0:
        return erroneous
    loaded: list[tuple[SharePartition, str]] = []
    pids: dict[SharePartitionKey, PartitionId] = {}
    for pid, topic in interested:
        key = SharePartitionKey(group_id, pid[0], pid[1])
        error, sp = await manager.load(key, topic)
        if sp is None:
            erroneous[pid] = PartitionFetch(error)
            continue
        loaded.append((sp, topic))
        pids[key] = pid
    out: dict[PartitionId, PartitionFetch] = {}
    if loaded:
        mode = AcquireMode(int(field(req, "share_acquire_mode", 0)))
        fetched = await manager.fetch(
            member_id,
            loaded,
            max_wait_ms=millis(req.max_wait),
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            max_records=max_records,
            batch_size=req.batch_size,
            mode=mode,
        )
        for key, answer in fetched.items():
            out[pids[key]] = answer
    out.update(erroneous)
    return out


def _topics(
    ctx: RequestContext, answers: dict[PartitionId, PartitionFetch], acks: dict[PartitionId, AckAnswer]
) -> list[dict[str, Any]]:
    """The answer per topic: the fetched partitions, each with its acknowledgement's outcome;
    acknowledged partitions not fetched follow in their topic (or a topic of their own), as
    KafkaApis combines them."""
    broker = ctx.broker
    names = broker.logs.topic_names
    by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for (topic_id, partition), out in answers.items():
        ack_code, ack_message = acks.pop((topic_id, partition), (0, None))
        leader = {"leader_id": 0, "leader_epoch": 0}
        if out.error_code in LEADER_ERRORS:
            plog = broker.get_log(names.get(topic_id, ""), partition)
            leader = {"leader_id": broker.node_id, "leader_epoch": plog.leader_epoch if plog else -1}
        by_topic.setdefault(topic_id, []).append(
            {
                "partition_index": partition,
                "error_code": out.error_code,
                "error_message": None,  # Kafka's answer drops it (getResponsePartitionData)
                "acknowledge_error_code": ack_code,
                "acknowledge_error_message": ack_message,
                "current_leader": leader,
                "records": out.records,
                "acquired_records": [
                    {
                        "first_offset": r.first_offset,
                        "last_offset": r.last_offset,
                        "delivery_count": r.delivery_count,
                    }
                    for r in out.acquired
                ],
            }
        )
    for (topic_id, partition), (ack_code, ack_message) in acks.items():
        by_topic.setdefault(topic_id, []).append(
            {
                "partition_index": partition,
                "error_code": 0,
                "acknowledge_error_code": ack_code,
                "acknowledge_error_message": ack_message,
                "current_leader": {"leader_id": 0, "leader_epoch": 0},
                "records": b"",
                "acquired_records": [],
            }
        )
    return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in by_topic.items()]
