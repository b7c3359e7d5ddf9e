"""DeleteAcls (31): remove the ACL bindings matching each filter (needs ALTER on the cluster)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME, AclFilter, InvalidAcl
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DeleteAclsFilter, DeleteAclsRequest, DeleteAclsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 31


def _failed(error: ErrorCode, message: str | None) -> dict:
    return dict(error_code=error, error_message=message, matching_acls=[])


async def handle(ctx: RequestContext, req: DeleteAclsRequest) -> DeleteAclsResponse:
    authorizer = ctx.broker.security.authorizer
    if authorizer is None:
        return ctx.response(
            throttle_time_ms=0,
            filter_results=[
                _failed(ErrorCode.security_disabled, "No Authorizer is configured.") for _ in req.filters
            ],
        )
    if not ctx.allowed(Op.ALTER, Res.CLUSTER, CLUSTER_NAME):
        return ctx.response(
            throttle_time_ms=0,
            filter_results=[_failed(ErrorCode.cluster_authorization_failed, None) for _ in req.filters],
        )
    filters, problems = [], {}
    wanted: Sequence[DeleteAclsFilter] = req.filters
    for i, f in enumerate(wanted):
        acl_filter = AclFilter.of_request(f)
        try:
            acl_filter.validate()
            filters.append(acl_filter)
        except InvalidAcl as exc:
            problems[i] = str(exc)
    matched = iter(authorizer.store.remove(filters))
    results = []
    for i in range(len(req.filters)):
        if i in problems:
            results.append(_failed(ErrorCode.invalid_request, problems[i]))
            continue
        results.append(
            dict(
                error_code=ErrorCode.none,
                error_message=None,
                matching_acls=[
                    dict(
                        error_code=ErrorCode.none,
                        error_message=None,
                        resource_type=a.resource_type,
                        resource_name=a.resource_name,
                        pattern_type=a.pattern_type,
                        principal=a.principal,
                        host=a.host,
                        operation=a.operation,
                        permission_type=a.permission,
                    )
                    for a in next(matched)
                ],
            )
        )
    return ctx.response(throttle_time_ms=0, filter_results=results)
