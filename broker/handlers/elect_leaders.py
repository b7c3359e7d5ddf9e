"""ElectLeaders (43): with one broker, which is every partition's only replica and leader, there
is never a better leader: each named partition gets ELECTION_NOT_NEEDED (unknown ones
UNKNOWN_TOPIC_OR_PARTITION), and "all partitions" (null) lists every topic with no election
in it, as Kafka answers. A principal without ALTER on the cluster gets
CLUSTER_AUTHORIZATION_FAILED, at the top and on every partition it named (Kafka's error
response)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ElectLeadersRequest, ElectLeadersResponse
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 43

_PREFERRED, _UNCLEAN = 0, 1


def _result(broker: HandlerServices, topic: str, partition: int) -> dict:
    info = broker.logs.topics.get(topic)
    if info is None or not 0 <= partition < info.num_partitions:
        return dict(
            partition_id=partition,
            error_code=ErrorCode.unknown_topic_or_partition,
            error_message=f"{topic}-{partition} does not exist",
        )
    return dict(
        partition_id=partition,
        error_code=ErrorCode.election_not_needed,
        error_message="the leader is already the preferred (and only) replica",
    )


async def handle(ctx: RequestContext, req: ElectLeadersRequest) -> ElectLeadersResponse:
    # authorization (Kafka: ALTER on the cluster, checked before anything else)
    if not ctx.allowed(Op.ALTER, Res.CLUSTER, CLUSTER_NAME):
        refused = ErrorCode.cluster_authorization_failed
        message = "Cluster authorization failed."
        return ctx.response(
            throttle_time_ms=0,
            error_code=refused,
            replica_election_results=[
                dict(
                    topic=t.topic,
                    partition_result=[
                        dict(partition_id=p, error_code=refused, error_message=message) for p in t.partitions
                    ],
                )
                for t in req.topic_partitions or ()
            ],
        )
    election_type = field(req, "election_type", _PREFERRED)
    if election_type not in (_PREFERRED, _UNCLEAN):
        results = [
            dict(
                topic=t.topic,
                partition_result=[
                    dict(
                        partition_id=p,
                        error_code=ErrorCode.invalid_request,
                        error_message=f"unknown election type {election_type}",
                    )
                    for p in t.partitions
                ],
            )
            for t in req.topic_partitions or ()
        ]
        return ctx.response(
            throttle_time_ms=0, error_code=ErrorCode.invalid_request, replica_election_results=results
        )
    if req.topic_partitions is None:
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.none,
            replica_election_results=[
                dict(topic=name, partition_result=[]) for name in sorted(ctx.broker.logs.topics)
            ],
        )
    results = [
        dict(topic=t.topic, partition_result=[_result(ctx.broker, t.topic, p) for p in t.partitions])
        for t in req.topic_partitions
    ]
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.none, replica_election_results=results)
