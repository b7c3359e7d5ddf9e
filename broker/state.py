"""The Broker: every piece of broker state, owned by the one event loop.

Handlers reach storage and the coordinators only through this object. Startup opens (and if
needed recovers) the logs, then loads the coordinators from their internal topics; shutdown stops
the server first, so no request is half-served, then flushes and marks the stop clean.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Sequence
from typing import TypeVar

import structlog
from minibroker.broker.config import BrokerConfig, ConfigError
from minibroker.broker.control import ControlPlane, control_token_problem
from minibroker.broker.coordinator_runtime import CoordinatorRuntime
from minibroker.broker.durability import Durability
from minibroker.broker.dynamic_config import DynamicConfigs
from minibroker.broker.features import FeatureStore, parse_features
from minibroker.broker.fetch_sessions import FetchSessionCache
from minibroker.broker.group_configs import GroupConfigs
from minibroker.broker.limits import ConnectionSettings, raise_open_file_limit
from minibroker.broker.observe import build_request_observer
from minibroker.broker.quotas import ClientQuotas
from minibroker.broker.security.listeners import Listener
from minibroker.broker.security.service import Security
from minibroker.broker.server import Server
from minibroker.broker.share_partitions import SharePartitionManager
from minibroker.broker.share_sessions import ShareSessionCache
from minibroker.broker.telemetry import ClientTelemetry
from minibroker.broker.waiters import DataWaiters
from minibroker.common.clock import SYSTEM_CLOCK, Clock, clock_for_mode
from minibroker.common.faults import Faults
from minibroker.coordinator.group_metadata_manager import GroupMetadataManager
from minibroker.coordinator.group_settings import GroupSettings
from minibroker.coordinator.group_store import LogOffsetsStore
from minibroker.coordinator.groups import GroupCoordinator
from minibroker.coordinator.internal_topic import InternalTopic
from minibroker.coordinator.producer_ids import ProducerIdManager
from minibroker.coordinator.share_coordinator import (
    SHARE_STATE_TOPIC,
    SHARE_STATE_TOPIC_CONFIGS,
    ShareCoordinator,
    ShareCoordinatorSettings,
)
from minibroker.coordinator.transactions import TransactionCoordinator, TransactionSettings
from minibroker.coordinator.txn_log import LogTxnStore
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.config import LogManagerSettings
from minibroker.storage.data_dir_lock import DataDirLock
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log import PartitionLog, disk_free_bytes
from minibroker.storage.log_manager import LogManager

log = structlog.get_logger("broker")

T = TypeVar("T")


class Broker:
    def __init__(self, config: BrokerConfig, *, clock: Clock | None = None) -> None:
        self.config = config
        # the one clock every part of this broker reads (common/clock.py): the system's, or one
        # the control plane moves (minibroker.control.clock; docs/control-plane/clock.md)
        self.clock = clock if clock is not None else clock_for_mode(config["minibroker.control.clock"])
        self.data_dir = config["log.dirs"]
        self.node_id = config["node.id"]
        # Before anything below reads the directory (Security reads the SCRAM and ACL stores;
        # nothing is written into it before start() has bound the ports, but this .lock): a
        # second broker on the same directory stops here
        # (storage/data_dir_lock.py). Held until stop() or the process ends.
        self.data_dir_lock = DataDirLock.acquire(self.data_dir)
        try:
            self._build(config)
        except BaseException:
            self.data_dir_lock.release()  # an in-process caller may try again on this directory
            raise

    def _build(self, config: BrokerConfig) -> None:
        # the named crash points (minibroker.test.fault): one object for every layer that has some
        self.faults = Faults.from_property(config["minibroker.test.fault"])
        self.durability = Durability()  # every fsync of the running broker, off the event loop
        self.data_waiters = DataWaiters()  # long-poll wake-ups, wired to every log as it opens
        self.fetch_sessions = FetchSessionCache(
            config["max.incremental.fetch.session.cache.slots"], self.clock
        )
        self.logs = LogManager(
            self.data_dir,
            config,
            clock=self.clock,
            settings=LogManagerSettings.from_config(config),
            flusher=self.durability,
            faults=self.faults,
            on_log_opened=self.data_waiters.log_opened,
        )
        # real time, whatever the clock: push cadences and quota windows measure real traffic
        telemetry = ClientTelemetry(
            SYSTEM_CLOCK, config["telemetry.max.bytes"], advertise=config["minibroker.telemetry.advertise"]
        )
        self.dynamic_configs = DynamicConfigs(
            self.data_dir, config, self.logs, telemetry, self.durability.write_file
        )
        # finalized feature levels (ApiVersions, UpdateFeatures), loaded at start
        self.features = FeatureStore(self.data_dir, self.durability.write_file)
        self.producer_ids = ProducerIdManager(self.data_dir, submit=self.durability.submit)
        # runs every coordinator operation, their timers and duties (on the loop)
        self.coordinators = CoordinatorRuntime(self.durability, self.clock)
        group_settings = GroupSettings.from_config(config)
        if problems := group_settings.problems():  # Kafka refuses contradicting group.consumer.* too
            raise ConfigError(*problems)
        group_metadata = GroupMetadataManager(
            group_settings,
            store=LogOffsetsStore(self.logs, config["offsets.topic.num.partitions"], clock=self.clock),
            topics=self.logs,
            clock=self.clock,
        )
        group_timer = self.coordinators.timer()  # fires operations of the group coordinator
        # GROUP config resources: per-group overrides of the group.consumer.* settings
        self.group_configs = GroupConfigs(self.data_dir, group_settings, self.durability.write_file)
        self.groups = GroupCoordinator(
            group_settings,
            manager=group_metadata,
            clock=self.clock,
            scheduler=group_timer,
            faults=self.faults,
            group_configs=self.group_configs,
        )
        group_timer.bind(self.groups)
        # KIP-932 share groups: the share coordinator (__share_group_state), the broker's
        # share-partitions and ShareFetch sessions
        self.share_coordinator = ShareCoordinator(
            ShareCoordinatorSettings(
                num_partitions=config["share.coordinator.state.topic.num.partitions"],
                snapshot_update_records_per_snapshot=config[
                    "share.coordinator.snapshot.update.records.per.snapshot"
                ],
                cold_partition_snapshot_interval_ms=config[
                    "share.coordinator.cold.partition.snapshot.interval.ms"
                ],
                prune_interval_ms=config["share.coordinator.state.topic.prune.interval.ms"],
            ),
            store=InternalTopic(
                self.logs,
                SHARE_STATE_TOPIC,
                config["share.coordinator.state.topic.num.partitions"],
                "share.coordinator.state.topic.segment.bytes",
                self.clock,
                topic_configs=SHARE_STATE_TOPIC_CONFIGS,
            ),
            clock=self.clock,
        )
        self.share_partitions = SharePartitionManager(
            group_settings,
            share_coordinator=self.share_coordinator,
            coordinators=self.coordinators,
            logs=self.logs,
            group_configs=self.group_configs,
            data_waiters=self.data_waiters,
            clock=self.clock,
        )
        self.groups.share.on_member_removed = self.share_partitions.release_member
        self.share_sessions = ShareSessionCache(group_settings.share_max_share_sessions, self.clock)
        # a session's connection closed: its member's records released; a group's last: unloaded
        self.share_sessions.on_member_leave = self.share_partitions.release_member
        self.share_sessions.on_group_empty = self.share_partitions.forget_group
        self.txns = TransactionCoordinator(
            TransactionSettings.from_config(config),
            store=LogTxnStore(self.logs, config["transaction.state.log.num.partitions"], clock=self.clock),
            logs=self.logs,
            groups=self.groups,
            producer_ids=self.producer_ids,
            clock=self.clock,
            faults=self.faults,
            transaction_version=self.features.transaction_version,
        )
        # client quotas: stored ones read now, enforced on Produce and Fetch (broker/connection.py)
        self.quotas = ClientQuotas(self.data_dir, config, SYSTEM_CLOCK, self.durability.write_file)
        # listeners, SASL, SCRAM, ACLs
        self.security = Security(config, self.data_dir, self.durability.write_file, clock=self.clock)
        self.server = Server(self, ConnectionSettings.from_config(config))
        self.metrics = None
        if config["minibroker.metrics.port"] is not None:
            from minibroker.broker.metrics import BrokerMetrics  # prometheus_client takes ~90 ms to import

            self.metrics = BrokerMetrics(self)
            self.txns.on_transition = self.metrics.on_txn_transition
        self.request_observer = build_request_observer(config, self.metrics)  # None: nothing to call
        # the test control plane (broker/control/): None unless minibroker.control.port is set
        self.control: ControlPlane | None = None
        problem = control_token_problem(config, self.security.authenticates)
        if problem is not None:
            raise ConfigError(problem)
        if config["minibroker.control.port"] is not None:
            self.control = ControlPlane(self, config)
        self.startup_seconds: dict[str, float] = {}  # per phase of the last start (metrics)
        self.host = "127.0.0.1"
        self.port = 0  # advertised to clients
        self.bound_port = 0  # what the listener really bound (--port 0 picks one)

    # --- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Bind, recover, load the coordinators, serve. A start that fails part-way (a taken
        port, a recovery or load error) closes what it opened and releases the data directory's
        lock before the error goes on, so an in-process caller (bench/history.py, tests) can
        start a broker on the same port and directory again."""
        try:
            await self._start()
        except BaseException:
            await self._undo_start()
            raise

    async def _undo_start(self) -> None:
        try:
            await self._close()
        except Exception as exc:  # noqa: BLE001 - the start's own error is the one to raise
            log.warning("could not close everything a failed start opened", error=str(exc))

    async def _start(self) -> None:
        started = phase_start = self.clock.monotonic()
        self.dynamic_configs.load()  # runtime-set broker defaults apply to the logs opened next

        def phase_done(name: str) -> None:
            nonlocal phase_start
            now = self.clock.monotonic()
            self.startup_seconds[name] = now - phase_start
            phase_start = now

        listeners = self.security.listeners
        try:
            await self.server.bind(listeners)  # a taken port stops the start before recovery writes
        except OSError as exc:
            raise _bind_error(listeners, exc) from exc
        # Only now the data directory is written (only .lock was, by __init__): a SCRAM store
        # bootstrapped from minibroker.scram.credentials first.
        self.security.persist()
        self.features.load(parse_features(self.config["minibroker.features"]))  # features.json
        raised = raise_open_file_limit()  # one descriptor per partition and connection (broker/limits.py)
        if raised:
            log.info("open file limit raised", soft_limit_was=raised[0], soft_limit=raised[1])
        self.logs.open()
        self.producer_ids.open()  # reads the counter and writes the first block (startup)
        phase_done("log_recovery")
        self.groups.load()  # replays __consumer_offsets
        phase_done("group_load")
        self.share_coordinator.load()  # replays __share_group_state
        phase_done("share_state_load")
        # replays __transaction_state, completes or aborts what was open
        await self.coordinators.run(self.txns, self.txns.load())
        phase_done("transaction_load")
        self._check_producer_id_counter()
        await self.server.serve()
        first = listeners[0]  # --port-file and the defaults below describe the first listener
        self.bound_port, self.host, self.port = first.bound_port, first.advertised_host, first.advertised_port
        self._start_background_tasks()
        # Schemas stay lazy (protocol/codec.py): loading every version of every API up front
        # cost 19 MB of idle RSS and 0.6 s of CPU, to save each API version's first request its
        # schema import (3-20 ms depending on load; docs/limits.md).
        if self.metrics is not None:
            await self.metrics.start(
                self.config["minibroker.metrics.host"], self.config["minibroker.metrics.port"]
            )
        if self.control is not None:
            await self.control.start()
        self.startup_seconds["total"] = self.clock.monotonic() - started
        log.info(
            "broker ready",
            host=self.host,
            port=self.bound_port,
            advertised_port=self.port,
            data_dir=self.data_dir,
            listeners={lst.name: lst.bound_port for lst in listeners},
            cluster_id=self.logs.cluster_id,
            node_id=self.node_id,
            startup_ms=round((self.clock.monotonic() - started) * 1000, 1),
        )

    async def stop(self) -> None:
        log.info("broker stopping")
        if await self._close():
            log.info("broker stopped cleanly")

    async def _close(self) -> bool:
        """Stop serving, then close the logs and release the lock; False (lock kept) when a file
        of the clean stop could not be written."""
        self.groups.close()  # answer parked JoinGroup/SyncGroup now instead of after the grace period
        self.data_waiters.close()  # answer parked long-poll Fetches now too
        if self.control is not None:
            await self.control.stop()
        await self.server.stop()
        if self.metrics is not None:
            await self.metrics.stop()
        await self.coordinators.close()  # every periodic duty and timer operation
        self.durability.close()  # waits for an fsync round still running on the logs' files
        try:
            self.logs.close()
        except (OSError, KafkaStorageError) as exc:
            # e.g. a full disk: the producer snapshots, index entries or checkpoints of a clean
            # stop could not be written. The records are in the segment files already; without
            # the clean-shutdown marker the next start recovers the logs, as after a crash.
            # The lock stays held (the process's exit drops it), so nothing else opens the
            # directory while this process may still hold half-written files.
            log.warning(
                "broker stopped, but not cleanly: a file of the clean stop could not be written; "
                "acknowledged records are kept in the segment files and the next start recovers "
                "the logs (as after a crash); the data directory stays locked until this process exits",
                could_not_write=getattr(exc, "filename", None) or "a checkpoint file of the data dir",
                error=str(exc),
                free_bytes=disk_free_bytes(self.data_dir),
                data_dir=self.data_dir,
            )
            return False
        self.data_dir_lock.release()  # after the last write (the clean-shutdown marker)
        return True

    def _check_producer_id_counter(self) -> None:
        """The producer id counter must be above every id the data directory holds (the
        counter file may have been deleted or restored from an old backup)."""
        highest = -1
        for plog in self.logs.all_logs():
            for entry in plog.producer_state.producers():
                highest = max(highest, entry.producer_id)
        for meta in self.txns.txns.values():
            highest = max(highest, meta.producer_id, meta.last_producer_id, meta.next_producer_id)
        before = self.producer_ids.next_id
        if self.producer_ids.ensure_above(highest):
            log.warning(
                "producer id counter was behind the ids in the logs (producer_ids file "
                "missing or old); moved it past them",
                counter_was=before,
                highest_id_in_logs=highest,
                next_id=self.producer_ids.next_id,
            )

    def _start_background_tasks(self) -> None:
        # the broker's one scheduler of periodic duties is the coordinator runtime's
        every = self.coordinators.every
        flush_ms = self.config["log.flush.interval.ms"]
        if flush_ms is not None:
            every(max(flush_ms, 10), "log-flush", lambda: self.durability.flush_logs(self.logs))
        every(
            self.config["log.flush.offset.checkpoint.interval.ms"],
            "recovery-point-checkpoint",
            lambda: self.durability.checkpoint(self.logs),
        )
        every(self.config["log.retention.check.interval.ms"], "log-retention", self.logs.delete_old_segments)
        self._start_coordinator_duties()
        if self.config["log.cleaner.enable"]:
            loop = asyncio.get_running_loop()
            cleaner = self.logs.cleaner

            def clean_again() -> None:  # called from the cleaner's thread when a pass ends
                loop.call_soon_threadsafe(cleaner.maybe_clean)

            cleaner.on_pass_done = clean_again
            # a polling backoff (Kafka's cleaner thread waits on real time): real time
            every(self.config["log.cleaner.backoff.ms"], "log-cleaner", cleaner.maybe_clean, real_time=True)
        tokens = self.security.tokens
        if tokens.enabled:
            every(tokens.check_interval_ms, "delegation-token-expiry", tokens.remove_expired)
        every(
            self.config["producer.id.expiration.check.interval.ms"],
            "producer-expiration",
            self.logs.remove_expired_producers,
        )

    def _start_coordinator_duties(self) -> None:
        runtime, groups, txns, settings = self.coordinators, self.groups, self.txns, self.txns.settings
        runtime.every(
            self.config["offsets.retention.check.interval.ms"],
            "offsets-expiration",
            lambda: runtime.run(groups, groups.expire_offsets()),
        )
        runtime.every(
            settings.abort_interval_ms,
            "txn-abort-timed-out",
            lambda: runtime.run(txns, txns.abort_timed_out_transactions()),
        )
        runtime.every(
            settings.remove_interval_ms,
            "txn-remove-expired",
            lambda: runtime.run(txns, txns.remove_expired_transactional_ids()),
        )
        # __share_group_state: idle share-partitions snapshotted again, then the records no
        # load needs any more deleted (Kafka's snapshotColdPartitions and performRecordPruning)
        share = self.share_coordinator
        runtime.every(
            share.settings.cold_partition_snapshot_interval_ms,
            "share-cold-snapshots",
            lambda: runtime.run(share, share.snapshot_cold_partitions()),
        )
        runtime.every(share.settings.prune_interval_ms, "share-state-prune", share.prune)

    # --- shared helpers for handlers ------------------------------------------------------------
    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        """The partition's log (its long-poll wake-ups were wired when it opened)."""
        return self.logs.get_log(topic, partition)

    def auto_create_topic(self, name: str) -> ErrorCode:
        """Create `name` with broker defaults if auto.create.topics.enable; returns the error
        code a client should see (NONE when the topic now exists)."""
        if name in self.logs.topics:
            return ErrorCode.none
        if not self.config["auto.create.topics.enable"]:
            return ErrorCode.unknown_topic_or_partition
        try:
            self.logs.create_topic(name, self.config["num.partitions"], {})
        except KafkaStorageError as exc:
            return exc.error_code
        self.groups.on_topics_changed(created=(name,))  # KIP-848 regexes, share groups
        log.info("topic auto-created", topic=name, partitions=self.config["num.partitions"])
        return ErrorCode.none


def _bind_error(listeners: Sequence[Listener], exc: OSError) -> OSError:
    """A listener that cannot bind, named with its address (the listeners before it are bound
    and have a port; the first without one is the one that failed)."""
    failed = next((lst for lst in listeners if not lst.bound_port), listeners[0])
    address = f"{failed.host or '0.0.0.0'}:{failed.port}"
    if exc.errno == errno.EADDRINUSE:
        return OSError(
            f"cannot listen on {address} (listener {failed.name}): the port is in use by another "
            f"process (another broker?): stop it, or give this broker another port (--port, or "
            f"listeners=)"
        )
    return OSError(f"cannot listen on {address} (listener {failed.name}): {exc.strerror or exc}")
