"""DescribeUserScramCredentials (50): mechanisms and iteration counts per user, never secrets
(needs DESCRIBE on the cluster)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.security.scram_store import BY_NAME
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        DescribeUserScramCredentialsRequest,
        DescribeUserScramCredentialsResponse,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 50


def _user_error(name: str, error_code: int, message: str) -> dict:
    return dict(user=name, error_code=error_code, error_message=message, credential_infos=[])


async def handle(
    ctx: RequestContext, req: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    store = ctx.broker.security.scram
    if not ctx.allowed(Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME):
        refused = ErrorCode.cluster_authorization_failed
        return ctx.response(throttle_time_ms=0, error_code=refused, error_message=None, results=[])
    names = [u.name for u in req.users] if req.users else sorted(store.users)
    results, seen = [], set()
    for name in names:
        if name in seen:
            results.append(
                _user_error(name, ErrorCode.duplicate_resource, f"Cannot describe user {name} more than once")
            )
            continue
        seen.add(name)
        creds = store.users.get(name)
        if not creds:
            message = f"Attempt to describe a user credential that does not exist: {name}"
            results.append(_user_error(name, ErrorCode.resource_not_found, message))
            continue
        results.append(
            dict(
                user=name,
                error_code=ErrorCode.none,
                error_message=None,
                credential_infos=[
                    dict(mechanism=BY_NAME[mech][0], iterations=cred.iterations)
                    for mech, cred in sorted(creds.items())
                ],
            )
        )
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.none, error_message=None, results=results)
