"""DeleteGroups (42): only Empty groups can be deleted (NON_EMPTY_GROUP otherwise); their
offsets and metadata get tombstones in __consumer_offsets. v3 (kio lacks it:
protocol/delete_groups_v3.py) adds a per-group error_message, which Kafka leaves null for
every error this coordinator gives (it explains only GROUP_DELETION_FAILED).

A KIP-932 share group (Kafka's GroupCoordinatorService.deleteShareGroups, then deleteGroups):
Empty or NON_EMPTY_GROUP; the share state of all its share-partitions is deleted in the share
coordinator (tombstones in __share_group_state) before the group's own tombstones."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.coordinator.share_types import SharePartitionKey
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DeleteGroupsRequest, DeleteGroupsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 42


async def handle(ctx: RequestContext, req: DeleteGroupsRequest) -> DeleteGroupsResponse:
    # authorization (Kafka: DELETE on each group)
    denied = [g for g in req.groups_names if not ctx.allowed(Op.DELETE, Res.GROUP, g)]
    groups = ctx.broker.groups
    allowed = [g for g in req.groups_names if g not in denied]
    shared = [g for g in allowed if groups.group_type(g) == "share"]
    others = [g for g in allowed if g not in shared]
    answered = await ctx.broker.coordinators.run(groups, groups.delete_groups(others)) if others else {}
    for group_id in shared:
        answered[group_id] = await delete_share_group(ctx, group_id)
    results = {g: answered[g] for g in allowed}  # in request order, share groups among the others
    results.update({g: ErrorCode.group_authorization_failed for g in denied})
    return ctx.response(
        throttle_time_ms=0,
        results=[dict(group_id=g, error_code=e, error_message=None) for g, e in results.items()],
    )


async def delete_share_group(ctx: RequestContext, group_id: str) -> int:
    """An Empty share group's share state deleted, then the group (its tombstones)."""
    broker = ctx.broker
    groups = broker.groups
    if not groups.coordinates(group_id):
        return ErrorCode.not_coordinator
    described = groups.share.describe([group_id])[0]
    if described["error_code"] != ErrorCode.none:
        return int(described["error_code"])
    if described["group_state"] != "Empty":
        return ErrorCode.non_empty_group
    share = broker.share_coordinator
    keys = set(share.keys_of_group(group_id))
    for topic_id, partitions in groups.share.initialized_partitions(group_id).items():
        keys.update(SharePartitionKey(group_id, topic_id, p) for p in partitions)
    if keys:
        error = await broker.coordinators.run(share, share.delete_state(sorted(keys)))
        if error != ErrorCode.none:
            return int(error)
    return int(await broker.coordinators.run(groups, groups.share.delete_group(group_id)))
