"""Fetch (1), v4-18: whole record batches from the segment files, long-polling for min_bytes.

Records come back as file slices that the connection writes without decoding them. `max_bytes`
bounds the whole response except that the first partition yielding data may return one batch
larger than its limits (KIP-74); later partitions get nothing rather than an oversized batch.
read_committed (isolation 1) stops at the last stable offset and lists the aborted transactions
the returned range spans.

As Kafka's KafkaApis.handleFetchRequest: v13+ address topics by id (KIP-516): an id this broker
does not know answers UNKNOWN_TOPIC_ID, a session partition whose topic was deleted and created
again under its name INCONSISTENT_TOPIC_ID. Fetch sessions (KIP-227, broker/fetch_sessions.py):
a full fetch with epoch 0 creates one, incremental fetches send and get only what changed, and
session errors answer at the top level with no partitions. Partitions refused before reading
(unknown, unauthorized) come after the partitions read, as Kafka orders them, and do not end a
long poll. The replica-only fields of v15/v17/v18 are accepted and ignored; a follower's fetch
(replica id >= 0: there are no followers) answers NOT_LEADER_OR_FOLLOWER, with the current
leader and its endpoint from v16 (KIP-951).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import structlog
from minibroker.broker.context import RawResponse
from minibroker.broker.fetch_sessions import FetchContext, Key, PartitionFetch
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field, millis
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.fetch_response import NodeEndpoint, PartitionData, Topic, encode
from minibroker.storage.errors import KafkaStorageError

if TYPE_CHECKING:
    import uuid

    from minibroker.broker.api_types import FetchRequest
    from minibroker.broker.context import HandlerServices, RequestContext

API_KEY = 1
_NO_CAP = 2**31 - 1

log = structlog.get_logger("broker.fetch")

_NO_ID = bytes(16)
#: Errors whose v16+ answer names the current leader (KIP-951).
_LEADER_ERRORS = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch})


def leader_epoch_error(current_leader_epoch: int, leader_epoch: int) -> ErrorCode:
    """Kafka's check of a client's idea of the leader epoch (-1 means 'not known')."""
    if current_leader_epoch == -1 or current_leader_epoch == leader_epoch:
        return ErrorCode.none
    if current_leader_epoch > leader_epoch:
        return ErrorCode.unknown_leader_epoch
    return ErrorCode.fenced_leader_epoch


#: One answered partition: what was asked and the answer.
Answer = tuple[PartitionFetch, PartitionData]


def _fetch_data(req: FetchRequest, by_id: bool, names: dict[uuid.UUID, str]) -> dict[Key, PartitionFetch]:
    """Kafka's FetchRequest.fetchData: the request's partitions in order, one entry per
    (topic id, name, partition) (a partition asked twice keeps its first place, its last values);
    v13+ names come from the ids (None when the id is unknown)."""
    out: dict[Key, PartitionFetch] = {}
    new = PartitionFetch
    for t in req.topics:
        topic_id = field(t, "topic_id", None) if by_id else None
        name = names.get(topic_id) if topic_id is not None else field(t, "topic", None)
        for fp in t.partitions:
            index = fp.partition
            epoch = field(fp, "current_leader_epoch", -1)  # v9+
            if epoch < -1:
                epoch = -1  # Kafka: a negative epoch is none
            out[(topic_id, name, index)] = new(
                name, topic_id, index, fp.fetch_offset, fp.partition_max_bytes, epoch
            )
    return out


def _to_forget(req: FetchRequest, by_id: bool, names: dict[uuid.UUID, str]) -> list[PartitionFetch]:
    out: list[PartitionFetch] = []
    for t in field(req, "forgotten_topics_data", ()):
        topic_id = field(t, "topic_id", None) if by_id else None
        name = names.get(topic_id) if topic_id is not None else field(t, "topic", None)
        out.extend(PartitionFetch(name, topic_id, p, 0, 0, -1) for p in t.partitions)
    return out


def _sort(
    ctx: RequestContext, wanted: list[PartitionFetch], follower: bool
) -> tuple[list[PartitionFetch], list[Answer]]:
    """Kafka's first pass: (partitions to read, partitions refused before reading)."""
    get_log = ctx.broker.logs.get_log
    interesting: list[PartitionFetch] = []
    erroneous: list[Answer] = []
    allowed: dict[str, bool] = {}
    for want in wanted:
        topic = want.topic
        if topic is None:
            erroneous.append((want, PartitionData(want.partition, ErrorCode.unknown_topic_id, aborted=[])))
            continue
        if follower:  # no follower is a replica of a one-node cluster
            if get_log(topic, want.partition) is None:
                error = ErrorCode.unknown_topic_or_partition
            else:
                erroneous.append((want, PartitionData(want.partition, ErrorCode.not_leader_or_follower)))
                continue
        else:
            ok = allowed.get(topic)
            if ok is None:  # authorization (Kafka: READ on each topic)
                ok = allowed[topic] = ctx.allowed(Op.READ, Res.TOPIC, topic)
            if not ok:
                error = ErrorCode.topic_authorization_failed
            elif get_log(topic, want.partition) is None:
                error = ErrorCode.unknown_topic_or_partition
            else:
                interesting.append(want)
                continue
        erroneous.append((want, PartitionData(want.partition, error, aborted=[])))
    return interesting, erroneous


def _read_all(
    broker: HandlerServices, req: FetchRequest, isolation: int, wanted: list[PartitionFetch], cap: int
) -> tuple[list[Answer], int, bool]:
    """One pass over the partitions to read: (answers, record bytes, any error)."""
    budget = min(req.max_bytes, broker.config["fetch.max.bytes"], cap)  # Kafka caps the client's ask
    total = 0
    any_error = False
    answers: list[Answer] = []
    topics = broker.logs.topics
    get_log = broker.logs.get_log
    for want in wanted:
        out = PartitionData(want.partition)
        answers.append((want, out))
        topic = cast("str", want.topic)  # _sort passes only partitions of known topics
        plog = get_log(topic, want.partition)
        if plog is None:  # deleted while this request waited
            out.error_code = ErrorCode.unknown_topic_or_partition
            out.aborted = []  # Kafka's error answer carries an empty list here
            any_error = True
            continue
        if want.topic_id is not None and topics[topic].topic_id != want.topic_id:
            # a session's partition of a topic deleted and created again under its name
            out.error_code = ErrorCode.inconsistent_topic_id
            any_error = True
            continue
        error = leader_epoch_error(want.current_leader_epoch, plog.leader_epoch)
        if error:
            out.error_code = error
            any_error = True
            continue
        in_range = plog.log_start_offset <= want.fetch_offset <= plog.log_end_offset
        if total and budget <= 0 and in_range:
            out.high_watermark = plog.high_watermark
            out.last_stable_offset = plog.last_stable_offset
            out.log_start_offset = plog.log_start_offset
            continue  # response full: answer the partition with no records
        limit = min(want.max_bytes, budget)
        try:
            result = plog.read(want.fetch_offset, limit, isolation)
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
    return answers, total, any_error


def _group(answers: list[Answer], by_id: bool) -> list[Topic]:
    """Kafka's FetchResponse.toMessage: consecutive partitions of one topic share an entry."""
    topics: list[Topic] = []
    last: tuple[object, object] | None = None
    for want, out in answers:
        key = (want.topic_id, want.topic)
        if key != last:
            topic_id = want.topic_id.bytes if by_id and want.topic_id is not None else _NO_ID
            topics.append((want.topic or "", topic_id, []))
            last = key
        topics[-1][2].append(out)
    return topics


def _leaders(ctx: RequestContext, answers: list[Answer], follower: bool) -> list[NodeEndpoint]:
    """v16+: the current leader of each partition answered NOT_LEADER_OR_FOLLOWER or
    FENCED_LEADER_EPOCH, and the endpoint of that leader (this node; Kafka 4.4 sends no
    endpoint to a follower)."""
    broker = ctx.broker
    named = False
    for want, out in answers:
        if out.error_code in _LEADER_ERRORS and want.topic is not None:
            plog = broker.get_log(want.topic, want.partition)
            if plog is not None:
                out.current_leader = (broker.node_id, plog.leader_epoch)
                named = True
    if not named or follower:
        return []
    host, port = ctx.advertised
    return [(broker.node_id, host, port, None)]


def _error_response(ctx: RequestContext, req: FetchRequest, error: ErrorCode) -> RawResponse:
    """Kafka's FetchRequest.getErrorResponse: v13+ only the top-level error, older versions the
    error on every partition too."""
    topics: list[Topic] = []
    if ctx.api_version < 13:
        topics = [
            (
                field(t, "topic", ""),
                _NO_ID,
                [PartitionData(p.partition, error, aborted=[]) for p in t.partitions],
            )
            for t in req.topics
        ]
    parts, size = encode(ctx.api_version, topics, error_code=error)
    return RawResponse(parts, size)


def _answer(
    ctx: RequestContext, context: FetchContext, answers: list[Answer], by_id: bool, follower: bool
) -> RawResponse:
    version = ctx.api_version
    session_id = 0
    if context.kind == FetchContext.FULL:
        session_id = context.new_session(
            [(w, o.error_code, o.high_watermark, o.log_start_offset) for w, o in answers]
        )
        log.debug(
            "fetch session created", session_id=session_id, partitions=len(answers), client_id=ctx.client_id
        )
    elif context.kind == FetchContext.INCREMENTAL:
        session = context.session
        assert session is not None
        if not context.still_current():
            parts, size = encode(
                version, [], error_code=ErrorCode.invalid_fetch_session_epoch, session_id=session.id
            )
            return RawResponse(parts, size)
        session_id = session.id
        cached = session.partitions
        kept = []
        for want, out in answers:
            if want.must_respond(out.error_code, out.records_size, out.high_watermark, out.log_start_offset):
                kept.append((want, out))
                if out.records_size:  # Kafka moves a partition that returned records last
                    key = want.session_key()
                    cached[key] = cached.pop(key)
        log.debug(
            "incremental fetch",
            session_id=session_id,
            next_epoch=context.epoch,
            partitions=len(cached),
            answered=len(kept),
            client_id=ctx.client_id,
        )
        answers = kept
    endpoints = _leaders(ctx, answers, follower) if version >= 16 else []
    topics = _group(answers, by_id)
    parts, size = encode(version, topics, session_id=session_id, node_endpoints=endpoints)
    return RawResponse(parts, size, [(name, partitions) for name, _id, partitions in topics])


async def handle(ctx: RequestContext, req: FetchRequest) -> RawResponse:
    broker = ctx.broker
    version = ctx.api_version
    isolation = req.isolation_level
    if isolation not in (0, 1):
        # Kafka fails the whole request (UNKNOWN_SERVER_ERROR) for an unknown isolation level
        return _error_response(ctx, req, ErrorCode.unknown_server_error)
    by_id = version >= 13
    names = broker.logs.topic_names if by_id else {}
    replica_id = field(req, "replica_state", req).replica_id  # v15+: in ReplicaState
    follower = replica_id >= 0
    context = broker.fetch_sessions.context(
        version,
        field(req, "session_id", 0),
        field(req, "session_epoch", -1),
        follower,
        _fetch_data(req, by_id, names),
        _to_forget(req, by_id, names) if version >= 7 else [],
        names,
    )
    if context.kind == FetchContext.ERROR:
        if context.error == ErrorCode.unknown_server_error:
            return _error_response(ctx, req, context.error)
        parts, size = encode(version, [], error_code=context.error)
        return RawResponse(parts, size)
    interesting, erroneous = _sort(ctx, list(context.partitions), follower)
    answers: list[Answer] = []
    if interesting:
        # a consumer_byte_rate quota caps the answer at one quota window's bytes (broker/quotas.py)
        cap = (broker.quotas.fetch_cap(ctx) if broker.quotas.active else None) or _NO_CAP
        min_bytes = min(req.min_bytes, cap)
        clock = broker.clock
        deadline = clock.monotonic() + max(millis(req.max_wait), 0) / 1000
        keys = [(cast("str", w.topic), w.partition) for w in interesting]
        while True:
            answers, total, any_error = _read_all(broker, req, isolation, interesting, cap)
            remaining = deadline - clock.monotonic()
            if total >= min_bytes or any_error or remaining <= 0 or broker.data_waiters.closed:
                break
            # Nothing (or too little) yet: wait for an append, a marker or an LSO move, then re-read.
            await broker.data_waiters.wait(keys, remaining)
    return _answer(ctx, context, answers + erroneous, by_id, follower)
