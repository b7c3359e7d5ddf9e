"""The transaction coordinator (Apache Kafka's TransactionCoordinator for one broker).

It decides (the state machine is in coordinator/txn_state.py), persists every transition to the
internal topic `__transaction_state` (coordinator/txn_log.py) before anyone is answered, writes
the transaction markers through storage, and tells the group coordinator when transactional
offsets become visible or are dropped.

Rules that hold everywhere in this module:
- A transition is installed in memory only after its record is durable (appended and fsynced);
  a failed write leaves the previous state (and answers COORDINATOR_NOT_AVAILABLE, retriable).
- The coordinator is a shard of the coordinator runtime (coordinator/runtime.py): every
  operation is a generator that yields `Write(records)` (a `TxnRecord` per transition) or
  `AwaitDurable(logs)` (the markers); the driver (broker/coordinator_runtime.py) appends the
  records through `write`, awaits the fsync (in a worker thread, one round shared by concurrent
  transactions), installs them through `replay` (the same method `load` replays the topic
  through) and resumes it, or throws the storage error in.
- EndTxn is two-phase: PrepareCommit/PrepareAbort durable -> one control batch per partition of
  the transaction, all appended first, then fsynced together -> staged group offsets applied or
  dropped -> CompleteCommit / CompleteAbort durable -> answer. A crash anywhere in between is
  finished by `load()`, which re-drives every PrepareX it finds (markers are idempotent for the
  partitions). The order of the fsync barriers is what keeps a power loss from leaving a marker
  without its PrepareX, or a CompleteX without its markers.
- While a multi-step operation on a transactional id is in progress (it is suspended at each
  step), other requests for that id get
  CONCURRENT_TRANSACTIONS (Kafka's pendingState).
- Errors are Kafka's, from the coordinator's point of view (PRODUCER_FENCED etc.); handlers map
  them to what each request version may carry.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import structlog
from minibroker.common.clock import Clock
from minibroker.common.faults import Faults
from minibroker.coordinator.collaborators import (
    Config,
    ProducerIdSource,
    TransactionPartitions,
    TxnOffsetsParticipant,
    TxnStore,
)
from minibroker.coordinator.group_store import OFFSETS_TOPIC
from minibroker.coordinator.partitioning import partition_for
from minibroker.coordinator.runtime import AwaitDurable, Operation, Write
from minibroker.coordinator.txn_log import TXN_TOPIC, TxnRecord, replay_states, state_record
from minibroker.coordinator.txn_state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    IllegalTransition,
    TransactionMetadata,
    TxnState,
    plan_init_producer_id,
    state_from_name,
)
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.varint import BytesLike
from minibroker.storage.errors import KafkaStorageError

__all__ = ["TransactionCoordinator", "TransactionSettings", "OFFSETS_TOPIC"]

log = structlog.get_logger("minibroker.coordinator.transactions")


class TransactionSettings(NamedTuple):
    """The broker properties the transaction coordinator reads, read once (broker/state.py)."""

    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms
    abort_interval_ms: int = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    remove_interval_ms: int = 3_600_000  # transaction.remove.expired.transaction.cleanup.interval.ms

    @classmethod
    def from_config(cls, config: Config) -> TransactionSettings:
        return cls(
            max_timeout_ms=config["transaction.max.timeout.ms"],
            id_expiration_ms=config["transactional.id.expiration.ms"],
            abort_interval_ms=config["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
            remove_interval_ms=config["transaction.remove.expired.transaction.cleanup.interval.ms"],
        )


_ATTR_TRANSACTIONAL = 0x10
_HEADER_SIZE = 61
_PID = struct.Struct(">qh")  # producer id, producer epoch at offset 43


class TransactionCoordinator:
    def __init__(
        self,
        settings: TransactionSettings,
        *,
        store: TxnStore,
        logs: TransactionPartitions,
        groups: TxnOffsetsParticipant,
        producer_ids: ProducerIdSource,
        clock: Clock,
        faults: Faults,
        transaction_version: Callable[[], int] = lambda: 0,
    ) -> None:
        self.settings = settings
        self.store = store  # __transaction_state
        self.logs = logs  # where the markers go
        self.groups = groups  # owns the transactional offsets staged in __consumer_offsets
        self.producer_ids = producer_ids
        self.clock = clock
        self.faults = faults  # the named crash points between the steps of a completion
        # the finalized transaction.version (broker/features.py): how the coordinator's own
        # aborts (fencing, timeouts) end a transaction, as Kafka's transactionVersionLevel()
        self.transaction_version = transaction_version
        self._loading = False
        self.txns: dict[str, TransactionMetadata] = {}
        self._by_pid: dict[int, str] = {}
        self._pending: dict[str, TxnState] = {}
        self.loaded = False
        #: Called with (previous metadata or None, new metadata) after each persisted state
        #: change; the broker's metrics count transactions through it.
        self.on_transition: Callable[[TransactionMetadata | None, TransactionMetadata], None] | None = None

    # ------------------------------------------------------------------ helpers
    def _now(self) -> int:
        return self.clock.wall_ms()

    def _partition(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.store.num_partitions())

    def _allocate(self) -> int:
        return self.producer_ids.allocate()

    def _install(self, meta: TransactionMetadata) -> None:
        old = self.txns.get(meta.transactional_id)
        if old is not None and old.producer_id != meta.producer_id:
            if self._by_pid.get(old.producer_id) == meta.transactional_id:
                del self._by_pid[old.producer_id]
        self.txns[meta.transactional_id] = meta
        self._by_pid[meta.producer_id] = meta.transactional_id

    def _remove(self, transactional_id: str) -> None:
        meta = self.txns.pop(transactional_id, None)
        if meta is not None and self._by_pid.get(meta.producer_id) == transactional_id:
            del self._by_pid[meta.producer_id]

    # ------------------------------------------------------------------ the runtime's shard
    def write(self, records: Sequence[TxnRecord]) -> list[Any]:
        """Append each transition to its partition of __transaction_state; the logs to make
        durable before the change counts."""
        written = []
        for record in records:
            partition = self._partition(record.meta.transactional_id)
            plog = self.store.append(partition, *state_record(record.meta, record.tombstone))
            if plog is not None:
                written.append(plog)
        return written

    def replay(self, record: TxnRecord) -> None:
        """Install a written transition (or, at load, a replayed one): a tombstone, Dead or
        PrepareEpochFence state removes the id."""
        meta = record.meta
        if self.on_transition is not None and not self._loading:
            self.on_transition(self.txns.get(meta.transactional_id), meta)
        if record.tombstone or meta.state in (TxnState.DEAD, TxnState.PREPARE_EPOCH_FENCE):
            self._remove(meta.transactional_id)
        else:
            self._install(meta)

    def _persist(
        self, meta: TransactionMetadata, *, tombstone: bool = False, wait_fsync: bool = True
    ) -> Operation[ErrorCode]:
        """Append the transition to __transaction_state, wait until it is fsynced
        (`wait_fsync=False`: in the page cache is enough, see `_complete`) and install it."""
        try:
            yield Write((TxnRecord(meta, tombstone),), durable=wait_fsync)
        except Exception as exc:  # noqa: BLE001 - storage failure: state unchanged, retriable
            log.error(
                "could not write transaction state",
                transactional_id=meta.transactional_id,
                state=meta.state.display,
                error=repr(exc),
            )
            return ErrorCode.coordinator_not_available
        return ErrorCode.none

    def _persist_pending(self, meta: TransactionMetadata) -> Operation[ErrorCode]:
        """Persist a transition (installed once durable); the id is pending meanwhile."""
        txn_id = meta.transactional_id
        self._pending[txn_id] = meta.state
        try:
            return (yield from self._persist(meta))
        finally:
            self._pending.pop(txn_id, None)

    def offsets_partition(self, group_id: str) -> int:
        return self.groups.partition_for(group_id)

    # ------------------------------------------------------------------ startup
    def load(self) -> Operation[None]:
        """Replay __transaction_state and finish what a crash interrupted (the broker then
        runs `abort_timed_out_transactions` and `remove_expired_transactional_ids` every
        `abort_interval_ms` / `remove_interval_ms`)."""
        started = self.clock.monotonic()
        states, records = replay_states(self.store.replay())
        self._loading = True
        try:
            for meta in states:
                self.replay(TxnRecord(meta))
        finally:
            self._loading = False
        now = self._now()
        completed = aborted = 0
        for txn_id, meta in list(self.txns.items()):
            if meta.state.is_prepare:
                log.info(
                    "completing transaction interrupted by a restart",
                    transactional_id=txn_id,
                    state=meta.state.display,
                    partitions=len(meta.partitions),
                )
                yield from self._complete(txn_id)
                completed += 1
            elif meta.timed_out(now):
                yield from self._abort_timed_out(txn_id)
                aborted += 1
        self._report_hanging_transactions()
        self.loaded = True
        log.info(
            "transaction coordinator loaded",
            transactional_ids=len(self.txns),
            records=records,
            completed=completed,
            timed_out_aborted=aborted,
            ongoing=sum(1 for m in self.txns.values() if m.state == TxnState.ONGOING),
            load_ms=round((self.clock.monotonic() - started) * 1000, 1),
        )

    def _report_hanging_transactions(self) -> None:
        """Log partitions holding an open transaction no coordinator state accounts for (it
        would pin their LSO). Cannot happen while __transaction_state is intact: a partition
        only takes transactional data after AddPartitionsToTxn is durable, and markers are
        fsynced before CompleteCommit/CompleteAbort is written."""
        for plog in self.logs.all_logs():
            for pid, first in plog.producer_state.ongoing_transactions().items():
                txn_id = self._by_pid.get(pid)
                meta = self.txns.get(txn_id) if txn_id is not None else None
                if (
                    meta is not None
                    and (meta.state == TxnState.ONGOING or meta.state.is_prepare)
                    and (plog.topic, plog.partition) in meta.partitions
                ):
                    continue
                log.warning(
                    "hanging transaction: open on a partition without coordinator "
                    "state; its LSO stays at the first offset until it is aborted",
                    topic=plog.topic,
                    partition=plog.partition,
                    producer_id=pid,
                    first_offset=first,
                    transactional_id=txn_id,
                    state=None if meta is None else meta.state.display,
                )

    # ------------------------------------------------------------------ InitProducerId
    def init_producer_id(
        self,
        transactional_id: str | None,
        timeout_ms: int,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> Operation[tuple[ErrorCode, int, int]]:
        fail = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        expected = _claimed_producer(producer_id, producer_epoch)
        if isinstance(expected, ErrorCode):
            return (expected, *fail)
        if transactional_id is None:
            # idempotent producer: always a fresh id at epoch 0 (Kafka)
            return ErrorCode.none, self._allocate(), 0
        if transactional_id == "":
            return (ErrorCode.invalid_request, *fail)
        if not 0 < timeout_ms <= self.settings.max_timeout_ms:
            return (ErrorCode.invalid_transaction_timeout, *fail)
        now = self._now()
        meta = self.txns.get(transactional_id)
        if meta is None:
            meta = TransactionMetadata(
                transactional_id,
                producer_id=self._allocate(),
                producer_epoch=NO_PRODUCER_EPOCH,
                timeout_ms=timeout_ms,
                state=TxnState.EMPTY,
                last_update_ms=now,
            )
            self._install(meta)
        if transactional_id in self._pending or meta.state == TxnState.DEAD:
            return (ErrorCode.concurrent_transactions, *fail)
        plan = plan_init_producer_id(meta, timeout_ms, expected, now, self._allocate)
        if isinstance(plan, ErrorCode):
            return (plan, *fail)
        if plan.state == TxnState.PREPARE_EPOCH_FENCE:
            # Abort the transaction the previous instance left open (markers at the bumped
            # epoch fence it), then let the client retry, which bumps the epoch once more.
            log.info(
                "fencing producer with an open transaction",
                transactional_id=transactional_id,
                producer_id=meta.producer_id,
                epoch=meta.producer_epoch,
                fence_epoch=plan.producer_epoch,
            )
            err, _, _ = yield from self._end_transaction(
                transactional_id,
                plan.producer_id,
                plan.producer_epoch,
                commit=False,
                from_client=False,
                fence=True,
                client_version=self.transaction_version(),
            )
            return (ErrorCode.concurrent_transactions if err == ErrorCode.none else err, *fail)
        err = yield from self._persist_pending(plan)
        if err != ErrorCode.none:
            return (err, *fail)
        log.info(
            "initialized transactional id",
            transactional_id=transactional_id,
            producer_id=plan.producer_id,
            epoch=plan.producer_epoch,
        )
        return ErrorCode.none, plan.producer_id, plan.producer_epoch

    # ------------------------------------------------------------------ AddPartitions/Offsets
    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[tuple[str, int]],
        client_version: int = 0,
    ) -> Operation[ErrorCode]:
        """AddPartitionsToTxn (client_version 0), or under TV2 (2) the partitions a
        transactional Produce v12+ or TxnOffsetCommit v5+ adds by itself (KIP-890 part 2)."""
        if not transactional_id:
            return ErrorCode.invalid_request
        parts = frozenset(partitions)
        meta = self.txns.get(transactional_id)
        if meta is None or meta.state == TxnState.DEAD:
            return ErrorCode.invalid_producer_id_mapping
        if meta.producer_id != producer_id:
            return ErrorCode.invalid_producer_id_mapping
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.producer_fenced
        if transactional_id in self._pending:
            return ErrorCode.concurrent_transactions
        err = meta.add_partitions_check(producer_id, producer_epoch, parts)
        if err is not None:
            return err
        new = meta.prepare_add_partitions(parts, self._now(), client_version)
        return (yield from self._persist_pending(new))

    def produced_partitions_to_add(
        self, transactional_id: str | None, batches: Iterable[tuple[str, int, BytesLike | None]]
    ) -> Operation[ErrorCode] | None:
        """TV2 (Produce v12+): the operation adding the partitions whose first batch is
        transactional to the transaction, None when there is nothing to add (the common case
        of a partition already in the Ongoing transaction: no write, no wait). Errors are left
        to `verify_produce`, which then answers each partition as Kafka's leader does."""
        if transactional_id is None:
            return None
        meta = self.txns.get(transactional_id)
        if meta is None:
            return None
        producer: tuple[int, int] | None = None
        wanted = set()
        for topic, partition, records in batches:
            if records is None or len(records) < _HEADER_SIZE or not records[22] & _ATTR_TRANSACTIONAL:
                continue
            if producer is None:
                producer = _PID.unpack_from(records, 43)
            if self.logs.get_log(topic, partition) is not None:
                wanted.add((topic, partition))
        if producer is None or not wanted:
            return None
        if meta.state == TxnState.ONGOING and wanted <= meta.partitions:
            return None
        return self.add_partitions(transactional_id, producer[0], producer[1], wanted, client_version=2)

    def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> Operation[ErrorCode]:
        partition = (OFFSETS_TOPIC, self.offsets_partition(group_id))
        return (yield from self.add_partitions(transactional_id, producer_id, producer_epoch, [partition]))

    def add_offsets_v2(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> Operation[ErrorCode]:
        """TxnOffsetCommit v5+ (TV2): the group's __consumer_offsets partition joins the
        transaction without AddOffsetsToTxn."""
        partition = (OFFSETS_TOPIC, self.offsets_partition(group_id))
        return (
            yield from self.add_partitions(
                transactional_id, producer_id, producer_epoch, [partition], client_version=2
            )
        )

    def check_txn_offset_commit(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str, api_version: int
    ) -> ErrorCode:
        """What Kafka's transaction verification answers for the group's __consumer_offsets
        partition before TxnOffsetCommit stages anything: the group must have been added with
        AddOffsetsToTxn (INVALID_TXN_STATE up to v3, TRANSACTION_ABORTABLE from v4), a stale
        epoch is INVALID_PRODUCER_EPOCH."""
        if not transactional_id:
            return ErrorCode.invalid_request
        meta = self.txns.get(transactional_id)
        if meta is None or meta.state == TxnState.DEAD:
            return ErrorCode.invalid_producer_id_mapping
        err = meta.verify_check(
            producer_id, producer_epoch, (OFFSETS_TOPIC, self.offsets_partition(group_id))
        )
        if err == ErrorCode.transaction_abortable and api_version < 4:
            err = ErrorCode.invalid_txn_state
        return err

    # ------------------------------------------------------------------ EndTxn
    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        client_version: int = 0,
    ) -> Operation[tuple[ErrorCode, int, int]]:
        """EndTxn: (error, producer id, epoch). EndTxn v5 (client_version 2, KIP-890) bumps the
        epoch at every end and answers the new producer id and epoch; a retry of a completed
        end answers the current ones."""
        return (
            yield from self._end_transaction(
                transactional_id,
                producer_id,
                producer_epoch,
                commit,
                from_client=True,
                client_version=client_version,
            )
        )

    def _end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        *,
        from_client: bool,
        fence: bool = False,
        client_version: int = 0,
    ) -> Operation[tuple[ErrorCode, int, int]]:
        fail = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        if not transactional_id:
            return (ErrorCode.invalid_request, *fail)
        meta = self.txns.get(transactional_id)
        if meta is None or meta.state == TxnState.DEAD:
            return (ErrorCode.invalid_producer_id_mapping, *fail)
        v2 = client_version >= 2
        no_partition_added = False
        if v2:
            check = meta.end_txn_check_v2(producer_id, producer_epoch, commit, fence)
            if isinstance(check, ErrorCode) and check in (
                ErrorCode.invalid_producer_id_mapping,
                ErrorCode.producer_fenced,
            ):
                return (check, *fail)
            if transactional_id in self._pending:
                return (ErrorCode.concurrent_transactions, *fail)
            err: ErrorCode | None = check if isinstance(check, ErrorCode) else None
            no_partition_added = check is True
        elif transactional_id in self._pending:
            return (_end_txn_while_pending(meta, producer_id, producer_epoch, from_client), *fail)
        else:
            err = meta.end_txn_check(producer_id, producer_epoch, commit, from_client)
        if err is not None:
            if err != ErrorCode.none:
                log.info(
                    "EndTxn refused",
                    transactional_id=transactional_id,
                    state=meta.state.display,
                    commit=commit,
                    error=err.name,
                )
                return (err, *fail)
            return err, meta.producer_id, meta.producer_epoch
        if fence:
            # Kafka bumps the epoch in memory before the write: even if the write fails the
            # old producer is fenced, and a later fence does not bump again.
            meta.producer_epoch = producer_epoch
            meta.last_producer_epoch = NO_PRODUCER_EPOCH
        next_producer_id = NO_PRODUCER_ID
        if v2 and not fence and meta.epoch_exhausted:
            next_producer_id = self._allocate()  # the epoch would overflow: a new producer id
        prepared = meta.prepare_abort_or_commit(
            commit,
            self._now(),
            client_version,
            next_producer_id,
            no_partition_added,
            bump_epoch=v2 and not fence,
        )
        self._pending[transactional_id] = prepared.state
        try:
            err = yield from self._persist(prepared)
            if err != ErrorCode.none:
                if fence:
                    meta.has_failed_epoch_fence = True
                return (err, *fail)
        finally:
            self._pending.pop(transactional_id, None)
        self.faults.crash_point("txn.after_prepare", transactional_id)
        # The outcome is decided and durable from here on: if completing fails now, the
        # background duty (and the next startup) finishes it; the client is told NONE (under
        # TV2 with the epoch of PrepareX), as Kafka tells it once PrepareX is written.
        yield from self._complete(transactional_id)
        return ErrorCode.none, prepared.producer_id, prepared.producer_epoch

    def _complete(self, transactional_id: str) -> Operation[ErrorCode]:
        """Markers, group offsets and CompleteX for a transaction in PrepareX."""
        meta = self.txns.get(transactional_id)
        if meta is None or not meta.state.is_prepare or transactional_id in self._pending:
            return ErrorCode.concurrent_transactions
        commit = meta.state == TxnState.PREPARE_COMMIT
        self._pending[transactional_id] = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        try:
            try:
                yield from self._write_markers(meta, commit)
                self.groups.complete_txn(meta.producer_id, commit)
            except Exception as exc:  # noqa: BLE001 - retried by the duty and at startup
                log.error(
                    "could not complete transaction; will retry",
                    transactional_id=transactional_id,
                    commit=commit,
                    error=repr(exc),
                )
                return ErrorCode.coordinator_not_available
            self.faults.crash_point("txn.before_complete", transactional_id)
            meta = self.txns[transactional_id]
            completed = meta.prepare_complete(self._now())
            # CompleteX need not be fsynced before the answer: a SIGKILL keeps the page cache,
            # and if a power loss drops it, PrepareX (durable) is replayed and the markers
            # written again. Any later fsync of this partition (the next AddPartitions of the
            # same id included) covers it, so newer state never overtakes it on disk.
            err = yield from self._persist(completed, wait_fsync=False)
            if err == ErrorCode.none:
                log.info(
                    "transaction completed",
                    transactional_id=transactional_id,
                    producer_id=meta.producer_id,
                    epoch=meta.producer_epoch,
                    result="commit" if commit else "abort",
                    partitions=len(meta.partitions),
                )
            return err
        finally:
            self._pending.pop(transactional_id, None)

    def _write_markers(self, meta: TransactionMetadata, commit: bool) -> Operation[None]:
        """Append every partition's marker (page cache, no waiting), then one fsync round for
        all of them: the markers must be durable before CompleteX can be written."""
        coordinator_epoch = self.store.coordinator_epoch(self._partition(meta.transactional_id))
        written = []
        for topic, partition in sorted(meta.partitions):
            plog = self.logs.get_log(topic, partition)
            if plog is None:
                log.warning(
                    "transaction marker skipped: partition does not exist",
                    transactional_id=meta.transactional_id,
                    topic=topic,
                    partition=partition,
                )
                continue
            try:
                plog.append_marker(meta.producer_id, meta.producer_epoch, commit, coordinator_epoch)
            except KafkaStorageError as exc:
                if exc.error_code in (
                    ErrorCode.invalid_producer_epoch,
                    ErrorCode.transaction_coordinator_fenced,
                ):
                    # the partition has seen a newer producer epoch: nothing of ours is open
                    log.error(
                        "transaction marker refused",
                        transactional_id=meta.transactional_id,
                        topic=topic,
                        partition=partition,
                        error=exc.error_code.name,
                    )
                    continue
                raise
            written.append(plog)
            self.faults.crash_point("txn.after_markers", meta.transactional_id, done=len(written))
        yield AwaitDurable(tuple(written))

    # ------------------------------------------------------------------ background duties
    def _abort_timed_out(self, transactional_id: str) -> Operation[None]:
        meta = self.txns.get(transactional_id)
        if meta is None or transactional_id in self._pending or not meta.timed_out(self._now()):
            return
        try:
            fence_epoch = meta.fence_epoch()
        except IllegalTransition as exc:
            log.error("cannot abort timed-out transaction", transactional_id=transactional_id, error=str(exc))
            return
        log.info(
            "aborting timed-out transaction",
            transactional_id=transactional_id,
            producer_id=meta.producer_id,
            epoch=meta.producer_epoch,
            fence_epoch=fence_epoch,
            timeout_ms=meta.timeout_ms,
        )
        err, _, _ = yield from self._end_transaction(
            transactional_id,
            meta.producer_id,
            fence_epoch,
            commit=False,
            from_client=False,
            fence=True,
            client_version=self.transaction_version(),
        )
        if err != ErrorCode.none:
            log.warning(
                "timed-out transaction not aborted", transactional_id=transactional_id, error=err.name
            )

    def abort_timed_out_transactions(self) -> Operation[None]:
        """Abort (with an epoch bump) transactions Ongoing longer than their timeout, and finish
        any PrepareX whose completion failed earlier."""
        now = self._now()
        for txn_id, meta in list(self.txns.items()):
            if txn_id in self._pending:
                continue
            if meta.state.is_prepare:
                yield from self._complete(txn_id)
            elif meta.timed_out(now):
                yield from self._abort_timed_out(txn_id)

    def remove_expired_transactional_ids(self) -> Operation[None]:
        """Expire ids idle longer than transactional.id.expiration.ms: Dead, tombstone, gone."""
        now = self._now()
        for txn_id, meta in list(self.txns.items()):
            if txn_id in self._pending or not meta.expired(now, self.settings.id_expiration_ms):
                continue
            dead = meta.prepare_dead()
            self._pending[txn_id] = TxnState.DEAD
            try:
                if (yield from self._persist(dead, tombstone=True)) == ErrorCode.none:
                    log.info(
                        "transactional id expired", transactional_id=txn_id, producer_id=meta.producer_id
                    )
            finally:
                self._pending.pop(txn_id, None)

    # ------------------------------------------------------------------ produce path
    def verify_produce(
        self,
        transactional_id: str | None,
        topic: str,
        partition: int,
        records: BytesLike | None,
        api_version: int | None = None,
    ) -> None:
        """Called by Produce before appending. A no-op for non-transactional batches (one byte
        of the header is read). A transactional batch must come from the transactional id's
        current producer id and epoch and go to a partition added to its Ongoing transaction;
        otherwise KafkaStorageError with Kafka's verification errors: INVALID_PRODUCER_EPOCH,
        INVALID_PRODUCER_ID_MAPPING, CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE (Produce <= v10)
        or TRANSACTION_ABORTABLE (v11+, when the caller passes api_version)."""
        if records is None or len(records) < _HEADER_SIZE or not records[22] & _ATTR_TRANSACTIONAL:
            return
        pid, epoch = _PID.unpack_from(records, 43)
        if transactional_id is None:
            raise KafkaStorageError(
                ErrorCode.transactional_id_authorization_failed,
                "transactional records without a transactional id",
            )
        meta = self.txns.get(transactional_id)
        if meta is None or meta.state == TxnState.DEAD:
            raise KafkaStorageError(
                ErrorCode.invalid_producer_id_mapping, f"unknown transactional id {transactional_id!r}"
            )
        err = meta.verify_check(pid, epoch, (topic, partition))
        if err == ErrorCode.none:
            return
        if err == ErrorCode.transaction_abortable and (api_version is None or api_version <= 10):
            err = ErrorCode.invalid_txn_state
        raise KafkaStorageError(
            err,
            f"transactional batch of producer {pid} epoch {epoch} for {topic}-{partition}: "
            f"transaction {transactional_id!r} is {meta.state.display} with producer "
            f"{meta.producer_id} epoch {meta.producer_epoch}",
        )

    # ------------------------------------------------------------------ inspection
    def list_transactions(
        self, state_filters: Iterable[str], producer_id_filters: Iterable[int], duration_filter_ms: int = -1
    ) -> tuple[list[str], list[dict[str, Any]]]:
        """(unknown state filters, [{transactional_id, producer_id, transaction_state}])."""
        names = list(state_filters)
        pids = set(producer_id_filters)
        wanted: set[TxnState] = set()
        unknown: list[str] = []
        for name in names:
            st = state_from_name(name)
            if st is None:
                unknown.append(name)
            else:
                wanted.add(st)
        now = self._now()
        out = []
        for txn_id, meta in sorted(self.txns.items()):
            if meta.state == TxnState.DEAD:
                continue
            if pids and meta.producer_id not in pids:
                continue
            if names and meta.state not in wanted:
                continue
            if duration_filter_ms >= 0 and now - meta.txn_start_ms <= duration_filter_ms:
                continue
            out.append(
                dict(
                    transactional_id=txn_id,
                    producer_id=meta.producer_id,
                    transaction_state=meta.state.display,
                )
            )
        return unknown, out

    def pending_state(self, transactional_id: str) -> TxnState | None:
        """The state a transition of this id is being written to (Kafka's pendingState), or None."""
        return self._pending.get(transactional_id)

    def describe_transaction(self, transactional_id: str) -> dict[str, Any]:
        # An error entry keeps the schema defaults (zeros), as Kafka's does.
        entry = dict(
            transactional_id=transactional_id,
            transaction_state="",
            transaction_timeout_ms=0,
            transaction_start_time_ms=0,
            producer_id=0,
            producer_epoch=0,
            topics=[],
        )
        if transactional_id is None or transactional_id == "":
            entry["error_code"] = ErrorCode.invalid_request
            return entry
        meta = self.txns.get(transactional_id)
        if meta is None or meta.state == TxnState.DEAD:
            entry["error_code"] = ErrorCode.transactional_id_not_found
            return entry
        entry.update(
            error_code=ErrorCode.none,
            transaction_state=meta.state.display,
            transaction_timeout_ms=meta.timeout_ms,
            transaction_start_time_ms=meta.txn_start_ms,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            topics=[dict(topic=t, partitions=ps) for t, ps in meta.topics().items()],
        )
        return entry


def _claimed_producer(producer_id: int, producer_epoch: int) -> tuple[int, int] | None | ErrorCode:
    """The producer id and epoch an InitProducerId claims to have (KIP-360), None for a new
    producer; INVALID_REQUEST when only one of them is given."""
    if producer_id == NO_PRODUCER_ID and producer_epoch == NO_PRODUCER_EPOCH:
        return None
    if producer_id == NO_PRODUCER_ID or producer_epoch == NO_PRODUCER_EPOCH:
        return ErrorCode.invalid_request
    return producer_id, producer_epoch


def _end_txn_while_pending(
    meta: TransactionMetadata, producer_id: int, producer_epoch: int, from_client: bool
) -> ErrorCode:
    """EndTxn for an id with an operation in progress: fenced or another producer's answer
    first, else CONCURRENT_TRANSACTIONS (retriable)."""
    if meta.producer_id != producer_id:
        return ErrorCode.invalid_producer_id_mapping
    if producer_epoch < meta.producer_epoch or (from_client and producer_epoch != meta.producer_epoch):
        return ErrorCode.producer_fenced
    return ErrorCode.concurrent_transactions


__all__ += ["TXN_TOPIC"]
