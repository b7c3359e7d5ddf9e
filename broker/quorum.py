"""The KRaft quorum a one-process broker answers for: itself as the only voter and leader.

Kafka 4.4 run as one combined broker+controller (`process.roles=broker,controller`, storage
formatted `--standalone`) has a metadata quorum of one voter. minibroker keeps no metadata log,
so DescribeQuorum (55), AddRaftVoter (80) and RemoveRaftVoter (81) answer from these facts: the
voter is this node, leader in epoch 1 (a standalone node's first and only election), its
directory id is derived from the cluster id and the data directory (stable across restarts;
Kafka stores a random one in meta.properties), and its controller endpoint is the listener the
request came in on, named CONTROLLER as Kafka's default controller listener is.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.context import RequestContext

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
LEADER_EPOCH = 1
CONTROLLER_LISTENER = "CONTROLLER"
#: Records in the (absent) metadata log: the high watermark and the voter's log end offset.
METADATA_LOG_END = 0


def directory_id(ctx: RequestContext) -> uuid.UUID:
    """The voter's directory id: fixed for this cluster id and data directory."""
    logs = ctx.broker.logs
    return uuid.uuid5(uuid.NAMESPACE_URL, f"minibroker:{logs.cluster_id}:{logs.data_dir}")


def cluster_id_mismatch(ctx: RequestContext, cluster_id: str | None) -> str | None:
    """Kafka's INCONSISTENT_CLUSTER_ID text when a request names another cluster (None: it
    names none or this one)."""
    own = ctx.broker.logs.cluster_id
    if cluster_id is None or cluster_id == own:
        return None
    return f'The given id "{cluster_id}" doesn\'t match the cluster id "{own}"'


_ZERO = uuid.UUID(int=0)


def voter_change_refusal(
    ctx: RequestContext, cluster_id: str | None, voter_directory_id: uuid.UUID | None, verb: str
) -> tuple[ErrorCode, str] | None:
    """The checks AddRaftVoter and RemoveRaftVoter (`verb`: "Add", "Remove") share, in Kafka's
    order: ALTER on the cluster, the cluster id, a voter directory id. (error, message), or None
    when the request passes them."""
    if not ctx.allowed(Op.ALTER, Res.CLUSTER, CLUSTER_NAME):
        return ErrorCode.cluster_authorization_failed, "Cluster authorization failed."
    mismatch = cluster_id_mismatch(ctx, cluster_id)
    if mismatch is not None:
        return ErrorCode.inconsistent_cluster_id, mismatch
    if voter_directory_id in (None, _ZERO):
        return ErrorCode.invalid_request, f"{verb} voter request didn't include a valid voter"
    return None
