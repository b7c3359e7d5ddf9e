"""ConsumerGroupHeartbeat (68): a KIP-848 consumer's join, heartbeat and leave
(coordinator/consumer_groups.py). Validated here as Kafka's GroupCoordinatorService does
(INVALID_REQUEST with Kafka's messages, UNSUPPORTED_ASSIGNOR) before the coordinator sees it."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from minibroker.broker.handlers.join_group import client_host
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.coordinator.consumer_groups import ConsumerHeartbeat, HeartbeatAnswer, TopicFilter
from minibroker.coordinator.java_order import hash_string, java_hash_order
from minibroker.protocol.codec import field, millis
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
    from minibroker.broker.context import RequestContext
    from minibroker.coordinator.share_groups import ShareHeartbeatAnswer

API_KEY = 68

E = ErrorCode


class Invalid(Exception):
    """A heartbeat (ConsumerGroupHeartbeat or ShareGroupHeartbeat) refused before the coordinator
    sees it: its error code and Kafka's message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def blank(value: str | None) -> bool:
    """Kafka's throwIfEmptyString test: non-null and empty once trimmed."""
    return value is not None and not value.strip()


def validate(req: Any, api_version: int, assignors: Collection[str]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid, in its order; raises Invalid."""
    epoch = req.member_epoch
    if (api_version >= 1 or epoch > 0 or epoch == -1) and blank(req.member_id):
        raise Invalid(E.invalid_request, "MemberId can't be empty.")
    if blank(req.group_id):
        raise Invalid(E.invalid_request, "GroupId can't be empty.")
    if blank(req.instance_id):
        raise Invalid(E.invalid_request, "InstanceId can't be empty.")
    if blank(req.rack_id):
        raise Invalid(E.invalid_request, "RackId can't be empty.")
    if epoch == 0:
        if millis(req.rebalance_timeout) == -1:
            raise Invalid(E.invalid_request, "RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or len(req.topic_partitions) > 0:
            raise Invalid(E.invalid_request, "TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and field(req, "subscribed_topic_regex", None) is None:
            raise Invalid(
                E.invalid_request,
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            )
    elif epoch == -2:
        if req.instance_id is None:
            raise Invalid(E.invalid_request, "InstanceId can't be null.")
    elif epoch < -2:
        raise Invalid(E.invalid_request, "MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in assignors:
        # Kafka joins the names of a HashSet: its iteration order
        supported = ", ".join(java_hash_order(dict.fromkeys(assignors), hash_string))
        raise Invalid(
            E.unsupported_assignor,
            f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: {supported}.",
        )


def heartbeat_response(ctx: RequestContext, answer: HeartbeatAnswer | ShareHeartbeatAnswer) -> Any:
    """The ConsumerGroupHeartbeat or ShareGroupHeartbeat response of the coordinator's answer."""
    assignment = None
    if answer.assignment is not None:
        assignment = dict(
            topic_partitions=[dict(topic_id=t, partitions=list(parts)) for t, parts in answer.assignment]
        )
    return ctx.response(
        throttle_time_ms=0,
        error_code=answer.error_code,
        error_message=answer.error_message,
        member_id=answer.member_id,
        member_epoch=answer.member_epoch,
        heartbeat_interval_ms=answer.heartbeat_interval_ms,
        assignment=assignment,
    )


def _topic_filter(ctx: RequestContext) -> TopicFilter | None:
    """With an authorizer, a regex resolves only to topics the member may describe (Kafka's
    TopicRegexResolver); None without one."""
    if ctx.broker.security.authorizer is None:
        return None
    return lambda names: [name for name in names if ctx.allowed(Op.DESCRIBE, Res.TOPIC, name)]


async def handle(ctx: RequestContext, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    broker = ctx.broker
    # the consumer rebalance protocol needs group.version 1 (Kafka answers UNSUPPORTED_VERSION)
    if broker.features.level("group.version") < 1:
        return heartbeat_response(ctx, HeartbeatAnswer(error_code=E.unsupported_version))
    # authorization (Kafka: READ on the group, then DESCRIBE on every subscribed topic)
    if not ctx.allowed(Op.READ, Res.GROUP, req.group_id):
        return heartbeat_response(ctx, HeartbeatAnswer(error_code=E.group_authorization_failed))
    names = req.subscribed_topic_names
    if names and not all(ctx.allowed(Op.DESCRIBE, Res.TOPIC, name) for name in set(names)):
        return heartbeat_response(ctx, HeartbeatAnswer(error_code=E.topic_authorization_failed))
    groups = broker.groups
    try:
        validate(req, ctx.api_version, groups.settings.consumer_assignors)
    except Invalid as invalid:
        return heartbeat_response(
            ctx, HeartbeatAnswer(error_code=invalid.code, error_message=invalid.message)
        )
    if not groups.coordinates(req.group_id):
        return heartbeat_response(ctx, HeartbeatAnswer(error_code=E.not_coordinator))
    owned = req.topic_partitions
    request = ConsumerHeartbeat(
        api_version=ctx.api_version,
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
        instance_id=req.instance_id,
        rack_id=req.rack_id,
        rebalance_timeout_ms=millis(req.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=field(req, "subscribed_topic_regex", None),
        server_assignor=req.server_assignor,
        owned=None
        if owned is None
        else tuple((tp.topic_id, tuple(tp.partitions)) for tp in owned if tp.topic_id is not None),
        client_id=ctx.client_id or "",
        client_host=client_host(ctx.peer),
        topic_filter=_topic_filter(ctx),
    )
    answer = await broker.coordinators.run(groups, groups.consumer.heartbeat(request))
    return heartbeat_response(ctx, answer)
