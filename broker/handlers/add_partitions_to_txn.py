"""AddPartitionsToTxn (24), versions 0-3 (the client versions; 4+ are broker-to-broker).

As Kafka: if any partition is unknown, nothing is added; unknown ones get
UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED. Otherwise the coordinator's
single answer goes to every partition (PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH below v2)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.txn_answers import client_error
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import (
        AddPartitionsToTxnRequest,
        AddPartitionsToTxnResponse,
        AddPartitionsToTxnTopic,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 24


def _results(
    topics: Iterable[AddPartitionsToTxnTopic], code_for: Callable[[str, int], ErrorCode]
) -> list[dict]:
    out = []
    for t in topics:
        out.append(
            dict(
                name=t.name,
                results_by_partition=[
                    dict(partition_index=p, partition_error_code=code_for(t.name, p)) for p in t.partitions
                ],
            )
        )
    return out


async def handle(ctx: RequestContext, req: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    broker = ctx.broker
    topics = req.v3_and_below_topics
    # authorization (Kafka: WRITE on the transactional id, then WRITE on each topic)
    if not ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, req.v3_and_below_transactional_id):
        return ctx.response(
            throttle_time_ms=0,
            results_by_topic_v3_and_below=_results(
                topics, lambda t, p: ErrorCode.transactional_id_authorization_failed
            ),
        )
    denied = {t.name for t in topics if not ctx.allowed(Op.WRITE, Res.TOPIC, t.name)}
    if denied:
        return ctx.response(
            throttle_time_ms=0,
            results_by_topic_v3_and_below=_results(
                topics,
                lambda t, p: (
                    ErrorCode.topic_authorization_failed if t in denied else ErrorCode.operation_not_attempted
                ),
            ),
        )
    unknown = set()
    for t in topics:
        info = broker.logs.topics.get(t.name)
        for p in t.partitions:
            if info is None or not 0 <= p < info.num_partitions:
                unknown.add((t.name, p))
    if unknown:
        results = _results(
            topics,
            lambda t, p: (
                ErrorCode.unknown_topic_or_partition
                if (t, p) in unknown
                else ErrorCode.operation_not_attempted
            ),
        )
    else:
        error = await broker.coordinators.run(
            broker.txns,
            broker.txns.add_partitions(
                req.v3_and_below_transactional_id,
                req.v3_and_below_producer_id,
                req.v3_and_below_producer_epoch,
                [(t.name, p) for t in topics for p in t.partitions],
            ),
        )
        error = client_error(error, ctx.api_version, fenced_since=2)
        results = _results(topics, lambda t, p: error)
    return ctx.response(throttle_time_ms=0, results_by_topic_v3_and_below=results)
