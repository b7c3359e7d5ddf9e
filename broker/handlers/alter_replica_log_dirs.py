"""AlterReplicaLogDirs (34), versions 1-2 (`kafka-reassign-partitions.sh` with log dirs, Admin
alterReplicaLogDirs): Kafka's answers for a broker with one log directory.

The directory must be that one, spelt exactly as DescribeLogDirs reports it (Kafka compares
the string with each log dir's absolute path: a trailing slash or a relative path is another
directory): any other is LOG_DIR_NOT_FOUND, checked before the partition. A partition already
there (every partition of this broker is) needs no move: NONE; an unknown one is
UNKNOWN_TOPIC_OR_PARTITION. A partition named under several directories is answered once, for
the last, as Kafka's map of partition to directory keeps it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 34


async def handle(ctx: RequestContext, req: AlterReplicaLogDirsRequest) -> AlterReplicaLogDirsResponse:
    logs = ctx.broker.logs
    wanted: dict[tuple[str, int], str] = {}
    for d in req.dirs:
        for t in d.topics:
            for p in t.partitions:
                wanted[(t.name, p)] = d.path
    # authorization (Kafka: ALTER on the cluster, answered for every partition)
    authorized = ctx.allowed(Op.ALTER, Res.CLUSTER, CLUSTER_NAME)
    results: dict[str, list[dict]] = {}
    for (topic, partition), path in wanted.items():
        info = logs.topics.get(topic)
        if not authorized:
            error = ErrorCode.cluster_authorization_failed
        elif path != logs.data_dir:
            error = ErrorCode.log_dir_not_found
        elif info is None or not 0 <= partition < info.num_partitions:
            error = ErrorCode.unknown_topic_or_partition
        else:
            error = ErrorCode.none
        results.setdefault(topic, []).append(dict(partition_index=partition, error_code=error))
    return ctx.response(
        throttle_time_ms=0,
        results=[dict(topic_name=topic, partitions=parts) for topic, parts in results.items()],
    )
