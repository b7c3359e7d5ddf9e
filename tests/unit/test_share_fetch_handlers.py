"""ShareFetch (78) and ShareAcknowledge (79) handlers over the share-partition driver of
test_share_fetch_manager (a real log, fakes of SharePartition and the share coordinator): Kafka
4.4's top-level refusals, the share session epochs, per-partition errors, acknowledgements
piggy-backed on a fetch, incremental answers and the session's close."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from minibroker.broker.context import RequestContext
from minibroker.broker.handlers import share_acknowledge, share_fetch
from minibroker.broker.share_sessions import ShareSessionCache
from minibroker.common.clock import ManualClock
from minibroker.protocol.codec import build, millis, request_class
from minibroker.protocol.errors import ErrorCode

from tests.unit.handler_fakes import FakeBroker
from tests.unit.test_share_fetch_manager import Setup, fake_share_partition, offsets

__all__ = ["fake_share_partition"]  # the autouse fixture, used here too

MEMBER = str(uuid.uuid4())


class Env:
    def __init__(self, tmp_path: Any, level: int = 1, limit: int = 10) -> None:
        self.s = Setup(
            tmp_path, {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": 20_000}
        )
        self.level = level
        self.broker = FakeBroker(
            config={"fetch.max.bytes": 50 << 20},
            logs=self.s.logs,
            security=SimpleNamespace(allowed=lambda *a: True),
            features=SimpleNamespace(level=lambda name: self.level),
            share_sessions=ShareSessionCache(limit, ManualClock()),
            share_partitions=self.s.manager,
        )
        sessions = self.broker.share_sessions  # wired as broker/state.py wires them
        sessions.on_member_leave = self.s.manager.release_member
        sessions.on_group_empty = self.s.manager.forget_group

    async def fetch(self, version: int = 1, connection_id: int = 1, **fields: Any) -> Any:
        values: dict[str, Any] = dict(
            group_id="g",
            member_id=MEMBER,
            share_session_epoch=0,
            max_wait=0,
            min_bytes=1,
            max_bytes=1 << 20,
            max_records=500,
            batch_size=500,
            topics=[],
            forgotten_topics_data=[],
        )
        values.update(fields)
        req = build(request_class(78, version), values)
        ctx = RequestContext(self.broker, 78, version, 1, "c", "peer", None, connection_id)
        return await share_fetch.handle(ctx, req)  # type: ignore[arg-type]

    async def acknowledge(self, version: int = 1, **fields: Any) -> Any:
        values: dict[str, Any] = dict(group_id="g", member_id=MEMBER, share_session_epoch=1, topics=[])
        values.update(fields)
        req = build(request_class(79, version), values)
        ctx = RequestContext(self.broker, 79, version, 1, "c", "peer", None, 1)
        return await share_acknowledge.handle(ctx, req)  # type: ignore[arg-type]

    def topic(
        self, *partitions: int, acks: dict[int, list[tuple[int, int, list[int]]]] | None = None
    ) -> dict:
        return {
            "topic_id": self.s.topic_id,
            "partitions": [
                {
                    "partition_index": p,
                    "acknowledgement_batches": [
                        {"first_offset": f, "last_offset": last, "acknowledge_types": t}
                        for f, last, t in (acks or {}).get(p, [])
                    ],
                }
                for p in partitions
            ],
        }


def parts(resp: Any) -> dict[tuple[uuid.UUID | None, int], Any]:
    return {(t.topic_id, p.partition_index): p for t in resp.responses for p in t.partitions}


@pytest.fixture
def env(tmp_path: Any) -> Env:
    e = Env(tmp_path)
    e.s.produce(3, 3)
    e.s.initialize()
    return e


async def test_share_version_below_one_is_unsupported_version(tmp_path: Any) -> None:
    e = Env(tmp_path, level=0)
    resp = await e.fetch()
    assert resp.error_code == ErrorCode.unsupported_version and resp.responses == ()
    assert millis(resp.acquisition_lock_timeout) == 0
    resp = await e.acknowledge()
    assert resp.error_code == ErrorCode.unsupported_version


@pytest.mark.parametrize(
    "fields",
    [{"group_id": None}, {"member_id": None}, {"member_id": ""}, {"member_id": "x" * 37}],
)
async def test_bad_group_or_member_id_is_invalid_request_without_message(env: Env, fields: dict) -> None:
    for resp in (await env.fetch(**fields), await env.acknowledge(**fields)):
        assert resp.error_code == ErrorCode.invalid_request and resp.error_message is None


async def test_renew_ack_needs_the_fetch_limits_at_zero(env: Env) -> None:
    resp = await env.fetch(version=2, is_renew_ack=True)
    assert resp.error_code == ErrorCode.invalid_request
    resp = await env.fetch(version=2, is_renew_ack=True, max_bytes=0, min_bytes=0, max_records=0, max_wait=5)
    assert resp.error_code == ErrorCode.invalid_request
    # all zero: acknowledgements only (none here), nothing fetched
    resp = await env.fetch(
        version=2, is_renew_ack=True, max_bytes=0, min_bytes=0, max_records=0, topics=[env.topic(0)]
    )
    assert resp.error_code == ErrorCode.none and resp.responses == ()


async def test_session_errors(env: Env) -> None:
    assert (await env.fetch(share_session_epoch=1)).error_code == ErrorCode.share_session_not_found
    assert (await env.fetch(share_session_epoch=-1)).error_code == ErrorCode.share_session_not_found
    with_acks = env.topic(0, acks={0: [(0, 1, [1])]})
    assert (await env.fetch(topics=[with_acks])).error_code == ErrorCode.invalid_request
    assert (await env.acknowledge(share_session_epoch=0)).error_code == ErrorCode.invalid_share_session_epoch
    assert (await env.fetch(topics=[env.topic(0)])).error_code == ErrorCode.none
    assert (await env.fetch(share_session_epoch=5)).error_code == ErrorCode.invalid_share_session_epoch


async def test_fetch_acknowledge_and_close(env: Env) -> None:
    resp = await env.fetch(topics=[env.topic(0)])
    p = parts(resp)[(env.s.topic_id, 0)]
    assert resp.error_code == 0 and millis(resp.acquisition_lock_timeout) == 20_000
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records] == [(0, 5, 1)]
    assert offsets(p.records) == [(0, 2), (3, 5)]
    # epoch 1: accept 0-2 and release 3-5, piggy-backed; the released come back at once
    resp = await env.fetch(share_session_epoch=1, topics=[env.topic(0, acks={0: [(0, 2, [1]), (3, 5, [2])]})])
    p = parts(resp)[(env.s.topic_id, 0)]
    assert (p.acknowledge_error_code, p.acknowledge_error_message) == (0, None)
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records] == [(3, 5, 2)]
    assert offsets(p.records) == [(3, 5)]
    # ShareAcknowledge at epoch 2: someone else's records are refused by the share-partition
    resp = await env.acknowledge(share_session_epoch=2, topics=[env.topic(0, acks={0: [(0, 0, [1])]})])
    ack = parts(resp)[(env.s.topic_id, 0)]
    assert ack.error_code == ErrorCode.invalid_record_state
    # close at -1 with an acknowledgement: answered, then the session goes and 3-5 are released
    resp = await env.fetch(share_session_epoch=-1, topics=[env.topic(0, acks={0: [(3, 3, [1])]})])
    p = parts(resp)[(env.s.topic_id, 0)]
    assert p.acknowledge_error_code == 0 and p.acquired_records == ()
    assert env.broker.share_sessions.get("g", MEMBER) is None
    sp = env.s.manager.partitions[env.s.key]
    assert sp.next_fetch_offset() == 4


async def test_partition_errors(env: Env) -> None:
    unknown_id = uuid.uuid4()
    resp = await env.fetch(
        topics=[env.topic(0, 7), {"topic_id": unknown_id, "partitions": [{"partition_index": 0}]}]
    )
    got = {key: p.error_code for key, p in parts(resp).items()}
    assert got == {
        (env.s.topic_id, 0): ErrorCode.none,
        (env.s.topic_id, 7): ErrorCode.unknown_topic_or_partition,
        (unknown_id, 0): ErrorCode.unknown_topic_id,
    }
    assert all(p.error_message is None for p in parts(resp).values())


async def test_an_uninitialized_share_partition_answers_unknown_topic_or_partition(tmp_path: Any) -> None:
    e = Env(tmp_path)
    e.s.produce(2)
    resp = await e.fetch(topics=[e.topic(0)])
    assert parts(resp)[(e.s.topic_id, 0)].error_code == ErrorCode.unknown_topic_or_partition


async def test_incremental_answers_only_what_changed(env: Env) -> None:
    await env.fetch(topics=[env.topic(0)])
    resp = await env.fetch(share_session_epoch=1)  # nothing new: partition 0 not named
    assert resp.error_code == 0 and parts(resp) == {}
    env.s.produce(2)
    resp = await env.fetch(share_session_epoch=2)
    p = parts(resp)[(env.s.topic_id, 0)]
    assert [(a.first_offset, a.last_offset) for a in p.acquired_records] == [(6, 7)]


async def test_acknowledgement_batches_are_validated_per_partition(env: Env) -> None:
    await env.fetch(topics=[env.topic(0)])
    bad = env.topic(0, acks={0: [(2, 1, [1])]})
    resp = await env.acknowledge(share_session_epoch=1, topics=[bad])
    assert parts(resp)[(env.s.topic_id, 0)].error_code == ErrorCode.invalid_request
    renew = env.topic(0, acks={0: [(0, 1, [4])]})
    resp = await env.acknowledge(share_session_epoch=2, topics=[renew])  # v1: no RENEW
    assert parts(resp)[(env.s.topic_id, 0)].error_code == ErrorCode.invalid_request
    assert env.s.coordinator.writes == []


async def test_the_session_limit_answers_after_max_wait(tmp_path: Any) -> None:
    e = Env(tmp_path, limit=1)
    e.s.initialize()
    assert (await e.fetch(member_id="a" * 10)).error_code == 0
    resp = await e.fetch(member_id="b" * 10, max_wait=20)
    assert resp.error_code == ErrorCode.share_session_limit_reached


async def test_closing_the_connection_releases_the_members_records(env: Env) -> None:
    await env.fetch(topics=[env.topic(0)], connection_id=42)
    env.broker.share_sessions.connection_closed(42)
    await env.s.manager.settle()
    assert env.broker.share_sessions.get("g", MEMBER) is None
    # the group had no other session: its share-partitions are let go, loaded again when used,
    # after the release was staged (and persisted: the delivery counts survive the reload)
    assert env.s.key not in env.s.manager.partitions
    assert [
        (b.first_offset, b.delivery_state, b.delivery_count) for b in env.s.coordinator.writes[-1].batches
    ][:2] == [(0, 0, 1), (1, 0, 1)]
