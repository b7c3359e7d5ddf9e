"""DescribeLogDirs (35): the one data directory with each partition's size on disk
(kafka-log-dirs.sh --describe). offset_lag is 0: there is no future replica."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from collections.abc import Iterable

    from minibroker.broker.api_types import (
        DescribableLogDirTopic,
        DescribeLogDirsRequest,
        DescribeLogDirsResponse,
    )
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 35


def _partitions(
    broker: HandlerServices, wanted: Iterable[DescribableLogDirTopic] | None
) -> dict[str, list[dict]]:
    logs = broker.logs
    if wanted is None:
        pairs = [(name, p) for name, info in logs.topics.items() for p in range(info.num_partitions)]
    else:
        pairs = [(t.topic, p) for t in wanted for p in t.partitions]
    out: dict[str, list[dict]] = {}
    for name, p in pairs:
        plog = logs.get_log(name, p)
        if plog is None:
            continue
        out.setdefault(name, []).append(
            dict(
                partition_index=p,
                partition_size=sum(s.size for s in plog.segments),
                offset_lag=0,
                is_future_key=False,
            )
        )
    return out


async def handle(ctx: RequestContext, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    broker = ctx.broker
    # authorization (Kafka: DESCRIBE on the cluster)
    if not ctx.allowed(Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.cluster_authorization_failed, results=[])
    usage = shutil.disk_usage(broker.logs.data_dir)
    topics = [
        dict(name=name, partitions=parts) for name, parts in sorted(_partitions(broker, req.topics).items())
    ]
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.none,
        results=[
            dict(
                error_code=ErrorCode.none,
                log_dir=broker.logs.data_dir,
                topics=topics,
                total_bytes=usage.total,
                usable_bytes=usage.free,
            )
        ],
    )
