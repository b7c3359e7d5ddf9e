"""TxnOffsetCommit (28), versions 0-4: stage a consumer group's offsets inside a transaction.

Kafka's order: topics that do not exist get UNKNOWN_TOPIC_OR_PARTITION; then the transaction is
verified for the group's __consumer_offsets partition (coordinator/transactions.py:
INVALID_PRODUCER_ID_MAPPING, INVALID_PRODUCER_EPOCH, CONCURRENT_TRANSACTIONS, and for a group
never added with AddOffsetsToTxn INVALID_TXN_STATE up to v3 / TRANSACTION_ABORTABLE in v4);
then the group coordinator checks the KIP-447 generation/member fields (v3+) and appends the
offsets, which stay pending until the transaction's marker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.partition_answers import error_codes, per_partition
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import TxnOffsetCommitRequest, TxnOffsetCommitResponse
    from minibroker.broker.context import RequestContext

API_KEY = 28


async def handle(ctx: RequestContext, req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    codes: dict[tuple[str, int], int] = {}
    wanted = _authorized_and_existing(ctx, req, codes)
    if wanted:
        codes.update(await _stage(ctx, req, wanted))
    requested = ((t.name, [p.partition_index for p in t.partitions]) for t in req.topics)
    return ctx.response(throttle_time_ms=0, topics=per_partition(requested, error_codes(codes)))


def _refusal(ctx: RequestContext, req: TxnOffsetCommitRequest) -> ErrorCode | None:
    # authorization (Kafka: WRITE on the transactional id, READ on the group, READ on each topic)
    if not ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, req.transactional_id):
        return ErrorCode.transactional_id_authorization_failed
    if not ctx.allowed(Op.READ, Res.GROUP, req.group_id):
        return ErrorCode.group_authorization_failed
    return None


def _authorized_and_existing(
    ctx: RequestContext, req: TxnOffsetCommitRequest, codes: dict[tuple[str, int], int]
) -> list:
    """(topic, partition entry) of the partitions that may be staged; the others get their
    error in `codes`."""
    refused = _refusal(ctx, req)
    wanted = []
    for t in req.topics:
        error = refused
        if error is None and not ctx.allowed(Op.READ, Res.TOPIC, t.name):
            error = ErrorCode.topic_authorization_failed
        info = ctx.broker.logs.topics.get(t.name)
        for p in t.partitions:
            if error is not None:
                codes[(t.name, p.partition_index)] = error
            elif info is None or not 0 <= p.partition_index < info.num_partitions:
                codes[(t.name, p.partition_index)] = ErrorCode.unknown_topic_or_partition
            else:
                wanted.append((t.name, p))
    return wanted


async def _stage(
    ctx: RequestContext, req: TxnOffsetCommitRequest, wanted: list
) -> dict[tuple[str, int], int]:
    broker = ctx.broker
    error = broker.txns.check_txn_offset_commit(
        req.transactional_id, req.producer_id, req.producer_epoch, req.group_id, ctx.api_version
    )
    if error != ErrorCode.none:
        return {(name, p.partition_index): error for name, p in wanted}
    v3 = ctx.api_version >= 3
    offsets = [
        (
            name,
            p.partition_index,
            p.committed_offset,
            field(p, "committed_leader_epoch", -1),
            p.committed_metadata,
        )
        for name, p in wanted
    ]
    stage = broker.groups.stage_txn_offsets(
        req.producer_id,
        req.producer_epoch,
        req.group_id,
        field(req, "generation_id", -1) if v3 else -1,
        field(req, "member_id", "") if v3 else "",
        field(req, "group_instance_id", None) if v3 else None,
        offsets,
    )
    return await broker.coordinators.run(broker.groups, stage)
