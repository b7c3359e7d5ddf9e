"""In-memory stand-ins for the coordinators' collaborators (coordinator/collaborators.py), so
their state machines are tested without disks. Each implements its protocol in full."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from types import SimpleNamespace

from minibroker.coordinator.group_metadata_manager import GroupMetadataManager
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.groups import GroupCoordinator
from minibroker.coordinator.internal_topic import InternalBatch, StoredBatch
from minibroker.coordinator.runtime import CoordinatorResult, Write


class MemoryOffsetsStore:
    """`OffsetsStore`: one list of batches per partition, with `append_marker` standing in for
    the transaction coordinator."""

    def __init__(self, partitions: int = 1):
        self._partitions = partitions
        self.logs: dict[int, list[StoredBatch]] = {p: [] for p in range(partitions)}
        self._next: dict[int, int] = {p: 0 for p in range(partitions)}
        self.fail_with: Exception | None = None  # raise this from the next append
        self._producers: dict[tuple[int, int], tuple[int, int]] = {}  # -> (epoch, next sequence)

    def space(self, partition: int) -> tuple[str | None, int | None]:
        return None, None  # in memory: no file system to report

    def num_partitions(self) -> int:
        return self._partitions

    def append(self, partition: int, batch: InternalBatch) -> int:
        records, producer_id, producer_epoch = batch.records, batch.producer_id, batch.producer_epoch
        if self.fail_with is not None:
            exc, self.fail_with = self.fail_with, None
            raise exc
        base_sequence = -1
        if producer_id >= 0:
            # a new epoch starts at 0, the same epoch continues the sequence
            epoch, next_seq = self._producers.get((partition, producer_id), (None, 0))
            base_sequence = next_seq if epoch == producer_epoch else 0
            self._producers[(partition, producer_id)] = (producer_epoch, base_sequence + len(records))
        base = self._next[partition]
        batch = StoredBatch(
            base,
            producer_id,
            batch.transactional,
            False,
            None,
            [(base + i, k, v) for i, (k, v) in enumerate(records)],
            producer_epoch,
            base_sequence,
        )
        self.logs[partition].append(batch)
        self._next[partition] = base + len(records)
        return base

    def append_marker(
        self, partition: int, producer_id: int, commit: bool, producer_epoch: int | None = None
    ) -> int:
        base = self._next[partition]
        key = (partition, producer_id)
        if producer_epoch is None:
            producer_epoch = self._producers.get(key, (0, 0))[0]
        if self._producers.get(key, (None,))[0] != producer_epoch:
            self._producers[key] = (producer_epoch, 0)
        self.logs[partition].append(StoredBatch(base, producer_id, True, True, commit, [], producer_epoch))
        self._next[partition] = base + 1
        return base

    def batches(self, partition: int) -> Iterator[StoredBatch]:
        return iter(list(self.logs[partition]))


class MemoryTxnStore:
    """`TxnStore`: one list of (key, value) per partition; nothing to fsync."""

    def __init__(self, partitions: int = 1):
        self._partitions = partitions
        self.records: dict[int, list[tuple[bytes, bytes | None]]] = {p: [] for p in range(partitions)}
        self.fail_with: Exception | None = None  # raise this from the next append
        self.appends = 0

    def num_partitions(self) -> int:
        return self._partitions

    def coordinator_epoch(self, partition: int) -> int:
        return 0

    def append(self, partition: int, key: bytes, value: bytes | None) -> None:
        """Returns None: nothing to fsync."""
        if self.fail_with is not None:
            exc, self.fail_with = self.fail_with, None
            raise exc
        self.records[partition].append((key, value))
        self.appends += 1

    def replay(self) -> Iterator[tuple[bytes, bytes | None]]:
        for p in range(self._partitions):
            yield from list(self.records[p])


class _EveryTopic(Mapping):
    """Any name is a topic with more partitions than a test uses."""

    _INFO = SimpleNamespace(num_partitions=1 << 31, internal=False, topic_id=uuid.UUID(int=1))

    def __getitem__(self, name: str) -> SimpleNamespace:
        return self._INFO

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0


class EveryTopicCatalog:
    """`TopicCatalog` for coordinator tests that do not care which topics exist."""

    topics: Mapping = _EveryTopic()


class MemoryTopicCatalog:
    """`TopicCatalog` of the topics a test creates, with their ids and partition counts."""

    def __init__(self, topics: Mapping[str, int] | None = None, *, internal: tuple[str, ...] = ()):
        self.topics: dict[str, SimpleNamespace] = {}
        for name, partitions in (topics or {}).items():
            self.create(name, partitions)
        for name in internal:
            self.create(name, 1, internal=True)

    def create(self, name: str, partitions: int, *, internal: bool = False) -> uuid.UUID:
        topic_id = uuid.uuid5(uuid.NAMESPACE_URL, f"topic:{name}")  # stable across a test
        self.topics[name] = SimpleNamespace(num_partitions=partitions, internal=internal, topic_id=topic_id)
        return topic_id

    def grow(self, name: str, partitions: int) -> None:
        self.topics[name].num_partitions = partitions

    def delete(self, name: str) -> None:
        del self.topics[name]

    def id_of(self, name: str) -> uuid.UUID:
        return self.topics[name].topic_id


def group_coordinator(config, *, store, scheduler, topics=None, clock=None) -> GroupCoordinator:
    """A GroupCoordinator and its GroupMetadataManager over the given collaborators, wired as
    broker/state.py wires the real ones; `clock` defaults to `scheduler` (the tests' fake
    scheduler is their clock too)."""
    settings = GroupSettings.from_config(config)
    clock = clock or scheduler
    manager = GroupMetadataManager(settings, store=store, topics=topics or EveryTopicCatalog(), clock=clock)
    coordinator = GroupCoordinator(settings, manager=manager, clock=clock, scheduler=scheduler)
    scheduler.bind(coordinator)  # its timers fire the coordinator's operations
    return coordinator


# --- the coordinator runtime without a loop ------------------------------------------------------
def perform(shard, step) -> None:
    """Do one step of an operation as broker/coordinator_runtime.py does, at once: write (and
    flush the fakes' logs), replay; or flush the logs a step waits for."""
    if isinstance(step, Write):
        logs = shard.write(step.records)
        if step.durable:
            _flush(logs)
        if step.replay:
            for record in step.records:
                shard.replay(record)
    else:
        _flush(step.logs)


def _flush(logs) -> None:
    for plog in logs:
        if hasattr(plog, "begin_flush"):
            ticket = plog.begin_flush()
            ticket.sync()
            plog.finish_flush(ticket, ok=True)


def resume(shard, op, step):
    """Go on with an operation suspended at `step` to its response."""
    try:
        while True:
            try:
                perform(shard, step)
            except Exception as exc:  # noqa: BLE001 - thrown in, as the driver does
                step = op.throw(exc)
            else:
                step = op.send(None)
    except StopIteration as done:
        return done.value


def run_now(shard, op):
    """Run an operation of `shard` (a generator or a CoordinatorResult) to its response."""
    if isinstance(op, CoordinatorResult):
        if op.records:
            perform(shard, Write(op.records))
        return op.response
    try:
        step = next(op)
    except StopIteration as done:
        return done.value
    return resume(shard, op, step)


def commit(gc, *args, **kwargs):
    """OffsetCommit on a GroupCoordinator, run to its answer."""
    return run_now(gc, gc.commit_offsets(*args, **kwargs))


def stage(gc, *args, **kwargs):
    """TxnOffsetCommit on a GroupCoordinator, run to its answer."""
    return run_now(gc, gc.stage_txn_offsets(*args, **kwargs))
