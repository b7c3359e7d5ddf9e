"""A group of a classic member (kafka-python, JoinGroup/SyncGroup/Heartbeat) and a KIP-848 member
(Java kafka-clients 4.4, `group.protocol=consumer`): the classic group becomes a consumer group
when the Java member joins (online upgrade), both consume, and when the Java member leaves the
group goes back to classic (online downgrade) and kafka-python keeps consuming every partition.
No record is lost or read twice by the committed offsets (each member commits every record before
counting it).

The Java member is jvm/clients/src/main/java/minibroker/GroupMember.java (compiled by `make jvm`).
"""

from __future__ import annotations

import subprocess
import threading

import pytest

from tests.acceptance.test_kip848_librdkafka import (
    KIP848,
    WAIT,
    assert_each_record_once,
    committed_offsets,
    produce,
)
from tests.support.helpers import create_topic, unique_name, wait_until
from tests.support.java import java_command

JAVA_VERSION = "4.4.0"
PARTS = 4


class ClassicMember:
    """kafka-python on the classic protocol, consuming in a thread; each record committed before
    it counts (`done`), as the librdkafka tests' Member."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id="kp-classic",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=100,
            # each record is committed on its own before the next poll(), and a member told to
            # rejoin (REBALANCE_IN_PROGRESS on a heartbeat) stops heartbeating until that poll():
            # a batch of 500 synchronous commits on a loaded machine outlasted the session
            max_poll_records=20,
            heartbeat_interval_ms=500,
            session_timeout_ms=10_000,
            max_poll_interval_ms=15_000,
            request_timeout_ms=15_000,
        )
        self.consumer.subscribe([topic])
        self.done: list[tuple[int, int, str]] = []
        self.uncommitted: list[tuple[int, int, str]] = []
        self.assignment: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kp-classic", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata

        while not self._stop.is_set():
            batches = self.consumer.poll(timeout_ms=100)
            self.assignment = {tp.partition for tp in self.consumer.assignment()}
            for tp, records in batches.items():
                for rec in records:
                    entry = (rec.partition, rec.offset, rec.value.decode())
                    try:
                        self.consumer.commit({tp: OffsetAndMetadata(rec.offset + 1, "", -1)})
                    except KafkaError:
                        self.uncommitted.append(entry)
                        break  # the rest of this batch is read again by the partition's owner
                    self.done.append(entry)
        self.consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def values(self) -> list[str]:
        return [v for _, _, v in self.done]


class JavaMember:
    """GroupMember.java with group.protocol=consumer, its stdout read in a thread."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.proc = subprocess.Popen(
            java_command("GroupMember", JAVA_VERSION, bootstrap, group, topic, "consumer"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.done: list[tuple[int, int, str]] = []
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("REC "):
                _, partition, offset, value = line.split(maxsplit=3)
                self.done.append((int(partition), int(offset), value.strip()))

    def assignment(self) -> set[int]:
        current: set[int] = set()
        for line in self.lines:
            kind, _, parts = line.partition(" ")
            changed = {int(p) for p in parts.split(",") if p}
            if kind == "ASSIGNED":
                current |= changed
            elif kind == "REVOKED":
                current -= changed
        return current

    def leave(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()
        assert self.proc.wait(60) == 0, self.proc.stderr.read()[-4000:] if self.proc.stderr else ""
        self._thread.join(10)
        assert "RESULT closed=1" in self.lines

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def values(self) -> list[str]:
        return [v for _, _, v in self.done]


@pytest.mark.timeout(300)
def test_classic_and_consumer_members_in_one_group(broker_factory):
    b = broker_factory({**KIP848, "group.initial.rebalance.delay.ms": 0})
    topic, group = unique_name("k848-mixed"), unique_name("k848-mixed-g")
    create_topic(b, topic, PARTS)
    first = [f"one-{i}" for i in range(40)]
    produce(b.bootstrap, topic, first, PARTS)
    kp = ClassicMember(b.bootstrap, group, topic)
    java = None
    try:
        wait_until(
            lambda: len(kp.done) == len(first), WAIT, message="kafka-python consumed the first records"
        )
        assert kp.assignment == set(range(PARTS))
        # the Java member joins with the consumer protocol: the group becomes a consumer group
        # whose classic member keeps its partitions until the new target is reconciled
        java = JavaMember(b.bootstrap, group, topic)
        b.wait_for_log(r"converted the classic group to a consumer group", timeout=WAIT)
        wait_until(
            lambda: java.assignment() and kp.assignment and not java.assignment() & kp.assignment,
            WAIT,
            message="the partitions split between the classic and the consumer member",
        )
        assert java.assignment() | kp.assignment == set(range(PARTS))
        second = [f"two-{i}" for i in range(80)]
        produce(b.bootstrap, topic, second, PARTS)
        wait_until(
            lambda: len(set(kp.values()) | set(java.values())) >= len(first) + len(second),
            WAIT,
            message="both members consumed the second records",
        )
        assert any(v.startswith("two-") for v in java.values()), "the Java member read nothing"
        assert any(v.startswith("two-") for v in kp.values()), "kafka-python read nothing"
        # the Java member leaves: the group goes back to classic, kafka-python gets everything
        java.leave()
        b.wait_for_log(r"converted the consumer group to a classic group", timeout=WAIT)
        wait_until(
            lambda: kp.assignment == set(range(PARTS)), WAIT, message="kafka-python owns every partition"
        )
        third = [f"three-{i}" for i in range(40)]
        produce(b.bootstrap, topic, third, PARTS)
        expected = first + second + third
        wait_until(
            lambda: len(set(kp.values()) | set(java.values())) >= len(expected),
            WAIT,
            message="kafka-python consumed the third records",
        )
        assert {p for p, _, v in kp.done if v.startswith("three-")} == set(range(PARTS))
    finally:
        kp.stop()
        if java is not None:
            java.kill()
    assert_each_record_once([kp, java], expected)
    assert committed_offsets(b.bootstrap, group, topic, PARTS) == {
        p: len(expected) // PARTS for p in range(PARTS)
    }
