"""ShareFetch share sessions (broker/share_sessions.py): Kafka 4.4's epoch rules
(SharePartitionManager.newContext, acknowledgeSessionUpdate), the session limit, incremental
answers and the release when the opening connection closes (ShareSessionCache)."""

from __future__ import annotations

import uuid

import pytest
from minibroker.broker.share_sessions import ShareSessionCache, next_epoch
from minibroker.common.clock import ManualClock
from minibroker.protocol.errors import ErrorCode

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
P0 = ((T1, 0), "t1")
P1 = ((T1, 1), "t1")
Q0 = ((T2, 0), "t2")


def cache(limit: int = 10) -> ShareSessionCache:
    return ShareSessionCache(limit, ManualClock())


@pytest.mark.parametrize(("epoch", "after"), [(0, 1), (1, 2), (41, 42), (2**31 - 1, 1), (-1, -1), (-5, -1)])
def test_next_epoch_is_kafkas(epoch: int, after: int) -> None:
    assert next_epoch(epoch) == after


def test_epoch_zero_opens_a_session_at_epoch_one_with_the_request_partitions() -> None:
    c = cache()
    ctx = c.fetch_context("g", "m", 0, [P0, Q0], [], False, connection_id=3)
    assert ctx.error == ErrorCode.none and ctx.kind == "initial"
    assert ctx.session is not None and ctx.session.epoch == 1
    assert list(ctx.session.partitions) == [(T1, 0), (T2, 0)]
    assert ctx.partitions == (P0, Q0)
    assert len(c) == 1


def test_epoch_zero_with_acknowledgements_is_invalid_request_and_opens_nothing() -> None:
    c = cache()
    ctx = c.fetch_context("g", "m", 0, [P0], [], True, connection_id=3)
    assert ctx.error == ErrorCode.invalid_request
    assert c.get("g", "m") is None


def test_epoch_zero_replaces_the_members_session() -> None:
    c = cache()
    first = c.fetch_context("g", "m", 0, [P0], [], False, connection_id=1).session
    c.fetch_context("g", "m", 1, [], [], False, connection_id=1)
    second = c.fetch_context("g", "m", 0, [Q0], [], False, connection_id=2).session
    assert second is not first and second is not None
    assert second.epoch == 1 and list(second.partitions) == [(T2, 0)]
    assert len(c) == 1


def test_incremental_epochs_must_match_and_move_on() -> None:
    c = cache()
    c.fetch_context("g", "m", 0, [P0], [], False, connection_id=1)
    assert c.fetch_context("g", "m", 2, [], [], False, 1).error == ErrorCode.invalid_share_session_epoch
    ctx = c.fetch_context("g", "m", 1, [P1], [], False, 1)
    assert ctx.error == ErrorCode.none and ctx.kind == "subsequent"
    assert ctx.session is not None and ctx.session.epoch == 2
    # the session's partitions are fetched, the new one answered next whatever it holds
    assert ctx.partitions == (P0, P1)
    assert ctx.session.partitions[(T1, 1)].requires_update
    assert not ctx.session.partitions[(T1, 0)].requires_update
    ctx = c.fetch_context("g", "m", 2, [], [(T1, 0)], False, 1)
    assert ctx.partitions == (P1,)
    assert c.fetch_context("g", "m", 2, [], [], False, 1).error == ErrorCode.invalid_share_session_epoch


def test_no_session_is_share_session_not_found() -> None:
    c = cache()
    assert c.fetch_context("g", "m", 1, [], [], False, 1).error == ErrorCode.share_session_not_found
    assert c.fetch_context("g", "m", -1, [], [], True, 1).error == ErrorCode.share_session_not_found
    assert c.acknowledge_context("g", "m", 1) == ErrorCode.share_session_not_found
    assert c.acknowledge_context("g", "m", -1) == ErrorCode.share_session_not_found


def test_final_epoch_fetch_keeps_the_session_for_the_handler_to_close() -> None:
    c = cache()
    c.fetch_context("g", "m", 0, [P0], [], False, 1)
    ctx = c.fetch_context("g", "m", -1, [], [], True, 1)
    assert ctx.error == ErrorCode.none and ctx.kind == "final" and ctx.partitions == ()
    assert c.remove("g", "m") is not None
    assert c.get("g", "m") is None


def test_share_acknowledge_epochs() -> None:
    c = cache()
    c.fetch_context("g", "m", 0, [P0], [], False, 1)
    assert c.acknowledge_context("g", "m", 0) == ErrorCode.invalid_share_session_epoch
    assert c.acknowledge_context("g", "m", 2) == ErrorCode.invalid_share_session_epoch
    assert c.acknowledge_context("g", "m", 1) == ErrorCode.none
    session = c.get("g", "m")
    assert session is not None and session.epoch == 2
    assert c.acknowledge_context("g", "m", -1) == ErrorCode.none  # -1: no epoch check, no move
    assert session.epoch == 2


def test_session_limit() -> None:
    c = cache(limit=2)
    assert c.fetch_context("g", "a", 0, [P0], [], False, 1).error == ErrorCode.none
    assert c.fetch_context("g", "b", 0, [P0], [], False, 2).error == ErrorCode.none
    assert c.fetch_context("g", "c", 0, [P0], [], False, 3).error == ErrorCode.share_session_limit_reached
    # replacing one's own session at the limit is fine (the old one goes first)
    assert c.fetch_context("g", "a", 0, [Q0], [], False, 1).error == ErrorCode.none
    assert len(c) == 2


def test_incremental_answers_name_what_changed() -> None:
    c = cache()
    session = c.fetch_context("g", "m", 0, [P0, P1], [], False, 1).session
    assert session is not None
    p0, p1 = session.partitions[(T1, 0)], session.partitions[(T1, 1)]
    assert not p0.must_respond(0, 0)  # nothing new
    assert p0.must_respond(0, 100)  # records
    assert p1.must_respond(ErrorCode.unknown_topic_or_partition, 0)  # an error ...
    assert p1.must_respond(0, 0)  # ... and once more after it
    assert not p1.must_respond(0, 0)
    session.moved_last((T1, 0))
    assert list(session.partitions) == [(T1, 1), (T1, 0)]


def test_closing_the_opening_connection_releases_the_member_and_empties_the_group() -> None:
    c = cache()
    left: list[tuple[str, str]] = []
    empty: list[str] = []
    c.on_member_leave = lambda g, m: left.append((g, m))
    c.on_group_empty = empty.append
    c.fetch_context("g", "a", 0, [P0], [], False, connection_id=1)
    c.fetch_context("g", "b", 0, [P0], [], False, connection_id=2)
    c.connection_closed(99)  # no session
    assert left == [] and empty == []
    c.connection_closed(1)
    assert left == [("g", "a")] and empty == []
    assert c.get("g", "a") is None and c.get("g", "b") is not None
    c.connection_closed(2)
    assert left == [("g", "a"), ("g", "b")] and empty == ["g"]
    assert c.evictions == 2


def test_a_session_replaced_from_another_connection_stays_when_the_first_closes() -> None:
    c = cache()
    left: list[tuple[str, str]] = []
    c.on_member_leave = lambda g, m: left.append((g, m))
    c.fetch_context("g", "m", 0, [P0], [], False, connection_id=1)
    c.fetch_context("g", "m", 0, [P0], [], False, connection_id=2)
    c.connection_closed(1)  # its session was replaced: stale
    assert left == [] and c.get("g", "m") is not None
    c.connection_closed(2)
    assert left == [("g", "m")] and c.get("g", "m") is None


def test_a_closed_session_is_not_released_again_by_its_connection() -> None:
    c = cache()
    left: list[tuple[str, str]] = []
    c.on_member_leave = lambda g, m: left.append((g, m))
    c.fetch_context("g", "m", 0, [P0], [], False, connection_id=1)
    c.remove("g", "m")  # epoch -1 closed it
    c.connection_closed(1)
    assert left == []
