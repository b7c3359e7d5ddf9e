"""Issue 22: a running broker never fsyncs on its event loop's thread (broker/durability.py does
every fsync in its own threads), under the settings that fsync the most: every append flushed
(log.flush.interval.messages=1), a periodic flush and recovery-point checkpoint every 100 ms,
segments small enough to roll, with topics created, grown and deleted (the internal topics'
first creation too), produces, transactions (markers, TxnOffsetCommit, producer id blocks),
consumer group joins and offset commits, DeleteRecords, from real clients; a log cleaner pass
swapped in; and the metadata files of admin requests (ACLs, SCRAM credentials, dynamic broker
and topic configs).

The broker runs in this process, on an event loop in a thread of its own, so ``os.fsync`` can be
watched: every call records its thread, and any on the loop's thread fails the test with the
stack that made it. Start and stop may fsync on the loop (startup recovery, ``close()``), so
the watch is armed after the start and disarmed before the stop."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import traceback

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.structs import OffsetAndMetadata
from minibroker.broker.cli import build_config, parse_args
from minibroker.broker.state import Broker
from minibroker.storage.log_manager import LOG_START_OFFSET_FILE, RECOVERY_POINT_FILE

from tests.acceptance.test_client_quotas import alter
from tests.acceptance.test_security_acls import AUTHORIZER
from tests.support.helpers import admin_client, create_topic, wait_until
from tests.support.wire import WireClient

pytestmark = pytest.mark.timeout(120)

SETTINGS = {
    "log.flush.interval.messages": "1",
    "log.flush.interval.ms": "100",
    "log.flush.offset.checkpoint.interval.ms": "100",
    "log.segment.bytes": "4096",
    "offsets.topic.segment.bytes": "4096",
    "transaction.state.log.segment.bytes": "4096",
    "offsets.topic.num.partitions": "2",
    "transaction.state.log.num.partitions": "2",
    "log.cleaner.backoff.ms": "100",
}


class FsyncWatch:
    """``os.fsync`` wrapped: counts calls per thread while armed; a call on ``loop_thread``
    is kept with its stack."""

    def __init__(self) -> None:
        self.real = os.fsync
        self.armed = False
        self.loop_thread: int | None = None
        self.off_loop = 0
        self.on_loop: list[str] = []

    def check(self, at_least: int, what: str) -> None:
        """None ran on the loop's thread, and at least ``at_least`` (``what``) off it."""
        assert not self.on_loop, (
            f"{len(self.on_loop)} fsyncs on the event loop; the first:\n{self.on_loop[0]}"
        )
        assert self.off_loop >= at_least, f"{self.off_loop} fsyncs off the loop: {what}"

    def __call__(self, fd: int) -> None:
        if self.armed:
            if threading.get_ident() == self.loop_thread:
                self.on_loop.append("".join(traceback.format_stack(limit=12)))
            else:
                self.off_loop += 1
        self.real(fd)


class LoopBroker:
    """A Broker on an asyncio loop in a thread of this process."""

    def __init__(self, data_dir: str, watch: FsyncWatch, **extra: str) -> None:
        argv = ["--port", "0", "--data-dir", data_dir]
        for name, value in {**SETTINGS, **extra}.items():
            argv += ["--set", f"{name}={value}"]
        self.config = build_config(parse_args(argv))
        self.watch = watch
        self.broker: Broker | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="broker-loop", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # noqa: BLE001 - reported by start() / stop()
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.watch.loop_thread = threading.get_ident()
        self._stop = asyncio.Event()
        self.broker = Broker(self.config)
        await self.broker.start()
        self._ready.set()
        await self._stop.wait()
        await self.broker.stop()

    host = "127.0.0.1"

    @property
    def port(self) -> int:
        assert self.broker is not None
        return self.broker.bound_port

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> LoopBroker:
        self._thread.start()
        assert self._ready.wait(30), "broker did not start"
        if self._error is not None:
            raise self._error
        return self

    def call(self, fn):
        """Run ``fn()`` on the broker's loop; its result."""
        assert self.loop is not None

        async def run():
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def stop(self) -> None:
        if self.loop is not None and self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        assert not self._thread.is_alive(), "broker did not stop"
        if self._error is not None:
            raise self._error


def _transactions(bootstrap: str, topic: str, count: int) -> None:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        transactional_id="fsync-txn",
        request_timeout_ms=10_000,
        max_block_ms=10_000,
    )
    try:
        producer.init_transactions()
        for i in range(count):
            producer.begin_transaction()
            producer.send(topic, key=b"k", value=b"txn-%d" % i)
            producer.send_offsets_to_transaction(
                {TopicPartition(topic, 0): OffsetAndMetadata(i, "", -1)}, "fsync-txn-group"
            )
            if i % 3 == 2:
                producer.abort_transaction()
            else:
                producer.commit_transaction()
    finally:
        producer.close(timeout=10)


def _topic_admin(broker: LoopBroker, data_dir) -> None:
    """CreateTopics, CreatePartitions, topic AlterConfigs and DeleteTopics: each answered once
    its registry file (and DeleteTopics' directories) are on disk."""
    create_topic(broker, "grown", partitions=1)
    admin = admin_client(broker.bootstrap)
    try:
        admin.create_partitions({"grown": 3})
        assert json.loads((data_dir / "topics" / "grown.json").read_text())["num_partitions"] == 3
        admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "grown", configs={"retention.ms": "3600000"})],
            incremental=False,
        )
        assert json.loads((data_dir / "topics" / "grown.json").read_text())["configs"] == {
            "retention.ms": "3600000"
        }
        admin.delete_topics(["grown"])
    finally:
        admin.close()
    assert not (data_dir / "topics" / "grown.json").exists()
    wait_until(
        lambda: not [d for d in os.listdir(data_dir) if d.startswith("grown-")],
        timeout=10,
        message="the deleted topic's directories removed",
    )


def _group_commits(bootstrap: str, topic: str, expected: int) -> None:
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id="fsync-group",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level="read_committed",
    )
    try:
        seen = 0

        def consumed_all() -> bool:
            nonlocal seen
            batches = consumer.poll(timeout_ms=200)
            seen += sum(len(records) for records in batches.values())
            if batches:
                consumer.commit()  # one offset commit per poll that returned records
            return seen >= expected

        wait_until(consumed_all, timeout=30, interval=0, message=f"{expected} records consumed")
    finally:
        consumer.close()


def test_no_fsync_on_the_event_loop(tmp_path, monkeypatch):
    watch = FsyncWatch()
    monkeypatch.setattr(os, "fsync", watch)
    broker = LoopBroker(str(tmp_path), watch).start()
    try:
        watch.armed = True
        _topic_admin(broker, tmp_path)
        create_topic(broker, "t", partitions=1)

        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=0)
        try:
            for i in range(300):  # 300 appends of ~100 B: several 4 KiB segments
                producer.send("t", key=b"k", value=b"v" * 64 + b"%d" % i)
                if i % 50 == 0:
                    producer.flush()
            producer.flush()
        finally:
            producer.close(timeout=10)
        # the first InitProducerId: a producer id block (the next one written ahead); the
        # internal topics created at their first use
        _transactions(broker.bootstrap, "t", 6)  # markers, TxnOffsetCommit, aborts
        wait_until(
            lambda: json.loads((tmp_path / "producer_ids").read_text())["block_end"] == 2000,
            timeout=10,
            message="the producer id block after the first written ahead",
        )
        _group_commits(broker.bootstrap, "t", 300)
        admin = admin_client(broker.bootstrap)
        try:  # DeleteRecords: the log-start-offset checkpoint, written before the answer
            admin.delete_records({TopicPartition("t", 0): 10})
        finally:
            admin.close()
        assert "t 0 10" in (tmp_path / LOG_START_OFFSET_FILE).read_text()
        plog = broker.broker.logs.get_log("t", 0)
        assert len(plog.segments) > 2, "segments rolled"
        leo = plog.log_end_offset

        def checkpointed() -> bool:
            text = (tmp_path / RECOVERY_POINT_FILE).read_text()
            return f"t 0 {leo}\n" in text

        wait_until(checkpointed, timeout=10, message="the recovery point checkpointed at the log end")
        watch.armed = False
        rounds = broker.broker.durability.rounds
    finally:
        watch.armed = False
        broker.stop()
    # 6 transactions wait at 3 barriers or more each, every produce and offset commit at one
    assert rounds >= 20, f"only {rounds} fsync rounds: the workload did not flush"
    watch.check(rounds, f"fewer than its {rounds} rounds")


def test_no_fsync_on_the_event_loop_for_metadata_writes(tmp_path, monkeypatch):
    """ACLs, SCRAM credentials and dynamic broker configs are written by the durability
    service's thread, and each answer comes once its file is on disk."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    watch = FsyncWatch()
    monkeypatch.setattr(os, "fsync", watch)
    broker = LoopBroker(
        str(tmp_path),
        watch,
        **{"authorizer.class.name": AUTHORIZER, "allow.everyone.if.no.acl.found": "true"},
    ).start()
    try:
        watch.armed = True
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        binding = AclBinding(
            ResourceType.TOPIC,
            "orders",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
        for fut in admin.create_acls([binding]).values():
            fut.result(15)
        assert "User:alice" in (tmp_path / "security" / "acls.json").read_text()
        upsert = UserScramCredentialUpsertion(
            "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"carol-secret"
        )
        for fut in admin.alter_user_scram_credentials([upsert]).values():
            fut.result(15)
        assert "carol" in (tmp_path / "security" / "scram-credentials.json").read_text()
        res = ConfigResource(
            ResourceType.BROKER,
            "1",
            incremental_configs=[
                ConfigEntry("log.retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
            ],
        )
        for fut in admin.incremental_alter_configs([res]).values():
            fut.result(15)
        assert "3600000" in (tmp_path / "dynamic-broker-configs.json").read_text()
        with WireClient(broker.host, broker.port) as client:  # no Python admin has client quotas
            assert alter(client, [({"user": "alice"}, {"producer_byte_rate": 1000})]) == [
                (0, {"user": "alice"})
            ]
        assert "alice" in (tmp_path / "client-quotas.json").read_text()
        watch.armed = False
    finally:
        watch.armed = False
        broker.stop()
    watch.check(8, "fewer than four files, each file and directory")


def test_no_fsync_on_the_event_loop_for_a_compaction_swap(tmp_path, monkeypatch):
    """A log cleaner pass: its swap list, the directory and the cleaner checkpoint are written
    by the durability service's thread; the log reads the cleaned segments afterwards."""
    watch = FsyncWatch()
    monkeypatch.setattr(os, "fsync", watch)
    broker = LoopBroker(str(tmp_path), watch, **{"log.flush.interval.messages": "100000"}).start()
    try:
        watch.armed = True
        create_topic(broker, "c", 1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"})
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=0)
        try:
            for i in range(400):  # 10 keys over many 4 KiB segments
                producer.send("c", key=b"k%d" % (i % 10), value=b"v" * 64 + b"%d" % i)
            producer.flush()
        finally:
            producer.close(timeout=10)
        plog = broker.call(lambda: broker.broker.logs.get_log("c", 0))
        assert plog.log_end_offset == 400  # ~40 KB of records before compaction

        def compacted() -> bool:  # 10 keys left of 400 records, apart from the active segment
            return broker.call(lambda: sum(seg.size for seg in plog.segments[:-1])) < 8192

        wait_until(compacted, timeout=30, message="compaction passes swapped in")
        assert broker.broker.logs.cleaner.passes >= 1
        wait_until(
            lambda: "c 0 " in (tmp_path / "cleaner-offset-checkpoint").read_text(),
            timeout=10,
            message="the cleaner checkpoint written",
        )
        wait_until(lambda: not (tmp_path / "c-0" / "cleaner").exists(), timeout=10, message="swap list gone")
        watch.armed = False
    finally:
        watch.armed = False
        broker.stop()
    watch.check(3, "fewer than the swap list, the directory and the checkpoint")
