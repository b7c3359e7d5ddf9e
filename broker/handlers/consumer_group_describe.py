"""ConsumerGroupDescribe (69), v0-1: KIP-848 consumer groups as Kafka describes them (state,
group and assignment epochs, the preferred server assignor, members with their current
assignment, pending revocations included, and target assignment; v1 adds each member's type,
0 classic or 1 consumer). A group that does not exist, or is a classic group, answers
GROUP_ID_NOT_FOUND ("Group G not found." / "Group G is not a consumer group."), which the Java
Admin takes as its cue to describe it through DescribeGroups; an empty id INVALID_GROUP_ID.
With an authorizer, a group whose members' current or target assignments name a topic the
principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED with no members, as Kafka's
KafkaApis.handleConsumerGroupDescribe does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.security.authorizer import OPERATIONS_NOT_REQUESTED
from minibroker.coordinator.groups import described_group
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse
    from minibroker.broker.context import RequestContext

API_KEY = 69


def refused(group_id: str, error: int, message: str | None = None) -> dict[str, Any]:
    """A group ConsumerGroupDescribe or ShareGroupDescribe refuses: its error, nothing described."""
    return {**described_group(group_id, error, message), "authorized_operations": OPERATIONS_NOT_REQUESTED}


async def handle(ctx: RequestContext, req: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
    include_ops = bool(field(req, "include_authorized_operations", False))
    # authorization (Kafka: DESCRIBE on each group; the refused ones are answered first)
    denied = [g for g in req.group_ids if not ctx.allowed(Op.DESCRIBE, Res.GROUP, g)]
    allowed = [g for g in req.group_ids if g not in denied]
    out = [refused(g, ErrorCode.group_authorization_failed) for g in denied]
    for entry in ctx.broker.groups.describe_consumer_groups(allowed, ctx.broker.logs.topic_names):
        described = entry["error_code"] == ErrorCode.none
        entry["authorized_operations"] = (
            ctx.authorized_operations(Res.GROUP, entry["group_id"])
            if include_ops and described
            else OPERATIONS_NOT_REQUESTED
        )
        out.append(entry)
    if ctx.broker.security.authorizer is not None:
        out = [_without_unauthorized_topics(ctx, entry) for entry in out]
    return ctx.response(throttle_time_ms=0, groups=out)


UNAUTHORIZED_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


def _without_unauthorized_topics(ctx: RequestContext, entry: dict) -> dict:
    """The group as described, or TOPIC_AUTHORIZATION_FAILED with no members when one of its
    members' current or target assignments names a topic the principal may not DESCRIBE."""
    topics = {
        tp["topic_name"]
        for member in entry["members"]
        for assignment in (member["assignment"], member["target_assignment"])
        for tp in assignment["topic_partitions"]
    }
    return unless_topics_unauthorized(ctx, entry, topics)


def unless_topics_unauthorized(
    ctx: RequestContext, entry: dict[str, Any], topics: set[str]
) -> dict[str, Any]:
    """The group as described, or TOPIC_AUTHORIZATION_FAILED with no members when one of the
    topics its assignments name may not be DESCRIBEd by the principal (KafkaApis)."""
    if all(ctx.allowed(Op.DESCRIBE, Res.TOPIC, topic) for topic in topics):
        return entry
    return refused(entry["group_id"], ErrorCode.topic_authorization_failed, UNAUTHORIZED_TOPICS)
