"""The broker's share-partitions (Kafka's SharePartitionManager): one
coordinator/share_partition.py state machine per (share group, topic, partition), loaded from the
share coordinator on first use, persisting every transition through it (durable before the
acknowledgement is answered), acquisition-lock timers on the broker's clock, one fetch at a time
per share-partition, ShareFetch long-polls on the data waiters.

- Load (Kafka's SharePartition.maybeInitialize): `read_state` through the coordinator runtime; an
  error (a share-partition never initialized: UNKNOWN_TOPIC_OR_PARTITION) is the partition's
  answer and nothing is kept; a start offset of -1 is resolved with the group's
  share.auto.offset.reset against the log (earliest, latest, by_duration:<ISO-8601> as a
  ListOffsets by timestamp of now minus the duration).
- Every Transition (acknowledge, release, lock expiry) is written with `write_state` inside one
  operation of the share coordinator's shard, then committed, or rolled back when the write
  failed, before its caller answers: an acknowledged record is never delivered again.
- Acquisition locks: one timer per share-partition, at its earliest lock deadline, on the
  coordinator runtime's clock (a control plane's manual clock advances it).
- Fetch: reading the log and acquiring happen without a pause of the loop in between, so one
  fetch at a time works on a share-partition (Kafka's fetch lock) by construction; a ShareFetch
  waits for MinBytes on the data waiters, which a share-partition's change (records released)
  wakes too.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import structlog
from minibroker.common.clock import Clock
from minibroker.coordinator.share_partition import SharePartition, Transition
from minibroker.coordinator.share_types import (
    AckBatch,
    AckType,
    AcquiredRange,
    AcquireMode,
    LogBatch,
    SharePartitionConfig,
    SharePartitionKey,
)
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records.batch import iter_batches
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.file_slice import FileSlice, slice_bytes

if TYPE_CHECKING:
    from minibroker.broker.coordinator_runtime import CoordinatorRuntime
    from minibroker.broker.group_configs import GroupConfigs
    from minibroker.broker.waiters import DataWaiters
    from minibroker.coordinator.collaborators import TimerHandle
    from minibroker.coordinator.group_settings import GroupSettings
    from minibroker.coordinator.runtime import Operation
    from minibroker.coordinator.share_coordinator import ShareCoordinator
    from minibroker.storage.log import PartitionLog
    from minibroker.storage.log_manager import LogManager

__all__ = ["PartitionFetch", "SharePartitionManager", "parse_duration_ms", "persister_error"]

log = structlog.get_logger("minibroker.broker.share_partitions")

#: Kafka's SharePartition.fetchPersisterError: what a failed share-state write or read answers.
_PERSISTER_ERRORS = {
    ErrorCode.not_coordinator: ErrorCode.coordinator_not_available,
    ErrorCode.coordinator_not_available: ErrorCode.coordinator_not_available,
    ErrorCode.coordinator_load_in_progress: ErrorCode.coordinator_not_available,
    ErrorCode.group_id_not_found: ErrorCode.group_id_not_found,
    ErrorCode.unknown_topic_or_partition: ErrorCode.unknown_topic_or_partition,
    ErrorCode.fenced_leader_epoch: ErrorCode.not_leader_or_follower,
    ErrorCode.fenced_state_epoch: ErrorCode.not_leader_or_follower,
}
#: Errors after which Kafka drops the share-partition from its cache (fencedSharePartitionHandler).
_FENCING = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.fenced_state_epoch,
        ErrorCode.group_id_not_found,
        ErrorCode.unknown_topic_or_partition,
    }
)

_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int | None:
    """Java's Duration.parse (PnDTnHnMn.nS) in milliseconds; None if it is not one."""
    m = _DURATION.fullmatch(text.strip())
    if m is None or text.strip().upper().endswith("T") or not any(m.group(i) for i in (2, 3, 4, 5)):
        return None
    sign, days, hours, minutes, seconds, fraction = m.groups()
    ms = (int(days or 0) * 86_400 + int(hours or 0) * 3_600 + int(minutes or 0) * 60) * 1000
    secs = int(seconds or 0)
    frac_ms = int((fraction or "").ljust(3, "0")[:3]) if fraction else 0
    ms += secs * 1000 + (-frac_ms if seconds and seconds.startswith("-") else frac_ms)
    return -ms if sign == "-" else ms


class PartitionFetch(NamedTuple):
    """One share-partition's part of a ShareFetch answer."""

    error_code: int = 0
    records: bytes = b""
    acquired: tuple[AcquiredRange, ...] = ()


class _Read(NamedTuple):
    chunks: list[FileSlice]  # whole log batches, not read yet
    size: int
    aborted: Sequence[tuple[int, int]]


def persister_error(code: int) -> ErrorCode:
    return _PERSISTER_ERRORS.get(ErrorCode(code), ErrorCode.unknown_server_error)


class SharePartitionManager:
    def __init__(
        self,
        settings: GroupSettings,
        *,
        share_coordinator: ShareCoordinator,
        coordinators: CoordinatorRuntime,
        logs: LogManager,
        group_configs: GroupConfigs,
        data_waiters: DataWaiters,
        clock: Clock,
    ) -> None:
        self.settings = settings
        self.share_coordinator = share_coordinator
        self.coordinators = coordinators
        self.logs = logs
        self.group_configs = group_configs
        self.data_waiters = data_waiters
        self.clock = clock
        self.partitions: dict[SharePartitionKey, SharePartition] = {}
        self._timer = coordinators.timer()  # acquisition-lock expiry, on the broker's clock
        self._timer.bind(share_coordinator)
        self._deadlines: dict[SharePartitionKey, tuple[int, TimerHandle]] = {}
        #: releases under way per group: a share-partition let go is loaded again after them
        self._releasing: dict[str, set[asyncio.Task[None]]] = {}
        self._writes: set[asyncio.Task[tuple[int, str | None]]] = set()  # start offset moves
        #: for metrics (broker/metrics.py)
        self.counters: dict[str, int] = {
            "lock_expiries": 0,
            "redeliveries": 0,
            "acknowledgements_accept": 0,
            "acknowledgements_release": 0,
            "acknowledgements_reject": 0,
            "acknowledgements_renew": 0,
        }

    # --- configuration -------------------------------------------------------------------------
    def share_partition_config(self, group_id: str) -> SharePartitionConfig:
        """The group's effective share.* settings: its GROUP config over the broker's."""
        return self.group_configs.share_partition_config(group_id)

    def in_flight_records(self) -> int:
        return sum(sp.in_flight_records() for sp in self.partitions.values())

    # --- loading -------------------------------------------------------------------------------
    async def load(self, key: SharePartitionKey, topic: str) -> tuple[int, SharePartition | None]:
        """The share-partition, loaded from the share coordinator at its first use:
        (0, it) or (the partition's error, None)."""
        sp = self.partitions.get(key)
        if sp is not None:
            sp.config = self.share_partition_config(key.group_id)  # the group's configs may have changed
            return 0, sp
        plog = self.logs.get_log(topic, key.partition)
        if plog is None:
            return ErrorCode.unknown_topic_or_partition, None
        releasing = self._releasing.get(key.group_id)
        if releasing:  # Kafka's share coordinator writes them before this read
            await asyncio.wait(list(releasing))
            return await self.load(key, topic)
        try:
            result = await self.coordinators.run(
                self.share_coordinator, self.share_coordinator.read_state(key, plog.leader_epoch)
            )
        except Exception:  # noqa: BLE001 - the partition's answer, the broker goes on
            log.exception(
                "cannot read the share-partition state", group_id=key.group_id, partition=key.partition
            )
            return ErrorCode.unknown_server_error, None
        sp = self.partitions.get(key)  # loaded by another request meanwhile
        if sp is not None:
            return 0, sp
        if result.error_code or result.state is None:
            return persister_error(result.error_code or ErrorCode.unknown_server_error), None
        config = self.share_partition_config(key.group_id)
        start = result.state.start_offset
        if start < 0:
            start = self._reset_offset(plog, config.auto_offset_reset)
        sp = SharePartition(key, config, result.state, start)
        self.partitions[key] = sp
        log.debug(
            "share-partition loaded", group_id=key.group_id, topic=topic, partition=key.partition, start=start
        )
        return 0, sp

    def _reset_offset(self, plog: PartitionLog, strategy: str) -> int:
        """share.auto.offset.reset for a share-partition without a start offset."""
        text = strategy.strip().lower()
        if text == "earliest":
            return plog.log_start_offset
        if text.startswith("by_duration:"):
            duration = parse_duration_ms(strategy.strip()[len("by_duration:") :])
            if duration is not None:
                found = plog.offset_for_timestamp(self.clock.wall_ms() - duration)
                if found is not None:
                    return found[0]
        return plog.high_watermark

    def forget_group(self, group_id: str) -> None:
        """The group's last share session went with its connection (Kafka's onGroupEmpty):
        its share-partitions are loaded again at their next use."""
        for key in [k for k in self.partitions if k.group_id == group_id]:
            self._forget(key)

    def _forget(self, key: SharePartitionKey) -> None:
        self.partitions.pop(key, None)
        armed = self._deadlines.pop(key, None)
        if armed is not None:
            armed[1].cancel()

    # --- persisting ----------------------------------------------------------------------------
    def _persist_op(self, sp: SharePartition, transition: Transition) -> Operation[tuple[int, str | None]]:
        """Write the transition's state, then commit it (or roll it back): one operation of the
        share coordinator's shard."""
        try:
            code = yield from self.share_coordinator.write_state(transition.request)
        except Exception:  # noqa: BLE001 - a failed write rolls back
            log.exception("cannot write the share-partition state", group_id=sp.key.group_id)
            transition.rollback()
            where = f"{sp.key.group_id}-{sp.key.topic_id}:{sp.key.partition}"
            return (
                ErrorCode.unknown_server_error,
                f"Failed to write the share group state for share partition {where}",
            )
        if code:
            transition.rollback()
            error = persister_error(code)
            if error in _FENCING:
                self._forget(sp.key)
            return error, None
        transition.commit()
        self._changed(sp)
        return 0, None

    async def persist(self, sp: SharePartition, transition: Transition) -> tuple[int, str | None]:
        return await self.coordinators.run(self.share_coordinator, self._persist_op(sp, transition))

    def _changed(self, sp: SharePartition) -> None:
        """After a change: the lock timer follows, and ShareFetches waiting on the partition
        look again (released records may be acquirable)."""
        self._arm(sp)
        topic = self.logs.topic_names.get(sp.key.topic_id)
        if topic is not None:
            self.data_waiters.notify(topic, sp.key.partition)

    # --- acquisition locks ---------------------------------------------------------------------
    def _current(self, sp: SharePartition) -> bool:
        """Still the loaded share-partition of its key (not forgotten since)?"""
        return self.partitions.get(sp.key) is sp

    def _arm(self, sp: SharePartition) -> None:
        """One timer per share-partition, at its earliest acquisition-lock deadline."""
        if not self._current(sp):  # let go: its timer was cancelled, its key may be another's
            return
        key = sp.key
        deadline = sp.next_lock_deadline()
        armed = self._deadlines.get(key)
        if armed is not None:
            if deadline is not None and armed[0] == deadline:
                return
            armed[1].cancel()
            del self._deadlines[key]
        if deadline is None:
            return
        delay = max(deadline - self.clock.wall_ms(), 0)
        handle = self._timer.call_later(delay, lambda: self._expire_op(sp))
        self._deadlines[key] = (deadline, handle)

    def _expire_op(self, sp: SharePartition) -> Generator[Any, None, None]:
        key = sp.key
        if not self._current(sp):
            return
        self._deadlines.pop(key, None)
        before = sp.in_flight_records()
        transition = sp.expire_locks(self.clock.wall_ms())
        if transition is None:
            self._arm(sp)
            return
        self.counters["lock_expiries"] += 1
        log.debug(
            "acquisition locks expired", group_id=key.group_id, partition=key.partition, in_flight=before
        )
        yield from self._persist_op(sp, transition)
        self._arm(sp)

    # --- acknowledging -------------------------------------------------------------------------
    async def acknowledge(
        self, member_id: str, key: SharePartitionKey, batches: Sequence[AckBatch]
    ) -> tuple[int, str | None]:
        """Acknowledge one partition's batches (validated by the handler); persisted before the
        answer. A share-partition not loaded here answers UNKNOWN_TOPIC_OR_PARTITION."""
        sp = self.partitions.get(key)
        if sp is None:
            return ErrorCode.unknown_topic_or_partition, "This server does not host this topic-partition."
        result = sp.acknowledge(member_id, batches, self.clock.wall_ms())
        if result.error_code:
            return result.error_code, result.error_message
        if result.transition is not None:
            code, message = await self.persist(sp, result.transition)
            if code:
                return code, message
        else:
            self._changed(sp)  # a RENEW moves the lock deadline
        self._count_acks(batches)
        return 0, None

    def _count_acks(self, batches: Sequence[AckBatch]) -> None:
        names: dict[int, str] = {
            AckType.ACCEPT: "acknowledgements_accept",
            AckType.RELEASE: "acknowledgements_release",
            AckType.REJECT: "acknowledgements_reject",
            AckType.RENEW: "acknowledgements_renew",
        }
        counters = self.counters
        for b in batches:
            if len(b.ack_types) == 1:
                name = names.get(b.ack_types[0])
                if name is not None:
                    counters[name] += b.last_offset - b.first_offset + 1
            else:
                for t in b.ack_types:
                    name = names.get(t)
                    if name is not None:
                        counters[name] += 1

    # --- releasing -----------------------------------------------------------------------------
    def _release_now(
        self, group_id: str, member_id: str, keys: Sequence[SharePartitionKey] | None
    ) -> list[tuple[SharePartition, Transition]]:
        """Stage the release of the member's records in the group's share-partitions (or in
        `keys`) at once, as Kafka starts it before letting a share-partition go."""
        wanted = [k for k in self.partitions if k.group_id == group_id] if keys is None else list(keys)
        staged = []
        for key in wanted:
            sp = self.partitions.get(key)
            if sp is not None:
                transition = sp.release_member(member_id)
                if transition is not None:
                    staged.append((sp, transition))
        return staged

    async def settle(self) -> None:
        """Wait for the releases under way (tests, shutdown)."""
        while any(self._releasing.values()):
            await asyncio.wait([t for tasks in self._releasing.values() for t in tasks])

    async def _persist_all(self, member_id: str, staged: list[tuple[SharePartition, Transition]]) -> None:
        for sp, transition in staged:
            code, _ = await self.persist(sp, transition)
            if code:
                log.warning(
                    "cannot release a member's records",
                    group_id=sp.key.group_id,
                    member_id=member_id,
                    partition=sp.key.partition,
                    error=ErrorCode(code).name,
                )

    async def release(
        self, group_id: str, member_id: str, keys: Sequence[SharePartitionKey] | None = None
    ) -> None:
        """Every record the member holds in the group's share-partitions (or in `keys`) back to
        AVAILABLE (ARCHIVED at the delivery limit), persisted."""
        await self._persist_all(member_id, self._release_now(group_id, member_id, keys))

    def release_member(self, group_id: str, member_id: str) -> None:
        """Release every record the member holds in the group's share-partitions (its share
        session closed, or the group coordinator removed it): staged now, persisted in the
        background."""
        staged = self._release_now(group_id, member_id, None)
        if not staged:
            return
        task = asyncio.get_running_loop().create_task(self._persist_all(member_id, staged))
        releasing = self._releasing.setdefault(group_id, set())
        releasing.add(task)
        task.add_done_callback(releasing.discard)

    # --- fetching ------------------------------------------------------------------------------
    def _read(self, sp: SharePartition, topic: str, max_bytes: int) -> _Read | int:
        """The log from the share-partition's next fetch offset (to the HW, or the LSO for
        read_committed): the bytes, or an error code."""
        plog = self.logs.get_log(topic, sp.key.partition)
        if plog is None:  # deleted: the share-partition goes too (Kafka's partition listener)
            self._forget(sp.key)
            return ErrorCode.unknown_topic_or_partition
        committed = sp.config.read_committed
        offset = sp.next_fetch_offset()
        try:
            result = plog.read(offset, max_bytes, 1 if committed else 0)
        except KafkaStorageError as exc:
            if exc.error_code != ErrorCode.offset_out_of_range:
                return exc.error_code
            # the log start moved past the share-partition (retention, DeleteRecords): Kafka's
            # updateCacheAndOffsets to the earliest offset, then the log is read from there
            if not self._log_start_moved(sp, plog.log_start_offset) or sp.next_fetch_offset() == offset:
                return _Read([], 0, ())  # Kafka answers NONE with no records
            return self._read(sp, topic, max_bytes)
        return _Read(result.chunks, sum(c.length for c in result.chunks), result.aborted or ())

    def _log_start_moved(self, sp: SharePartition, offset: int) -> bool:
        """AVAILABLE records below the log start are archived and the start offset moves there;
        persisted in the background (Kafka writes it with the next change)."""
        transition = sp.on_log_start_offset(offset)
        if transition is None:
            return False
        task = asyncio.get_running_loop().create_task(self.persist(sp, transition))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        return True

    async def fetch(
        self,
        member_id: str,
        wanted: Sequence[tuple[SharePartition, str]],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        max_records: int,
        batch_size: int,
        mode: AcquireMode,
    ) -> dict[SharePartitionKey, PartitionFetch]:
        """Kafka's DelayedShareFetch: wait up to max_wait_ms until min_bytes can be read from the
        share-partitions' next fetch offsets, then acquire (max_records across the partitions,
        whole log batches) and answer the log batches that hold the acquired records."""
        clock = self.clock
        deadline = clock.monotonic() + max(max_wait_ms, 0) / 1000
        keys = [(topic, sp.key.partition) for sp, topic in wanted]
        while True:
            ready = [
                (sp, topic)
                for sp, topic in wanted
                if self.partitions.get(sp.key) is sp and sp.can_acquire_records()
            ]
            reads: list[tuple[SharePartition, _Read | int]] = []
            total = 0
            error = False
            if ready:
                share = max(max_bytes // len(ready), 1)
                for sp, topic in ready:
                    read = self._read(sp, topic, share)
                    reads.append((sp, read))
                    if isinstance(read, int):
                        error = True
                    else:
                        total += read.size
            remaining = deadline - clock.monotonic()
            if (ready and (total >= min_bytes or error)) or remaining <= 0 or self.data_waiters.closed:
                return self._acquire(member_id, reads, max_records, batch_size, mode)
            await self.data_waiters.wait(keys, remaining)

    def _acquire(
        self,
        member_id: str,
        reads: list[tuple[SharePartition, _Read | int]],
        max_records: int,
        batch_size: int,
        mode: AcquireMode,
    ) -> dict[SharePartitionKey, PartitionFetch]:
        out: dict[SharePartitionKey, PartitionFetch] = {}
        budget = max_records
        now = self.clock.wall_ms()
        for sp, read in reads:
            if isinstance(read, int):
                out[sp.key] = PartitionFetch(read)
                continue
            if not read.size or budget <= 0:
                out[sp.key] = PartitionFetch()
                continue
            views: list[LogBatch] = []
            positions: list[int] = []
            data = b"".join(slice_bytes(chunk) for chunk in read.chunks)
            for pos, h in iter_batches(data):
                positions.append(pos)
                views.append(
                    LogBatch(
                        h.base_offset, h.last_offset, h.producer_id, h.is_transactional, h.is_control, h.size
                    )
                )
            acquired = sp.acquire(
                member_id,
                views,
                max_records=budget,
                batch_size=batch_size,
                mode=mode,
                now_ms=now,
                aborted=read.aborted,
            )
            if not acquired:
                out[sp.key] = PartitionFetch()
                self._arm(sp)
                continue
            budget -= sum(r.last_offset - r.first_offset + 1 for r in acquired)
            self.counters["redeliveries"] += sum(
                r.last_offset - r.first_offset + 1 for r in acquired if r.delivery_count > 1
            )
            out[sp.key] = PartitionFetch(0, _slice(data, views, positions, acquired), tuple(acquired))
            self._arm(sp)
        return out


def _slice(
    data: bytes, views: list[LogBatch], positions: list[int], acquired: Sequence[AcquiredRange]
) -> bytes:
    """Kafka's ShareFetchUtils.maybeSliceFetchRecords: the whole log batches from the one holding
    the first acquired offset to the last one starting at or before the last acquired offset."""
    if len(views) <= 1:
        return data
    first = acquired[0].first_offset
    last = acquired[-1].last_offset
    start = 0
    end = len(data)
    for i, view in enumerate(views):
        if view.base_offset <= first:
            start = positions[i]
        elif view.base_offset > last:
            end = positions[i]
            break
    return data[start:end]
