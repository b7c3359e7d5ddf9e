"""The transaction coordinator's pure state machine and its log record format. No I/O.

One `TransactionMetadata` per transactional id, with Apache Kafka's states and transitions
(`TransactionState`, `TransactionMetadata.prepare*` in Kafka's transaction coordinator)::

    Empty -> Ongoing -> PrepareCommit -> CompleteCommit -> Ongoing | Empty ...
                     -> PrepareAbort  -> CompleteAbort  -> ...
    Ongoing -> PrepareEpochFence (in memory only) -> PrepareAbort      (fencing, timeouts)
    Empty | CompleteCommit | CompleteAbort -> Dead                     (id expiration)

A transition is computed as a new immutable-by-convention metadata object (`prepare_*`); the
coordinator makes it durable in `__transaction_state` and only then installs it, so a failed write
leaves the state as it was (Kafka's TxnTransitMetadata / completeTransitionTo).

Record format: Kafka's own `TransactionLogKey` (v0) and `TransactionLogValue` (v0, or v1 when a
tagged field is needed), so Kafka's TransactionLogMessageFormatter can read the topic::

    key   = int16 version 0 | string transactional_id (int16 length)
    value = int16 version | int64 producer_id | int16 producer_epoch | int32 timeout_ms
            | int8 status | [topic string, [int32 partition]] (nullable) | int64 last_update_ms
            | int64 txn_start_ms  (v1: compact strings/arrays + tagged fields:
              0 = PreviousProducerId, 1 = NextProducerId, 2 = ClientTransactionVersion (the
              transaction.version of the client's last transition: 2 for a KIP-890 client),
              10000 = LastProducerEpoch (minibroker's own tag; Kafka readers skip unknown tags))
    a null value (tombstone) removes the transactional id (expiration).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Iterable
from enum import IntEnum
from typing import Any

from minibroker.coordinator.record_reader import RecordReader
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.varint import write_uvarint as _uvarint

__all__ = [
    "TxnState",
    "TransactionMetadata",
    "STATE_NAMES",
    "state_from_name",
    "encode_key",
    "decode_key",
    "encode_value",
    "decode_value",
    "NO_PRODUCER_ID",
    "NO_PRODUCER_EPOCH",
    "SHORT_MAX",
]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767
LAST_PRODUCER_EPOCH_TAG = 10000


class TxnState(IntEnum):
    """Kafka's TransactionState with its on-disk status byte."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display(self) -> str:
        return STATE_NAMES[self]

    @property
    def is_prepare(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @property
    def expiration_allowed(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


STATE_NAMES = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {v: k for k, v in STATE_NAMES.items()}

# Kafka's TransactionState.validPreviousStates
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.ONGOING: frozenset(
        {TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}
    ),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    # TV2 (KIP-890): an abort without partitions from Empty or a completed transaction
    TxnState.PREPARE_ABORT: frozenset(
        {
            TxnState.ONGOING,
            TxnState.PREPARE_EPOCH_FENCE,
            TxnState.EMPTY,
            TxnState.COMPLETE_COMMIT,
            TxnState.COMPLETE_ABORT,
        }
    ),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.ONGOING}),
}


def state_from_name(name: str) -> TxnState | None:
    return _BY_NAME.get(name)


class IllegalTransition(RuntimeError):
    """A transition Kafka's coordinator would treat as a fatal bug."""


@dataclasses.dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60000
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[tuple[str, int]] = frozenset()  # of (topic, partition)
    txn_start_ms: int = -1
    last_update_ms: int = -1
    last_producer_id: int = NO_PRODUCER_ID  # Kafka's previousProducerId (KIP-360)
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    next_producer_id: int = NO_PRODUCER_ID  # TV2: the id the epoch overflow moves to
    client_transaction_version: int = 0  # the transaction.version of the client's last transition
    has_failed_epoch_fence: bool = False  # in memory only

    # ------------------------------------------------------------------ queries
    @property
    def epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def timed_out(self, now_ms: int) -> bool:
        """Kafka: Ongoing and txnStartTimestamp + txnTimeoutMs < now."""
        return self.state == TxnState.ONGOING and self.txn_start_ms + self.timeout_ms < now_ms

    def expired(self, now_ms: int, expiration_ms: int) -> bool:
        return self.state.expiration_allowed and self.last_update_ms <= now_ms - expiration_ms

    def topics(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for topic, p in sorted(self.partitions):
            out.setdefault(topic, []).append(p)
        return out

    # ------------------------------------------------------------------ transitions
    def _to(self, state: TxnState, **changes: Any) -> TransactionMetadata:  # fields' new values
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalTransition(
                f"transactional id {self.transactional_id}: illegal transition "
                f"{self.state.display} -> {state.display}"
            )
        changes.setdefault("has_failed_epoch_fence", False)
        changes.setdefault("last_producer_id", self.producer_id)  # Kafka's prevProducerId
        return dataclasses.replace(self, state=state, **changes)

    def prepare_increment_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now_ms: int
    ) -> TransactionMetadata | ErrorCode:
        """InitProducerId on Empty/CompleteX: bump the epoch (or recognise a retry)."""
        if self.epoch_exhausted:
            raise IllegalTransition(f"cannot bump exhausted epoch of producer {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            next_epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            next_epoch, last_epoch = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            # a retry of an InitProducerId that already bumped: answer the current epoch again
            next_epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            return ErrorCode.producer_fenced
        return self._to(
            TxnState.EMPTY,
            producer_epoch=next_epoch,
            last_producer_epoch=last_epoch,
            last_producer_id=self.producer_id,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            txn_start_ms=-1,
            last_update_ms=now_ms,
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, timeout_ms: int, now_ms: int, record_last_epoch: bool
    ) -> TransactionMetadata:
        """InitProducerId with an exhausted epoch: a new producer id at epoch 0."""
        return self._to(
            TxnState.EMPTY,
            producer_id=new_producer_id,
            producer_epoch=0,
            last_producer_id=self.producer_id,
            last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            txn_start_ms=-1,
            last_update_ms=now_ms,
        )

    def fence_epoch(self) -> int:
        """The epoch an epoch fence (InitProducerId over Ongoing, timeout) moves to."""
        if self.producer_epoch >= SHORT_MAX:
            raise IllegalTransition(
                f"cannot fence producer {self.producer_id} at epoch {self.producer_epoch}"
            )
        return self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1

    def prepare_add_partitions(
        self, added: Iterable[tuple[str, int]], now_ms: int, client_version: int = 0
    ) -> TransactionMetadata:
        start = (
            now_ms
            if self.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
            else self.txn_start_ms
        )
        return self._to(
            TxnState.ONGOING,
            partitions=self.partitions | frozenset(added),
            txn_start_ms=start,
            last_update_ms=now_ms,
            client_transaction_version=client_version,
        )

    def prepare_abort_or_commit(
        self,
        commit: bool,
        now_ms: int,
        client_version: int = 0,
        next_producer_id: int = NO_PRODUCER_ID,
        no_partition_added: bool = False,
        bump_epoch: bool = False,
    ) -> TransactionMetadata:
        """PrepareCommit/PrepareAbort. A TV2 end (EndTxn v5: `bump_epoch`) moves the epoch up by
        one (the markers carry the bumped epoch, and the client continues with it); when the
        epoch is exhausted `next_producer_id` is the id the completion moves to (at epoch 0).
        An epoch fence has bumped the epoch already and does not bump it again."""
        state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        changes: dict[str, Any] = {}
        if bump_epoch:
            changes.update(producer_epoch=self.producer_epoch + 1, last_producer_epoch=self.producer_epoch)
        return self._to(
            state,
            last_update_ms=now_ms,
            txn_start_ms=now_ms if no_partition_added else self.txn_start_ms,
            next_producer_id=next_producer_id,
            client_transaction_version=client_version,
            **changes,
        )

    def prepare_complete(self, now_ms: int) -> TransactionMetadata:
        if self.state == TxnState.PREPARE_COMMIT:
            state = TxnState.COMPLETE_COMMIT
        elif self.state == TxnState.PREPARE_ABORT:
            state = TxnState.COMPLETE_ABORT
        else:
            raise IllegalTransition(f"{self.transactional_id}: complete from {self.state.display}")
        changes: dict[str, Any] = {}
        if self.client_transaction_version >= 2 and self.next_producer_id != NO_PRODUCER_ID:
            # TV2 epoch overflow: the client saw MAX-1, then the new producer id at epoch 0
            changes.update(producer_id=self.next_producer_id, producer_epoch=0)
        return self._to(
            state, partitions=frozenset(), last_update_ms=now_ms, next_producer_id=NO_PRODUCER_ID, **changes
        )

    def prepare_dead(self) -> TransactionMetadata:
        return self._to(TxnState.DEAD, partitions=frozenset())

    # ------------------------------------------------------------------ decisions (Kafka rules)
    def end_txn_check(
        self, producer_id: int, producer_epoch: int, commit: bool, from_client: bool
    ) -> ErrorCode | None:
        """Errors EndTxn answers before any state change; None when Ongoing may be ended.
        ErrorCode.none means 'already done' (a retry of a completed EndTxn)."""
        if self.producer_id != producer_id:
            return ErrorCode.invalid_producer_id_mapping
        if (from_client and producer_epoch != self.producer_epoch) or producer_epoch < self.producer_epoch:
            return ErrorCode.producer_fenced
        st = self.state
        if st == TxnState.ONGOING:
            return None
        if st == TxnState.COMPLETE_COMMIT:
            return ErrorCode.none if commit else ErrorCode.invalid_txn_state
        if st == TxnState.COMPLETE_ABORT:
            return ErrorCode.none if not commit else ErrorCode.invalid_txn_state
        if st == TxnState.PREPARE_COMMIT:
            return ErrorCode.concurrent_transactions if commit else ErrorCode.invalid_txn_state
        if st == TxnState.PREPARE_ABORT:
            return ErrorCode.concurrent_transactions if not commit else ErrorCode.invalid_txn_state
        if st == TxnState.EMPTY:
            return ErrorCode.invalid_txn_state
        raise IllegalTransition(f"{self.transactional_id}: EndTxn in state {st.display}")

    def end_txn_check_v2(
        self, producer_id: int, producer_epoch: int, commit: bool, fence: bool
    ) -> ErrorCode | bool:
        """Kafka's EndTxn rules for a TV2 request (EndTxn v5, or the coordinator's own abort when
        transaction.version is 2). An error (NONE: a retry of the completed end), or whether
        the transaction may be ended, True when no partition was added (an abort from Empty or a
        completed transaction, which still bumps the epoch)."""
        st = self.state
        retry_on_overflow = (
            not fence
            and self.last_producer_id == producer_id
            and producer_epoch == SHORT_MAX - 1
            and self.producer_epoch == 0
        )
        retry_on_bump = not fence and self.producer_epoch == producer_epoch + 1
        if fence:
            valid_epoch = producer_epoch >= self.producer_epoch
        elif st in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            valid_epoch = retry_on_bump
        elif st.is_complete:
            valid_epoch = retry_on_bump or retry_on_overflow or producer_epoch == self.producer_epoch
        else:
            valid_epoch = producer_epoch == self.producer_epoch
        if self.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.invalid_producer_id_mapping
        if not valid_epoch:
            return ErrorCode.producer_fenced
        retry = retry_on_bump or retry_on_overflow
        if st == TxnState.ONGOING:
            return False
        if st.is_complete:
            same = (st == TxnState.COMPLETE_COMMIT) == commit
            if retry:
                return ErrorCode.none if same else ErrorCode.invalid_txn_state
            return ErrorCode.invalid_txn_state if commit else True
        if st.is_prepare:
            same = (st == TxnState.PREPARE_COMMIT) == commit
            return ErrorCode.concurrent_transactions if same else ErrorCode.invalid_txn_state
        if st == TxnState.EMPTY:
            return ErrorCode.invalid_txn_state if commit else True
        raise IllegalTransition(f"{self.transactional_id}: EndTxn in state {st.display}")

    def _producer_error(
        self, producer_id: int, producer_epoch: int, stale_epoch: ErrorCode
    ) -> ErrorCode | None:
        """Another producer id, another epoch (`stale_epoch`), or a completion in progress."""
        if self.producer_id != producer_id:
            return ErrorCode.invalid_producer_id_mapping
        if self.producer_epoch != producer_epoch:
            return stale_epoch
        if self.state.is_prepare:
            return ErrorCode.concurrent_transactions
        return None

    def add_partitions_check(
        self, producer_id: int, producer_epoch: int, partitions: Iterable[tuple[str, int]]
    ) -> ErrorCode | None:
        """Errors AddPartitionsToTxn answers without a state change (NONE: already added);
        None when the partitions must be added."""
        error = self._producer_error(producer_id, producer_epoch, ErrorCode.producer_fenced)
        if error is not None:
            return error
        if self.state == TxnState.DEAD:
            return ErrorCode.invalid_producer_id_mapping
        if self.state == TxnState.ONGOING and frozenset(partitions) <= self.partitions:
            return ErrorCode.none
        return None

    def verify_check(self, producer_id: int, producer_epoch: int, partition: tuple[str, int]) -> ErrorCode:
        """Kafka's handleVerifyPartitionsInTransaction for one partition, with the translation
        the partition leader applies (PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH); a partition not
        in the transaction gives TRANSACTION_ABORTABLE, which callers map by request version."""
        error = self._producer_error(producer_id, producer_epoch, ErrorCode.invalid_producer_epoch)
        if error is not None:
            return error
        if self.state != TxnState.ONGOING or partition not in self.partitions:
            return ErrorCode.transaction_abortable
        return ErrorCode.none


def is_epoch_exhausted(epoch: int) -> bool:
    return epoch >= SHORT_MAX - 1


def plan_init_producer_id(
    meta: TransactionMetadata,
    timeout_ms: int,
    expected: tuple[int, int] | None,
    now_ms: int,
    allocate_producer_id: Callable[[], int],
) -> TransactionMetadata | ErrorCode:
    """Kafka's prepareInitProducerIdTransit for an existing (or just created) metadata.

    Returns the metadata to persist (state Empty), the marker `TxnState.PREPARE_EPOCH_FENCE`
    wrapped as metadata when an Ongoing transaction must first be aborted, or an error."""

    def valid_producer_id(pid: int, epoch: int) -> bool:
        return (
            meta.producer_epoch == NO_PRODUCER_EPOCH
            or pid == meta.producer_id
            or (pid == meta.last_producer_id and is_epoch_exhausted(epoch))
        )

    if expected is not None and not valid_producer_id(*expected):
        return ErrorCode.producer_fenced
    st = meta.state
    if st.is_prepare:
        return ErrorCode.concurrent_transactions
    if st in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
        if meta.epoch_exhausted and (expected is None or expected[1] == meta.producer_epoch):
            return meta.prepare_producer_id_rotation(
                allocate_producer_id(), timeout_ms, now_ms, expected is not None
            )
        return meta.prepare_increment_epoch(timeout_ms, None if expected is None else expected[1], now_ms)
    if st == TxnState.ONGOING:
        return dataclasses.replace(
            meta,
            state=TxnState.PREPARE_EPOCH_FENCE,
            producer_epoch=meta.fence_epoch(),
            last_producer_epoch=NO_PRODUCER_EPOCH,
        )
    raise IllegalTransition(f"{meta.transactional_id}: InitProducerId in state {st.display}")


# ---------------------------------------------------------------------- record format
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def encode_key(transactional_id: str) -> bytes:
    raw = transactional_id.encode()
    return _I16.pack(0) + _I16.pack(len(raw)) + raw


def decode_key(data: bytes) -> str:
    (version,) = _I16.unpack_from(data, 0)
    if version != 0:
        raise ValueError(f"unknown TransactionLogKey version {version}")
    (n,) = _I16.unpack_from(data, 2)
    if n < 0 or 4 + n > len(data):
        raise ValueError("bad TransactionLogKey string length")
    return bytes(data[4 : 4 + n]).decode()


def encode_value(meta: TransactionMetadata) -> bytes:
    """TransactionLogValue; v0 unless a tagged field carries information."""
    tags = _value_tags(meta)
    flexible = bool(tags)
    out = bytearray(_I16.pack(1 if flexible else 0))
    out += _I64.pack(meta.producer_id)
    out += _I16.pack(meta.producer_epoch)
    out += _I32.pack(meta.timeout_ms)
    out.append(int(meta.state) & 0xFF)
    _encode_partitions(out, meta, flexible)
    out += _I64.pack(meta.last_update_ms)
    out += _I64.pack(meta.txn_start_ms)
    if flexible:
        out += _uvarint(len(tags))
        for tag, payload in tags:
            out += _uvarint(tag) + _uvarint(len(payload)) + payload
    return bytes(out)


def _value_tags(meta: TransactionMetadata) -> list[tuple[int, bytes]]:
    """The tagged fields worth writing (each makes the value v1)."""
    tags: list[tuple[int, bytes]] = []
    if meta.last_producer_id not in (NO_PRODUCER_ID, meta.producer_id):
        tags.append((0, _I64.pack(meta.last_producer_id)))
    if meta.next_producer_id != NO_PRODUCER_ID:
        tags.append((1, _I64.pack(meta.next_producer_id)))
    if meta.client_transaction_version:
        tags.append((2, _I16.pack(meta.client_transaction_version)))
    if meta.last_producer_epoch != NO_PRODUCER_EPOCH:
        tags.append((LAST_PRODUCER_EPOCH_TAG, _I16.pack(meta.last_producer_epoch)))
    return tags


def _encode_partitions(out: bytearray, meta: TransactionMetadata, flexible: bool) -> None:
    topics = meta.topics()
    if meta.state == TxnState.EMPTY and not topics:
        out += _uvarint(0) if flexible else _I32.pack(-1)  # Kafka writes a null array for Empty
        return
    out += _uvarint(len(topics) + 1) if flexible else _I32.pack(len(topics))
    for topic, parts in topics.items():
        raw = topic.encode()
        if flexible:
            out += _uvarint(len(raw) + 1) + raw + _uvarint(len(parts) + 1)
        else:
            out += _I16.pack(len(raw)) + raw + _I32.pack(len(parts))
        for p in parts:
            out += _I32.pack(p)
        if flexible:
            out += _uvarint(0)  # no tagged fields in PartitionsSchema


def decode_value(transactional_id: str, data: bytes) -> TransactionMetadata:
    r = RecordReader(data)
    version = r.i16()
    if version not in (0, 1):
        raise ValueError(f"unknown TransactionLogValue version {version}")
    r.flexible = version >= 1
    producer_id = r.i64()
    epoch = r.i16()
    timeout_ms = r.i32()
    status = r.i8()
    state = TxnState(status)
    partitions: set[tuple[str, int]] = set()
    for _ in range(r.array_len()):
        topic = r.string()
        if topic is None:
            raise ValueError("TransactionLogValue without a topic name")
        for _ in range(r.array_len()):
            partitions.add((topic, r.i32()))
        r.tagged_fields()
    last_update = r.i64()
    start = r.i64()
    tags = r.tagged_fields()
    last_pid = _I64.unpack(tags[0])[0] if 0 in tags else NO_PRODUCER_ID
    next_pid = _I64.unpack(tags[1])[0] if 1 in tags else NO_PRODUCER_ID
    client_version = _I16.unpack(tags[2])[0] if 2 in tags else 0
    last_epoch = (
        _I16.unpack(tags[LAST_PRODUCER_EPOCH_TAG])[0]
        if LAST_PRODUCER_EPOCH_TAG in tags
        else NO_PRODUCER_EPOCH
    )
    return TransactionMetadata(
        transactional_id=transactional_id,
        producer_id=producer_id,
        producer_epoch=epoch,
        timeout_ms=timeout_ms,
        state=state,
        partitions=frozenset(partitions),
        txn_start_ms=start,
        last_update_ms=last_update,
        last_producer_id=producer_id if last_pid == NO_PRODUCER_ID else last_pid,
        last_producer_epoch=last_epoch,
        next_producer_id=next_pid,
        client_transaction_version=client_version,
    )
