"""The KIP-227 fetch session cache (broker/fetch_sessions.py) against Kafka's FetchManager and
FetchSessionCacheShard rules: contexts, epochs, errors and eviction."""

import random
import uuid

import pytest
from minibroker.broker.fetch_sessions import (
    EVICTION_MS,
    SESSION_ID_RANGE,
    SHARDS,
    FetchContext,
    FetchSessionCache,
    PartitionFetch,
    next_epoch,
)
from minibroker.common.clock import ManualClock
from minibroker.protocol.errors import ErrorCode

TOPIC_ID = uuid.UUID(int=42)


def want(topic="t", partition=0, offset=0, topic_id=None):
    return PartitionFetch(topic, topic_id, partition, offset, 1024, -1)


def data(*parts):
    return {(p.topic_id, p.topic, p.partition): p for p in parts}


def cache(slots=1000, clock=None):
    return FetchSessionCache(slots, clock or ManualClock(), rng=random.Random(7))


def open_session(c, *parts, version=12, privileged=False):
    ctx = c.context(version, 0, 0, privileged, data(*parts), [], {})
    assert ctx.kind == FetchContext.FULL
    return ctx.new_session([(p, 0, 10, 0) for p in parts])


def test_next_epoch_wraps_and_keeps_final():
    assert next_epoch(0) == 1
    assert next_epoch(5) == 6
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(-1) == -1


def test_final_epoch_is_sessionless_and_closes_the_named_session():
    c = cache()
    sid = open_session(c, want())
    assert sid and c.get(sid) is not None
    ctx = c.context(12, sid, -1, False, data(want()), [], {})
    assert ctx.kind == FetchContext.SESSIONLESS
    assert c.get(sid) is None


def test_full_fetch_with_epoch_zero_replaces_the_named_session():
    c = cache()
    sid = open_session(c, want())
    ctx = c.context(12, sid, 0, False, data(want()), [], {})
    assert ctx.kind == FetchContext.FULL
    assert c.get(sid) is None


def test_incremental_fetch_reads_the_session_and_advances_the_epoch():
    c = cache()
    sid = open_session(c, want(partition=0), want(partition=1))
    ctx = c.context(12, sid, 1, False, {}, [], {})
    assert ctx.kind == FetchContext.INCREMENTAL
    assert [p.partition for p in ctx.partitions] == [0, 1]
    assert c.get(sid).epoch == 2
    assert ctx.still_current()
    # the same epoch again (a duplicate) is refused
    again = c.context(12, sid, 1, False, {}, [], {})
    assert (again.kind, again.error) == (FetchContext.ERROR, ErrorCode.invalid_fetch_session_epoch)


def test_incremental_updates_adds_and_forgets():
    c = cache()
    sid = open_session(c, want(partition=0, offset=5))
    ctx = c.context(12, sid, 1, False, data(want(partition=0, offset=9), want(partition=2)), [], {})
    assert {(p.partition, p.fetch_offset) for p in ctx.partitions} == {(0, 9), (2, 0)}
    ctx = c.context(12, sid, 2, False, {}, [want(partition=0)], {})
    assert [p.partition for p in ctx.partitions] == [2]
    # forgetting the last partition closes the session: a sessionless answer
    ctx = c.context(12, sid, 3, False, {}, [want(partition=2)], {})
    assert ctx.kind == FetchContext.SESSIONLESS
    assert c.get(sid) is None


@pytest.mark.parametrize(
    ("session_id", "error"),
    [
        (12345, ErrorCode.fetch_session_id_not_found),
        (-7, ErrorCode.fetch_session_id_not_found),
        (2**31 - 1, ErrorCode.unknown_server_error),  # Kafka: no shard for it
    ],
)
def test_session_errors(session_id, error):
    ctx = cache().context(18, session_id, 1, False, {}, [], {})
    assert (ctx.kind, ctx.error) == (FetchContext.ERROR, error)


def test_topic_id_mode_must_match_the_session():
    c = cache()
    sid = open_session(c, want(topic_id=TOPIC_ID), version=18)
    ctx = c.context(12, sid, 1, False, {}, [], {})
    assert (ctx.kind, ctx.error) == (FetchContext.ERROR, ErrorCode.fetch_session_topic_id_error)


def test_unknown_topic_names_are_resolved_once_known():
    c = cache()
    sid = open_session(c, want(topic=None, topic_id=TOPIC_ID), version=18)
    ctx = c.context(18, sid, 1, False, {}, [], {TOPIC_ID: "now-known"})
    assert [p.topic for p in ctx.partitions] == ["now-known"]


def test_must_respond_only_on_news():
    p = want()
    p.high_watermark, p.log_start_offset = 10, 0
    assert not p.must_respond(0, 0, 10, 0)
    assert p.must_respond(0, 5, 10, 0)  # records
    assert p.must_respond(0, 0, 11, 0)  # high watermark moved
    assert not p.must_respond(0, 0, 11, 0)
    assert p.must_respond(0, 0, 11, 3)  # log start moved
    assert p.must_respond(6, 0, -1, -1)  # an error, and the next answer is sent again
    assert p.high_watermark == -1


def test_new_sessions_go_round_robin_over_the_shards_with_their_id_range():
    c = cache()
    ids = [open_session(c, want()) for _ in range(SHARDS)]
    assert sorted(i // SESSION_ID_RANGE for i in ids) == list(range(SHARDS))
    assert len(c) == SHARDS


def test_a_full_shard_evicts_only_for_a_bigger_session_once_old_enough():
    clock = ManualClock()
    c = cache(slots=SHARDS, clock=clock)  # one session per shard
    small = [open_session(c, want()) for _ in range(SHARDS)]
    # every shard full; a new session of the same size evicts nothing, and neither does a
    # bigger one while the others are young (they are not evictable by consumers yet)
    assert open_session(c, want()) == 0
    assert open_session(c, want(partition=0), want(partition=1)) == 0
    clock.advance(EVICTION_MS // 2)
    for sid in small:  # used: last-used now, and still younger than the eviction time
        c.context(12, sid, c.get(sid).epoch, False, {}, [], {})
    clock.advance(EVICTION_MS // 2 + 1)
    for sid in small:  # used again: now old enough to be evictable
        c.context(12, sid, c.get(sid).epoch, False, {}, [], {})
    assert open_session(c, want()) == 0  # same size: not more valuable
    bigger = open_session(c, want(partition=0), want(partition=1))
    assert bigger != 0
    assert sum(c.get(s) is None for s in small) == 1


def test_a_stale_session_is_evicted_by_anyone():
    clock = ManualClock()
    c = cache(slots=SHARDS, clock=clock)
    first = [open_session(c, want(partition=0), want(partition=1)) for _ in range(SHARDS)]
    clock.advance(EVICTION_MS + 1)
    assert open_session(c, want()) != 0  # smaller, but the shard's session went unused too long
    assert sum(c.get(s) is None for s in first) == 1


def test_privileged_sessions_evict_young_consumer_sessions():
    c = cache(slots=SHARDS)
    consumers = [open_session(c, want(partition=0), want(partition=1)) for _ in range(SHARDS)]
    assert open_session(c, want(), privileged=True) != 0
    assert sum(c.get(s) is None for s in consumers) == 1


def test_zero_slots_never_create_a_session():
    assert open_session(cache(slots=0), want()) == 0
