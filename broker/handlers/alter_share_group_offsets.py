"""AlterShareGroupOffsets (91), v0: a share group's start offsets set (kafka-share-groups.sh
--reset-offsets), as Kafka 4.4's KafkaApis, GroupCoordinatorService and GroupMetadataManager
do it: UNSUPPORTED_VERSION below share.version 1, READ on the group and on each topic, unknown
topics and partitions UNKNOWN_TOPIC_OR_PARTITION per partition; the group must be Empty
(NON_EMPTY_GROUP, a group-level error that drops the per-partition answers, as Kafka's). Each
share-partition then gets its share state again (InitializeShareGroupState): the requested start
offset, no in-flight records, and a new state epoch, which fences a share-partition loaded
before (its next write is refused and it loads the new state)."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.coordinator.share_types import SharePartitionKey
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from collections.abc import Mapping

    from minibroker.broker.api_types import AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse
    from minibroker.broker.context import RequestContext
    from minibroker.storage.log_manager import TopicInfo

API_KEY = 91

E = ErrorCode
ZERO_UUID = uuid.UUID(int=0)

#: Kafka's Errors.message() of the errors the share-group admin APIs answer with their default text
MESSAGES = {
    E.unsupported_version: "The version of API is not supported.",
    E.group_authorization_failed: "Group authorization failed.",
    E.topic_authorization_failed: "Topic authorization failed.",
    E.unknown_topic_or_partition: "This server does not host this topic-partition.",
    E.invalid_group_id: "The group id is invalid.",
    E.not_coordinator: "This is not the correct coordinator.",
    E.coordinator_not_available: "The coordinator is not available.",
    E.non_empty_group: "The group is not empty.",
    E.group_id_not_found: "The group id does not exist.",
}


def message(error: int) -> str | None:
    """Kafka's default message of an error (Errors.message()); None for one not listed."""
    return MESSAGES.get(ErrorCode(error))


def refused(ctx: RequestContext, error: int, text: str | None = None) -> Any:
    """AlterShareGroupOffsets' or DeleteShareGroupOffsets' group-level error: no topics, the
    coordinator's text or Kafka's default message."""
    return ctx.response(
        throttle_time_ms=0, error_code=error, error_message=text or message(error), responses=[]
    )


def group_refusal(ctx: RequestContext, operation: int, group_id: str) -> int | None:
    """The checks before the topics': UNSUPPORTED_VERSION below share.version 1, then
    GROUP_AUTHORIZATION_FAILED without `operation` on the group; None when both pass."""
    if ctx.broker.features.level("share.version") < 1:
        return E.unsupported_version
    if not ctx.allowed(operation, Res.GROUP, group_id):
        return E.group_authorization_failed
    return None


def coordinator_refusal(ctx: RequestContext, group_id: str) -> int | None:
    """The checks after the topics': INVALID_GROUP_ID for an empty id, NOT_COORDINATOR for a
    group this node does not coordinate; None when both pass."""
    if not group_id:
        return E.invalid_group_id
    if not ctx.broker.groups.coordinates(group_id):
        return E.not_coordinator
    return None


class _Answers:
    """The response's topics by name, in request order (Kafka's AlterShareGroupOffsetsResponse
    Builder); a topic's id is the one it has here (the zero id for an unknown topic)."""

    def __init__(self, infos: Mapping[str, TopicInfo]) -> None:
        self.infos = infos
        self.topics: dict[str, dict[str, Any]] = {}

    def add(self, name: str, partition: int, error: int = E.none) -> dict[str, Any]:
        info = self.infos.get(name)
        topic = self.topics.setdefault(
            name, dict(topic_name=name, topic_id=info.topic_id if info else ZERO_UUID, partitions=[])
        )
        entry = dict(partition_index=partition, error_code=error, error_message=message(error))
        topic["partitions"].append(entry)
        return entry


async def handle(ctx: RequestContext, req: AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse:
    broker = ctx.broker
    group_id = req.group_id
    if (early := group_refusal(ctx, Op.READ, group_id)) is not None:
        return refused(ctx, early)
    answers = _Answers(broker.logs.topics)
    authorized = []
    for topic in req.topics:
        error = E.none
        if not ctx.allowed(Op.READ, Res.TOPIC, topic.topic_name):
            error = E.topic_authorization_failed
        elif topic.topic_name not in answers.infos:
            error = E.unknown_topic_or_partition
        if error != E.none:
            for p in topic.partitions:
                answers.add(topic.topic_name, p.partition_index, error)
        else:
            authorized.append(topic)
    if (early := coordinator_refusal(ctx, group_id)) is not None:
        return refused(ctx, early)
    groups = broker.groups
    # GroupMetadataManager.alterShareGroupOffsets: partitions the topic does not have are refused
    starts: list[tuple[SharePartitionKey, int, dict[str, Any]]] = []  # answered once initialized
    topics: dict[uuid.UUID, frozenset[int]] = {}
    for topic in authorized:
        info = answers.infos[topic.topic_name]
        for p in topic.partitions:
            if not 0 <= p.partition_index < info.num_partitions:
                answers.add(topic.topic_name, p.partition_index, E.unknown_topic_or_partition)
                continue
            key = SharePartitionKey(group_id, info.topic_id, p.partition_index)
            starts.append((key, p.start_offset, answers.add(topic.topic_name, p.partition_index)))
            topics[info.topic_id] = topics.get(info.topic_id, frozenset()) | {p.partition_index}
    refusal, text = await broker.coordinators.run(groups, groups.share.alter_offsets(group_id, topics))
    if refusal != E.none:
        return refused(ctx, refusal, text)
    await _initialize(ctx, group_id, starts)
    return ctx.response(
        throttle_time_ms=0, error_code=E.none, error_message=None, responses=list(answers.topics.values())
    )


async def _initialize(
    ctx: RequestContext, group_id: str, starts: list[tuple[SharePartitionKey, int, dict[str, Any]]]
) -> None:
    """Each share-partition's state initialized again at its new start offset. Kafka uses the
    group epoch as state epoch; never below the state's own + 1 here, so that a share-partition
    loaded from the old state is fenced."""
    broker = ctx.broker
    described = broker.groups.share.describe([group_id])
    group_epoch = int(described[0].get("group_epoch", 0)) if described else 0
    share = broker.share_coordinator

    def state_epoch(key: SharePartitionKey) -> int:
        summary = share.read_summary(key)
        return max(group_epoch, summary.state_epoch + 1 if summary.error_code == E.none else 0)

    # one operation per share-partition, run together: their writes share the fsyncs
    errors = await asyncio.gather(
        *(
            broker.coordinators.run(share, share.initialize_state(key, state_epoch(key), start))
            for key, start, _ in starts
        )
    )
    for (_, _, entry), error in zip(starts, errors, strict=True):
        if error != E.none:
            entry.update(error_code=error, error_message=message(error))
