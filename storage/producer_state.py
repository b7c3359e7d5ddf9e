"""Per-partition idempotent/transactional producer state.

Implements the rules of Apache Kafka's ``ProducerStateManager`` / ``ProducerAppendInfo``
(``checkProducerEpoch``, ``checkSequence``, ``appendDataBatch``, ``appendEndTxnMarker``) and the
duplicate path of ``UnifiedLog.analyzeAndValidateProducerState`` for one partition:

* ``check(header)`` runs before an append. It raises ``KafkaStorageError`` for a batch that must
  be rejected and returns the stored ``BatchMetadata`` when the batch is an exact retry of one of
  the producer's last five batches (the caller then answers with the original offsets and does
  not append anything).
* ``update(header, first_offset, append_time_ms)`` runs after a successful append and during
  recovery replay. It never validates and never raises.

Sequences are int32 values that wrap from ``2**31 - 1`` to 0; a batch must continue the last
one exactly or repeat one of the cached five exactly (``sequence_error`` has all the rules).
Epochs are int16 and compared as plain integers (the coordinator moves to a new producer id
before the epoch would wrap).

Snapshots (``<next offset, 20 digits>.snapshot``) hold, for each producer, the epoch, the
coordinator epoch, the last timestamp, the open transaction's first offset and the metadata of
the last five batches, so that a retry is deduplicated after a crash too. Format (big endian)::

    magic b"MBPS" | version u16 | crc32 u32 (zlib, over everything after it)
    next_offset i64 | producer count u32
    per producer: pid i64, epoch i16, coordinator_epoch i32, last_timestamp i64,
                  txn_first_offset i64 (-1 = none), batch count u8
        per batch: first_seq i32, last_seq i32, first_offset i64, last_offset i64, timestamp i64

Files are written to a temporary name, fsynced, renamed and the directory fsynced.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import structlog
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records import (
    ATTR_CONTROL as _ATTR_CONTROL,
)
from minibroker.protocol.records import (
    ATTR_TRANSACTIONAL as _ATTR_TRANSACTIONAL,
)
from minibroker.protocol.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    BatchHeader,
    parse_control_record,
)
from minibroker.protocol.varint import BytesLike
from minibroker.storage.durable_files import TEMP_PREFIX, atomic_write
from minibroker.storage.errors import KafkaStorageError

__all__ = [
    "BATCH_WINDOW",
    "BatchMetadata",
    "CompletedTxn",
    "ProducerStateEntry",
    "ProducerStateManager",
    "parse_end_txn_marker",
    "snapshot_path",
]

log = structlog.get_logger(__name__)

BATCH_WINDOW = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
SNAPSHOTS_TO_KEEP = 3

_INT32_MAX = 0x7FFFFFFF
NO_PRODUCER_EPOCH = -1

_SNAPSHOT_SUFFIX = ".snapshot"
_SNAPSHOT_RE = re.compile(r"^(\d{20})\.snapshot$")
_MAGIC = b"MBPS"
_VERSION = 1
_FILE_HEADER = struct.Struct(">4sHI")  # magic, version, crc
_PAYLOAD_HEADER = struct.Struct(">qI")  # next_offset, producer count
_PRODUCER = struct.Struct(">qhiqqB")
_BATCH = struct.Struct(">iiqqq")


@dataclass(slots=True, repr=False)
class BatchMetadata:
    """One appended batch of a producer (what a retry must be answered with)."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int

    def __repr__(self) -> str:
        return (
            f"BatchMetadata(seq={self.first_seq}..{self.last_seq}, "
            f"offsets={self.first_offset}..{self.last_offset}, ts={self.timestamp})"
        )


class CompletedTxn(NamedTuple):
    """A transaction closed by a control batch: what the aborted-transaction index needs."""

    producer_id: int
    first_offset: int
    last_offset: int  # offset of the marker
    is_aborted: bool


class ProducerStateEntry:
    """State of one producer on this partition (also what DescribeProducers reports)."""

    __slots__ = (
        "producer_id",
        "epoch",
        "coordinator_epoch",
        "last_timestamp",
        "current_txn_first_offset_raw",
        "batches",
    )

    def __init__(
        self,
        producer_id: int,
        epoch: int,
        coordinator_epoch: int = -1,
        last_timestamp: int = -1,
        txn_first_offset: int = -1,
    ) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset_raw = txn_first_offset  # -1 = no open transaction
        self.batches: deque[BatchMetadata] = deque(maxlen=BATCH_WINDOW)

    @property
    def last_sequence(self) -> int:
        """Last sequence appended in the current epoch, -1 if none."""
        b = self.batches
        return b[-1].last_seq if b else -1

    @property
    def current_txn_first_offset(self) -> int | None:
        v = self.current_txn_first_offset_raw
        return v if v >= 0 else None

    def __repr__(self) -> str:
        return (
            f"ProducerStateEntry(pid={self.producer_id}, epoch={self.epoch}, "
            f"last_seq={self.last_sequence}, coord_epoch={self.coordinator_epoch}, "
            f"last_ts={self.last_timestamp}, txn_first={self.current_txn_first_offset})"
        )


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """Kafka's ProducerAppendInfo.inSequence: the next sequence, wrapping after 2**31-1."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


def sequence_error(
    entry: ProducerStateEntry, epoch: int, first_seq: int, last_offset_delta: int
) -> BatchMetadata | KafkaStorageError | None:
    """Every epoch and sequence rule for a data batch of a known producer, in Kafka 4's order
    (``UnifiedLog.analyzeAndValidateProducerState``, then ``ProducerAppendInfo
    .checkProducerEpoch`` and ``.checkSequence``):

    1. same epoch and the same first and last sequence as one of the five cached batches: a
       retry: that batch's metadata is returned (answered with the original offsets, nothing
       is written);
    2. an epoch below the current one: INVALID_PRODUCER_EPOCH;
    3. a new epoch must start at sequence 0 (unless the current epoch is -1): else
       OUT_OF_ORDER_SEQUENCE_NUMBER;
    4. the same epoch must continue the last sequence (+1, wrapping): anything else, including
       an overlap, an old batch outside the window or a jump ahead, is
       OUT_OF_ORDER_SEQUENCE_NUMBER. Kafka 4 never answers DUPLICATE_SEQUENCE_NUMBER.

    Returns None when the batch may be appended, the cached BatchMetadata for a retry, or the
    KafkaStorageError to raise.
    """
    pid, current = entry.producer_id, entry.epoch
    if epoch == current:
        last_seq = (first_seq + last_offset_delta) & _INT32_MAX
        for b in entry.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
    if epoch < current:
        return KafkaStorageError(
            ErrorCode.invalid_producer_epoch,
            f"epoch {epoch} of producer {pid} is smaller than the last seen epoch {current}",
        )
    if epoch != current:
        if first_seq != 0 and current != NO_PRODUCER_EPOCH:
            return KafkaStorageError(
                ErrorCode.out_of_order_sequence_number,
                f"invalid sequence number for new epoch {epoch} of producer {pid}: {first_seq} "
                f"(must be 0), current epoch {current}",
            )
        return None
    last = entry.last_sequence
    if current != NO_PRODUCER_EPOCH and not in_sequence(last, first_seq):
        return KafkaStorageError(
            ErrorCode.out_of_order_sequence_number,
            f"out of order sequence number for producer {pid} epoch {epoch}: {first_seq} "
            f"(incoming), {last} (current end sequence number); a retry must match one of the "
            f"last {BATCH_WINDOW} batches exactly",
        )
    return None


def snapshot_path(partition_dir: str, offset: int) -> str:
    return os.path.join(partition_dir, f"{offset:020d}{_SNAPSHOT_SUFFIX}")


def parse_end_txn_marker(batch: BytesLike) -> tuple[bool, int]:
    """(is_abort, coordinator_epoch) from the bytes of a whole control batch (its single record:
    key ``int16 version, int16 type`` (ABORT=0, COMMIT=1), value ``int16 version, int32
    coordinator_epoch``; -1 if the value is missing). Raises ValueError if it cannot be parsed."""
    try:
        rec = parse_control_record(batch)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - anything odd in a damaged batch becomes ValueError
        raise ValueError(f"malformed control batch: {exc!r}") from None
    if rec.type not in (CONTROL_ABORT, CONTROL_COMMIT):
        raise ValueError(f"unknown control record type {rec.type}")
    return rec.type == CONTROL_ABORT, rec.coordinator_epoch


class ProducerStateManager:
    """Producer state of one partition. All methods run on the event loop thread."""

    __slots__ = ("partition_dir", "expiration_ms", "_producers", "_ongoing", "_fuo")

    def __init__(self, partition_dir: str, expiration_ms: int) -> None:
        self.partition_dir = partition_dir
        self.expiration_ms = expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open txn
        self._fuo: int | None = None  # cached min(self._ongoing.values())

    # ------------------------------------------------------------------ validation (hot path)
    def check(
        self,
        header: BatchHeader,
        *,
        coordinator_epoch: int | None = None,  # noqa: C901 - Kafka's rule table
    ) -> BatchMetadata | None:
        """Validate a batch before it is appended.

        Returns the metadata of the original batch if ``header`` is an exact retry (same epoch,
        same first and last sequence) of one of the producer's last five batches; None if the
        batch may be appended. Raises KafkaStorageError with INVALID_PRODUCER_EPOCH (47),
        OUT_OF_ORDER_SEQUENCE_NUMBER (45) (rules: ``sequence_error``), INVALID_TXN_STATE
        (48, non-transactional write while the producer has an open transaction),
        INVALID_RECORD (87, producer id without a sequence) or, for a control batch whose
        ``coordinator_epoch`` is lower than the last one seen, TRANSACTION_COORDINATOR_FENCED.
        """
        pid = header.producer_id
        if pid < 0:
            return None
        entry = self._producers.get(pid)
        epoch = header.producer_epoch
        attrs = header.attributes
        if attrs & _ATTR_CONTROL:
            if entry is None:
                return None
            if epoch < entry.epoch:
                raise KafkaStorageError(
                    ErrorCode.invalid_producer_epoch,
                    f"marker epoch {epoch} of producer {pid} is older than current {entry.epoch}",
                )
            if coordinator_epoch is not None and coordinator_epoch < entry.coordinator_epoch:
                raise KafkaStorageError(
                    ErrorCode.transaction_coordinator_fenced,
                    f"marker coordinator epoch {coordinator_epoch} of producer {pid} is older "
                    f"than {entry.coordinator_epoch}",
                )
            return None

        first_seq = header.base_sequence
        if first_seq < 0:
            raise KafkaStorageError(
                ErrorCode.invalid_record, f"batch of producer {pid} has no base sequence ({first_seq})"
            )
        if entry is None:
            # A new (or expired, or retention-deleted) producer: any sequence, but Kafka's empty
            # entry has epoch -1 and an epoch below it is refused.
            if epoch < NO_PRODUCER_EPOCH:
                raise KafkaStorageError(
                    ErrorCode.invalid_producer_epoch,
                    f"epoch {epoch} of producer {pid} is smaller than the last seen epoch "
                    f"{NO_PRODUCER_EPOCH}",
                )
            return None
        verdict = sequence_error(entry, epoch, first_seq, header.last_offset_delta)
        if isinstance(verdict, KafkaStorageError):
            raise verdict
        if verdict is not None:
            return verdict  # an exact retry

        if entry.current_txn_first_offset_raw >= 0 and not attrs & _ATTR_TRANSACTIONAL:
            raise KafkaStorageError(
                ErrorCode.invalid_txn_state,
                f"non-transactional write from producer {pid} with an open transaction",
            )
        return None

    # ------------------------------------------------------------------ state change
    def update(  # noqa: C901 - Kafka's ProducerAppendInfo rules, kept together to compare
        self,
        header: BatchHeader,
        first_offset: int,
        append_time_ms: int,
        *,  # noqa: C901 - one rule table
        abort: bool | None = None,
        coordinator_epoch: int | None = None,
        batch: BytesLike | None = None,
        last_seen_ms: int | None = None,
    ) -> CompletedTxn | None:
        """Record an appended batch (after append and during recovery replay; never raises).

        Data batch: adds it to the producer's window of five (a new epoch clears the window)
        and opens a transaction at ``first_offset`` for a transactional batch if none is open.
        Returns None.

        Control batch: the marker's type comes from ``abort`` or, if that is None, is parsed
        from ``batch`` (the whole control batch's bytes), as is ``coordinator_epoch``. Closes
        the producer's open transaction and returns ``CompletedTxn(producer_id, txn first
        offset, marker offset (= first_offset), is_aborted)``, or None if no transaction was
        open for that producer on this partition.

        ``append_time_ms`` becomes the stored ``BatchMetadata.timestamp`` returned to retries
        and, unless ``last_seen_ms`` is given, the producer's last timestamp (used for expiry).
        Recovery replay passes ``last_seen_ms``: it cannot know when a batch arrived, and a
        record's own (possibly old) timestamp must not make its producer expire at once.
        """
        pid = header.producer_id
        if pid < 0:
            return None
        epoch = header.producer_epoch
        entry = self._producers.get(pid)
        if entry is None:
            entry = self._producers[pid] = ProducerStateEntry(pid, epoch)
        elif epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.last_timestamp = append_time_ms if last_seen_ms is None else max(append_time_ms, last_seen_ms)
        attrs = header.attributes

        if attrs & _ATTR_CONTROL:
            if (abort is None or coordinator_epoch is None) and batch is not None:
                try:
                    parsed_abort, parsed_coord = parse_end_txn_marker(batch)
                except ValueError as exc:
                    log.warning(
                        "unparseable control batch", producer_id=pid, offset=first_offset, reason=str(exc)
                    )
                else:
                    if abort is None:
                        abort = parsed_abort
                    if coordinator_epoch is None:
                        coordinator_epoch = parsed_coord
            if abort is None:
                log.warning(
                    "control batch of unknown type treated as COMMIT", producer_id=pid, offset=first_offset
                )
                abort = False
            if coordinator_epoch is not None and coordinator_epoch > entry.coordinator_epoch:
                entry.coordinator_epoch = coordinator_epoch
            txn_first = entry.current_txn_first_offset_raw
            if txn_first < 0:
                return None
            entry.current_txn_first_offset_raw = -1
            del self._ongoing[pid]
            if self._fuo == txn_first:
                self._fuo = None if not self._ongoing else min(self._ongoing.values())
            return CompletedTxn(pid, txn_first, first_offset, bool(abort))

        first_seq = header.base_sequence
        delta = header.last_offset_delta
        entry.batches.append(
            BatchMetadata(
                first_seq,
                (first_seq + delta) & _INT32_MAX if first_seq >= 0 else first_seq,
                first_offset,
                first_offset + delta,
                append_time_ms,
            )
        )
        if attrs & _ATTR_TRANSACTIONAL and entry.current_txn_first_offset_raw < 0:
            entry.current_txn_first_offset_raw = first_offset
            self._ongoing[pid] = first_offset
            fuo = self._fuo
            if fuo is None or first_offset < fuo:
                self._fuo = first_offset
        return None

    # ------------------------------------------------------------------ queries
    def first_unstable_offset(self) -> int | None:
        """Smallest first offset of the open transactions on this partition, None if none."""
        return self._fuo

    def ongoing_first_offset(self, producer_id: int) -> int | None:
        return self._ongoing.get(producer_id)

    def ongoing_transactions(self) -> dict[int, int]:
        """producer id -> first offset of its open transaction (a copy)."""
        return dict(self._ongoing)

    def producers(self) -> Iterable[ProducerStateEntry]:
        """Entries with producer_id, epoch, last_sequence, last_timestamp, coordinator_epoch,
        current_txn_first_offset (None if no open transaction). A list (safe to keep)."""
        return list(self._producers.values())

    def get(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def __len__(self) -> int:
        return len(self._producers)

    def clear(self) -> None:
        """Forget everything in memory (files are untouched)."""
        self._producers.clear()
        self._ongoing.clear()
        self._fuo = None

    def remove_expired(self, now_ms: int) -> None:
        """Forget producers with no open transaction idle for >= expiration_ms (Kafka's
        ``isProducerExpired``: ``now - lastTimestamp >= producer.id.expiration.ms``)."""
        limit = now_ms - self.expiration_ms
        expired = [
            pid
            for pid, e in self._producers.items()
            if e.current_txn_first_offset_raw < 0 and e.last_timestamp <= limit
        ]
        for pid in expired:
            del self._producers[pid]

    # ------------------------------------------------------------------ snapshots
    def snapshot_offsets(self) -> list[int]:
        """Offsets of the snapshot files present, ascending."""
        try:
            names = os.listdir(self.partition_dir)
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            m = _SNAPSHOT_RE.match(name)
            if m:
                out.append(int(m.group(1)))
        out.sort()
        return out

    def encode_snapshot(self, next_offset: int) -> bytes:
        """The state now, as a snapshot file for ``next_offset`` (see ``write_snapshot``)."""
        parts = [_PAYLOAD_HEADER.pack(next_offset, len(self._producers))]
        pack_p = _PRODUCER.pack
        pack_b = _BATCH.pack
        for e in self._producers.values():
            parts.append(
                pack_p(
                    e.producer_id,
                    e.epoch,
                    e.coordinator_epoch,
                    e.last_timestamp,
                    e.current_txn_first_offset_raw,
                    len(e.batches),
                )
            )
            for b in e.batches:
                parts.append(pack_b(b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp))
        payload = b"".join(parts)
        return _FILE_HEADER.pack(_MAGIC, _VERSION, zlib.crc32(payload)) + payload

    @staticmethod
    def _decode(data: bytes) -> tuple[int, dict[int, ProducerStateEntry]]:
        if len(data) < _FILE_HEADER.size + _PAYLOAD_HEADER.size:
            raise ValueError("snapshot too short")
        magic, version, crc = _FILE_HEADER.unpack_from(data, 0)
        if magic != _MAGIC:
            raise ValueError("bad snapshot magic")
        if version != _VERSION:
            raise ValueError(f"unsupported snapshot version {version}")
        payload = memoryview(data)[_FILE_HEADER.size :]
        if zlib.crc32(payload) != crc:
            raise ValueError("snapshot CRC mismatch")
        next_offset, count = _PAYLOAD_HEADER.unpack_from(payload, 0)
        pos = _PAYLOAD_HEADER.size
        producers: dict[int, ProducerStateEntry] = {}
        unpack_p = _PRODUCER.unpack_from
        unpack_b = _BATCH.unpack_from
        for _ in range(count):
            pid, epoch, coord, last_ts, txn_first, nb = unpack_p(payload, pos)
            pos += _PRODUCER.size
            entry = ProducerStateEntry(pid, epoch, coord, last_ts, txn_first)
            for _ in range(nb):
                entry.batches.append(BatchMetadata(*unpack_b(payload, pos)))
                pos += _BATCH.size
            producers[pid] = entry
        if pos != len(payload):
            raise ValueError("trailing bytes in snapshot")
        return next_offset, producers

    def take_snapshot(self, next_offset: int) -> None:
        """Atomically write the state as of ``next_offset`` (every batch below it applied) to
        ``<next_offset, 20 digits>.snapshot``; keep only the newest few snapshots."""
        os.makedirs(self.partition_dir, exist_ok=True)
        self.write_snapshot(next_offset, self.encode_snapshot(next_offset))

    def write_snapshot(self, next_offset: int, data: bytes) -> None:
        """Write ``data`` (from ``encode_snapshot``) atomically as the snapshot at
        ``next_offset`` and keep only the newest few snapshots (Kafka keeps a few, deleting
        older ones as the log start moves). Touches no in-memory state, so a worker thread may
        run it; raises OSError (FileNotFoundError if the partition was deleted meanwhile)."""
        atomic_write(snapshot_path(self.partition_dir, next_offset), data)
        offsets = self.snapshot_offsets()
        for off in offsets[:-SNAPSHOTS_TO_KEEP]:
            self._delete_snapshot(off)

    def _delete_snapshot(self, offset: int) -> None:
        try:
            os.unlink(snapshot_path(self.partition_dir, offset))
        except FileNotFoundError:
            pass

    def load_snapshot(self, log_end_offset: int) -> int:
        """Reset the in-memory state to the newest readable snapshot whose offset is <=
        ``log_end_offset``; snapshots above ``log_end_offset`` (and unreadable ones tried on
        the way) are deleted, as are leftover temporary files. Returns the offset from which
        the log must be replayed through ``update()`` (0 if no snapshot was loaded: the caller
        replays from the log start)."""
        self.clear()
        try:
            names = os.listdir(self.partition_dir)
        except FileNotFoundError:
            return 0
        for name in names:
            # interrupted snapshot writes (.snapshot.tmp: older versions)
            if name.startswith(TEMP_PREFIX) or name.endswith(_SNAPSHOT_SUFFIX + ".tmp"):
                try:
                    os.unlink(os.path.join(self.partition_dir, name))
                except FileNotFoundError:
                    pass
        offsets = self.snapshot_offsets()
        for off in offsets:
            if off > log_end_offset:
                self._delete_snapshot(off)
        for off in reversed([o for o in offsets if o <= log_end_offset]):
            path = snapshot_path(self.partition_dir, off)
            try:
                with open(path, "rb") as f:
                    data = f.read()
                stored_offset, producers = self._decode(data)
                if stored_offset != off:
                    raise ValueError(f"snapshot names offset {off} but holds {stored_offset}")
            except (OSError, ValueError, struct.error) as exc:
                log.warning(
                    "deleting unreadable producer snapshot; state is rebuilt from the log",
                    path=str(path),
                    reason=str(exc),
                )
                self._delete_snapshot(off)
                continue
            self._producers = producers
            self._ongoing = {
                pid: e.current_txn_first_offset_raw
                for pid, e in producers.items()
                if e.current_txn_first_offset_raw >= 0
            }
            self._fuo = min(self._ongoing.values()) if self._ongoing else None
            return off
        return 0

    def truncate_snapshots_after(self, offset: int) -> None:
        """Delete snapshots whose offset is > ``offset`` (after the log was truncated to
        ``offset``). In-memory state is untouched: follow with ``load_snapshot`` + replay."""
        for off in self.snapshot_offsets():
            if off > offset:
                self._delete_snapshot(off)

    def delete_snapshots_before(self, offset: int) -> None:
        """Delete snapshots whose offset is < ``offset`` (e.g. below the log start offset)."""
        for off in self.snapshot_offsets():
            if off < offset:
                self._delete_snapshot(off)
