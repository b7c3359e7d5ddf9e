"""ShareGroupHeartbeat (76), v1: a KIP-932 share consumer's join, heartbeat and leave
(coordinator/share_groups.py). Checked here as Kafka 4.4's KafkaApis and GroupCoordinatorService
check it, in their order: share.version 1 (UNSUPPORTED_VERSION), READ on the group, the member
id (KafkaApis.isMemberIdValid: set and at most 36 characters, else INVALID_REQUEST with no
message: its getErrorResponse drops it), DESCRIBE on every subscribed topic, then the
coordinator's INVALID_REQUEST messages ("MemberId can't be empty." ...).

After the coordinator's answer, the share-partitions it lists get their share state (Kafka's
persisterInitialize: InitializeShareGroupState with the group epoch as state epoch and start
offset -1, which the share-partition resolves with share.auto.offset.reset at its first fetch);
only then are they assignable, so the member sees them on a later heartbeat, as on Kafka. Those
whose initialization failed are handed back (partitions_uninitialized), asked for again by the
next heartbeat."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import structlog
from minibroker.broker.handlers.consumer_group_heartbeat import Invalid, blank, heartbeat_response
from minibroker.broker.handlers.join_group import client_host
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.coordinator.share_groups import ShareHeartbeat, ShareHeartbeatAnswer
from minibroker.coordinator.share_types import SharePartitionKey
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    import uuid

    from minibroker.broker.api_types import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 76

E = ErrorCode

log = structlog.get_logger("minibroker.broker.share_groups")

#: KafkaApis.isMemberIdValid: a Uuid string is 22 characters, Kafka allows up to 36
MAX_MEMBER_ID_LENGTH = 36


def validate(req: Any) -> None:
    """GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid; raises Invalid."""
    if blank(req.member_id):
        raise Invalid(E.invalid_request, "MemberId can't be empty.")
    if blank(req.group_id):
        raise Invalid(E.invalid_request, "GroupId can't be empty.")
    if blank(req.rack_id):
        raise Invalid(E.invalid_request, "RackId can't be empty.")
    if req.member_epoch == 0:
        if not req.subscribed_topic_names:
            raise Invalid(E.invalid_request, "SubscribedTopicNames must be set in first request.")
    elif req.member_epoch < -1:
        raise Invalid(E.invalid_request, "MemberEpoch is invalid.")


async def handle(ctx: RequestContext, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
    broker = ctx.broker
    if broker.features.level("share.version") < 1:
        return heartbeat_response(ctx, ShareHeartbeatAnswer(error_code=E.unsupported_version))
    if not ctx.allowed(Op.READ, Res.GROUP, req.group_id):
        return heartbeat_response(ctx, ShareHeartbeatAnswer(error_code=E.group_authorization_failed))
    member_id = req.member_id
    if not member_id or len(member_id) > MAX_MEMBER_ID_LENGTH:
        return heartbeat_response(ctx, ShareHeartbeatAnswer(error_code=E.invalid_request))
    names = req.subscribed_topic_names
    if names and not all(ctx.allowed(Op.DESCRIBE, Res.TOPIC, name) for name in set(names)):
        return heartbeat_response(ctx, ShareHeartbeatAnswer(error_code=E.topic_authorization_failed))
    try:
        validate(req)
    except Invalid as invalid:
        return heartbeat_response(
            ctx, ShareHeartbeatAnswer(error_code=invalid.code, error_message=invalid.message)
        )
    groups = broker.groups
    if not groups.coordinates(req.group_id):
        return heartbeat_response(ctx, ShareHeartbeatAnswer(error_code=E.not_coordinator))
    request = ShareHeartbeat(
        group_id=req.group_id,
        member_id=member_id,
        member_epoch=req.member_epoch,
        rack_id=req.rack_id,
        subscribed_topic_names=None if names is None else tuple(names),
        client_id=ctx.client_id or "",
        client_host=client_host(ctx.peer),
    )
    answer = await broker.coordinators.run(groups, groups.share.heartbeat(request))
    if answer.initialize:
        await initialize_share_partitions(broker, req.group_id, answer.initialize, answer.state_epoch)
    return heartbeat_response(ctx, answer)


async def initialize_share_partitions(
    broker: HandlerServices,
    group_id: str,
    topics: Mapping[uuid.UUID, frozenset[int]],
    state_epoch: int,
) -> None:
    """Kafka's persisterInitialize for a heartbeat: share state (start offset -1) for each
    share-partition, then the group coordinator learns which ones have it (only those become
    assignable; a failed one is asked for again by a later heartbeat)."""
    share = broker.share_coordinator
    keys = [
        SharePartitionKey(group_id, topic_id, partition)
        for topic_id, partitions in topics.items()
        for partition in sorted(partitions)
    ]
    # one operation per share-partition, run together: their writes share the fsyncs
    errors = await asyncio.gather(
        *(broker.coordinators.run(share, share.initialize_state(key, state_epoch, -1)) for key in keys)
    )
    done: dict[uuid.UUID, frozenset[int]] = {}
    failed: dict[uuid.UUID, frozenset[int]] = {}
    for key, error in zip(keys, errors, strict=True):
        into = done if error == E.none else failed
        into[key.topic_id] = into.get(key.topic_id, frozenset()) | {key.partition}
        if error != E.none:
            log.warning(
                "share-partition state not initialized; the next heartbeat asks again",
                group=group_id,
                topic_id=str(key.topic_id),
                partition=key.partition,
                error=E(error).name,
            )
    groups = broker.groups
    if done:
        await broker.coordinators.run(groups, groups.share.partitions_initialized(group_id, done))
    if failed:  # Kafka's uninitializeShareGroupState: no wait for the retry interval
        await broker.coordinators.run(groups, groups.share.partitions_uninitialized(group_id, failed))
