"""ShareGroupDescribe (77), v1: share groups as Kafka describes them (state Empty/Stable, group
and assignment epochs, assignor "simple", members with their subscriptions and assignments).
As Kafka 4.4's KafkaApis.handleShareGroupDescribe: UNSUPPORTED_VERSION for every group below
share.version 1; the groups the principal may not DESCRIBE first, GROUP_AUTHORIZATION_FAILED;
an empty id INVALID_GROUP_ID; an unknown group or one of another type GROUP_ID_NOT_FOUND (the
coordinator's messages); authorized operations only when asked, for described groups; with an
authorizer, a group whose members' assignments name a topic the principal may not DESCRIBE is
answered TOPIC_AUTHORIZATION_FAILED with no members. Assigned topics are named from their ids
(a topic deleted since is left out)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minibroker.broker.handlers.consumer_group_describe import refused, unless_topics_unauthorized
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.security.authorizer import OPERATIONS_NOT_REQUESTED
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    import uuid
    from collections.abc import Mapping

    from minibroker.broker.api_types import ShareGroupDescribeRequest, ShareGroupDescribeResponse
    from minibroker.broker.context import RequestContext

API_KEY = 77


async def handle(ctx: RequestContext, req: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse:
    broker = ctx.broker
    if broker.features.level("share.version") < 1:
        out = [refused(g, ErrorCode.unsupported_version) for g in req.group_ids]
        return ctx.response(throttle_time_ms=0, groups=out)
    include_ops = bool(field(req, "include_authorized_operations", False))
    out = []
    allowed = []
    for group_id in req.group_ids:
        if ctx.allowed(Op.DESCRIBE, Res.GROUP, group_id):
            allowed.append(group_id)
        else:
            out.append(refused(group_id, ErrorCode.group_authorization_failed))
    # GroupCoordinatorService.shareGroupDescribe: empty ids first, then the coordinator's answers
    out.extend(refused("", ErrorCode.invalid_group_id) for g in allowed if not g)
    groups = broker.groups
    named = [g for g in allowed if g]
    not_coordinated = {g for g in named if not groups.coordinates(g)}
    described = groups.share.describe([g for g in named if g not in not_coordinated]) if named else []
    answers = iter(described)
    for group_id in named:
        if group_id in not_coordinated:
            out.append(refused(group_id, ErrorCode.not_coordinator))
            continue
        entry = _named(dict(next(answers)), broker.logs.topic_names)
        if include_ops and entry["error_code"] == ErrorCode.none:
            entry["authorized_operations"] = ctx.authorized_operations(Res.GROUP, entry["group_id"])
        else:
            entry["authorized_operations"] = OPERATIONS_NOT_REQUESTED
        out.append(entry)
    if broker.security.authorizer is not None:
        out = [_without_unauthorized_topics(ctx, entry) for entry in out]
    return ctx.response(throttle_time_ms=0, groups=out)


def _named(entry: dict[str, Any], topic_names: Mapping[uuid.UUID, str]) -> dict[str, Any]:
    """The described group with every assigned topic named (topics no longer known left out)."""
    members = []
    for member in entry.get("members") or ():
        member = dict(member)
        assignment = member.get("assignment") or {}
        tps = []
        for tp in assignment.get("topic_partitions") or ():
            name = topic_names.get(tp["topic_id"])
            if name is not None:
                tps.append(dict(topic_id=tp["topic_id"], topic_name=name, partitions=list(tp["partitions"])))
        member["assignment"] = dict(topic_partitions=tps)
        members.append(member)
    entry["members"] = members
    return entry


def _without_unauthorized_topics(ctx: RequestContext, entry: dict[str, Any]) -> dict[str, Any]:
    """The group as described, or TOPIC_AUTHORIZATION_FAILED with no members when a member's
    assignment names a topic the principal may not DESCRIBE (KafkaApis, share groups)."""
    topics = {
        tp["topic_name"] for member in entry["members"] for tp in member["assignment"]["topic_partitions"]
    }
    return unless_topics_unauthorized(ctx, entry, topics)
