"""DescribeShareGroupOffsets (90), v0-1: share groups' start offsets per share-partition, and
(v1) their lag, from the share coordinator's state summaries (Kafka's
ReadShareGroupStateSummary), as Kafka 4.4's KafkaApis and GroupCoordinatorService answer:

- per group: UNSUPPORTED_VERSION below share.version 1, GROUP_AUTHORIZATION_FAILED without
  DESCRIBE on the group (neither with a message);
- Topics null: every share-partition of the group with share state (the topics the principal may
  not DESCRIBE left out); Topics empty: no topics;
- named topics: the ones the principal may not DESCRIBE answered last, TOPIC_AUTHORIZATION_FAILED
  per partition; unknown topics with a zero topic id and start offset -1;
- a share-partition without state: start offset -1, leader epoch 0, lag -1, no error;
- Lag = high watermark - start offset - delivery-complete count (records acknowledged or
  archived above the start), -1 when the start or that count is unknown.

Kafka does not check that the group exists or is a share group here: neither does this."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from minibroker.broker.handlers.alter_share_group_offsets import message
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.coordinator.share_types import SharePartitionKey
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from collections.abc import Iterable

    from minibroker.broker.api_types import (
        DescribeShareGroupOffsetsRequest,
        DescribeShareGroupOffsetsResponse,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 90

E = ErrorCode
ZERO_UUID = uuid.UUID(int=0)


async def handle(
    ctx: RequestContext, req: DescribeShareGroupOffsetsRequest
) -> DescribeShareGroupOffsetsResponse:
    enabled = ctx.broker.features.level("share.version") >= 1
    out = []
    for group in req.groups:
        if not enabled:
            out.append(_group(group.group_id, [], E.unsupported_version))
        elif not ctx.allowed(Op.DESCRIBE, Res.GROUP, group.group_id):
            out.append(_group(group.group_id, [], E.group_authorization_failed))
        elif group.topics is None:
            if ctx.broker.groups.coordinates(group.group_id):
                out.append(_group(group.group_id, _all_topics(ctx, group.group_id)))
            else:  # the coordinator's read operation fails (Kafka: the error and its message)
                out.append(_group(group.group_id, [], E.not_coordinator, message(E.not_coordinator)))
        else:
            out.append(_group(group.group_id, _named_topics(ctx, group.group_id, group.topics)))
    return ctx.response(throttle_time_ms=0, groups=out)


def _group(
    group_id: str, topics: list[dict[str, Any]], error: int = E.none, text: str | None = None
) -> dict[str, Any]:
    return dict(group_id=group_id, topics=topics, error_code=error, error_message=text)


def _all_topics(ctx: RequestContext, group_id: str) -> list[dict[str, Any]]:
    """Every share-partition of the group with share state, of topics that still exist and the
    principal may DESCRIBE."""
    broker = ctx.broker
    initialized = broker.groups.share.initialized_partitions(group_id)
    names = broker.logs.topic_names
    out = []
    for topic_id, partitions in initialized.items():
        name = names.get(topic_id)
        if name is None or not ctx.allowed(Op.DESCRIBE, Res.TOPIC, name):
            continue
        out.append(_topic(ctx, group_id, name, topic_id, sorted(partitions)))
    return out


def _named_topics(ctx: RequestContext, group_id: str, topics: Iterable[Any]) -> list[dict[str, Any]]:
    known: list[dict[str, Any]] = []
    unknown: list[dict[str, Any]] = []
    denied: list[dict[str, Any]] = []
    infos = ctx.broker.logs.topics
    for topic in topics:
        name = topic.topic_name
        if not ctx.allowed(Op.DESCRIBE, Res.TOPIC, name):
            denied.append(_unanswered(name, topic.partitions, E.topic_authorization_failed))
            continue
        info = infos.get(name)
        if info is None:
            unknown.append(_unanswered(name, topic.partitions, E.none))
        else:
            known.append(_topic(ctx, group_id, name, info.topic_id, topic.partitions))
    return known + unknown + denied


def _unanswered(name: str, partitions: Iterable[int], error: int) -> dict[str, Any]:
    return dict(
        topic_name=name,
        topic_id=ZERO_UUID,
        partitions=[
            dict(
                partition_index=p,
                start_offset=-1,
                leader_epoch=0,
                lag=-1,
                error_code=error,
                error_message=message(error) if error else None,
            )
            for p in partitions
        ],
    )


def _topic(
    ctx: RequestContext, group_id: str, name: str, topic_id: uuid.UUID, partitions: Iterable[int]
) -> dict[str, Any]:
    share = ctx.broker.share_coordinator
    out = []
    for p in partitions:
        summary = share.read_summary(SharePartitionKey(group_id, topic_id, p))
        entry: dict[str, Any] = dict(
            partition_index=p, start_offset=-1, leader_epoch=0, lag=-1, error_code=E.none
        )
        if summary.error_code == E.none:
            entry["start_offset"] = summary.start_offset
            entry["leader_epoch"] = summary.leader_epoch
            if summary.start_offset != -1 and summary.delivery_complete_count != -1:
                plog = ctx.broker.get_log(name, p)
                if plog is None:
                    entry = dict(
                        partition_index=p,
                        start_offset=0,
                        leader_epoch=0,
                        lag=-1,
                        error_code=E.unknown_topic_or_partition,
                        error_message=message(E.unknown_topic_or_partition),
                    )
                else:
                    done = summary.delivery_complete_count
                    entry["lag"] = plog.high_watermark - summary.start_offset - done
        out.append(entry)
    return dict(topic_name=name, topic_id=topic_id, partitions=out)
