"""TxnOffsetCommit (28), versions 0-4: stage a consumer group's offsets inside a transaction.

Kafka's order: topics that do not exist get UNKNOWN_TOPIC_OR_PARTITION; then the transaction is
verified for the group's __consumer_offsets partition (coordinator/transactions.py:
INVALID_PRODUCER_ID_MAPPING, INVALID_PRODUCER_EPOCH, CONCURRENT_TRANSACTIONS, and for a group
never added with AddOffsetsToTxn INVALID_TXN_STATE up to v3 / TRANSACTION_ABORTABLE in v4);
then the group coordinator checks the KIP-447 generation/member fields (v3+) and appends the
offsets, which stay pending until the transaction's marker."""

import dataclasses

from broker.security.acls import Operation as Op
from broker.security.acls import ResourceType as Res
from protocol.errors import ErrorCode

API_KEY = 28
MIN_VERSION, MAX_VERSION = 0, 4


async def handle(ctx, req):
    broker = ctx.broker
    codes: dict[tuple[str, int], int] = {}
    known_topics = []
    # authorization (Kafka: WRITE on the transactional id, READ on the group, READ on each topic)
    refused = None
    if not ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, req.transactional_id):
        refused = ErrorCode.transactional_id_authorization_failed
    elif not ctx.allowed(Op.READ, Res.GROUP, req.group_id):
        refused = ErrorCode.group_authorization_failed
    for t in req.topics:
        if refused is not None or not ctx.allowed(Op.READ, Res.TOPIC, t.name):
            for p in t.partitions:
                codes[(t.name, p.partition_index)] = refused or ErrorCode.topic_authorization_failed
            continue
        info = broker.logs.topics.get(t.name)
        known = []
        for p in t.partitions:
            if info is None or not 0 <= p.partition_index < info.num_partitions:
                codes[(t.name, p.partition_index)] = ErrorCode.unknown_topic_or_partition
            else:
                known.append(p)
        if known:
            known_topics.append(t if len(known) == len(t.partitions)
                                else dataclasses.replace(t, partitions=tuple(known)))
    if known_topics:
        txns, groups = broker.txns, broker.groups
        error = txns.check_txn_offset_commit(req.transactional_id, req.producer_id,
                                             req.producer_epoch, req.group_id, ctx.api_version)
        if error != ErrorCode.none:
            for t in known_topics:
                for p in t.partitions:
                    codes[(t.name, p.partition_index)] = error
        else:
            v3 = ctx.api_version >= 3
            result = groups.stage_txn_offsets(
                req.producer_id, req.producer_epoch, req.group_id,
                req.generation_id if v3 else -1, req.member_id if v3 else "",
                req.group_instance_id if v3 else None, known_topics)
            for t in known_topics:
                for p in t.partitions:
                    codes[(t.name, p.partition_index)] = (result.get(t.name) or {}).get(
                        p.partition_index, ErrorCode.unknown_server_error)
    topics = [dict(name=t.name, partitions=[
        dict(partition_index=p.partition_index, error_code=codes[(t.name, p.partition_index)])
        for p in t.partitions]) for t in req.topics]
    return ctx.response(throttle_time_ms=0, topics=topics)
