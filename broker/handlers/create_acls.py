"""CreateAcls (30): store ACL bindings (needs ALTER on the cluster; SECURITY_DISABLED without an
authorizer, as Kafka answers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME, AclBinding, InvalidAcl
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import CreateAclsRequest, CreateAclsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 30


def _result(error: ErrorCode, message: str | None = None) -> dict:
    return dict(error_code=error, error_message=message)


async def handle(ctx: RequestContext, req: CreateAclsRequest) -> CreateAclsResponse:
    authorizer = ctx.broker.security.authorizer
    if authorizer is None:
        results = [
            _result(ErrorCode.security_disabled, "No Authorizer is configured.") for _ in req.creations
        ]
        return ctx.response(throttle_time_ms=0, results=results)
    if not ctx.allowed(Op.ALTER, Res.CLUSTER, CLUSTER_NAME):
        return ctx.response(
            throttle_time_ms=0,
            results=[_result(ErrorCode.cluster_authorization_failed) for _ in req.creations],
        )
    results, valid = [], []
    for c in req.creations:
        binding = AclBinding.of_creation(c)
        try:
            binding.validate()
        except InvalidAcl as exc:
            results.append(_result(ErrorCode.invalid_request, str(exc)))
            continue
        valid.append(binding)
        results.append(_result(ErrorCode.none))
    if valid:
        authorizer.store.add(valid)
    return ctx.response(throttle_time_ms=0, results=results)
