"""RemoveRaftVoter (81), version 0 (`kafka-metadata-quorum.sh remove-controller`): the voter set
is this node alone (broker/quorum.py), and Kafka never removes the last voter, so after its
checks (a cluster id naming another cluster: INCONSISTENT_CLUSTER_ID; no directory id:
INVALID_REQUEST) every request is VOTER_NOT_FOUND, this node's own key included."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker import quorum
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import RemoveRaftVoterRequest, RemoveRaftVoterResponse
    from minibroker.broker.context import RequestContext

API_KEY = 81


def _answer(ctx: RequestContext, error: ErrorCode, message: str | None) -> RemoveRaftVoterResponse:
    return ctx.response(throttle_time_ms=0, error_code=error, error_message=message)


async def handle(ctx: RequestContext, req: RemoveRaftVoterRequest) -> RemoveRaftVoterResponse:
    refusal = quorum.voter_change_refusal(ctx, req.cluster_id, req.voter_directory_id, "Remove")
    if refusal is not None:
        return _answer(ctx, *refusal)
    node_id = ctx.broker.node_id
    return _answer(
        ctx,
        ErrorCode.voter_not_found,
        f"Cannot remove voter {req.voter_id} ({req.voter_directory_id}) from the set of voters "
        f"[{node_id} ({quorum.directory_id(ctx)})]: it is not in it, or it is the only voter",
    )
