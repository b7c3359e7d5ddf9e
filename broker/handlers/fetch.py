"""Fetch (1): whole record batches from the segment files, long-polling for min_bytes.

Every requested partition is answered (Java drops a full-fetch response that omits one). Records
come back as file slices that the connection writes without decoding them. `max_bytes` bounds
the whole response except that the first partition yielding data may return one batch larger
than its limits (KIP-74); later partitions get nothing rather than an oversized batch. read_committed
(isolation 1) stops at the last stable offset and lists the aborted transactions the returned
range spans. No fetch sessions: session id 0 tells clients to keep sending full fetches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.context import RawResponse
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field, millis
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.fetch_response import PartitionData, encode
from minibroker.storage.errors import KafkaStorageError

if TYPE_CHECKING:
    from minibroker.broker.api_types import FetchRequest
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 1
_NO_CAP = 2**31 - 1


def leader_epoch_error(current_leader_epoch: int, leader_epoch: int) -> ErrorCode:
    """Kafka's check of a client's idea of the leader epoch (-1 means 'not known')."""
    if current_leader_epoch == -1 or current_leader_epoch == leader_epoch:
        return ErrorCode.none
    if current_leader_epoch > leader_epoch:
        return ErrorCode.unknown_leader_epoch
    return ErrorCode.fenced_leader_epoch


def _read_all(
    broker: HandlerServices, req: FetchRequest, isolation: int, denied: set[str], cap: int
) -> tuple[list[tuple[str, list[PartitionData]]], int, bool]:
    """One pass over the requested partitions: (topics, record bytes, any error)."""
    budget = min(req.max_bytes, broker.config["fetch.max.bytes"], cap)  # Kafka caps the client's ask
    total = 0
    any_error = False
    topics: list[tuple[str, list[PartitionData]]] = []
    for t in req.topics:
        partitions = []
        for fp in t.partitions:
            out = PartitionData(fp.partition)
            partitions.append(out)
            if t.topic in denied:
                out.error_code = ErrorCode.topic_authorization_failed
                any_error = True
                continue
            plog = broker.get_log(t.topic, fp.partition)
            if plog is None:
                out.error_code = ErrorCode.unknown_topic_or_partition
                out.aborted = []  # Kafka's error answer carries an empty list here
                any_error = True
                continue
            error = leader_epoch_error(field(fp, "current_leader_epoch", -1), plog.leader_epoch)
            if error:
                out.error_code = error
                any_error = True
                continue
            in_range = plog.log_start_offset <= fp.fetch_offset <= plog.log_end_offset
            if total and budget <= 0 and in_range:
                out.high_watermark = plog.high_watermark
                out.last_stable_offset = plog.last_stable_offset
                out.log_start_offset = plog.log_start_offset
                continue  # response full: answer the partition with no records
            limit = min(fp.partition_max_bytes, budget)
            try:
                result = plog.read(fp.fetch_offset, limit, isolation)
            except KafkaStorageError as exc:
                out.error_code = exc.error_code
                any_error = True
                continue
            out.high_watermark = result.high_watermark
            out.last_stable_offset = result.last_stable_offset
            out.log_start_offset = result.log_start_offset
            out.aborted = result.aborted if isolation == 1 else None
            size = sum(c.length for c in result.chunks)
            if total and size > limit:
                continue  # an oversized first batch only for the first partition with data
            out.chunks = result.chunks
            out.records_size = size
            budget -= out.records_size
            total += out.records_size
        topics.append((t.topic, partitions))
    return topics, total, any_error


def _invalid_isolation(ctx: RequestContext, req: FetchRequest) -> RawResponse:
    """Kafka fails the whole request (UNKNOWN_SERVER_ERROR everywhere) for an isolation level
    other than 0 (read_uncommitted) and 1 (read_committed)."""
    error = ErrorCode.unknown_server_error
    topics: list[tuple[str, list[PartitionData]]] = [
        (t.topic, [PartitionData(p.partition, error, aborted=[]) for p in t.partitions]) for t in req.topics
    ]
    parts, size = encode(ctx.api_version, topics, error_code=error)
    return RawResponse(parts, size)


def _refused(ctx: RequestContext, req: FetchRequest) -> RawResponse | None:
    """Requests Kafka refuses before reading: an incremental fetch (epoch > 0) on a session this
    broker never created (it creates none: FETCH_SESSION_ID_NOT_FOUND), a follower's fetch
    (replica_id >= 0: there are no followers, NOT_LEADER_OR_FOLLOWER), an unknown isolation level."""
    if req.isolation_level not in (0, 1):
        return _invalid_isolation(ctx, req)
    if field(req, "session_epoch", -1) > 0:
        parts, size = encode(ctx.api_version, [], error_code=ErrorCode.fetch_session_id_not_found)
        return RawResponse(parts, size)
    if req.replica_id >= 0:
        not_leader = ErrorCode.not_leader_or_follower
        topics: list[tuple[str, list[PartitionData]]] = [
            (t.topic, [PartitionData(p.partition, not_leader) for p in t.partitions]) for t in req.topics
        ]
        parts, size = encode(ctx.api_version, topics)
        return RawResponse(parts, size)
    return None


async def handle(ctx: RequestContext, req: FetchRequest) -> RawResponse:
    broker = ctx.broker
    isolation = req.isolation_level
    refused = _refused(ctx, req)
    if refused is not None:
        return refused
    clock = broker.clock
    deadline = clock.monotonic() + max(millis(req.max_wait), 0) / 1000
    keys: list[tuple[str, int]] = [(t.topic, p.partition) for t in req.topics for p in t.partitions]
    # authorization (Kafka: READ on each topic)
    denied: set[str] = {t.topic for t in req.topics if not ctx.allowed(Op.READ, Res.TOPIC, t.topic)}
    # a consumer_byte_rate quota caps the answer at one quota window's bytes (broker/quotas.py)
    cap = (broker.quotas.fetch_cap(ctx) if broker.quotas.active else None) or _NO_CAP
    min_bytes = min(req.min_bytes, cap)
    while True:
        topics, total, any_error = _read_all(broker, req, isolation, denied, cap)
        remaining = deadline - clock.monotonic()
        if total >= min_bytes or any_error or remaining <= 0 or not keys or broker.data_waiters.closed:
            break
        # Nothing (or too little) yet: wait for an append, a marker or an LSO move, then re-read.
        await broker.data_waiters.wait(keys, remaining)
    parts, size = encode(ctx.api_version, topics)
    return RawResponse(parts, size, topics)
