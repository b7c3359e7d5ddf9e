"""offsets.retention.minutes (GroupCoordinator.expire_offsets): offsets of groups empty for the
retention period, and standalone commits older than it, expire with tombstones; groups with
members keep theirs; an Empty group left without offsets is removed."""

import pytest
from minibroker.coordinator.group_records import decode_key
from minibroker.protocol.errors import ErrorCode as E

from tests.unit.coordinator_fakes import MemoryOffsetsStore, commit, group_coordinator, run_now
from tests.unit.test_groups import CONFIG, FakeScheduler, form_group

pytestmark = pytest.mark.timeout(10)

MINUTE = 60_000


def coordinator():
    clock = FakeScheduler()
    store = MemoryOffsetsStore(1)
    gc = group_coordinator({**CONFIG, "offsets.retention.minutes": 10}, scheduler=clock, store=store)
    return gc, clock, store


def tombstoned_keys(store):
    return [decode_key(k) for b in store.logs[0] for _, k, v in b.records if v is None]


def test_standalone_commits_expire_by_commit_time():
    gc, clock, store = coordinator()
    commit(gc, "solo", "", None, -1, [("t", 0, 5, -1, "")])
    clock.advance(5 * MINUTE)
    commit(gc, "solo", "", None, -1, [("t", 1, 6, -1, "")])
    clock.advance(5 * MINUTE)
    assert run_now(gc, gc.expire_offsets()) == 1
    assert [p[1:] for p in gc.fetch_offsets("solo", None)[1]] == [(1, 6, -1, "", E.none)]
    assert len(tombstoned_keys(store)) == 1
    clock.advance(5 * MINUTE)
    assert run_now(gc, gc.expire_offsets()) == 1
    assert "solo" not in gc.groups  # removed, with a group tombstone
    assert len(tombstoned_keys(store)) == 3


def test_consumer_group_offsets_expire_only_after_it_is_empty_long_enough():
    gc, clock, store = coordinator()
    gen, (a,) = form_group(gc, clock, 1)
    assert commit(gc, "g", a, None, gen, [("t", 0, 1, -1, "")]) == {("t", 0): E.none}
    for _ in range(11 * 120):  # 11 minutes with a live member (heartbeat every 500 ms)
        clock.advance(500)
        run_now(gc, gc.heartbeat("g", a, None, gen))
    assert run_now(gc, gc.expire_offsets()) == 0  # a group with members keeps its offsets
    run_now(gc, gc.leave_group("g", [(a, None)]))
    clock.advance(9 * MINUTE)
    assert run_now(gc, gc.expire_offsets()) == 0
    clock.advance(MINUTE)
    assert run_now(gc, gc.expire_offsets()) == 1
    assert "g" not in gc.groups
