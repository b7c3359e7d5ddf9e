"""AddRaftVoter (80), versions 0-1 (`kafka-metadata-quorum.sh add-controller`): the metadata
quorum is this one node (broker/quorum.py) and cannot grow, so every valid request ends as
Kafka's ends when the new voter never catches up: REQUEST_TIMED_OUT. Checked first, in Kafka's
order: a cluster id naming another cluster (INCONSISTENT_CLUSTER_ID), no directory id ("didn't
include a valid voter") or no endpoint for the CONTROLLER listener (INVALID_REQUEST), a voter id
already in the voter set, i.e. this node's (DUPLICATE_VOTER)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker import quorum
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import AddRaftVoterRequest, AddRaftVoterResponse
    from minibroker.broker.context import RequestContext

API_KEY = 80


def _answer(ctx: RequestContext, error: ErrorCode, message: str | None) -> AddRaftVoterResponse:
    return ctx.response(throttle_time_ms=0, error_code=error, error_message=message)


async def handle(ctx: RequestContext, req: AddRaftVoterRequest) -> AddRaftVoterResponse:
    refusal = quorum.voter_change_refusal(ctx, req.cluster_id, req.voter_directory_id, "Add")
    if refusal is not None:
        return _answer(ctx, *refusal)
    if not any(listener.name == quorum.CONTROLLER_LISTENER for listener in req.listeners):
        return _answer(
            ctx,
            ErrorCode.invalid_request,
            f"Add voter request didn't include the endpoint for the default listener "
            f"{quorum.CONTROLLER_LISTENER}",
        )
    node_id = ctx.broker.node_id
    if req.voter_id == node_id:
        return _answer(
            ctx,
            ErrorCode.duplicate_voter,
            f"The voter id {req.voter_id} is already part of the set of voters [{node_id}].",
        )
    return _answer(
        ctx,
        ErrorCode.request_timed_out,
        f"Aborted add voter operation for voter {req.voter_id}: this one-process broker's metadata "
        f"quorum is node {node_id} alone and cannot add a voter",
    )
