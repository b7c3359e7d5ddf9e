"""AlterUserScramCredentials (51): add, replace or delete SCRAM credentials (needs ALTER on the
cluster). The client sends a salted password; only StoredKey/ServerKey are kept and persisted."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.security.scram import from_salted_password
from minibroker.broker.security.scram_store import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        AlterUserScramCredentialsRequest,
        AlterUserScramCredentialsResponse,
        ScramCredentialDeletion,
        ScramCredentialUpsertion,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 51


def _check(
    item: ScramCredentialDeletion | ScramCredentialUpsertion, counts: Counter[str]
) -> tuple[ErrorCode, str] | None:
    if not item.name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if counts[item.name] > 1:
        return ErrorCode.duplicate_resource, "A user credential cannot be altered twice in the same request"
    if item.mechanism not in MECHANISMS:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    iterations = field(item, "iterations", None)
    if iterations is not None:
        if iterations < MIN_ITERATIONS:
            return ErrorCode.unacceptable_credential, "Too few iterations"
        if iterations > MAX_ITERATIONS:
            return ErrorCode.unacceptable_credential, "Too many iterations"
    return None


async def handle(
    ctx: RequestContext, req: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    store = ctx.broker.security.scram
    everyone: list[ScramCredentialDeletion | ScramCredentialUpsertion] = [*req.deletions, *req.upsertions]
    if not ctx.allowed(Op.ALTER, Res.CLUSTER, CLUSTER_NAME):
        return ctx.response(
            throttle_time_ms=0,
            results=[
                dict(user=i.name, error_code=ErrorCode.cluster_authorization_failed, error_message=None)
                for i in everyone
            ],
        )
    counts = Counter(i.name for i in everyone)
    results, changed = [], False
    for item in req.deletions:
        problem = _check(item, counts)
        if problem is None and not store.delete(item.name, MECHANISMS[item.mechanism][0]):
            problem = (
                ErrorCode.resource_not_found,
                "Attempt to delete a user credential that does not exist",
            )
        changed |= problem is None
        results.append(
            dict(
                user=item.name,
                error_code=problem[0] if problem else ErrorCode.none,
                error_message=problem[1] if problem else None,
            )
        )
    for upsertion in req.upsertions:
        problem = _check(upsertion, counts)
        if problem is None:
            name, digest = MECHANISMS[upsertion.mechanism]
            store.put(
                upsertion.name,
                name,
                from_salted_password(digest, upsertion.salt, upsertion.salted_password, upsertion.iterations),
            )
            changed = True
        results.append(
            dict(
                user=upsertion.name,
                error_code=problem[0] if problem else ErrorCode.none,
                error_message=problem[1] if problem else None,
            )
        )
    if changed:
        store.save()
    return ctx.response(throttle_time_ms=0, results=results)
