"""DescribeQuorum (55), versions 0-2 (`kafka-metadata-quorum.sh describe`, Admin
describeMetadataQuorum): the metadata quorum of one voter, this node, leading epoch 1 with no
observers (broker/quorum.py). Anything but exactly __cluster_metadata partition 0 is answered
UNKNOWN_TOPIC_OR_PARTITION for every partition asked, with no nodes, as Kafka's Raft client
answers it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker import quorum
from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DescribeQuorumRequest, DescribeQuorumResponse
    from minibroker.broker.context import RequestContext

API_KEY = 55

_NOT_HOSTED = "This server does not host this topic-partition."


def _asks_for_the_metadata_partition(req: DescribeQuorumRequest) -> bool:
    return (
        len(req.topics) == 1
        and req.topics[0].topic_name == quorum.METADATA_TOPIC
        and len(req.topics[0].partitions) == 1
        and req.topics[0].partitions[0].partition_index == quorum.METADATA_PARTITION
    )


async def handle(ctx: RequestContext, req: DescribeQuorumRequest) -> DescribeQuorumResponse:
    # authorization (Kafka: DESCRIBE on the cluster)
    if not ctx.allowed(Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME):
        return ctx.response(error_code=ErrorCode.cluster_authorization_failed, topics=[], nodes=[])
    if not _asks_for_the_metadata_partition(req):
        return ctx.response(
            error_code=ErrorCode.none,
            topics=[
                dict(
                    topic_name=t.topic_name,
                    partitions=[
                        dict(
                            partition_index=p.partition_index,
                            error_code=ErrorCode.unknown_topic_or_partition,
                            error_message=_NOT_HOSTED,
                            leader_id=0,
                            leader_epoch=0,
                            high_watermark=0,
                            current_voters=[],
                            observers=[],
                        )
                        for p in t.partitions
                    ],
                )
                for t in req.topics
            ],
            nodes=[],
        )
    node_id = ctx.broker.node_id
    now = ctx.broker.clock.wall_ms()
    voter = dict(
        replica_id=node_id,
        replica_directory_id=quorum.directory_id(ctx),
        log_end_offset=quorum.METADATA_LOG_END,
        last_fetch_timestamp=now,  # the leader's own replica state: caught up now
        last_caught_up_timestamp=now,
    )
    host, port = ctx.advertised
    return ctx.response(
        error_code=ErrorCode.none,
        topics=[
            dict(
                topic_name=quorum.METADATA_TOPIC,
                partitions=[
                    dict(
                        partition_index=quorum.METADATA_PARTITION,
                        error_code=ErrorCode.none,
                        leader_id=node_id,
                        leader_epoch=quorum.LEADER_EPOCH,
                        high_watermark=quorum.METADATA_LOG_END,
                        current_voters=[voter],
                        observers=[],
                    )
                ],
            )
        ],
        nodes=[
            dict(
                node_id=node_id,
                listeners=[dict(name=quorum.CONTROLLER_LISTENER, host=host, port=port)],
            )
        ],
    )
