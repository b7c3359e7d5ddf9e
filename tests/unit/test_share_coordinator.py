"""The share coordinator (coordinator/share_coordinator.py, Kafka's ShareCoordinatorShard) over a
real __share_group_state on a temporary LogManager, and its batch combiner
(coordinator/share_state_combiner.py, Kafka's PersisterStateBatchCombiner).

Expected combiner results and partitions were computed with Kafka 4.4.0's own classes
(PersisterStateBatchCombiner.combineStateBatches, Utils.abs(SharePartitionKey.asCoordinatorKey()
.hashCode()) % n)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from minibroker.broker.coordinator_runtime import CoordinatorRuntime
from minibroker.broker.durability import Durability
from minibroker.common.clock import ManualClock
from minibroker.coordinator.internal_topic import InternalBatch, InternalTopic
from minibroker.coordinator.runtime import Write
from minibroker.coordinator.share_coordinator import (
    SHARE_STATE_TOPIC,
    SHARE_STATE_TOPIC_CONFIGS,
    ShareCoordinator,
    ShareCoordinatorSettings,
)
from minibroker.coordinator.share_state_combiner import combine_state_batches
from minibroker.coordinator.share_state_records import (
    ShareSnapshot,
    ShareSnapshotValue,
    ShareUpdate,
    ShareUpdateValue,
    decode,
    encode,
)
from minibroker.coordinator.share_types import (
    PartitionState,
    RecordState,
    SharePartitionKey,
    StateBatch,
    StateSummary,
    WriteStateRequest,
)
from minibroker.protocol.errors import ErrorCode as E
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log_manager import LogManager

from tests.unit.coordinator_fakes import run_now

AVAILABLE, ACKNOWLEDGED, ARCHIVED = RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
PARTITIONS = 5


def open_logs(path) -> LogManager:
    logs = LogManager(str(path), {}, clock=ManualClock())
    logs.open()
    return logs


def coordinator_on(logs: LogManager, clock: ManualClock, per_snapshot: int = 500) -> ShareCoordinator:
    return ShareCoordinator(
        ShareCoordinatorSettings(
            num_partitions=PARTITIONS, snapshot_update_records_per_snapshot=per_snapshot
        ),
        store=InternalTopic(
            logs,
            SHARE_STATE_TOPIC,
            PARTITIONS,
            "share.coordinator.state.topic.segment.bytes",
            clock,
            topic_configs=SHARE_STATE_TOPIC_CONFIGS,
        ),
        clock=clock,
    )


class World:
    """A LogManager with a 3-partition data topic "t" and a share coordinator on it."""

    def __init__(self, path, per_snapshot: int = 500) -> None:
        self.path = path
        self.per_snapshot = per_snapshot
        self.clock = ManualClock()
        self.logs = open_logs(path)
        self.topic_id = self.logs.create_topic("t", 3).topic_id
        self.sc = coordinator_on(self.logs, self.clock, per_snapshot)

    def key(self, partition: int = 0, group: str = "g") -> SharePartitionKey:
        return SharePartitionKey(group, self.topic_id, partition)

    def run(self, op):
        return run_now(self.sc, op)

    def init(self, key, state_epoch=0, start=-1):
        return self.run(self.sc.initialize_state(key, state_epoch, start))

    def write(self, key, batches=(), start=-1, state_epoch=0, leader_epoch=0, dcc=-1):
        request = WriteStateRequest(
            key, state_epoch, leader_epoch, start, dcc, tuple(StateBatch(*b) for b in batches)
        )
        return self.run(self.sc.write_state(request))

    def reopen(self) -> ShareCoordinator:
        """Close the logs, open them again and load a new coordinator from them."""
        self.logs.close()
        self.logs = open_logs(self.path)
        self.sc = coordinator_on(self.logs, self.clock, self.per_snapshot)
        self.sc.load()
        return self.sc

    def records(self, partition: int) -> list:
        store = self.sc.store
        return [decode(k, v) for b in store.batches(partition) for _, k, v in b.records if k is not None]

    def snapshot_of(self, sc: ShareCoordinator) -> tuple:
        return (sc.states, sc._offsets, sc._leader_epochs, sc._state_epochs, sc._updates)


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path / "data")
    yield w
    w.logs.close()


# --- partitioning ----------------------------------------------------------------------------
T1 = uuid.UUID(int=1)  # Kafka: AAAAAAAAAAAAAAAAAAAAAQ
T2 = uuid.UUID("0123456789abcdeffedcba9876543210")  # Kafka: ASNFZ4mrze_-3LqYdlQyEA


@pytest.mark.parametrize(
    "group, topic, partition, of_50, of_7",
    [
        ("g", T1, 0, 23, 5),
        ("g", T2, 7, 21, 4),
        ("share-group", T1, 0, 49, 0),
        ("share-group", T2, 0, 38, 2),
        ("grp-ü", T1, 7, 33, 2),
        ("grp-ü", T2, 0, 13, 4),
        ("", T2, 7, 0, 3),
    ],
)
def test_partition_for_is_kafkas(group, topic, partition, of_50, of_7):
    clock = ManualClock()
    for n, expected in ((50, of_50), (7, of_7)):
        sc = ShareCoordinator(ShareCoordinatorSettings(num_partitions=n), store=None, clock=clock)  # type: ignore[arg-type]
        assert sc.partition_for(SharePartitionKey(group, topic, partition)) == expected


# --- the combiner ----------------------------------------------------------------------------
def _b(*spec):
    return tuple(StateBatch(*s) for s in spec)


@pytest.mark.parametrize(
    "so_far, new, start, expected",
    [
        pytest.param(
            _b((0, 9, 0, 1)), _b((3, 5, 2, 1)), 0, _b((0, 2, 0, 1), (3, 5, 2, 1), (6, 9, 0, 1)), id="split"
        ),
        pytest.param(_b((0, 9, 2, 3)), _b((0, 9, 0, 1)), -1, _b((0, 9, 2, 3)), id="higher-count-wins"),
        pytest.param(
            _b((0, 4, 2, 1), (5, 9, 0, 2)),
            _b((10, 12, 4, 1)),
            7,
            _b((7, 9, 0, 2), (10, 12, 4, 1)),
            id="prune",
        ),
        pytest.param(_b((0, 4, 2, 1)), _b((5, 9, 2, 1)), 0, _b((0, 9, 2, 1)), id="coalesce"),
        pytest.param(_b((0, 9, 4, 2)), _b((0, 9, 0, 2)), 0, _b((0, 9, 4, 2)), id="higher-state-wins"),
        pytest.param(
            _b((0, 20, 0, 1), (21, 30, 2, 2)),
            _b((5, 25, 0, 3), (18, 22, 4, 3), (40, 41, 2, 1)),
            3,
            _b((3, 4, 0, 1), (5, 17, 0, 3), (18, 22, 4, 3), (23, 25, 0, 3), (26, 30, 2, 2), (40, 41, 2, 1)),
            id="overlaps",
        ),
        pytest.param(_b((0, 4, 2, 1)), _b((5, 9, 2, 1)), 10, (), id="all-below-start"),
        pytest.param((), _b((5, 9, 2, 1)), 7, _b((7, 9, 2, 1)), id="one-cut"),
        pytest.param(
            _b((50, 60, 2, 1), (0, 9, 0, 1)),
            _b((8, 52, 4, 2)),
            -1,
            _b((0, 7, 0, 1), (8, 52, 4, 2), (53, 60, 2, 1)),
            id="unsorted",
        ),
    ],
)
def test_combiner_is_kafkas(so_far, new, start, expected):
    assert combine_state_batches(so_far, new, start) == expected


# --- operations ------------------------------------------------------------------------------
def test_initialize_writes_a_snapshot_and_read_returns_it(world):
    key = world.key(1)
    assert world.init(key, state_epoch=0, start=-1) == 0
    assert world.sc.states[key] == PartitionState(0, 0, -1, -1, ())
    [record] = world.records(world.sc.partition_for(key))
    assert record == ShareSnapshot(
        key, ShareSnapshotValue(0, 0, 0, -1, -1, world.clock.wall_ms(), world.clock.wall_ms())
    )
    # read at the recorded leader epoch (0): no write
    result = world.run(world.sc.read_state(key, 0))
    assert result.error_code == 0 and result.state == PartitionState(0, 0, -1, -1, ())
    assert len(world.records(world.sc.partition_for(key))) == 1


def test_reinitialize_bumps_snapshot_epoch_and_wipes_batches(world):
    key = world.key()
    world.init(key, 0, 0)
    world.write(key, [(0, 4, ACKNOWLEDGED, 1)], start=0)
    assert world.init(key, 1, 40) == 0  # AlterShareGroupOffsets
    assert world.sc.states[key] == PartitionState(1, 0, 40, 0, ())
    assert world.sc._offsets[key].snapshot_epoch == 1
    assert world.init(key, 0, 0) == E.fenced_state_epoch  # an older state epoch is fenced
    assert world.sc.states[key].state_epoch == 1


def test_initialize_errors(world):
    assert world.init(world.key(-1)) == E.invalid_request
    assert world.init(world.key(0), state_epoch=-1) == E.invalid_request
    assert world.init(world.key(3)) == E.unknown_topic_or_partition  # "t" has 3 partitions
    assert world.init(SharePartitionKey("g", uuid.uuid4(), 0)) == E.unknown_topic_or_partition
    assert world.sc.states == {}


def test_read_records_a_new_leader_epoch_with_a_write(world):
    key = world.key()
    world.init(key, 0, 5)
    partition = world.sc.partition_for(key)
    result = world.run(world.sc.read_state(key, 3))
    assert result.error_code == 0 and result.state.leader_epoch == 3 and result.state.start_offset == 5
    assert world.records(partition)[-1] == ShareUpdate(key, ShareUpdateValue(0, 3, 5, 0, ()))
    assert world.sc.states[key].leader_epoch == 3 and world.sc._leader_epochs[key] == 3
    world.run(world.sc.read_state(key, 3))
    assert len(world.records(partition)) == 2  # same epoch: no write
    fenced = world.run(world.sc.read_state(key, 2))
    assert fenced.error_code == E.fenced_leader_epoch and fenced.state is None


def test_read_errors(world):
    uninitialized = world.run(world.sc.read_state(world.key(), 0))
    assert uninitialized.error_code == E.invalid_request
    assert uninitialized.error_message == "Read operation on uninitialized share partition not allowed."
    world.init(world.key())
    assert world.run(world.sc.read_state(world.key(), -1)).error_code == E.invalid_request
    assert world.run(world.sc.read_state(world.key(-1), 0)).error_code == E.invalid_request


def test_write_appends_updates_with_only_the_requests_batches(world):
    key = world.key()
    world.init(key, 0, 0)
    assert world.write(key, [(0, 4, ACKNOWLEDGED, 1)], start=0, dcc=5) == 0
    assert world.write(key, [(5, 9, AVAILABLE, 2)], start=-1) == 0
    records = world.records(world.sc.partition_for(key))
    assert records[1:] == [
        ShareUpdate(key, ShareUpdateValue(0, 0, 0, 5, _b((0, 4, 2, 1)))),
        # start -1 -> max(-1, 0) = 0; a lower start keeps the recorded delivery-complete count
        ShareUpdate(key, ShareUpdateValue(0, 0, 0, 5, _b((5, 9, 0, 2)))),
    ]
    assert world.sc.states[key] == PartitionState(0, 0, 0, 5, _b((0, 4, 2, 1), (5, 9, 0, 2)))


def test_write_moving_the_start_offset_drops_batches_below_it(world):
    key = world.key()
    world.init(key, 0, 0)
    world.write(key, [(0, 9, AVAILABLE, 1)], start=0, dcc=0)
    world.write(key, [(0, 2, ACKNOWLEDGED, 1), (3, 3, ARCHIVED, 2)], start=0, dcc=4)
    assert world.sc.states[key].batches == _b((0, 2, 2, 1), (3, 3, 4, 2), (4, 9, 0, 1))
    world.write(key, [(5, 6, ACKNOWLEDGED, 1)], start=4, dcc=2)
    assert world.sc.states[key] == PartitionState(0, 0, 4, 2, _b((4, 4, 0, 1), (5, 6, 2, 1), (7, 9, 0, 1)))
    # the update carries the request's batches pruned to the new start offset
    world.write(key, [(3, 8, ARCHIVED, 1)], start=6, dcc=1)
    last = world.records(world.sc.partition_for(key))[-1]
    assert last == ShareUpdate(key, ShareUpdateValue(0, 0, 6, 1, _b((6, 8, 4, 1))))
    assert world.sc.states[key] == PartitionState(0, 0, 6, 1, _b((6, 8, 4, 1), (9, 9, 0, 1)))


def test_delivery_complete_count_follows_kafkas_rule(world):
    key = world.key()
    world.init(key, 0, 10)
    world.write(key, start=10, dcc=3)
    assert world.sc.states[key].delivery_complete_count == 3
    world.write(key, start=10, dcc=1)  # same start: the larger count stays
    assert world.sc.states[key].delivery_complete_count == 3
    world.write(key, start=5, dcc=9)  # an older start: the recorded count
    assert world.sc.states[key].delivery_complete_count == 3
    world.write(key, start=12, dcc=0)  # a new start: the request's count
    assert world.sc.states[key].delivery_complete_count == 0
    assert world.sc.states[key].start_offset == 12


def test_write_errors(world):
    key = world.key()
    assert world.write(key) == E.invalid_request  # never initialized
    world.init(key, 2, 0)
    world.run(world.sc.read_state(key, 4))
    assert world.write(world.key(-1)) == E.invalid_request
    assert world.write(key, leader_epoch=-1, state_epoch=2) == E.invalid_request
    assert world.write(key, leader_epoch=4, state_epoch=-1) == E.invalid_request
    assert world.write(key, leader_epoch=3, state_epoch=2) == E.fenced_leader_epoch
    assert world.write(key, leader_epoch=4, state_epoch=1) == E.fenced_state_epoch
    world.logs.delete_topic("t")
    assert world.write(key, leader_epoch=4, state_epoch=2) == E.unknown_topic_or_partition
    assert world.sc.states[key].batches == ()


def test_write_with_a_newer_leader_epoch_keeps_the_recorded_one(world):
    """Kafka records leader epochs on reads only: a write with a higher one passes and leaves
    the recorded epoch as it was."""
    key = world.key()
    world.init(key, 0, 0)
    assert world.write(key, [(0, 0, ACKNOWLEDGED, 1)], leader_epoch=7) == 0
    assert world.sc.states[key].leader_epoch == 0 and world.sc._leader_epochs[key] == 0


def test_a_failed_append_answers_coordinator_not_available_and_changes_nothing(world, monkeypatch):
    key = world.key()
    world.init(key, 0, 0)
    before = world.sc.states[key]

    def fail(partition, batch):
        raise KafkaStorageError(E.kafka_storage_error, "disk gone")

    monkeypatch.setattr(world.sc.store, "append_batch", fail)
    assert world.write(key, [(0, 0, ACKNOWLEDGED, 1)]) == E.coordinator_not_available
    assert world.sc.states[key] == before
    assert world.run(world.sc.read_state(key, 1)).error_code == E.coordinator_not_available
    assert world.sc._leader_epochs[key] == 0


def test_writes_wait_for_the_flush_policy(world):
    """Every write is a durable Write: the operation resumes (the acknowledgement is answered)
    only after the append and the fsync its log's flush policy asks for."""
    key = world.key()
    op = world.sc.initialize_state(key, 0, 0)
    step = next(op)
    assert isinstance(step, Write) and step.durable
    logs = world.sc.write(step.records)
    assert [plog.topic for plog in logs] == [SHARE_STATE_TOPIC]
    assert [plog.partition for plog in logs] == [world.sc.partition_for(key)]


@pytest.mark.parametrize("flush_messages, waits", [(None, False), (1, True)])
def test_the_runtime_answers_after_the_fsync_the_flush_policy_asks_for(tmp_path, flush_messages, waits):
    """Through the broker's coordinator runtime: Kafka's default flush policy leaves the
    records in the page cache; log.flush.interval.messages=1 fsyncs each write before its
    operation answers."""
    clock = ManualClock()
    config = {} if flush_messages is None else {"log.flush.interval.messages": flush_messages}
    durability = Durability()
    logs = LogManager(str(tmp_path), config, clock=clock, flusher=durability)
    logs.open()
    key = SharePartitionKey("g", logs.create_topic("t", 1).topic_id, 0)
    sc = coordinator_on(logs, clock)

    async def acknowledge() -> tuple[int, int]:
        runtime = CoordinatorRuntime(durability, clock)
        assert await runtime.run(sc, sc.initialize_state(key, 0, 0)) == 0
        request = WriteStateRequest(key, 0, 0, 0, 1, (StateBatch(0, 0, ACKNOWLEDGED, 1),))
        return await runtime.run(sc, sc.write_state(request)), durability.rounds

    error, rounds = asyncio.run(acknowledge())
    assert error == 0 and sc.states[key].batches == (StateBatch(0, 0, ACKNOWLEDGED, 1),)
    assert (rounds >= 2) if waits else (rounds == 0), rounds
    durability.close()
    logs.close()


def test_snapshot_every_n_updates(tmp_path):
    w = World(tmp_path / "data", per_snapshot=3)
    key = w.key()
    w.init(key, 0, 0)
    for i in range(8):
        assert w.write(key, [(i, i, ACKNOWLEDGED, 1)], start=0, dcc=i + 1) == 0
    kinds = [type(r).__name__ for r in w.records(w.sc.partition_for(key))]
    # 3 updates, then a snapshot (snapshot epoch + 1, merged batches); again after 3 more
    assert kinds == ["ShareSnapshot"] + ["ShareUpdate"] * 3 + ["ShareSnapshot"] + ["ShareUpdate"] * 3 + [
        "ShareSnapshot"
    ]
    last = w.records(w.sc.partition_for(key))[-1]
    assert last == ShareSnapshot(
        key, ShareSnapshotValue(2, 0, 0, 0, 8, w.clock.wall_ms(), w.clock.wall_ms(), _b((0, 7, 2, 1)))
    )
    assert w.sc.states[key] == PartitionState(0, 0, 0, 8, _b((0, 7, 2, 1)))
    w.logs.close()


def test_delete_writes_tombstones(world):
    a, b, never = world.key(0), world.key(1), world.key(2)
    world.init(a)
    world.init(b)
    assert world.run(world.sc.delete_state([a, b, never])) == 0
    assert world.sc.states == {} and world.sc._offsets == {} and world.sc._state_epochs == {}
    assert world.records(world.sc.partition_for(a))[-1] == ShareSnapshot(a, None)
    assert world.records(world.sc.partition_for(b))[-1] == ShareSnapshot(b, None)
    # deleted state is no state: a write is refused, a new initialize starts at snapshot epoch 0
    assert world.write(a) == E.invalid_request
    world.init(a, 0, 3)
    assert world.sc._offsets[a].snapshot_epoch == 0


def test_delete_errors_leave_the_other_keys_deleted(world):
    a = world.key(0)
    world.init(a)
    assert world.run(world.sc.delete_state([world.key(-1), a])) == E.invalid_request
    assert a not in world.sc.states


def test_delete_topics_tombstones_their_share_partitions(world):
    other = world.logs.create_topic("u", 1).topic_id
    keep = SharePartitionKey("g", other, 0)
    world.init(world.key(0))
    world.init(world.key(2, group="h"))
    world.init(keep)
    assert world.run(world.sc.delete_topics([world.topic_id])) == 0
    assert list(world.sc.states) == [keep]


def test_read_summary(world):
    key = world.key()
    assert world.sc.read_summary(key) == StateSummary(0, -1, 0, 0, -1)  # no state: no error
    world.init(key, 3, 10)
    world.run(world.sc.read_state(key, 2))
    world.write(key, [(10, 12, ACKNOWLEDGED, 1)], start=10, state_epoch=3, leader_epoch=2, dcc=3)
    assert world.sc.read_summary(key) == StateSummary(0, 10, 2, 3, 3)
    assert world.sc.read_summary(world.key(-1)).error_code == E.invalid_request
    assert world.sc.read_summary(world.key(9)).error_code == E.unknown_topic_or_partition


def test_keys_of_group(world):
    world.init(world.key(0, "g"))
    world.init(world.key(1, "g"))
    world.init(world.key(0, "h"))
    assert sorted(k.partition for k in world.sc.keys_of_group("g")) == [0, 1]


# --- the log: topic, batches, load -------------------------------------------------------------
def test_the_topic_is_not_compacted(world):
    world.init(world.key())
    info = world.logs.topics[SHARE_STATE_TOPIC]
    assert info.num_partitions == PARTITIONS
    assert info.configs["cleanup.policy"] == "delete" and info.configs["retention.ms"] == "-1"


def test_one_operation_writes_one_batch_per_partition(world):
    keys = [world.key(p, group=f"g{i}") for i in range(6) for p in range(3)]
    for key in keys:
        world.init(key)
    by_partition: dict[int, int] = {}
    for key in keys:
        by_partition[world.sc.partition_for(key)] = by_partition.get(world.sc.partition_for(key), 0) + 1
    assert len(by_partition) > 1
    before = {p: len(list(world.sc.store.batches(p))) for p in by_partition}
    world.run(world.sc.delete_state(keys))
    for partition, count in by_partition.items():
        batches = list(world.sc.store.batches(partition))
        assert len(batches) == before[partition] + 1
        assert len(batches[-1].records) == count


def test_reopen_and_load_gives_the_same_state(tmp_path):
    w = World(tmp_path / "data", per_snapshot=2)
    keys = [w.key(p, group=g) for g in ("g", "h") for p in range(3)]
    for key in keys:
        w.init(key, 1, 0)
    for i in range(5):
        for n, key in enumerate(keys):
            w.write(
                key,
                [(i * 10, i * 10 + n, ACKNOWLEDGED if n % 2 else ARCHIVED, i + 1)],
                start=i * 3,
                state_epoch=1,
            )
    w.run(w.sc.read_state(keys[0], 4))
    w.run(w.sc.delete_state([keys[5]]))
    w.init(keys[4], 2, 100)
    before = tuple(dict(t) for t in w.snapshot_of(w.sc))
    assert len(before[0]) == 5
    loaded = w.reopen()
    assert tuple(dict(t) for t in w.snapshot_of(loaded)) == before
    # and it goes on from there: the update count survived, so the next write's kind is the same
    w.write(keys[1], [(90, 90, ACKNOWLEDGED, 1)], start=-1, state_epoch=1)
    assert w.sc.states[keys[1]].batches[-1] == StateBatch(90, 90, 2, 1)
    w.logs.close()


def test_load_skips_a_damaged_record(world):
    key = world.key()
    world.init(key, 0, 0)
    world.write(key, [(0, 0, ACKNOWLEDGED, 1)])
    partition = world.sc.partition_for(key)
    good_key, _ = encode(ShareUpdate(key, ShareUpdateValue(0, -1, -1)))
    world.sc.store.append_batch(partition, InternalBatch([(good_key, b"\x00\x00\x01")]))  # value cut short
    world.sc.store.append_batch(partition, InternalBatch([(b"\x00\x09\x00", b"")]))  # not a share record
    world.write(key, [(1, 1, ARCHIVED, 1)])
    expected = dict(world.sc.states)
    assert world.reopen().states == expected


# --- cold snapshots and pruning --------------------------------------------------------------
def test_cold_partitions_are_snapshotted_again(world):
    warm, cold = world.key(0), world.key(1)
    world.init(cold, 0, 0)
    world.write(cold, [(0, 3, ACKNOWLEDGED, 1)], start=0, dcc=4)
    created = world.clock.wall_ms()
    world.clock.advance(200_000)
    world.init(warm, 0, 0)
    world.clock.advance(100_000)
    assert world.run(world.sc.snapshot_cold_partitions()) == 1
    last = world.records(world.sc.partition_for(cold))[-1]
    # the merged state, snapshot epoch + 1, created when it was, written now
    assert last == ShareSnapshot(
        cold, ShareSnapshotValue(1, 0, 0, 0, 4, created, world.clock.wall_ms(), _b((0, 3, 2, 1)))
    )
    assert world.sc.states[cold] == PartitionState(0, 0, 0, 4, _b((0, 3, 2, 1)))
    # the next run finds the warm one cold too; then everything was snapshotted cold: nothing
    world.clock.advance(200_000)
    assert world.run(world.sc.snapshot_cold_partitions()) == 1
    assert world.run(world.sc.snapshot_cold_partitions()) == 0


def test_prune_deletes_records_before_the_oldest_live_snapshot(tmp_path):
    w = World(tmp_path / "data", per_snapshot=2)
    sc = w.sc
    # two keys of one __share_group_state partition
    keys = [k for k in (w.key(p, group=f"g{i}") for i in range(40) for p in range(3))]
    a = keys[0]
    b = next(k for k in keys[1:] if sc.partition_for(k) == sc.partition_for(a))
    partition = sc.partition_for(a)
    w.init(a, 0, 0)  # offset 0
    w.init(b, 0, 0)  # offset 1
    assert sc.last_redundant_offset(partition) is None  # offset 0: nothing before it
    for i in range(3):  # a: updates at 2, 3, then its snapshot at 4
        w.write(a, [(i, i, ACKNOWLEDGED, 1)], start=0)
    assert sc.last_redundant_offset(partition) == 1  # b's snapshot at 1 is the oldest needed
    for i in range(3):  # b: 5, 6, snapshot at 7
        w.write(b, [(i, i, ARCHIVED, 1)], start=0)
    assert sc.last_redundant_offset(partition) == 4
    plog = sc.store.partition_log(partition, create=False)
    assert sc.prune() >= 1 and plog.log_start_offset == 4
    expected = {a: sc.states[a], b: sc.states[b]}
    loaded = w.reopen()
    assert {k: v for k, v in loaded.states.items() if k in expected} == expected
    assert loaded.last_redundant_offset(partition) == 4
    # once every key of the partition is deleted, everything up to the last tombstone goes
    w.run(loaded.delete_state([a, b]))  # tombstones at 8 and 9
    assert loaded.last_redundant_offset(partition) == 10
    w.logs.close()
