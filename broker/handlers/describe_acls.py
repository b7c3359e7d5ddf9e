"""DescribeAcls (29): list the ACL bindings matching a filter (needs DESCRIBE on the cluster)."""

from __future__ import annotations

from itertools import groupby
from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME, AclFilter, InvalidAcl
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DescribeAclsRequest, DescribeAclsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 29


def _refused(ctx: RequestContext, error_code: int, message: str | None) -> DescribeAclsResponse:
    return ctx.response(throttle_time_ms=0, error_code=error_code, error_message=message, resources=[])


async def handle(ctx: RequestContext, req: DescribeAclsRequest) -> DescribeAclsResponse:
    authorizer = ctx.broker.security.authorizer
    if authorizer is None:
        return _refused(ctx, ErrorCode.security_disabled, "No Authorizer is configured.")
    if not ctx.allowed(Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME):
        return _refused(ctx, ErrorCode.cluster_authorization_failed, None)
    acl_filter = AclFilter.of_request(req)
    try:
        acl_filter.validate()
    except InvalidAcl as exc:
        return _refused(ctx, ErrorCode.invalid_request, str(exc))
    resource = lambda a: (a.resource_type, a.resource_name, a.pattern_type)  # noqa: E731
    matched = sorted(authorizer.store.find(acl_filter), key=resource)
    resources = [
        dict(
            resource_type=rt,
            resource_name=name,
            pattern_type=pt,
            acls=[
                dict(principal=a.principal, host=a.host, operation=a.operation, permission_type=a.permission)
                for a in acls
            ],
        )
        for (rt, name, pt), acls in groupby(matched, key=resource)
    ]
    return ctx.response(
        throttle_time_ms=0, error_code=ErrorCode.none, error_message=None, resources=resources
    )
