"""Issue 26 (KIP-932) on the wire: ShareFetch (78) and ShareAcknowledge (79) against a real
broker with share groups on (`minibroker.features: share.version=1`), raw requests encoded with
the project's codec (conformance/wire.py). A member joins with ShareGroupHeartbeat until its
share-partition is initialized and assigned, then opens a share session, fetches, acknowledges
and releases; released records and records whose acquisition lock expired (on the control
plane's manual clock) come again with delivery count 2; a closed connection releases its
member's records; session epochs are checked as Kafka 4.4 checks them."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.wire import Connection
from minibroker.testing import broker
from tests.support.helpers import create_topic, unique_name, wait_until
from tests.support.wire import WireClient, build_batch, iter_batches

SETTINGS = {"minibroker.features": "share.version=1"}
LOCK_MS = 15_000  # share.record.lock.duration.ms at its minimum

NONE, INVALID_REQUEST, INVALID_RECORD_STATE = 0, 42, 121
SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH = 122, 123
ACCEPT, RELEASE, REJECT = 1, 2, 3


@pytest.fixture(scope="module")
def b():
    with broker(SETTINGS, clock="manual") as proc:
        yield proc


class Member:
    """One share group member on its own connection: heartbeats, share session, fetches."""

    def __init__(self, proc: Any, group: str, topic: str, *, manual: bool = True) -> None:
        self.proc = proc
        self.manual = manual  # the broker's clock is the control plane's (moved by the test)
        self.group = group
        self.topic = topic
        self.member_id = str(uuid.uuid4())
        self.conn = Connection((proc.host, proc.port))
        self.epoch = 0  # the share session's
        self.member_epoch = 0
        self.topic_id: uuid.UUID | None = None

    def close(self) -> None:
        self.conn.close()

    def heartbeat(self) -> dict:
        answer = self.conn.call(
            76,
            1,
            {
                "group_id": self.group,
                "member_id": self.member_id,
                "member_epoch": self.member_epoch,
                "rack_id": None,
                "subscribed_topic_names": [self.topic],
            },
        )
        assert answer["error_code"] == NONE, answer
        self.member_epoch = answer["member_epoch"]
        return answer

    def join(self) -> None:
        """Heartbeat until the group coordinator assigns the (initialized) share-partition."""

        def assigned() -> bool:
            answer = self.heartbeat()
            assignment = answer["assignment"]
            if assignment and assignment["topic_partitions"]:
                self.topic_id = uuid.UUID(assignment["topic_partitions"][0]["topic_id"])
                return True
            if self.manual:
                self.proc.clock.advance_ms(1_000)  # the assignment interval
            return False

        wait_until(assigned, timeout=30, interval=0.05, message="the share-partition assigned")

    def fetch(
        self, acks: list[tuple[int, int, list[int]]] | None = None, *, epoch: int | None = None, **kw: Any
    ) -> dict:
        version = kw.pop("version", 1)
        fields = {
            "group_id": self.group,
            "member_id": self.member_id,
            "share_session_epoch": self.epoch if epoch is None else epoch,
            "max_wait": kw.pop("max_wait", 2_000),
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "max_records": kw.pop("max_records", 500),
            "batch_size": 500,
            "topics": [self._topic(acks)],
            "forgotten_topics_data": [],
        }
        fields.update(kw)
        answer = self.conn.call(78, version, fields, timeout=30)
        if answer["error_code"] == NONE and epoch is None:
            self.epoch = self.epoch + 1 if self.epoch >= 0 else -1
        return answer

    def acknowledge(self, acks: list[tuple[int, int, list[int]]], *, epoch: int | None = None) -> dict:
        fields = {
            "group_id": self.group,
            "member_id": self.member_id,
            "share_session_epoch": self.epoch if epoch is None else epoch,
            "topics": [self._topic(acks)],
        }
        answer = self.conn.call(79, 1, fields)
        if answer["error_code"] == NONE and epoch is None:
            self.epoch += 1
        return answer

    def _topic(self, acks: list[tuple[int, int, list[int]]] | None) -> dict:
        return {
            "topic_id": self.topic_id,
            "partitions": [
                {
                    "partition_index": 0,
                    "acknowledgement_batches": [
                        {"first_offset": f, "last_offset": last, "acknowledge_types": t}
                        for f, last, t in acks or []
                    ],
                }
            ],
        }


def partition(answer: dict) -> dict:
    [topic] = answer["responses"]
    [p] = topic["partitions"]
    return p


def acquired(answer: dict) -> list[tuple[int, int, int]]:
    return [
        (a["first_offset"], a["last_offset"], a["delivery_count"])
        for a in partition(answer)["acquired_records"]
    ]


def record_offsets(answer: dict) -> list[tuple[int, int]]:
    data = bytes.fromhex(partition(answer)["records"])
    return [(batch.base_offset, batch.base_offset + batch.last_offset_delta) for batch in iter_batches(data)]


@contextlib.contextmanager
def joined_members(proc: Any, group: str, topic: str, count: int = 2) -> Iterator[list[Member]]:
    """`count` members of the group on their own connections, joined in turn; closed at the end."""
    members = [Member(proc, group, topic) for _ in range(count)]
    try:
        for m in members:
            m.join()
        yield members
    finally:
        for m in members:
            m.close()


def setup_group(proc: Any, records: int, **group_configs: str) -> tuple[str, str]:
    """A topic of one partition with `records` records in batches of 5, and a group reading it
    from the earliest offset."""
    topic, group = unique_name("share-t"), unique_name("share-g")
    create_topic(proc, topic, 1)
    with WireClient.to(proc) as wc:
        for start in range(0, records, 5):
            batch = build_batch([(None, b"v%d" % i, None) for i in range(start, min(start + 5, records))])
            assert wc.produce(topic, 0, batch).error_code == 0
    configs = {"share.auto.offset.reset": "earliest", **group_configs}
    conn = Connection((proc.host, proc.port))
    try:
        answer = conn.call(
            44,
            1,
            {
                "resources": [
                    {
                        "resource_type": 32,
                        "resource_name": group,
                        "configs": [
                            {"name": k, "config_operation": 0, "value": v} for k, v in configs.items()
                        ],
                    }
                ],
                "validate_only": False,
            },
        )
    finally:
        conn.close()
    assert [r["error_code"] for r in answer["responses"]] == [0], answer
    return topic, group


def test_fetch_acknowledge_release_and_redelivery(b: Any) -> None:
    topic, group = setup_group(b, 10)
    m = Member(b, group, topic)
    try:
        m.join()
        first = m.fetch()
        assert first["error_code"] == NONE and first["acquisition_lock_timeout"] > 0
        assert acquired(first) == [(0, 9, 1)]
        assert record_offsets(first) == [(0, 4), (5, 9)]
        # accept 0-4, release 5-7, reject 8-9, piggy-backed on the next fetch: 5-7 come back
        second = m.fetch([(0, 4, [ACCEPT]), (5, 7, [RELEASE]), (8, 9, [REJECT])])
        p = partition(second)
        assert (p["acknowledge_error_code"], p["acknowledge_error_message"]) == (NONE, None)
        assert acquired(second) == [(5, 7, 2)]
        assert record_offsets(second) == [(5, 9)]  # the whole batch holding them
        # ShareAcknowledge: accepted, then nothing is left to fetch
        answer = m.acknowledge([(5, 7, [ACCEPT])])
        assert answer["error_code"] == NONE
        assert [p["error_code"] for t in answer["responses"] for p in t["partitions"]] == [NONE]
        third = m.fetch(max_wait=100)
        assert third["error_code"] == NONE
        assert not third["responses"] or acquired(third) == []
        # every record is done: the start offset moved past them and a late acknowledgement
        # below it is ignored (Kafka answers it NONE)
        again = m.acknowledge([(0, 0, [ACCEPT])])
        assert [p["error_code"] for t in again["responses"] for p in t["partitions"]] == [NONE]
    finally:
        m.close()


def test_acquisition_locks_expire_on_the_manual_clock(b: Any) -> None:
    topic, group = setup_group(b, 5, **{"share.record.lock.duration.ms": str(LOCK_MS)})
    with joined_members(b, group, topic) as (m1, m2):
        assert acquired(m1.fetch()) == [(0, 4, 1)]
        empty = m2.fetch(max_wait=100)
        assert not empty["responses"] or acquired(empty) == []
        b.clock.advance_ms(LOCK_MS)
        assert acquired(m2.fetch()) == [(0, 4, 2)]
        # m1's lock is gone: its acknowledgement is refused
        late = m1.acknowledge([(0, 4, [ACCEPT])])
        assert [p["error_code"] for t in late["responses"] for p in t["partitions"]] == [INVALID_RECORD_STATE]


def test_closing_the_connection_releases_the_members_records(b: Any) -> None:
    topic, group = setup_group(b, 5)
    with joined_members(b, group, topic) as (m1, m2):
        assert acquired(m1.fetch()) == [(0, 4, 1)]
        m1.close()
        got: list = []

        def redelivered() -> bool:
            answer = m2.fetch(max_wait=200)
            got[:] = acquired(answer) if answer["responses"] else []
            return bool(got)

        wait_until(redelivered, timeout=15, message="m1's records released")
        assert got == [(0, 4, 2)]


def test_closing_the_session_with_epoch_minus_one_releases(b: Any) -> None:
    topic, group = setup_group(b, 5)
    with joined_members(b, group, topic) as (m1, m2):
        assert acquired(m1.fetch()) == [(0, 4, 1)]
        closing = m1.fetch([(0, 1, [ACCEPT])], epoch=-1)
        assert closing["error_code"] == NONE
        assert partition(closing)["acknowledge_error_code"] == NONE
        assert partition(closing)["acquired_records"] == []
        assert acquired(m2.fetch()) == [(2, 4, 2)]
        # the session is gone
        assert m1.fetch(epoch=1)["error_code"] == SHARE_SESSION_NOT_FOUND


def test_session_epochs(b: Any) -> None:
    topic, group = setup_group(b, 5)
    m = Member(b, group, topic)
    try:
        m.join()
        assert m.fetch(epoch=1)["error_code"] == SHARE_SESSION_NOT_FOUND
        assert m.acknowledge([(0, 0, [ACCEPT])], epoch=1)["error_code"] == SHARE_SESSION_NOT_FOUND
        assert m.fetch([(0, 0, [ACCEPT])], epoch=0)["error_code"] == INVALID_REQUEST  # acks when opening
        assert m.fetch()["error_code"] == NONE  # opened: epoch 1 next
        assert m.fetch(epoch=7)["error_code"] == INVALID_SHARE_SESSION_EPOCH
        assert m.acknowledge([(0, 0, [ACCEPT])], epoch=0)["error_code"] == INVALID_SHARE_SESSION_EPOCH
        assert m.fetch(max_wait=100)["error_code"] == NONE  # epoch 1 still good
        answer = m.conn.call(
            78,
            1,
            {
                "group_id": group,
                "member_id": "",
                "share_session_epoch": 0,
                "max_wait": 0,
                "min_bytes": 1,
                "max_records": 1,
                "batch_size": 1,
                "topics": [],
                "forgotten_topics_data": [],
            },
        )
        assert answer["error_code"] == INVALID_REQUEST and answer["error_message"] is None
    finally:
        m.close()


def test_acknowledged_records_are_never_delivered_again_after_sigkill(broker_factory: Any) -> None:
    """An acknowledgement is answered once its state is written: after a SIGKILL the accepted
    records stay done; the ones only acquired come back, with their persisted delivery count
    (acquisition is not persisted, as on Kafka)."""
    proc = broker_factory({**SETTINGS, "group.share.assignment.interval.ms": 0})
    topic, group = setup_group(proc, 10)
    m = Member(proc, group, topic, manual=False)
    try:
        m.join()
        assert acquired(m.fetch()) == [(0, 9, 1)]
        answer = m.fetch([(0, 4, [ACCEPT]), (5, 6, [RELEASE])], max_wait=0)
        assert partition(answer)["acknowledge_error_code"] == NONE
        # killed while the member's connection is open: closing it first would release what it
        # holds (5-9, 5-6 acquired again by that fetch) in the background, a write racing the kill
        proc.restart(kill=True)
    finally:
        m.close()
    again = Member(proc, group, topic, manual=False)
    try:
        again.join()
        # 5-6 were released (delivery count 1 written), 7-9 only acquired (nothing written)
        assert acquired(again.fetch()) == [(5, 6, 2), (7, 9, 1)]
    finally:
        again.close()


def test_two_members_share_a_partition_without_overlap(b: Any) -> None:
    """Members fetching the same partition in turn, MaxRecords at a time, acknowledging what
    they got: every record is delivered once, to one of them."""
    topic, group = setup_group(b, 100)
    with joined_members(b, group, topic) as members:
        delivered: list[int] = []
        for _ in range(40):
            for m in members:
                answer = m.fetch(max_records=10, max_wait=50)
                got = acquired(answer) if answer["responses"] else []
                for first, last, count in got:
                    assert count == 1
                    delivered.extend(range(first, last + 1))
                if got:
                    m.acknowledge([(first, last, [ACCEPT]) for first, last, _ in got])
            if len(delivered) >= 100:
                break
        assert sorted(delivered) == list(range(100))


def test_a_log_start_past_the_share_partition_moves_its_start(b: Any) -> None:
    """DeleteRecords past the next fetch offset: the fetch reads from the new log start (Kafka's
    updateCacheAndOffsets on OFFSET_OUT_OF_RANGE); records still acquired stay the member's."""
    topic, group = setup_group(b, 10)
    m = Member(b, group, topic)
    try:
        m.join()
        assert acquired(m.fetch()) == [(0, 9, 1)]
        m.acknowledge([(0, 4, [ACCEPT])])
        with WireClient.to(b) as wc:
            for start in (10, 15):
                batch = build_batch([(None, b"w%d" % i, None) for i in range(start, start + 5)])
                assert wc.produce(topic, 0, batch).error_code == 0
        deleted = m.conn.call(
            21,
            2,
            {
                "topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": 15}]}],
                "timeout": 5000,
            },
        )
        assert deleted["topics"][0]["partitions"][0]["error_code"] == NONE, deleted
        assert acquired(m.fetch()) == [(15, 19, 1)]
        assert m.acknowledge([(5, 9, [ACCEPT]), (15, 19, [ACCEPT])])["error_code"] == NONE
    finally:
        m.close()
