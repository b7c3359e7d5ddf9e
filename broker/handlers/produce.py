"""Produce (0): append one record batch per partition, answer with its base offset.

Versions 0-2 are advertised, as Apache Kafka 4 does, because librdkafka before 2.11.1 turns off
features when Produce v0 is missing; they carry magic 0/1 message sets, which are not served:
such a request is logged and the connection closed (there is no schema for an error answer).
The batch stays opaque bytes: storage checks and patches its 61-byte header and writes it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import structlog
from minibroker.broker.context import NO_RESPONSE, CloseConnection, NoResponse
from minibroker.broker.limits import LogThrottle
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.broker.txn_answers import add_implicitly
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log import PartitionLog, disk_free_bytes
from minibroker.storage.log_manager import INTERNAL_TOPICS
from minibroker.storage.log_validator import first_produced_batch, is_transactional

if TYPE_CHECKING:
    import uuid

    from minibroker.broker.api_types import ProduceRequest, ProduceResponse
    from minibroker.broker.context import RequestContext

#: Errors Kafka's ReplicaManager answers with the unknown log start offset (-1) rather than the
#: partition's: the framing and size errors it catches before asking the log.
_ERRORS_WITHOUT_LOG_START = frozenset(
    {
        ErrorCode.corrupt_message,
        ErrorCode.message_too_large,
        ErrorCode.record_list_too_large,
        ErrorCode.kafka_storage_error,
        ErrorCode.not_leader_or_follower,
        ErrorCode.unknown_topic_or_partition,
    }
)

log = structlog.get_logger("broker.produce")

TopicData = Any  # one topic of a Produce request (kio's TopicProduceData of the version)

API_KEY = 0


def _append(
    ctx: RequestContext,
    topic: str,
    index: int,
    records: bytes | None,
    transactional_id: str | None,
    due: list[PartitionLog],
) -> dict:
    broker = ctx.broker
    if topic in INTERNAL_TOPICS:  # even before the coordinator first writes (creates) it
        return dict(index=index, error_code=ErrorCode.invalid_topic_exception, base_offset=-1)
    plog = broker.get_log(topic, index)
    if plog is None:
        return dict(index=index, error_code=ErrorCode.unknown_topic_or_partition, base_offset=-1)
    if broker.logs.topics[topic].internal:
        return dict(index=index, error_code=ErrorCode.invalid_topic_exception, base_offset=-1)
    try:  # Kafka's ProduceRequest.validateRecords and transaction verification: before the log
        batch = first_produced_batch(records, ctx.api_version)
        broker.txns.verify_produce(transactional_id, topic, index, batch, ctx.api_version)
    except KafkaStorageError as exc:
        return _refused(topic, index, exc, log_start_offset=-1)
    try:
        info = plog.append(batch)
    except KafkaStorageError as exc:
        if exc.error_code == ErrorCode.kafka_storage_error:  # the disk, not the request
            _storage_refusals.note(ctx.broker.clock.monotonic(), topic, index, plog.dir, exc)
            return dict(index=index, error_code=exc.error_code, base_offset=-1, log_start_offset=-1)
        known_start = exc.error_code not in _ERRORS_WITHOUT_LOG_START
        return _refused(topic, index, exc, log_start_offset=plog.log_start_offset if known_start else -1)
    if plog.flush_due:  # the flush policy asks for an fsync: answered after it (see handle)
        due.append(plog)
    return dict(
        index=index,
        error_code=ErrorCode.none,
        base_offset=info.base_offset,
        log_append_time=info.log_append_time_ms,
        log_start_offset=info.log_start_offset,
    )


class _StorageRefusals:
    """Produces refused because the log directory cannot be written (a full disk, an I/O
    error): a WARNING with the path and the space left, at most one every ``INTERVAL_S`` with
    how many were refused since the previous one, so a producer retrying against a full disk
    does not flood the log. Kafka answers KAFKA_STORAGE_ERROR for an IOException of its log dir
    (and takes the dir offline; this broker keeps serving reads and accepts writes again as soon
    as there is room)."""

    INTERVAL_S = 10.0

    def __init__(self) -> None:
        self.throttle = LogThrottle(self.INTERVAL_S)

    def note(self, now: float, topic: str, partition: int, path: str, exc: KafkaStorageError) -> None:
        due = self.throttle.due(now)
        if due is None:
            return
        refused, seconds_since_last = due
        log.warning(
            "produce refused: the log directory cannot be written; acknowledged records are "
            "kept, produces succeed again once there is room",
            path=path,
            free_bytes=disk_free_bytes(path),
            error=exc.message,
            refused=refused,
            seconds_since_last=seconds_since_last,
            topic=topic,
            partition=partition,
        )


_storage_refusals = _StorageRefusals()


def _refused(topic: str, index: int, exc: KafkaStorageError, log_start_offset: int) -> dict:
    """Kafka gives an error_message only with record_errors (its RecordValidationException)
    and for a few framing errors (``in_answer``); other refusals carry the bare code, their
    reason goes to the broker log."""
    log.info(
        "produce refused", topic=topic, partition=index, error=exc.error_code.name.upper(), reason=exc.message
    )
    answer: dict[str, object] = dict(
        index=index, error_code=exc.error_code, base_offset=-1, log_start_offset=log_start_offset
    )
    if exc.in_answer:
        answer["error_message"] = exc.message
    if exc.record_errors:
        answer.update(
            record_errors=[dict(batch_index=i, batch_index_error_message=m) for i, m in exc.record_errors]
        )
    return answer


def _not_durable(now: float, responses: list[dict], due: list[PartitionLog], exc: OSError) -> None:
    """The fsync of ``due`` failed: their records are in the page cache only, so their
    partitions answer KAFKA_STORAGE_ERROR (the next round tries the fsync again)."""
    failed = {(plog.topic, plog.partition): plog for plog in due}
    for t in responses:
        for p in t["partition_responses"]:
            plog = failed.get((t["name"], p["index"]))
            if plog is not None:
                error = KafkaStorageError(ErrorCode.kafka_storage_error, f"cannot fsync {plog.dir}: {exc}")
                _storage_refusals.note(now, plog.topic, plog.partition, plog.dir, error)
                p.update(error_code=error.error_code, base_offset=-1, log_start_offset=-1)


def _topics(ctx: RequestContext, req: ProduceRequest) -> list[tuple[str, uuid.UUID | None, TopicData]]:
    """Each topic of the request with its name: v13+ address topics by id (KIP-516), and an id
    this broker does not know has the empty name (Kafka's getTopicName(id).orElse(name))."""
    if ctx.api_version < 13:
        return [(field(t, "name", ""), None, t) for t in req.topic_data]
    names = ctx.broker.logs.topic_names
    out = []
    for t in req.topic_data:
        topic_id = field(t, "topic_id", None)
        out.append((names.get(topic_id, "") if topic_id is not None else "", topic_id, t))
    return out


def _every_partition(
    topics: list[tuple[str, uuid.UUID | None, TopicData]],
    error: ErrorCode,
    names: Collection[str] | None = None,
    message: str | None = None,
) -> list[dict]:
    return [
        dict(
            name=name,
            topic_id=topic_id,
            partition_responses=[
                dict(index=p.index, error_code=error, base_offset=-1, error_message=message)
                for p in t.partition_data
            ],
        )
        for name, topic_id, t in topics
        if names is None or name in names
    ]


def _has_transactional_records(req: ProduceRequest) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords: whether some partition's first batch is
    transactional, asked in request order and stopping at the first that is. Raises
    KafkaStorageError(CORRUPT_MESSAGE) where Kafka's batch iterator throws (a size field below
    14, a magic above 2) before such a partition is found."""
    for t in req.topic_data:
        for p in t.partition_data:
            r = p.records
            # The common case, cleared inline: a magic-2 header, no transactional bit, a size
            # field >= 14 (Kafka's iterator neither throws for it nor finds it transactional).
            if (
                r
                and len(r) > 22
                and r[16] == 2
                and not r[22] & 0x10
                and r[8] < 0x80
                and (r[11] >= 14 or r[8] or r[9] or r[10])
            ):
                continue
            if is_transactional(r):  # the full rule; raises for corrupt framing
                return True
    return False


async def handle(ctx: RequestContext, req: ProduceRequest) -> ProduceResponse | NoResponse:
    topics = _topics(ctx, req)
    # Kafka's KafkaApis.handleProduceRequest: first, if any partition's batch says it is
    # transactional, WRITE on the request's transactional id (none at all fails too), before
    # the topics' authorization and before any batch is validated (a garbage attributes byte
    # with the transactional bit is refused here, not for its unknown codec)
    try:
        transactional = _has_transactional_records(req)
    except KafkaStorageError as exc:
        # Kafka's CorruptRecordException from that batch iterator is not caught in
        # handleProduceRequest: KafkaApis answers it for every partition of the request
        # (ProduceRequest.getErrorResponse, with its message) and appends nothing, valid
        # partitions included; with acks=0 there is no error response, the connection is closed.
        if req.acks == 0:
            raise CloseConnection(f"acks=0 produce refused: CORRUPT_MESSAGE: {exc.message}") from None
        log.info("produce refused: corrupt record framing", error="CORRUPT_MESSAGE", reason=exc.message)
        return ctx.response(
            responses=_every_partition(topics, exc.error_code, message=exc.message), throttle_time_ms=0
        )
    if transactional and (
        req.transactional_id is None or not ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, req.transactional_id)
    ):
        if req.acks == 0:  # Kafka has no error response for acks=0: it closes the connection
            raise CloseConnection(
                "acks=0 produce of transactional records refused: TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
            )
        return ctx.response(
            responses=_every_partition(topics, ErrorCode.transactional_id_authorization_failed),
            throttle_time_ms=0,
        )
    unknown_ids = {name for name, _id, _t in topics if not name}  # v13+: UNKNOWN_TOPIC_ID
    denied = {name for name, _id, _t in topics if name and not ctx.allowed(Op.WRITE, Res.TOPIC, name)}
    if req.acks not in (-1, 0, 1):
        return ctx.response(
            responses=_every_partition(topics, ErrorCode.invalid_required_acks), throttle_time_ms=0
        )
    if transactional and ctx.api_version >= 12:  # KIP-890 TV2: the leader adds the partitions
        batches = [
            (name, p.index, p.records)
            for name, _id, t in topics
            if name and name not in denied
            for p in t.partition_data
        ]
        await add_implicitly(
            ctx.broker, lambda: ctx.broker.txns.produced_partitions_to_add(req.transactional_id, batches)
        )
    due: list[PartitionLog] = []  # logs whose flush policy (log.flush.interval.*) this request reached
    responses = (
        [
            dict(
                name=name,
                topic_id=topic_id,
                partition_responses=[
                    _append(ctx, name, p.index, p.records, req.transactional_id, due)
                    for p in t.partition_data
                ],
            )
            for name, topic_id, t in topics
            if name and name not in denied
        ]
        + _every_partition(topics, ErrorCode.topic_authorization_failed, denied)
        + _every_partition(topics, ErrorCode.unknown_topic_id, unknown_ids)
    )
    if due:  # one fsync round off the event loop (broker/durability.py), shared with other requests
        try:
            await ctx.broker.durability.sync(due)
        except OSError as exc:
            _not_durable(ctx.broker.clock.monotonic(), responses, due, exc)
    if ctx.broker.faults.armed:  # a test's crash point: appended, not answered
        _crash_point(ctx, req.transactional_id, responses)
    if req.acks == 0:
        failed = [
            (t["name"], p["index"], ErrorCode(p["error_code"]).name)
            for t in responses
            for p in t["partition_responses"]
            if p["error_code"]
        ]
        if failed:
            # Kafka closes the connection: an acks=0 client has no other way to learn of the error.
            raise CloseConnection(f"acks=0 produce failed for {failed}")
        return NO_RESPONSE
    return ctx.response(responses=responses, throttle_time_ms=0)


def _crash_point(ctx: RequestContext, transactional_id: str | None, responses: list[dict]) -> None:
    """produce.after_append (common/faults.py), keyed by the transactional id and by each
    "topic-partition" appended to; reached only if something was appended."""
    appended = [
        f"{t['name']}-{p['index']}"
        for t in responses
        for p in t["partition_responses"]
        if p["error_code"] == ErrorCode.none
    ]
    if appended:
        keys = [transactional_id, *appended] if transactional_id else appended
        ctx.broker.faults.crash_point("produce.after_append", keys)
