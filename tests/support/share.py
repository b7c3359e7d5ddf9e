"""Shared pieces of the share-group (KIP-932) acceptance tests.

The same test runs against minibroker (default) or against the reference Apache Kafka 4.4.0 the
conformance suite starts (conformance/reference_kafka.py): `MINIBROKER_SHARE_TARGET=kafka` makes
`share_broker_factory` start Kafka, so the expectations of every share-group test are checked on
Kafka itself. Both get the same broker properties (SHARE_BROKER: Kafka's property names, short
timings); minibroker also gets `share.version=1`.

Helpers: group configs through IncrementalAlterConfigs on the GROUP resource (type 32), N keyed
records produced and acknowledged, and `ShareMember`, a confluent-kafka `ShareConsumer` in a thread
that records every delivery (with its delivery count) and every acknowledgement the broker
confirmed (through the acknowledgement commit callback).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conformance.wire import Connection
from tests.support.broker import BrokerFactory
from tests.support.helpers import wait_until

#: Broker properties for fast share-group tests, valid on both brokers (Kafka's names).
SHARE_BROKER: dict[str, object] = {
    "offsets.topic.num.partitions": 1,
    "share.coordinator.state.topic.num.partitions": 1,
    "group.share.min.session.timeout.ms": 1000,
    "group.share.session.timeout.ms": 6000,
    "group.share.min.heartbeat.interval.ms": 100,
    "group.share.heartbeat.interval.ms": 300,
    "group.share.assignment.interval.ms": 0,
    "group.share.min.record.lock.duration.ms": 1000,
    "group.share.record.lock.duration.ms": 30000,
}
#: What minibroker needs on top: share groups are not finalized yet.
MINIBROKER_ONLY: dict[str, object] = {"minibroker.features": "share.version=1"}

TARGET = os.environ.get("MINIBROKER_SHARE_TARGET", "minibroker")
WAIT = 60.0
#: the ShareMembers of the running test (their errors explain a wait that timed out)
_MEMBERS: list[ShareMember] = []

INCREMENTAL_ALTER_CONFIGS, DESCRIBE_CONFIGS, SHARE_GROUP_DESCRIBE = 44, 32, 77
GROUP_RESOURCE = 32
GAP, ACCEPT, RELEASE, REJECT = 0, 1, 2, 3


# ----------------------------------------------------------------------------- brokers
class ReferenceBroker:
    """The reference Kafka 4.4.0 with the interface the share tests use from minibroker's
    BrokerProcess: bootstrap, start (again on the same data and port after a kill), kill,
    cleanup, log_tail."""

    def __init__(self, workdir: Path, overrides: dict[str, object]):
        from conformance.reference_kafka import ReferenceKafka  # noqa: PLC0415 - needs java only here

        workdir.mkdir(parents=True, exist_ok=True)
        self.ref = ReferenceKafka(workdir, overrides)
        self.starts = 0

    host = "127.0.0.1"

    @property
    def port(self) -> int:
        return self.ref.port

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.ref.port}"

    @property
    def address(self) -> tuple[str, int]:
        return self.ref.address

    @property
    def pid(self) -> int:
        assert self.ref.proc is not None
        return self.ref.proc.pid

    @property
    def running(self) -> bool:
        return self.ref.proc is not None and self.ref.proc.poll() is None

    def start(self) -> ReferenceBroker:
        if self.starts == 0:
            self.ref.start()
        else:  # a restart keeps kafka-data (ReferenceKafka.start would copy a fresh one)
            from conformance.reference_kafka import ensure_jars  # noqa: PLC0415
            from conformance.wire import wait_until_serving  # noqa: PLC0415

            out = open(self.ref.log_path, "ab")
            self.ref.proc = subprocess.Popen(
                self.ref._java(
                    ensure_jars(),
                    "kafka.Kafka",
                    str(self.ref.workdir / "server.properties"),
                    logs_dir=self.ref.workdir,
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            out.close()
            wait_until_serving(self.ref.address, self.ref.proc, 240, self.ref.log_path)
        self.starts += 1
        return self

    def kill(self) -> None:
        if self.running:
            self.ref.proc.send_signal(signal.SIGKILL)
            self.ref.proc.wait(30)

    def cleanup(self) -> int | None:
        rc = None
        if self.running:
            self.ref.stop()
            rc = 0
        return rc

    def log_tail(self, lines: int = 80) -> str:
        return self.ref.log_tail(lines)


class ShareBrokerFactory:
    """Starts the brokers of one test on the target (minibroker or the reference Kafka) and tears
    them down; `factory(overrides)` takes broker properties on top of SHARE_BROKER."""

    def __init__(self, base_dir: Path, target: str = TARGET):
        self.target = target
        self.base_dir = base_dir
        self.minibrokers = BrokerFactory(base_dir)
        self.references: list[ReferenceBroker] = []

    @property
    def is_kafka(self) -> bool:
        return self.target == "kafka"

    def __call__(
        self, overrides: dict[str, object] | None = None, *, minibroker: dict[str, object] | None = None, **kw
    ):
        """`minibroker`: properties only minibroker gets (its own, e.g. the request log)."""
        props = {**SHARE_BROKER, **(overrides or {})}
        if self.is_kafka:
            ref = ReferenceBroker(self.base_dir / f"kafka{len(self.references)}", props)
            self.references.append(ref)
            return ref.start()
        return self.minibrokers({**MINIBROKER_ONLY, **props, **(minibroker or {})}, **kw)

    def teardown(self, failed: bool) -> None:
        for ref in self.references:
            if failed:
                print(ref.log_tail(60), file=sys.stderr)
            ref.cleanup()
        self.minibrokers.teardown(failed)


def request_versions(broker, client_id: str) -> dict[str, set[int]]:
    """{api name: versions} of the requests `client_id` sent, from minibroker's request log
    (`minibroker.request.log.enable`); empty on the reference Kafka."""
    import json  # noqa: PLC0415

    out: dict[str, set[int]] = {}
    if isinstance(broker, ReferenceBroker):
        return out
    for line in broker.log_text().splitlines():
        if '"event": "request"' not in line or client_id not in line:
            continue
        entry = json.loads(line)
        if entry.get("client_id") == client_id:
            out.setdefault(entry["api"], set()).add(entry["api_version"])
    return out


def keep_port(broker) -> None:
    """Make a restart come back on the address the clients know (the reference Kafka always
    does; minibroker starts with --port 0 unless told)."""
    if not isinstance(broker, ReferenceBroker):
        broker.extra_args = ["--port", str(broker.port)]


@pytest.fixture
def share_broker_factory(request, tmp_path):
    """Import this fixture into a test module (`from tests.support.share import
    share_broker_factory  # noqa: F401`)."""
    if TARGET == "kafka" and not _has_java():
        pytest.skip("MINIBROKER_SHARE_TARGET=kafka needs a JDK")
    factory = ShareBrokerFactory(tmp_path)
    _MEMBERS.clear()
    yield factory
    _MEMBERS.clear()
    node = request.node
    failed = any(getattr(getattr(node, f"rep_{w}", None), "failed", False) for w in ("setup", "call"))
    factory.teardown(failed)


def _has_java() -> bool:
    import shutil  # noqa: PLC0415

    return shutil.which("java") is not None


# ----------------------------------------------------------------------------- admin
def set_group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    """IncrementalAlterConfigs (SET) of share-group configs on the GROUP resource, then wait
    until DescribeConfigs shows them (Kafka applies config changes asynchronously)."""
    host, port = bootstrap.rsplit(":", 1)
    conn = Connection((host, int(port)))
    try:
        answer = conn.call(
            INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "resources": [
                    {
                        "resource_type": GROUP_RESOURCE,
                        "resource_name": group,
                        "configs": [
                            {"name": k, "config_operation": 0, "value": v} for k, v in configs.items()
                        ],
                    }
                ],
                "validate_only": False,
            },
        )
        (result,) = answer["responses"]
        assert int(result["error_code"]) == 0, result

        def applied() -> bool:
            described = conn.call(
                DESCRIBE_CONFIGS,
                4,
                {
                    "resources": [
                        {
                            "resource_type": GROUP_RESOURCE,
                            "resource_name": group,
                            "configuration_keys": list(configs),
                        }
                    ],
                    "include_synonyms": False,
                    "include_documentation": False,
                },
            )
            (res,) = described["results"]
            values = {c["name"]: c["value"] for c in res["configs"]}
            return int(res["error_code"]) == 0 and all(values.get(k) == v for k, v in configs.items())

        wait_until(applied, WAIT, message=f"group {group} configs {configs} applied")
    finally:
        conn.close()


def describe_group(bootstrap: str, group: str) -> dict:
    """ShareGroupDescribe v1 of `group` on the (single) broker: the group's entry, plain."""
    host, port = bootstrap.rsplit(":", 1)
    conn = Connection((host, int(port)))
    try:
        answer = conn.call(
            SHARE_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}
        )
    finally:
        conn.close()
    (entry,) = answer["groups"]
    return entry


def assigned_members(bootstrap: str, group: str) -> dict[str, set[int]]:
    """{member id: assigned partition numbers} of a share group (ShareGroupDescribe)."""
    entry = describe_group(bootstrap, group)
    if int(entry["error_code"]) != 0:
        return {}
    return {
        m["member_id"]: {p for t in m["assignment"]["topic_partitions"] for p in t["partitions"]}
        for m in entry["members"]
    }


# ----------------------------------------------------------------------------- records
def record_value(i: int) -> str:
    return f"v-{i}"


def produce_keyed(
    bootstrap: str, topic: str, count: int, partitions: int, start: int = 0, **producer_config
) -> dict[str, tuple[str, int, int]]:
    """Records start..start+count-1 (key `k-i`, value `v-i`), partition i % partitions, acked
    by the broker: {value: (topic, partition, offset)}."""
    from confluent_kafka import Producer  # noqa: PLC0415

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, **producer_config})
    placed: dict[str, tuple[str, int, int]] = {}
    errors: list[object] = []

    def delivered(err, msg) -> None:
        if err is not None:
            errors.append(err)
        else:
            placed[msg.value().decode()] = (msg.topic(), msg.partition(), msg.offset())

    for i in range(start, start + count):
        producer.produce(
            topic,
            key=f"k-{i}".encode(),
            value=record_value(i).encode(),
            partition=i % partitions,
            on_delivery=delivered,
        )
        if i % 1000 == 999:
            producer.poll(0)
    assert producer.flush(60) == 0 and not errors, errors[:5]
    assert len(placed) == count
    return placed


# ----------------------------------------------------------------------------- consumers
class Delivery(tuple):
    """(partition, offset, value, delivery_count, member, time.monotonic() when polled, topic)."""

    __slots__ = ()

    def __new__(
        cls, partition: int, offset: int, value: str, count: int | None, member: str, at: float, topic: str
    ):
        return super().__new__(cls, (partition, offset, value, count, member, at, topic))

    partition = property(lambda self: self[0])
    offset = property(lambda self: self[1])
    value = property(lambda self: self[2])
    count = property(lambda self: self[3])
    member = property(lambda self: self[4])
    at = property(lambda self: self[5])
    topic = property(lambda self: self[6])

    @property
    def key(self) -> tuple[str, int, int]:
        """(topic, partition, offset): what acknowledgements are kept by."""
        return self[6], self[0], self[1]


#: decides the acknowledgement of a delivery in explicit mode (ACCEPT, RELEASE, REJECT) or None:
#: keep the record acquired and stop polling (the member holds it until it is stopped)
Policy = Callable[[Delivery], "int | None"]


class ShareMember:
    """A confluent-kafka ShareConsumer polling in a thread.

    `deliveries`: every record handed to the application. `acked`: {(topic, partition, offset): [(member,
    ack type)]} for acknowledgements the broker confirmed (the acknowledgement commit callback
    without an error; `acked_at`: when first), `in_doubt` those of a commit that failed (written
    or not); GAP for the offsets librdkafka acknowledges without handing them to the
    application: control records). `ack_errors`: the callback's errors. In explicit mode `policy` decides each
    record's acknowledgement and the member commits synchronously after each poll; a None from
    the policy makes the member hold the poll's records (acquired, unacknowledged) from then on."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topics: list[str],
        name: str,
        *,
        policy: Policy | None = None,
        config: dict | None = None,
    ) -> None:
        from confluent_kafka import ShareConsumer  # noqa: PLC0415

        self.name = name
        self.policy = policy
        self.explicit = policy is not None
        self.consumer = ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "share.acknowledgement.mode": "explicit" if self.explicit else "implicit",
                **(config or {}),
            }
        )
        self.topics = topics
        self.deliveries: list[Delivery] = []
        self.acked: dict[tuple[str, int, int], list[tuple[str, int]]] = {}
        self.ack_errors: list[str] = []
        self.in_doubt: dict[tuple[str, int, int], list[tuple[str, int]]] = {}
        self.acked_at: dict[tuple[str, int, int], float] = {}
        self.errors: list[str] = []
        self.holding = threading.Event()
        self._pending_types: dict[tuple[str, int, int], int] = {}
        self._delivered: set[tuple[str, int, int]] = set()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        _MEMBERS.append(self)

    def start(self) -> ShareMember:
        self.consumer.set_acknowledgement_commit_callback(self._committed)
        self.consumer.subscribe(self.topics)
        self._thread.start()
        return self

    def _committed(self, offsets, exc) -> None:
        with self._lock:
            now = time.monotonic()
            if exc is not None:
                self.ack_errors.append(str(exc))
            for tp, offs in offsets.items():
                for off in offs:
                    key = (tp.topic, tp.partition, off)
                    # offsets never handed to the application (control records) are acknowledged
                    # by librdkafka too: as GAP
                    kind = self._pending_types.pop(key, ACCEPT if key in self._delivered else GAP)
                    if exc is not None:  # written or not: the broker did not say
                        self.in_doubt.setdefault(key, []).append((self.name, kind))
                    else:
                        self.acked.setdefault(key, []).append((self.name, kind))
                        self.acked_at.setdefault(key, now)

    def _unanswered(self, partitions: set[tuple[str, int]]) -> None:
        """The acknowledgements of `partitions` still waiting for an answer after a failed commit
        are in doubt (a later callback may still confirm them)."""
        with self._lock:
            for key, kind in self._pending_types.items():
                if key[:2] in partitions:
                    self.in_doubt.setdefault(key, []).append((self.name, kind))

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.holding.is_set():
                self._stop.wait(0.05)
                continue
            try:
                messages = self.consumer.poll(0.2)
            except Exception as exc:  # noqa: BLE001 - recorded; the test asserts on errors
                self.errors.append(repr(exc))
                continue
            decided = False
            for msg in messages:
                if msg.error():
                    self.errors.append(str(msg.error()))
                    continue
                d = Delivery(
                    msg.partition(),
                    msg.offset(),
                    (msg.value() or b"").decode(),
                    msg.delivery_count(),
                    self.name,
                    time.monotonic(),
                    msg.topic(),
                )
                with self._lock:
                    self.deliveries.append(d)
                    self._delivered.add(d.key)
                if not self.explicit:
                    continue
                kind = self.policy(d)
                if kind is None:
                    self.holding.set()
                    continue
                with self._lock:
                    self._pending_types[d.key] = kind
                self.consumer.acknowledge(msg, kind)
                decided = True
            if decided and not self.holding.is_set():
                try:
                    failed = {
                        (tp.topic, tp.partition)
                        for tp, e in self.consumer.commit_sync(30).items()
                        if e is not None
                    }
                except Exception as exc:  # noqa: BLE001
                    self.errors.append(repr(exc))
                    failed = {key[:2] for key in self._pending_types}
                self._unanswered(failed)
        try:
            self.consumer.close()  # commits pending acknowledgements, leaves the group
        except Exception as exc:  # noqa: BLE001
            self.errors.append(f"close: {exc!r}")

    def stop(self, check: bool = True) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not check or not self._thread.is_alive(), f"{self.name} did not close"

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def snapshot(self) -> list[Delivery]:
        with self._lock:
            return list(self.deliveries)


def wait_for(predicate, message: str, timeout: float = WAIT):
    """wait_until, and on a timeout the errors the test's members saw (client and
    acknowledgement errors), which usually say why."""
    try:
        return wait_until(predicate, timeout, message=message)
    except AssertionError as exc:
        seen = {m.name: (m.errors + m.ack_errors)[-5:] for m in _MEMBERS if m.errors or m.ack_errors}
        raise AssertionError(f"{exc}; the members' last errors: {seen or 'none'}") from None


def accepted(members: list[ShareMember]) -> dict[tuple[str, int, int], list[str]]:
    """{(topic, partition, offset): [members]} of the ACCEPTs the broker confirmed."""
    out: dict[tuple[str, int, int], list[str]] = {}
    for m in members:
        with m._lock:
            for key, acks in m.acked.items():
                out.setdefault(key, []).extend(name for name, kind in acks if kind == ACCEPT)
    return {k: v for k, v in out.items() if v}


def deliveries(members: list[ShareMember]) -> list[Delivery]:
    return [d for m in members for d in m.snapshot()]


# ----------------------------------------------------------------------------- a member in a process
MEMBER_SCRIPT = r"""
import json, sys
from confluent_kafka import ShareConsumer
bootstrap, group, topic = sys.argv[1:4]
c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "held",
                   "share.acknowledgement.mode": "explicit"})
c.subscribe([topic])
while True:
    got = [m for m in c.poll(0.5) if not m.error()]
    if got:
        print(json.dumps([[m.partition(), m.offset(), m.value().decode(), m.delivery_count()] for m in got]),
              flush=True)
        sys.stdin.read()  # holds the records until killed or stopped
        break
"""


class ProcessMember:
    """A ShareConsumer in its own process that acquires one poll's records and holds them
    unacknowledged, so a test can SIGKILL (connection gone) or SIGSTOP (connection kept, silent)
    a member with records acquired."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        import tempfile  # noqa: PLC0415

        self.stderr = tempfile.TemporaryFile()  # librdkafka's log: why it failed, if it did
        self.proc = subprocess.Popen(
            [sys.executable, "-c", MEMBER_SCRIPT, bootstrap, group, topic],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )
        self.acquired_at = 0.0

    def acquired(self, timeout: float = WAIT) -> list[tuple[int, int, str, int]]:
        """The records of its first non-empty poll: [(partition, offset, value, delivery count)]."""
        import json  # noqa: PLC0415
        import selectors  # noqa: PLC0415

        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        assert sel.select(timeout), f"the held member got no records within {timeout}s"
        line = self.proc.stdout.readline()
        self.acquired_at = time.monotonic()
        if not line:
            self.proc.wait(10)
            self.stderr.seek(0)
            raise AssertionError(
                f"the held member exited: {self.stderr.read()[-1500:].decode(errors='replace')}"
            )
        return [tuple(r) for r in json.loads(line)]

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        self.stderr.close()
