"""All partition logs of the broker, the topic registry and the data directory's own files
(Kafka's ``LogManager`` plus the bits of KRaft metadata a single broker needs).

Data directory layout::

    meta.properties                      cluster.id and node.id, written once
    topics/<name>.json                   one per topic: id, partition count, config overrides
    <topic>-<partition>/                 a PartitionLog (segments, indexes, producer snapshots)
    recovery-point-offset-checkpoint     per partition: offsets below are known to be on disk
    log-start-offset-checkpoint          per partition: the log start offset (DeleteRecords)
    cleaner-offset-checkpoint            per compacted partition: where the dirty part starts
    dynamic-broker-configs.json          broker configs set at runtime (broker/dynamic_config.py)
    .kafka_cleanshutdown                 present only between a clean stop and the next start

Every registry file is replaced atomically (write a temp file, fsync, rename, fsync the
directory), so a crash leaves either the old or the new version. Topic ids are random UUIDs
chosen once at creation and kept in the topic's file, so they survive restarts.

Startup decides how much to check: with the clean-shutdown marker nothing is scanned; without
it every partition recovers what follows its recovery point (see storage/log_loader.py).
The marker is removed right after startup, so a crash at any later time is seen as unclean.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import structlog
from minibroker.common.clock import Clock
from minibroker.common.faults import Faults
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.checkpoint import (
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from minibroker.storage.config import (
    INTERNAL_SEGMENT_BYTES,
    LogConfig,
    LogManagerSettings,
    broker_value,
    effective_topic_configs,
    validate_topic_configs,
)
from minibroker.storage.durable_files import TEMP_PREFIX, atomic_write, fsync_dir, remove_temp_files
from minibroker.storage.errors import KafkaStorageError
from minibroker.storage.log import LEADER_EPOCH, Flusher, InlineFlusher, PartitionLog
from minibroker.storage.log_cleaner import LogCleaner, recover_interrupted_clean
from minibroker.storage.retention import segments_to_delete
from minibroker.storage.segment import CLEANER_DIR, LogSegment
from minibroker.storage.segment_files import SegmentFilePool, effective_max_open, open_files_limit

__all__ = [
    "LogManager",
    "TopicInfo",
    "LEADER_EPOCH",
    "INTERNAL_TOPICS",
    "validate_topic_name",
    "CLEAN_SHUTDOWN_FILE",
    "RECOVERY_POINT_FILE",
    "META_PROPERTIES_FILE",
]

log = structlog.get_logger(__name__)

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_FILE = "log-start-offset-checkpoint"
META_PROPERTIES_FILE = "meta.properties"
TOPICS_DIR = "topics"

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
_DELETED_DIR = re.compile(r"^.+-\d+\.[0-9a-f]{32}-delete$")
_LOG_FILE_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".tmp")


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    configs: dict[str, str] = field(default_factory=dict)  # overrides only
    internal: bool = False


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate: INVALID_TOPIC_EXCEPTION for an illegal name."""
    if not name:
        raise KafkaStorageError(ErrorCode.invalid_topic_exception, "topic name is empty")
    if name in (".", ".."):
        raise KafkaStorageError(ErrorCode.invalid_topic_exception, f"topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise KafkaStorageError(
            ErrorCode.invalid_topic_exception, f"topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters"
        )
    if not _LEGAL_TOPIC.fullmatch(name):  # fullmatch: "$" would let a trailing newline in
        raise KafkaStorageError(
            ErrorCode.invalid_topic_exception,
            f"topic name {name!r} contains characters other than ASCII letters, digits, '.', '_' and '-'",
        )


def _new_kafka_uuid() -> uuid.UUID:
    """Kafka's Uuid.randomUuid: never zero, never one whose base64 form starts with '-'."""
    while True:
        u = uuid.uuid4()
        if u.int != 0 and u.int != 1 and not _uuid_b64(u).startswith("-"):
            return u


def _uuid_b64(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def _remove_topic_file(data_dir: str, name: str) -> None:
    """DeleteTopics' durable step (the flusher's thread): the partition directories renamed
    away are made durable, then the registry file goes (the data is removed after, by
    ``submit``: nobody waits for that)."""
    fsync_dir(data_dir)
    try:
        os.unlink(os.path.join(data_dir, TOPICS_DIR, name + ".json"))
    except FileNotFoundError:
        pass
    fsync_dir(os.path.join(data_dir, TOPICS_DIR))


class LogManager:
    def __init__(
        self,
        data_dir: str,
        config: Any = None,
        *,
        clock: Clock,
        settings: LogManagerSettings | None = None,
        flusher: Flusher | None = None,
        faults: Faults | None = None,
        on_log_opened: Callable[[str, int, PartitionLog], None] | None = None,
    ) -> None:
        """``config``: the broker's properties (topic defaults; a dict in tools and tests);
        ``settings``: what this class reads of them itself (by default taken from ``config``);
        ``flusher``: where the logs' fsyncs go (the broker's ``broker/durability.py``; without
        one, tools and unit tests, they run at once on the caller's thread); ``faults``: the
        crash points of the logs' rolls, the log cleaner's swap and the recovery-point
        checkpoint; ``on_log_opened(topic, partition, log)``: called for every log opened or
        created (the broker wires its long-poll wake-ups there, so a partition deleted and
        created again has its new log watched too)."""
        self.data_dir = os.path.abspath(str(data_dir))
        self.config = config if config is not None else {}
        self.settings = settings if settings is not None else LogManagerSettings.from_config(self.config)
        self.topics: dict[str, TopicInfo] = {}
        #: Topic id -> name, kept with ``topics`` (requests that address topics by id, KIP-516).
        self.topic_names: dict[uuid.UUID, str] = {}
        self.cluster_id: str | None = None
        self.node_id: int = self.settings.node_id
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._clock = clock
        self._flusher: Flusher = flusher if flusher is not None else InlineFlusher()
        self._faults = faults if faults is not None else Faults()  # crash points of the logs and cleaner
        #: the open files of this manager's inactive segments (storage/segment_files.py)
        self.segment_files = SegmentFilePool()
        self._on_log_opened = on_log_opened
        self._checkpoint_write: Future[None] | None = None  # the recovery points being written
        self._opened = False
        self._closed = False
        # segments deleted by retention whose fds stay open a while: (close after ms, segment)
        self._retired: list[tuple[int, LogSegment]] = []
        self._log_starts: dict[tuple[str, int], int] | None = {}  # as last checkpointed
        self._log_starts_write: Future[None] | None = None  # the last write of them
        self._recovery_points: dict[tuple[str, int], int] | None = None  # as last checkpointed
        #: the latest registry-file write of each topic (CreateTopics awaits it)
        self.registry_writes: dict[str, Future[None]] = {}
        self.cleaner = LogCleaner(
            self,
            flusher=self._flusher,
            clock=clock,
            faults=self._faults,
            files=self.segment_files,
            retire=self.retire_segment,
        )

    # ================================================================== startup
    def open(self) -> None:
        """Load the data directory: identity, topics, every partition log (recovering after an
        unclean shutdown). Called once, before serving."""
        started = self._clock.monotonic()
        os.makedirs(os.path.join(self.data_dir, TOPICS_DIR), exist_ok=True)
        remove_temp_files(self.data_dir)  # interrupted writes of checkpoints, producer ids...
        self._load_meta_properties()
        marker = os.path.join(self.data_dir, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        recovery_points = self._read_recovery_points()
        log_starts = read_offset_checkpoint(
            os.path.join(self.data_dir, LOG_START_OFFSET_FILE),
            "log start offsets fall back to each log's first segment",
        )
        self._configure_segment_files()
        self._remove_deleted_dirs()
        self._load_topics()
        self._upgrade_internal_topics()
        for info in self.topics.values():
            config = self._log_config(info)  # once per topic: ~0.15 s of a 10,000-partition start
            for p in range(info.num_partitions):
                self._open_log(
                    info,
                    config,
                    p,
                    recovery_points.get((info.name, p), 0),
                    clean,
                    log_starts.get((info.name, p), 0),
                )
        self._remove_orphan_partition_dirs()
        if clean:
            os.unlink(marker)
            fsync_dir(self.data_dir)
        self._recovery_points = recovery_points  # what the file says: rewritten only if a point moved
        self.checkpoint_recovery_points(now=True)
        self._log_starts = {
            key: plog.log_start_offset for key, plog in self._logs.items() if plog.log_start_offset > 0
        }
        self._opened = True
        log.info(
            "loaded partition logs",
            partitions=len(self._logs),
            topics=len(self.topics),
            clean_shutdown=clean,
            cluster_id=self.cluster_id,
            ms=round((self._clock.monotonic() - started) * 1000, 1),
        )

    def _configure_segment_files(self) -> None:
        """Bound the open files of inactive segments (storage/segment_files.py) by
        minibroker.max.open.segment.files and the open-files limit this process has now."""
        bound = effective_max_open(self.settings.max_open_segment_files, open_files_limit())
        self.segment_files.configure(bound)
        log.info("segment files bounded", max_open_segment_files=bound)

    def _load_meta_properties(self) -> None:
        path = os.path.join(self.data_dir, META_PROPERTIES_FILE)
        props: dict[str, str] = {}
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raw = None
        if raw is not None:
            try:
                for line in raw.decode("utf-8").splitlines():
                    line = line.strip()
                    if line and not line.startswith("#") and "=" in line:
                        k, _, v = line.partition("=")
                        props[k.strip()] = v.strip()
                if not props.get("cluster.id") or not props.get("node.id", "0").isdigit():
                    raise ValueError("no cluster.id, or a node.id that is not a number")
            except (UnicodeDecodeError, ValueError) as exc:
                # Kafka refuses to start too: a new cluster id would orphan every client's idea
                # of this cluster, and guessing is worse than asking.
                raise KafkaStorageError(
                    ErrorCode.kafka_storage_error,
                    f"{path} is damaged ({exc}); restore it from a backup (it holds cluster.id "
                    f"and node.id), or move it away to start this data directory with a new "
                    f"cluster id",
                ) from None
        if props.get("cluster.id"):
            stored_node = props.get("node.id")
            if stored_node is not None and int(stored_node) != self.node_id:
                raise KafkaStorageError(
                    ErrorCode.kafka_storage_error,
                    f"{path} belongs to node.id {stored_node} but this broker is configured as "
                    f"node.id {self.node_id}; use that node.id or another log.dirs",
                )
            self.cluster_id = props["cluster.id"]
            return
        self.cluster_id = _uuid_b64(_new_kafka_uuid())
        text = (
            f"#\n#{time.strftime('%a %b %d %H:%M:%S %Z %Y', time.localtime(self._clock.wall_ms() / 1000))}\n"
            f"cluster.id={self.cluster_id}\nnode.id={self.node_id}\nversion=1\n"
        )
        atomic_write(path, text.encode())

    def _upgrade_internal_topics(self) -> None:
        """Internal topics created before compaction existed have no segment.bytes override:
        with 1 GiB segments the cleaner could not reach their history. Give them the internal
        segment size (logged once; the oversized active segment rolls at its next append)."""
        for name in sorted(INTERNAL_TOPICS):
            info = self.topics.get(name)
            if info is None or "segment.bytes" in info.configs:
                continue
            info.configs = {**info.configs, **self._internal_topic_configs(name)}
            self._write_topic_now(info)
            log.info(
                "internal topic given compaction-sized segments",
                topic=name,
                segment_bytes=info.configs["segment.bytes"],
            )

    def _internal_topic_configs(self, name: str) -> dict[str, str]:
        settings = self.settings
        if name == "__share_group_state":  # never compacted: its updates are pruned by its coordinator
            size = broker_value(self.config, "share.coordinator.state.topic.segment.bytes")
            return {
                "cleanup.policy": "delete",
                "retention.ms": "-1",
                "segment.bytes": str(size or INTERNAL_SEGMENT_BYTES),
            }
        size = (
            settings.offsets_segment_bytes
            if name == "__consumer_offsets"
            else settings.transaction_segment_bytes
        )
        return {"cleanup.policy": "compact", "segment.bytes": str(size)}

    def _load_topics(self) -> None:
        topics_dir = os.path.join(self.data_dir, TOPICS_DIR)
        for fname in sorted(os.listdir(topics_dir)):
            path = os.path.join(topics_dir, fname)
            if fname.startswith(TEMP_PREFIX):
                os.unlink(path)  # an interrupted atomic write
                continue
            if not fname.endswith(".json"):
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    d = json.load(f)
                info = TopicInfo(
                    d["name"],
                    uuid.UUID(d["topic_id"]),
                    int(d["num_partitions"]),
                    dict(d.get("configs") or {}),
                    bool(d.get("internal", d["name"] in INTERNAL_TOPICS)),
                )
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise KafkaStorageError(
                    ErrorCode.kafka_storage_error,
                    f"topic registry file {path} is unreadable ({exc}); fix or remove it",
                ) from exc
            self.topics[info.name] = info
            self.topic_names[info.topic_id] = info.name

    def _remove_deleted_dirs(self) -> None:
        """Finish deletions interrupted by a stop (directories renamed to *-delete)."""
        for name in os.listdir(self.data_dir):
            if _DELETED_DIR.match(name):
                shutil.rmtree(os.path.join(self.data_dir, name), ignore_errors=True)

    def _remove_orphan_partition_dirs(self) -> None:
        """A partition directory no topic file accounts for. Without records it is left over
        from an interrupted create or delete and goes (a new topic of that name must not
        inherit it). With records, the registry lost it (a deleted or damaged topic file):
        data is never deleted on a guess, so the topic is rebuilt from its directories (new
        topic id, default configs) and the decision logged."""
        found: dict[str, dict[int, str]] = {}
        for name in os.listdir(self.data_dir):
            m = _PARTITION_DIR.match(name)
            path = os.path.join(self.data_dir, name)
            if not m or not os.path.isdir(path):
                continue
            topic, p = m.group(1), int(m.group(2))
            info = self.topics.get(topic)
            if info is not None and p < info.num_partitions:
                continue
            files = os.listdir(path)
            if not all(
                f.endswith(_LOG_FILE_SUFFIXES) or f == CLEANER_DIR or f.startswith(TEMP_PREFIX) for f in files
            ):
                log.warning("leaving an unknown directory in the data directory alone", directory=path)
                continue
            if any(f.endswith(".log") and os.path.getsize(os.path.join(path, f)) > 0 for f in files):
                found.setdefault(topic, {})[p] = path
                continue
            log.warning(
                "removing the empty directory of a partition that no topic has (left "
                "over from an interrupted create or delete)",
                directory=path,
            )
            shutil.rmtree(path, ignore_errors=True)
        for topic, partitions in sorted(found.items()):
            self._rebuild_topic(topic, partitions)

    def _rebuild_topic(self, topic: str, partitions: dict[int, str]) -> None:
        info = self.topics.get(topic)
        count = max(partitions) + 1
        if info is None:
            try:
                validate_topic_name(topic)
            except KafkaStorageError:
                log.warning(
                    "leaving a directory with an invalid topic name alone",
                    directories=sorted(partitions.values()),
                )
                return
            configs = self._internal_topic_configs(topic) if topic in INTERNAL_TOPICS else {}
            info = TopicInfo(topic, _new_kafka_uuid(), count, configs, topic in INTERNAL_TOPICS)
            self.topics[topic] = info
            self.topic_names[info.topic_id] = topic
            log.warning(
                "topic registry file missing for partition directories holding records; "
                "rebuilt the topic from them (new topic id; config overrides, if any, "
                "are lost: set them again with kafka-configs.sh)",
                topic=topic,
                partitions=count,
                topic_id=str(info.topic_id),
            )
        else:
            log.warning(
                "topic registry file counts fewer partitions than the directories "
                "holding records; grew it to match",
                topic=topic,
                partitions_before=info.num_partitions,
                partitions=count,
            )
        info.num_partitions = max(info.num_partitions, count)
        config = self._log_config(info)
        for p in range(info.num_partitions):
            if (topic, p) not in self._logs:  # a full recovery: nothing about them is known
                self._open_log(info, config, p, 0, False)
        self._write_topic_now(info)

    def _read_recovery_points(self) -> dict[tuple[str, int], int]:
        return read_offset_checkpoint(
            os.path.join(self.data_dir, RECOVERY_POINT_FILE), "every segment will be checked"
        )

    def checkpoint_recovery_points(self, *, now: bool = False) -> Future[None] | None:
        """Persist each partition's recovery point (one small file, written only when one moved;
        see storage/recovery_checkpoint.py for the periodic checkpoint) through the flusher (a
        worker thread of the broker, in order with the other writes); returns that write, or
        None if nothing moved. ``now``: on the caller's thread (startup, topic deletion, close),
        after the write in flight, so an older list never lands after a newer one."""
        in_flight = self._checkpoint_write
        if in_flight is not None and in_flight.done() and in_flight.exception() is not None:
            self._recovery_points = None  # the last write failed: write again, even unchanged
        points = {key: plog.recovery_point for key, plog in self._logs.items()}
        if points == self._recovery_points:
            return None
        path = os.path.join(self.data_dir, RECOVERY_POINT_FILE)
        self._recovery_points = points
        if now:
            if in_flight is not None:
                in_flight.exception()  # waits; its error was logged by _checkpoint_written
            self._checkpoint_write = None
            write_offset_checkpoint(path, points)
            return None
        before_rename = None
        if self._faults.reach("checkpoint.mid_write"):  # a test's crash point: written, not renamed
            before_rename = partial(self._faults.crash, "checkpoint.mid_write")
        written = self._checkpoint_write = self._flusher.submit(
            write_offset_checkpoint, path, points, before_rename
        )
        written.add_done_callback(self._checkpoint_written)
        return written

    def _checkpoint_written(self, written: Future[None]) -> None:
        """The flusher's thread: a recovery-point write that failed is logged (the loop writes it
        again at the next checkpoint; an unclean start meanwhile checks more than it needs to,
        nothing else). Touches no state of the loop's."""
        exc = written.exception()
        if exc is not None:
            log.warning(
                "could not write the recovery-point checkpoint; an unclean start checks more of the logs",
                error=str(exc),
            )

    def _partition_dir(self, topic: str, partition: int) -> str:
        return os.path.join(self.data_dir, f"{topic}-{partition}")

    def _producer_expiration_ms(self) -> int:
        """producer.id.expiration.ms as in force now: a dynamic broker config, read live (as the
        topic defaults are) for each log opened from now on."""
        value = broker_value(self.config, "producer.id.expiration.ms")
        return self.settings.producer_id_expiration_ms if value is None else int(value)

    def _log_config(self, info: TopicInfo) -> LogConfig:
        return LogConfig.from_configs(self.config, info.configs)

    def _open_log(
        self,
        info: TopicInfo,
        config: LogConfig,  # _log_config(info), shared by the topic's partitions
        partition: int,
        recovery_point: int,
        clean: bool,
        log_start_offset: int = 0,
    ) -> PartitionLog:
        recover_interrupted_clean(self._partition_dir(info.name, partition))
        plog = PartitionLog.open(
            self._partition_dir(info.name, partition),
            info.name,
            partition,
            config,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            clean_shutdown=clean,
            producer_expiration_ms=self._producer_expiration_ms(),
            clock=self._clock,
            files=self.segment_files,
            flusher=self._flusher,
            faults=self._faults,
        )
        plog.on_recovery_point_advanced = self._on_recovery_point_advanced
        self._logs[(info.name, partition)] = plog
        if self._on_log_opened is not None:
            self._on_log_opened(info.name, partition, plog)
        return plog

    def _on_recovery_point_advanced(self, _plog: PartitionLog) -> None:
        if not self._closed:
            self.checkpoint_recovery_points()

    # ================================================================== topics
    def _topic_file(self, info: TopicInfo) -> tuple[str, bytes]:
        data = json.dumps(
            {
                "version": 1,
                "name": info.name,
                "topic_id": str(info.topic_id),
                "num_partitions": info.num_partitions,
                "configs": info.configs,
                "internal": info.internal,
            },
            indent=1,
            sort_keys=True,
        )
        return os.path.join(self.data_dir, TOPICS_DIR, info.name + ".json"), data.encode()

    def _write_topic_now(self, info: TopicInfo) -> None:
        """Startup: the registry file written on the caller's thread."""
        atomic_write(*self._topic_file(info))

    def _write_topic(self, info: TopicInfo) -> Future[None]:
        """A running broker: the registry file written by the flusher (``write``: in its thread,
        in order with the other files; the answer of the request waits for it). The topic's
        latest write stays in ``registry_writes`` (CreateTopics and CreatePartitions await it
        and undo the creation if it failed: ``undo_creation``)."""
        written = self._flusher.write(atomic_write, *self._topic_file(info))
        self.registry_writes[info.name] = written
        return written

    def _default_partitions(self) -> int:
        return self.settings.num_partitions

    def validate_new_topic(
        self, name: str, partitions: int = -1, configs: Mapping[str, str | None] | None = None
    ) -> dict[str, str]:
        """Everything create_topic checks, without creating; returns normalized overrides."""
        validate_topic_name(name)
        if name in self.topics:
            raise KafkaStorageError(ErrorCode.topic_already_exists, f"topic {name!r} already exists")
        normalized = name.replace(".", "_")
        for other in self.topics:
            if other.replace(".", "_") == normalized:
                raise KafkaStorageError(
                    ErrorCode.invalid_topic_exception,
                    f"topic {name!r} collides with existing topic {other!r} ('.' and '_' are "
                    f"interchangeable in metric names)",
                )
        if partitions == -1:
            partitions = self._default_partitions()
        if partitions <= 0:
            raise KafkaStorageError(
                ErrorCode.invalid_partitions, f"number of partitions must be positive, got {partitions}"
            )
        return validate_topic_configs(configs, client=name not in INTERNAL_TOPICS)

    def create_topic(
        self, name: str, partitions: int = -1, configs: Mapping[str, str | None] | None = None
    ) -> TopicInfo:
        """Create a topic (partitions -1: num.partitions). Errors: INVALID_TOPIC_EXCEPTION,
        TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_CONFIG."""
        overrides = self.validate_new_topic(name, partitions, configs)
        if partitions == -1:
            partitions = self._default_partitions()
        info = TopicInfo(name, _new_kafka_uuid(), partitions, overrides, name in INTERNAL_TOPICS)
        # Partition directories first, registry file last: a crash in between leaves only empty
        # directories, which the next start removes.
        self._add_partitions(info, 0, partitions)
        self.topics[name] = info
        self.topic_names[info.topic_id] = name
        log.info(
            "created topic",
            topic=name,
            partitions=partitions,
            topic_id=str(info.topic_id),
            configs=overrides or None,
        )
        return info

    def _create_partition(self, info: TopicInfo, config: LogConfig, p: int) -> PartitionLog:
        path = self._partition_dir(info.name, p)
        if os.path.exists(path):
            log.warning("removing stale files of a partition that did not exist", directory=path)
            shutil.rmtree(path)
        return self._open_log(info, config, p, 0, True)

    def create_partitions(self, name: str, total: int) -> None:
        """Grow a topic to ``total`` partitions (UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS)."""
        info = self.topics.get(name)
        if info is None:
            raise KafkaStorageError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
        if total <= info.num_partitions:
            raise KafkaStorageError(
                ErrorCode.invalid_partitions,
                f"topic {name!r} has {info.num_partitions} partitions; the new count must be "
                f"larger, got {total}",
            )
        self._add_partitions(info, info.num_partitions, total)
        log.info("added partitions", topic=name, partitions=total)

    def _add_partitions(self, info: TopicInfo, first: int, total: int) -> None:
        """Create partitions first..total-1, then record ``total`` in the registry file. An
        I/O error (a full disk) removes what was created, leaves the registry as it was and
        raises KAFKA_STORAGE_ERROR: no half-created partition stays registered. The registry
        file is written by the flusher: a failure found there later is undone by
        ``undo_creation`` (the handler that awaited ``registry_writes``)."""
        try:
            config = self._log_config(info)
            for p in range(first, total):
                self._create_partition(info, config, p)
            self._write_topic(TopicInfo(info.name, info.topic_id, total, info.configs, info.internal))
        except OSError as exc:
            self._remove_partitions(info.name, first, total)
            log.error(
                "could not create partitions; nothing was created",
                topic=info.name,
                partitions=f"{first}..{total - 1}",
                error=str(exc),
            )
            raise KafkaStorageError(
                ErrorCode.kafka_storage_error,
                f"cannot create partitions of {info.name} in {self.data_dir}: {exc}",
            ) from exc
        info.num_partitions = total

    def _remove_partitions(self, name: str, first: int, total: int) -> None:
        for p in range(first, total):
            plog = self._logs.pop((name, p), None)
            if plog is not None:
                try:
                    plog.close(flush=False)
                except OSError:
                    pass
            shutil.rmtree(self._partition_dir(name, p), ignore_errors=True)

    def undo_creation(self, name: str, partitions_before: int, error: BaseException) -> KafkaStorageError:
        """The registry file of a CreateTopics (``partitions_before`` 0) or CreatePartitions
        could not be written: remove what it created, as ``_add_partitions`` does when a
        partition cannot be created; returns the error to answer with."""
        info = self.topics.get(name)
        if info is not None and info.num_partitions > partitions_before:
            self._remove_partitions(name, partitions_before, info.num_partitions)
            if partitions_before == 0:
                del self.topics[name]
                self.topic_names.pop(info.topic_id, None)
            else:
                info.num_partitions = partitions_before
        self.registry_writes.pop(name, None)
        log.error(
            "could not write a topic's registry file; the creation was undone",
            topic=name,
            partitions=partitions_before,
            error=str(error),
        )
        return KafkaStorageError(
            ErrorCode.kafka_storage_error,
            f"cannot write the registry file of {name} in {self.data_dir}: {error}",
        )

    def delete_topic(self, name: str) -> None:
        """Remove a topic and its data (UNKNOWN_TOPIC_OR_PARTITION if absent). Its directories
        are renamed away first, then the registry file goes, then the data is removed (in the
        background when possible): a crash at any point leaves no half-deleted topic."""
        info = self.topics.get(name)
        if info is None:
            raise KafkaStorageError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
        doomed = []
        for p in range(info.num_partitions):
            plog = self._logs.pop((name, p), None)
            if plog is not None:
                plog.close(flush=False)
            src = self._partition_dir(name, p)
            if os.path.exists(src):
                suffix = f"-{p}.{uuid.uuid4().hex}-delete"
                dst = os.path.join(self.data_dir, name[: 255 - len(suffix)] + suffix)
                os.rename(src, dst)
                doomed.append(dst)
        del self.topics[name]
        self.topic_names.pop(info.topic_id, None)
        self.registry_writes.pop(name, None)
        # The files go in the flusher's thread, in order with every other write: a topic created
        # again under this name writes its registry file after this one is removed, and the
        # checkpoints below (without this topic's positions) land before any of its own.
        self._flusher.write(_remove_topic_file, self.data_dir, name)
        self.checkpoint_log_start_offsets()
        self.checkpoint_recovery_points()
        self.cleaner.forget(name)
        for path in doomed:
            self._flusher.submit(shutil.rmtree, path, True)
        log.info("deleted topic", topic=name, topic_id=str(info.topic_id))

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replace a topic's overrides (AlterConfigs; IncrementalAlterConfigs computes the new
        full set). Takes effect on the logs at once. INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION."""
        info = self.topics.get(name)
        if info is None:
            raise KafkaStorageError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
        info.configs = validate_topic_configs({k: v for k, v in configs.items() if v is not None})
        self._write_topic(info)
        cfg = self._log_config(info)
        for p in range(info.num_partitions):
            plog = self._logs.get((name, p))
            if plog is not None:
                plog.config = cfg

    def refresh_log_configs(self) -> None:
        """Broker defaults changed at runtime: recompute every log's effective config."""
        for (name, _p), plog in self._logs.items():
            info = self.topics.get(name)
            if info is not None:
                plog.config = self._log_config(info)

    def describe_topic_configs(self, name: str) -> dict[str, tuple[str, bool]]:
        """name -> (value, is_default) of every topic config, for DescribeConfigs."""
        info = self.topics.get(name)
        if info is None:
            raise KafkaStorageError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
        return effective_topic_configs(self.config, info.configs)

    # ================================================================== logs
    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def all_logs(self) -> Iterator[PartitionLog]:
        return iter(list(self._logs.values()))

    def remove_expired_producers(self, now_ms: int | None = None) -> None:
        now = self._clock.wall_ms() if now_ms is None else now_ms
        for plog in self._logs.values():
            plog.remove_expired_producers(now)

    # ================================================================== retention
    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """DeleteRecords: move the log start offset to ``offset`` (-1: the high watermark) and
        persist it; returns the new log start offset. UNKNOWN_TOPIC_OR_PARTITION,
        OFFSET_OUT_OF_RANGE (above the high watermark or below -1)."""
        plog = self._logs.get((topic, partition))
        if plog is None:
            raise KafkaStorageError(
                ErrorCode.unknown_topic_or_partition, f"{topic}-{partition} does not exist"
            )
        if offset == -1:
            offset = plog.high_watermark
        elif offset < 0:
            raise KafkaStorageError(
                ErrorCode.offset_out_of_range, f"cannot delete records below offset {offset}"
            )
        if plog.maybe_increment_log_start_offset(offset):
            self.checkpoint_log_start_offsets()
            log.info(
                "deleted records: log start offset advanced",
                topic=topic,
                partition=partition,
                log_start_offset=plog.log_start_offset,
            )
        return plog.log_start_offset

    def delete_old_segments(self) -> int:
        """The retention check (every log.retention.check.interval.ms): apply retention.ms,
        retention.bytes and the log start offset to every log (storage/retention.py); returns
        the number of segments deleted. Also closes segments retired long enough ago."""
        now = self._clock.wall_ms()
        self._close_retired(now)
        deleted = 0
        for plog in list(self._logs.values()):
            decision = segments_to_delete(plog.segments, plog.config, plog.log_start_offset, now)
            if decision is None:
                continue
            doomed = plog.delete_oldest_segments(decision.segments)
            for seg in doomed:
                self.retire_segment(plog, seg)
            deleted += len(doomed)
            log.info(
                "deleted old segments",
                topic=plog.topic,
                partition=plog.partition,
                segments=len(doomed),
                reason=decision.reason,
                log_start_offset=plog.log_start_offset,
            )
        if deleted:
            self.checkpoint_log_start_offsets()
        return deleted

    def retire_segment(self, plog: PartitionLog, seg: LogSegment) -> None:
        """A segment left the log (retention, compaction): close its file after
        file.delete.delay.ms, so fetch answers already holding a slice of it still read."""
        info = self.topics.get(plog.topic)
        delay = effective_topic_configs(self.config, info.configs if info else {}).get(
            "file.delete.delay.ms", ("60000", True)
        )[0]
        self._retired.append((self._clock.wall_ms() + int(delay), seg))

    def _close_retired(self, now: int | None) -> None:
        keep = []
        for deadline, seg in self._retired:
            if now is None or deadline <= now:
                seg.close()
            else:
                keep.append((deadline, seg))
        self._retired = keep

    def checkpoint_log_start_offsets(self, *, now: bool = False) -> None:
        """Persist log start offsets that are above their log's first segment (Kafka's
        log-start-offset-checkpoint); written only when one changed, by the flusher's ``write``
        (the broker's io thread, in order with the other writes; the answer of the request
        that moved one, DeleteRecords, waits for it), or on this thread with ``now`` (close)."""
        entries = {
            key: plog.log_start_offset for key, plog in self._logs.items() if plog.log_start_offset > 0
        }
        written = self._log_starts_write
        if written is not None and written.done() and written.exception() is not None:
            self._log_starts = None  # the last write failed (its request was told): write again
        if entries == self._log_starts:
            return
        path = os.path.join(self.data_dir, LOG_START_OFFSET_FILE)
        self._log_starts = entries
        if now:
            write_offset_checkpoint(path, entries)
            return
        self._log_starts_write = self._flusher.write(write_offset_checkpoint, path, entries)

    def flush(self) -> None:
        """fsync every log and checkpoint the recovery points, on the caller's thread (tools and
        tests; the broker's periodic flush is ``Durability.flush_logs``)."""
        for plog in list(self._logs.values()):
            plog.flush()
        self.checkpoint_recovery_points(now=True)

    def close(self) -> None:
        """Clean stop: close (flush, snapshot) every log, checkpoint, then write the marker that
        lets the next start skip recovery. Idempotent. Everything here runs on the caller's
        thread (the broker stops its durability service first: ``Broker.stop``).

        A log whose close fails (a full disk) does not stop the others from closing; the first
        error is raised after that, and the marker is then not written (the next start
        recovers, as after a crash)."""
        if self._closed:
            return
        self._closed = True
        if not self._opened:
            return
        first_error: BaseException | None = None
        self.cleaner.shutdown()
        for plog in list(self._logs.values()):
            try:
                plog.close()
            except Exception as exc:  # noqa: BLE001 - the first one is raised below
                if first_error is None:
                    first_error = exc
                log.warning(
                    "could not close a partition log cleanly",
                    topic=plog.topic,
                    partition=plog.partition,
                    error=str(exc),
                )
        if first_error is not None:
            raise first_error
        self._close_retired(None)
        self.checkpoint_recovery_points(now=True)
        self.checkpoint_log_start_offsets(now=True)
        marker = os.path.join(self.data_dir, CLEAN_SHUTDOWN_FILE)
        with open(marker, "wb") as f:
            os.fsync(f.fileno())
        fsync_dir(self.data_dir)
        log.info("closed partition logs cleanly", partitions=len(self._logs))
