"""What the coordinators need from the rest of the broker, as typed protocols.

The coordinators are sans-I/O state machines: they never see the `Broker`, sockets or the event
loop. Each collaborator is passed to their constructors (broker/state.py is the one place that
wires the real ones; unit tests pass fakes that implement these protocols in full, which
tests/unit/test_collaborator_fakes.py checks):

- `Scheduler`: the coordinators' timers (broker/coordinator_runtime.py, on the loop).
- `TopicCatalog`: which topics and partitions exist, with their ids (storage.LogManager).
- `GroupConfigSource`: per-group configs (broker/group_configs.py).
- `OffsetsStore`, `TxnStore`: the internal topics `__consumer_offsets` and `__transaction_state`
  (coordinator/group_store.py, coordinator/txn_log.py).
- `TransactionPartitions`, `MarkerLog`: the partition logs transaction markers go to
  (storage.LogManager, storage.log.PartitionLog).
- `TxnOffsetsParticipant`: the group coordinator as the transaction coordinator sees it.
- `ProducerIdSource`: durable producer id blocks (coordinator/producer_ids.py).

Writing the coordinators' records, waiting for the disk and answering is the coordinator
runtime's job (coordinator/runtime.py: what an operation is; broker/coordinator_runtime.py: the
driver on the event loop).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

from minibroker.coordinator.internal_topic import InternalBatch, StoredBatch
from minibroker.coordinator.runtime import Operation

T = TypeVar("T")


@runtime_checkable
class Config(Protocol):
    """Broker properties by Kafka name (broker.config.BrokerConfig)."""

    def __getitem__(self, name: str) -> Any: ...


# --- time ----------------------------------------------------------------------------------------
@runtime_checkable
class TimerHandle(Protocol):
    def cancel(self) -> None: ...


@runtime_checkable
class Scheduler(Protocol):
    """One-shot timers of one coordinator (the coordinator runtime's, on the loop; the time
    itself comes from a `common.clock.Clock`): each fires an operation of that coordinator,
    which the runtime runs as it runs a request's (Kafka's CoordinatorTimer)."""

    def call_later(self, delay_ms: int, operation: Callable[[], Operation[None]]) -> TimerHandle: ...


# --- topics and logs -----------------------------------------------------------------------------
@runtime_checkable
class TopicShape(Protocol):
    @property
    def num_partitions(self) -> int: ...

    @property
    def topic_id(self) -> uuid.UUID: ...


@runtime_checkable
class TopicCatalog(Protocol):
    """The topics that exist, by name."""

    @property
    def topics(self) -> Mapping[str, TopicShape]: ...


@runtime_checkable
class OngoingTransactions(Protocol):
    def ongoing_transactions(self) -> Mapping[int, int]:
        """producer id -> first offset of its open transaction on this partition."""
        ...


@runtime_checkable
class MarkerLog(Protocol):
    """One partition log as the transaction coordinator writes markers to it."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def producer_state(self) -> OngoingTransactions: ...

    def append_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> int: ...


@runtime_checkable
class TransactionPartitions(Protocol):
    """The partition logs of the data directory."""

    def get_log(self, topic: str, partition: int) -> MarkerLog | None: ...

    def all_logs(self) -> Iterable[MarkerLog]: ...


@runtime_checkable
class GroupConfigSource(Protocol):
    """Per-group overrides set through GROUP config resources (IncrementalAlterConfigs type 32:
    `consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms`, ...); broker/group_configs.py."""

    def group_config(self, group_id: str) -> Mapping[str, Any]:
        """The group's configs set explicitly (name -> value); empty when none is."""
        ...


class _NoGroupConfigs:
    def group_config(self, group_id: str) -> Mapping[str, Any]:
        return {}


#: A `GroupConfigSource` where no group has a config of its own.
NO_GROUP_CONFIGS: GroupConfigSource = _NoGroupConfigs()


# --- internal topics -----------------------------------------------------------------------------
@runtime_checkable
class OffsetsStore(Protocol):
    """`__consumer_offsets`: batches of (key, value or None) records."""

    def num_partitions(self) -> int: ...

    def append(self, partition: int, batch: InternalBatch) -> int:
        """Append one batch; the offset of its first record. A producer's batch continues its
        sequence on the partition (0 in a new epoch), as a client's would: storage checks the
        sequences of internal appends too. Raises KafkaStorageError."""
        ...

    def batches(self, partition: int) -> Iterator[StoredBatch]:
        """Replay: every batch of the partition in log order."""
        ...

    def space(self, partition: int) -> tuple[str | None, int | None]:
        """(directory, bytes free on its file system) where the partition is written, where the
        store can tell ((None, None) otherwise): what a coordinator that could not write there
        reports, and checks before trying again."""
        ...


@runtime_checkable
class TxnStore(Protocol):
    """`__transaction_state`: one record per state change, keyed by transactional id."""

    def num_partitions(self) -> int: ...

    def coordinator_epoch(self, partition: int) -> int:
        """The partition's leader epoch, stamped into the transaction markers."""
        ...

    def append(self, partition: int, key: bytes, value: bytes | None) -> Any:
        """Append one record (value None = tombstone); the log to make durable before the
        change counts, or None when there is nothing to fsync. Raises on failure."""
        ...

    def replay(self) -> Iterator[tuple[bytes, bytes | None]]: ...


# --- the other coordinators ----------------------------------------------------------------------
@runtime_checkable
class TxnOffsetsParticipant(Protocol):
    """The group coordinator, as the transaction coordinator uses it."""

    def partition_for(self, group_id: str) -> int:
        """The `__consumer_offsets` partition that holds the group."""
        ...

    def complete_txn(self, producer_id: int, commit: bool, partition: int | None = None) -> None:
        """Make the producer's staged transactional offsets visible (commit) or drop them."""
        ...


@runtime_checkable
class ProducerIdSource(Protocol):
    def allocate(self) -> int: ...
