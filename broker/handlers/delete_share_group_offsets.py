"""DeleteShareGroupOffsets (92), v0: a share group's state of whole topics deleted
(kafka-share-groups.sh --delete-offsets), as Kafka 4.4's KafkaApis, GroupCoordinatorService and
GroupCoordinatorShard do it: UNSUPPORTED_VERSION below share.version 1, DELETE on the group, READ
on each topic (refused topics answered first, TOPIC_AUTHORIZATION_FAILED); the group must exist
and be Empty (GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP, group-level); a topic that does not exist, or
has no share state in the group, UNKNOWN_TOPIC_OR_PARTITION ("There is no offset information to
delete."). The others are forgotten by the group (the next subscription initializes them again,
with share.auto.offset.reset) and their share state gets tombstones in __share_group_state."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from minibroker.broker.handlers.alter_share_group_offsets import (
    coordinator_refusal,
    group_refusal,
    message,
    refused,
)
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.coordinator.share_types import SharePartitionKey
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 92

E = ErrorCode
ZERO_UUID = uuid.UUID(int=0)
NO_OFFSETS = "There is no offset information to delete."


def _topic(name: str, error: int, text: str | None, topic_id: uuid.UUID = ZERO_UUID) -> dict[str, Any]:
    return dict(topic_name=name, topic_id=topic_id, error_code=error, error_message=text)


async def handle(ctx: RequestContext, req: DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse:
    broker = ctx.broker
    group_id = req.group_id
    if (early := group_refusal(ctx, Op.DELETE, group_id)) is not None:
        return refused(ctx, early)
    denied = []
    authorized: list[str] = []
    for topic in req.topics:
        if ctx.allowed(Op.READ, Res.TOPIC, topic.topic_name):
            authorized.append(topic.topic_name)
        else:
            denial = E.topic_authorization_failed
            denied.append(_topic(topic.topic_name, denial, message(denial)))
    if (early := coordinator_refusal(ctx, group_id)) is not None:
        return refused(ctx, early)
    groups = broker.groups
    share = broker.share_coordinator
    initialized = groups.share.initialized_partitions(group_id)
    failed = []
    chosen: dict[uuid.UUID, str] = {}
    for name in authorized:
        info = broker.logs.topics.get(name)
        if info is None:
            failed.append(_topic(name, E.unknown_topic_or_partition, message(E.unknown_topic_or_partition)))
        elif info.topic_id in initialized:
            chosen[info.topic_id] = name
        else:
            failed.append(_topic(name, E.unknown_topic_or_partition, NO_OFFSETS))
    refusal, text = await broker.coordinators.run(groups, groups.share.delete_offsets(group_id, list(chosen)))
    if refusal != E.none:
        return refused(ctx, refusal, text)
    deleted = []
    held = share.keys_of_group(group_id)
    for topic_id, topic_name in chosen.items():
        keys = {SharePartitionKey(group_id, topic_id, p) for p in initialized[topic_id]}
        keys.update(key for key in held if key.topic_id == topic_id)
        error = await broker.coordinators.run(share, share.delete_state(sorted(keys)))
        if error == E.none:
            deleted.append(_topic(topic_name, E.none, None, topic_id))
        else:
            failed.append(_topic(topic_name, error, message(error), topic_id))
    return ctx.response(
        throttle_time_ms=0, error_code=E.none, error_message=None, responses=denied + deleted + failed
    )
