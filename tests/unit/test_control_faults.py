"""Request faults (broker/control/faults.py, fault_requests.py) on kio requests built directly:
matching, triggers, and where each API's error is answered."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from minibroker.broker.context import CloseConnection, RequestContext
from minibroker.broker.control.fault_requests import api_key_of, api_name, request_json
from minibroker.broker.control.faults import RequestFaults
from minibroker.common.clock import ManualClock
from minibroker.protocol.codec import build, request_class
from minibroker.protocol.errors import ErrorCode

from tests.unit.handler_fakes import FakeBroker

ORDERS_ID = uuid.UUID(int=0xABC)
NOT_LEADER = ErrorCode.not_leader_or_follower


def _ctx(key: int, version: int, client_id: str = "c1") -> RequestContext:
    broker = FakeBroker(logs=SimpleNamespace(topic_names={ORDERS_ID: "orders"}))
    return RequestContext(broker, key, version, 1, client_id, "127.0.0.1:1")


def _request(api_key: int, api_version: int, /, **fields: Any) -> Any:
    cls = request_class(api_key, api_version)
    assert cls is not None
    return build(cls, fields)


class Recorder:
    """A handler: answers every partition of the request with no error; keeps what it got."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.requests: list[Any] = []

    async def __call__(self, ctx: RequestContext, request: Any) -> Any:
        self.requests.append(request)
        return self.answer(ctx, request)


def _produce_answer(ctx, req):
    return ctx.response(
        responses=[
            {
                "name": t.name,
                "partition_responses": [{"index": p.index, "base_offset": 10} for p in t.partition_data],
            }
            for t in req.topic_data
        ]
    )


def _produce(topics: dict[str, list[int]], version: int = 9, acks: int = -1) -> Any:
    return _request(
        0,
        version,
        acks=acks,
        timeout=1000,
        topic_data=[
            {"name": t, "partition_data": [{"index": p, "records": b"x"} for p in parts]}
            for t, parts in topics.items()
        ],
    )


def _run(faults: RequestFaults, ctx: RequestContext, request: Any, handler) -> Any:
    return asyncio.run(faults.handle(ctx, request, handler))


def _parts(response: Any, topics: str, parts: str, index: str, error: str = "error_code") -> dict:
    return {
        (getattr(t, "name", None) or getattr(t, "topic", None), getattr(p, index)): int(getattr(p, error))
        for t in getattr(response, topics)
        for p in getattr(t, parts)
    }


# --- names and matching ---------------------------------------------------------------------------


def test_api_names_are_kafkas():
    assert api_name(0) == "Produce"
    assert api_name(26) == "EndTxn"
    assert api_name(22) == "InitProducerId"
    assert api_name(23) == "OffsetForLeaderEpoch"
    assert api_key_of("JoinGroup") == 11
    assert api_key_of("end_txn") == 26
    assert api_key_of(3) == 3
    with pytest.raises(ValueError, match="unknown API"):
        api_key_of("NoSuchApi")


def test_no_fault_runs_the_handler_untouched():
    faults = RequestFaults(ManualClock())
    handler = Recorder(_produce_answer)
    request = _produce({"orders": [0, 1]})
    response = _run(faults, _ctx(0, 9), request, handler)
    assert handler.requests == [request]
    assert set(_parts(response, "responses", "partition_responses", "index").values()) == {0}


def test_matchers_api_version_topic_partition_client_where():
    faults = RequestFaults(ManualClock())
    f = faults.add(
        {
            "api": "Produce",
            "versions": [4, 9],
            "topic": "orders",
            "partition": 1,
            "client_id": "c1",
            "where": {"acks": -1, "topic_data.name": "orders"},
            "error": "NOT_LEADER_OR_FOLLOWER",
        }
    )
    handler = Recorder(_produce_answer)
    _run(faults, _ctx(0, 9, client_id="other"), _produce({"orders": [1]}), handler)  # client id
    _run(faults, _ctx(0, 3), _produce({"orders": [1]}, version=3), handler)  # version
    _run(faults, _ctx(0, 9), _produce({"orders": [0]}), handler)  # partition
    _run(faults, _ctx(0, 9), _produce({"other": [1]}), handler)  # topic
    _run(faults, _ctx(0, 9), _produce({"orders": [1]}, acks=1), handler)  # where
    assert (f.matched, f.fired) == (0, 0)
    _run(faults, _ctx(0, 9), _produce({"orders": [1]}), handler)
    assert (f.matched, f.fired) == (1, 1)


def test_transactional_and_group_ids_and_find_coordinator_keys():
    faults = RequestFaults(ManualClock())
    by_txn = faults.add({"transactional_id": "tx", "observe": True})
    by_group = faults.add({"group_id": "g", "observe": True})
    ok = Recorder(lambda ctx, req: ctx.response())
    _run(faults, _ctx(26, 3), _request(26, 3, transactional_id="tx", producer_id=1, producer_epoch=0), ok)
    _run(faults, _ctx(10, 4), _request(10, 4, key_type=1, coordinator_keys=["tx"]), ok)
    _run(faults, _ctx(10, 4), _request(10, 4, key_type=0, coordinator_keys=["g"]), ok)
    _run(faults, _ctx(11, 5), _request(11, 5, group_id="g", protocol_type="consumer"), ok)
    _run(faults, _ctx(9, 8), _request(9, 8, groups=[{"group_id": "g"}]), ok)
    _run(faults, _ctx(15, 5), _request(15, 5, groups=["h", "g"]), ok)
    assert by_txn.fired == 2
    assert by_group.fired == 4


def test_request_json_names_topic_ids_and_summarizes_records():
    request = _request(
        0,
        13,
        acks=-1,
        timeout=1500,
        topic_data=[{"topic_id": ORDERS_ID, "partition_data": [{"index": 0, "records": b"abc"}]}],
    )
    as_json = request_json(_ctx(0, 13), request, {ORDERS_ID: "orders"})
    assert as_json["timeout"] == 1500
    assert as_json["topic_data"][0]["name"] == "orders"
    assert as_json["topic_data"][0]["partition_data"][0]["records"] == {"size": 3}
    assert as_json["header"]["client_id"] == "c1"


# --- triggers -------------------------------------------------------------------------------------


def _fired_sequence(rule: dict, n: int) -> list[bool]:
    faults = RequestFaults(ManualClock())
    f = faults.add(rule)
    out = []
    for _ in range(n):
        before = f.fired
        _run(faults, _ctx(0, 9), _produce({"orders": [0]}), Recorder(_produce_answer))
        out.append(f.fired > before)
    return out


def test_count_every_and_seeded_probability():
    base = {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER"}
    assert _fired_sequence({**base, "count": 2}, 4) == [True, True, False, False]
    assert _fired_sequence({**base, "every": 3}, 6) == [False, False, True, False, False, True]
    assert _fired_sequence({**base, "every": 2, "count": 1}, 4) == [False, True, False, False]
    first = _fired_sequence({**base, "probability": 0.5, "seed": 7}, 40)
    assert first == _fired_sequence({**base, "probability": 0.5, "seed": 7}, 40)
    assert 5 < sum(first) < 35
    assert first != _fired_sequence({**base, "probability": 0.5, "seed": 8}, 40)


def test_bad_rules_are_refused():
    faults = RequestFaults(ManualClock())
    for rule in (
        {"api": "Produce"},
        {"error": "NO_SUCH_ERROR"},
        {"error": 6, "disconnect": "sometimes"},
        {"observe": True, "error": 6},
        {"error": 6, "colour": "red"},
        {"error": 6, "count": 0},
    ):
        with pytest.raises(ValueError):
            faults.add(rule)
    assert faults.all() == []


def test_ask_waits_for_the_remote_decision():
    async def scenario() -> tuple[list[int], int]:
        faults = RequestFaults(ManualClock())
        f = faults.add({"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "ask": True})
        handler = Recorder(_produce_answer)
        answers = []
        for fire in (True, False):
            task = asyncio.create_task(faults.handle(_ctx(0, 9), _produce({"orders": [0]}), handler))
            asks = await f.pending_asks(5)
            assert [a.request["topic_data"][0]["name"] for a in asks] == ["orders"]
            assert f.answer(asks[0].id, fire)
            response = await task
            answers.append(_parts(response, "responses", "partition_responses", "index")[("orders", 0)])
        return answers, f.fired

    answers, fired = asyncio.run(scenario())
    assert answers == [int(NOT_LEADER), 0]
    assert fired == 1


def test_wait_wakes_on_the_count_and_times_out():
    async def scenario() -> tuple[bool, bool, int]:
        faults = RequestFaults(ManualClock())
        seen = faults.add({"api": "Produce", "observe": True})
        waiting = asyncio.create_task(seen.wait(2, 5))
        for _ in range(2):
            await faults.handle(_ctx(0, 9), _produce({"orders": [0]}), Recorder(_produce_answer))
        early = await asyncio.wait_for(waiting, 1)
        late = await seen.wait(3, 0.05)
        return early, late, seen.fired

    assert asyncio.run(scenario()) == (True, False, 2)


# --- where the error is answered ------------------------------------------------------------------


def test_produce_error_on_the_faulted_partition_only_and_not_appended():
    faults = RequestFaults(ManualClock())
    faults.add({"api": "Produce", "topic": "orders", "partition": 1, "error": "NOT_LEADER_OR_FOLLOWER"})
    handler = Recorder(_produce_answer)
    response = _run(faults, _ctx(0, 9), _produce({"orders": [0, 1], "other": [1]}), handler)
    (handled,) = handler.requests
    assert {(t.name, p.index) for t in handled.topic_data for p in t.partition_data} == {
        ("orders", 0),
        ("other", 1),
    }
    assert _parts(response, "responses", "partition_responses", "index") == {
        ("orders", 0): 0,
        ("other", 1): 0,
        ("orders", 1): int(NOT_LEADER),
    }
    errored = next(p for t in response.responses for p in t.partition_responses if p.error_code)
    assert errored.base_offset == -1


def test_produce_by_topic_id_every_partition_faulted_runs_no_handler():
    faults = RequestFaults(ManualClock())
    faults.add({"api": "Produce", "topic": "orders", "error": "NOT_LEADER_OR_FOLLOWER"})
    handler = Recorder(_produce_answer)
    request = _request(
        0,
        13,
        acks=-1,
        timeout=1000,
        topic_data=[{"topic_id": ORDERS_ID, "partition_data": [{"index": 0, "records": b"x"}]}],
    )
    response = _run(faults, _ctx(0, 13), request, handler)
    assert handler.requests == []
    (topic,) = response.responses
    assert topic.topic_id == ORDERS_ID
    assert [(p.index, p.error_code) for p in topic.partition_responses] == [(0, NOT_LEADER)]


def test_produce_acks_0_faulted_closes_the_connection():
    faults = RequestFaults(ManualClock())
    faults.add({"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER"})
    with pytest.raises(CloseConnection):
        _run(faults, _ctx(0, 9), _produce({"orders": [0]}, acks=0), Recorder(_produce_answer))


def test_offset_commit_and_txn_offset_commit_write_only_the_others():
    for key, version, extra in (
        (8, 8, {"group_id": "g"}),
        (28, 3, {"transactional_id": "t", "group_id": "g"}),
    ):
        faults = RequestFaults(ManualClock())
        faults.add({"topic": "orders", "partition": 0, "error": "COORDINATOR_LOAD_IN_PROGRESS"})

        def answer(ctx, req):
            return ctx.response(
                topics=[
                    {
                        "name": t.name,
                        "partitions": [{"partition_index": p.partition_index} for p in t.partitions],
                    }
                    for t in req.topics
                ]
            )

        handler = Recorder(answer)
        request = _request(
            key,
            version,
            **extra,
            topics=[
                {
                    "name": "orders",
                    "partitions": [
                        {"partition_index": 0, "committed_offset": 5},
                        {"partition_index": 1, "committed_offset": 6},
                    ],
                }
            ],
        )
        response = _run(faults, _ctx(key, version), request, handler)
        assert [p.partition_index for p in handler.requests[0].topics[0].partitions] == [1]
        assert _parts(response, "topics", "partitions", "partition_index") == {
            ("orders", 1): 0,
            ("orders", 0): int(ErrorCode.coordinator_load_in_progress),
        }


def test_fetch_and_list_offsets_replace_the_matched_entries():
    faults = RequestFaults(ManualClock())
    faults.add({"api": "ListOffsets", "partition": 2, "error": "NOT_LEADER_OR_FOLLOWER"})

    def answer(ctx, req):
        return ctx.response(
            topics=[
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": p.partition_index, "offset": 42, "timestamp": 1}
                        for p in t.partitions
                    ],
                }
                for t in req.topics
            ]
        )

    handler = Recorder(answer)
    request = _request(
        2,
        7,
        replica_id=-1,
        topics=[
            {
                "name": "orders",
                "partitions": [
                    {"partition_index": 1, "timestamp": -1},
                    {"partition_index": 2, "timestamp": -1},
                ],
            }
        ],
    )
    response = _run(faults, _ctx(2, 7), request, handler)
    assert len(handler.requests[0].topics[0].partitions) == 2  # a read: the handler saw both
    entries = {p.partition_index: p for p in response.topics[0].partitions}
    assert (entries[1].error_code, entries[1].offset) == (0, 42)
    assert (entries[2].error_code, entries[2].offset, entries[2].timestamp) == (NOT_LEADER, -1, -1)


def test_fetch_raw_response_materialized_and_errored():
    from minibroker.broker.context import RawResponse
    from minibroker.protocol.fetch_response import PartitionData, encode

    faults = RequestFaults(ManualClock())
    faults.add({"api": "Fetch", "topic": "orders", "partition": 0, "error": "NOT_LEADER_OR_FOLLOWER"})

    async def handler(ctx, req):
        parts, size = encode(
            12, [("orders", b"", [PartitionData(0, 0, 7, aborted=[]), PartitionData(1, 0, 9, aborted=[])])]
        )
        return RawResponse(parts, size)

    request = _request(
        1,
        12,
        replica_id=-1,
        max_wait=100,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            {
                "topic": "orders",
                "partitions": [
                    {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1000},
                    {"partition": 1, "fetch_offset": 0, "partition_max_bytes": 1000},
                ],
            }
        ],
    )
    response = _run(faults, _ctx(1, 12), request, handler)
    entries = {p.partition_index: p for p in response.responses[0].partitions}
    assert (entries[0].error_code, entries[0].high_watermark) == (NOT_LEADER, -1)
    assert (entries[1].error_code, entries[1].high_watermark) == (0, 9)


def test_metadata_topic_level_error_and_partition_level_error():
    def answer(ctx, req):
        return ctx.response(
            topics=[
                {
                    "name": "orders",
                    "partitions": [
                        {"partition_index": 0, "leader_id": 1},
                        {"partition_index": 1, "leader_id": 1},
                    ],
                }
            ]
        )

    faults = RequestFaults(ManualClock())
    faults.add({"api": "Metadata", "topic": "orders", "error": "LEADER_NOT_AVAILABLE"})
    response = _run(faults, _ctx(3, 9), _request(3, 9, topics=[{"name": "orders"}]), Recorder(answer))
    (topic,) = response.topics
    assert (topic.error_code, topic.partitions) == (ErrorCode.leader_not_available, ())

    faults = RequestFaults(ManualClock())
    faults.add({"api": "Metadata", "topic": "orders", "partition": 1, "error": "LEADER_NOT_AVAILABLE"})
    response = _run(faults, _ctx(3, 9), _request(3, 9, topics=None), Recorder(answer))  # every topic
    (topic,) = response.topics
    assert topic.error_code == 0
    assert [(p.partition_index, p.error_code, p.leader_id) for p in topic.partitions] == [
        (0, 0, 1),
        (1, ErrorCode.leader_not_available, -1),
    ]


def test_add_partitions_to_txn_all_or_nothing():
    faults = RequestFaults(ManualClock())
    faults.add({"api": "AddPartitionsToTxn", "partition": 0, "error": "CONCURRENT_TRANSACTIONS"})
    handler = Recorder(lambda ctx, req: pytest.fail("nothing is added"))
    request = _request(
        24,
        3,
        v3_and_below_transactional_id="t",
        v3_and_below_producer_id=1,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=[{"name": "orders", "partitions": [0, 1]}],
    )
    response = _run(faults, _ctx(24, 3), request, handler)
    assert _parts(
        response,
        "results_by_topic_v3_and_below",
        "results_by_partition",
        "partition_index",
        "partition_error_code",
    ) == {
        ("orders", 0): int(ErrorCode.concurrent_transactions),
        ("orders", 1): int(ErrorCode.operation_not_attempted),
    }


def test_apis_answered_as_a_whole_run_no_handler():
    never = Recorder(lambda ctx, req: pytest.fail("the handler must not run"))
    cases = [
        (26, 3, {"transactional_id": "t", "producer_id": 1, "producer_epoch": 0, "committed": True}),
        (
            22,
            4,
            {"transactional_id": "t", "transaction_timeout": 1000, "producer_id": -1, "producer_epoch": -1},
        ),
        (11, 7, {"group_id": "g", "protocol_type": "consumer", "session_timeout": 10000}),
    ]
    for key, version, fields in cases:
        faults = RequestFaults(ManualClock())
        faults.add({"api": key, "error": "COORDINATOR_NOT_AVAILABLE"})
        response = _run(faults, _ctx(key, version), _request(key, version, **fields), never)
        assert response.error_code == ErrorCode.coordinator_not_available
        if key == 22:
            assert (response.producer_id, response.producer_epoch) == (-1, -1)
        if key == 11:
            assert (response.generation_id, response.member_id, response.leader) == (-1, "", "")
            assert response.protocol_name is None


def test_find_coordinator_one_entry_per_key_and_v0_node():
    faults = RequestFaults(ManualClock())
    faults.add({"api": "FindCoordinator", "error": "COORDINATOR_NOT_AVAILABLE"})
    never = Recorder(lambda ctx, req: pytest.fail("the handler must not run"))
    response = _run(faults, _ctx(10, 4), _request(10, 4, key_type=0, coordinator_keys=["a", "b"]), never)
    assert [(c.key, c.error_code, c.node_id, c.port) for c in response.coordinators] == [
        ("a", ErrorCode.coordinator_not_available, -1, -1),
        ("b", ErrorCode.coordinator_not_available, -1, -1),
    ]
    response = _run(faults, _ctx(10, 1), _request(10, 1, key="a", key_type=0), never)
    assert (response.error_code, response.node_id, response.host, response.port) == (
        ErrorCode.coordinator_not_available,
        -1,
        "",
        -1,
    )


def test_disconnect_delay_and_throttle():
    async def scenario() -> None:
        faults = RequestFaults(ManualClock())
        handler = Recorder(_produce_answer)
        before = faults.add({"api": "Produce", "disconnect": "before", "count": 1})
        with pytest.raises(CloseConnection):
            await faults.handle(_ctx(0, 9), _produce({"orders": [0]}), handler)
        assert handler.requests == [] and before.fired == 1
        faults.add({"api": "Produce", "disconnect": "after", "count": 1})
        with pytest.raises(CloseConnection):
            await faults.handle(_ctx(0, 9), _produce({"orders": [0]}), handler)
        assert len(handler.requests) == 1  # handled, then closed
        faults.clear()
        faults.add({"api": "Produce", "throttle_ms": 250, "delay_ms": 30})
        ctx = _ctx(0, 9)
        loop = asyncio.get_running_loop()
        started = loop.time()
        response = await faults.handle(ctx, _produce({"orders": [0]}), handler)
        assert loop.time() - started >= 0.03
        assert response.throttle_time.total_seconds() == 0.25
        assert faults.take_throttle(ctx) == 250 and faults.take_throttle(ctx) == 0

    asyncio.run(scenario())


def test_topic_level_writes_leave_the_other_topics_done():
    def created(ctx, req):
        return ctx.response(topics=[{"name": t.name, "num_partitions": t.num_partitions} for t in req.topics])

    def deleted(ctx, req):
        return ctx.response(responses=[{"name": n} for n in req.topic_names])

    faults = RequestFaults(ManualClock())
    faults.add({"topic": "orders", "error": "TOPIC_AUTHORIZATION_FAILED"})
    handler = Recorder(created)
    request = _request(
        19,
        7,
        timeout=1000,
        topics=[
            {"name": "orders", "num_partitions": 3, "replication_factor": 1},
            {"name": "other", "num_partitions": 2, "replication_factor": 1},
        ],
    )
    response = _run(faults, _ctx(19, 7), request, handler)
    assert [t.name for t in handler.requests[0].topics] == ["other"]
    answers = {t.name: (t.error_code, t.num_partitions) for t in response.topics}
    assert answers == {"other": (0, 2), "orders": (ErrorCode.topic_authorization_failed, -1)}

    handler = Recorder(deleted)
    response = _run(
        faults, _ctx(20, 5), _request(20, 5, timeout=1000, topic_names=["orders", "other"]), handler
    )
    assert handler.requests[0].topic_names == ("other",)
    assert {t.name: t.error_code for t in response.responses} == {
        "other": 0,
        "orders": ErrorCode.topic_authorization_failed,
    }


@pytest.mark.parametrize(
    ("key", "version", "fields", "entries"),
    [
        (33, 2, {"resources": [{"resource_type": 2, "resource_name": "orders", "configs": []}]}, "responses"),
        (44, 1, {"resources": [{"resource_type": 2, "resource_name": "orders", "configs": []}]}, "responses"),
        (32, 4, {"resources": [{"resource_type": 2, "resource_name": "orders"}]}, "results"),
        (
            30,
            3,
            {
                "creations": [
                    {
                        "resource_type": 2,
                        "resource_name": "orders",
                        "resource_pattern_type": 3,
                        "principal": "User:a",
                        "host": "*",
                        "operation": 2,
                        "permission_type": 3,
                    }
                ]
            },
            "results",
        ),
        (
            49,
            1,
            {"entries": [{"entity": [{"entity_type": "user", "entity_name": "a"}], "ops": []}]},
            "entries",
        ),
    ],
)
def test_an_admin_write_without_a_top_level_error_is_answered_without_its_handler(
    key, version, fields, entries
):
    faults = RequestFaults(ManualClock())
    faults.add({"api": key, "error": "POLICY_VIOLATION"})
    handler = Recorder(lambda ctx, req: pytest.fail("the handler must not run"))
    response = _run(faults, _ctx(key, version), _request(key, version, **fields), handler)
    assert handler.requests == []
    answered = getattr(response, entries)
    assert len(answered) == 1 and int(answered[0].error_code) == ErrorCode.policy_violation
