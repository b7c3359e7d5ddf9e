"""TxnOffsetCommit (28), versions 0-6: stage a consumer group's offsets inside a transaction.

v5+ is KIP-890 part 2 (transaction.version 2): the group's __consumer_offsets partition joins the
transaction here, with no AddOffsetsToTxn before it. v6 (KIP-1319) names topics by id
(protocol/txn_offset_commit_v6.py); an id no topic has gets UNKNOWN_TOPIC_ID.

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
from minibroker.broker.txn_answers import add_implicitly
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from minibroker.broker.api_types import (
        TxnOffsetCommitRequest,
        TxnOffsetCommitRequestTopic,
        TxnOffsetCommitResponse,
    )
    from minibroker.broker.context import RequestContext

API_KEY = 28


async def handle(ctx: RequestContext, req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    codes: dict[tuple[str, int], int] = {}
    names = _topic_names(ctx, req)
    wanted = _authorized_and_existing(ctx, req, names, codes)
    if wanted:
        codes.update(await _stage(ctx, req, wanted))
    asked: Sequence[TxnOffsetCommitRequestTopic] = req.topics
    requested = [(names[i], [p.partition_index for p in t.partitions]) for i, t in enumerate(asked)]
    topics = per_partition(requested, error_codes(codes))
    if ctx.api_version >= 6:  # answered by id, as asked
        for entry, t in zip(topics, req.topics, strict=True):
            entry["topic_id"] = field(t, "topic_id", None)
    return ctx.response(throttle_time_ms=0, topics=topics)


def _topic_names(ctx: RequestContext, req: TxnOffsetCommitRequest) -> list[str]:
    """Each requested topic's name; from v6 the name of its id ("" for an unknown id)."""
    if ctx.api_version < 6:
        return [field(t, "name", "") for t in req.topics]
    by_id = {info.topic_id: name for name, info in ctx.broker.logs.topics.items()}
    return [by_id.get(field(t, "topic_id", None), "") for t in req.topics]


def _refusal(ctx: RequestContext, req: TxnOffsetCommitRequest) -> ErrorCode | None:
    # authorization (Kafka: WRITE on the transactional id, READ on the group, READ on each topic)
    if not ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, req.transactional_id):
        return ErrorCode.transactional_id_authorization_failed
    if not ctx.allowed(Op.READ, Res.GROUP, req.group_id):
        return ErrorCode.group_authorization_failed
    return None


def _authorized_and_existing(
    ctx: RequestContext, req: TxnOffsetCommitRequest, names: list[str], codes: dict[tuple[str, int], int]
) -> list:
    """(topic, partition entry) of the partitions that may be staged; the others get their
    error in `codes`."""
    refused = _refusal(ctx, req)
    wanted = []
    asked: Sequence[TxnOffsetCommitRequestTopic] = req.topics
    for i, t in enumerate(asked):
        name = names[i]
        error = refused
        if error is None and ctx.api_version >= 6 and not name:
            error = ErrorCode.unknown_topic_id
        if error is None and not ctx.allowed(Op.READ, Res.TOPIC, name):
            error = ErrorCode.topic_authorization_failed
        info = ctx.broker.logs.topics.get(name)
        for p in t.partitions:
            if error is not None:
                codes[(name, p.partition_index)] = error
            elif info is None or not 0 <= p.partition_index < info.num_partitions:
                codes[(name, p.partition_index)] = ErrorCode.unknown_topic_or_partition
            else:
                wanted.append((name, p))
    return wanted


async def _stage(
    ctx: RequestContext, req: TxnOffsetCommitRequest, wanted: list
) -> dict[tuple[str, int], int]:
    broker = ctx.broker
    if ctx.api_version >= 5:  # KIP-890 TV2: the group's offsets partition joins the transaction
        await add_implicitly(
            broker,
            lambda: broker.txns.add_offsets_v2(
                req.transactional_id, req.producer_id, req.producer_epoch, req.group_id
            ),
        )
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
        api_version=ctx.api_version,
    )
    return await broker.coordinators.run(broker.groups, stage)
