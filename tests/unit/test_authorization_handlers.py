"""Every handler with an authorization block refuses a principal that may do nothing, with the
error code Kafka uses, over each advertised version (the response must also encode)."""

from __future__ import annotations

import datetime
import uuid
from types import SimpleNamespace

import pytest
from kio.serial import entity_reader
from minibroker.broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_transactions,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sync_group,
    txn_offset_commit,
    write_txn_markers,
)
from minibroker.protocol.codec import build, request_class, response_class
from minibroker.protocol.errors import ErrorCode as E
from minibroker.protocol.records import build_batch

from tests.unit.test_groups_handlers import PROTOCOLS, call, ctx_for, make_broker, ms


class DenyAll:
    """broker.security with an authorizer that allows nothing."""

    authorizer = object()

    def allowed(self, *_):
        return False

    def allowed_any(self, *_):
        return False

    def authorized_operations(self, *_):
        return 0


def denying_broker():
    b = make_broker()
    b.security = DenyAll()
    return b


@pytest.mark.parametrize("version", range(0, 10))
async def test_join_group(version):
    r = await call(
        denying_broker(),
        join_group,
        version,
        group_id="g",
        session_timeout=ms(5000),
        rebalance_timeout=ms(5000),
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=PROTOCOLS,
    )
    assert r.error_code == E.group_authorization_failed


@pytest.mark.parametrize("version", range(0, 6))
async def test_sync_heartbeat_leave(version):
    b = denying_broker()
    r = await call(b, sync_group, version, group_id="g", generation_id=1, member_id="m", assignments=[])
    assert r.error_code == E.group_authorization_failed
    r = await call(b, heartbeat, min(version, 4), group_id="g", generation_id=1, member_id="m")
    assert r.error_code == E.group_authorization_failed
    fields = dict(members=[dict(member_id="m")]) if version >= 3 else dict(member_id="m")
    r = await call(b, leave_group, version, group_id="g", **fields)
    assert r.error_code == E.group_authorization_failed


@pytest.mark.parametrize("version", range(2, 10))
async def test_offset_commit(version):
    r = await call(
        denying_broker(),
        offset_commit,
        version,
        group_id="g",
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            dict(name="t", partitions=[dict(partition_index=0, committed_offset=1, committed_metadata=None)])
        ],
    )
    assert r.topics[0].partitions[0].error_code == E.group_authorization_failed


@pytest.mark.parametrize("version", range(1, 10))
async def test_offset_fetch(version):
    wanted = [dict(name="t", partition_indexes=[0])]
    if version >= 8:
        r = await call(
            denying_broker(),
            offset_fetch,
            version,
            require_stable=False,
            groups=[dict(group_id="g", topics=wanted)],
        )
        assert r.groups[0].error_code == E.group_authorization_failed
        return
    r = await call(denying_broker(), offset_fetch, version, group_id="g", topics=wanted, require_stable=False)
    assert r.topics[0].partitions[0].error_code == E.group_authorization_failed
    if version >= 2:
        assert r.error_code == E.group_authorization_failed


@pytest.mark.parametrize("version", range(0, 6))
async def test_describe_list_delete_groups(version):
    b = denying_broker()
    await call(make_broker(), heartbeat, 0, group_id="g", generation_id=1, member_id="m")
    r = await call(b, describe_groups, version, groups=["g"], include_authorized_operations=True)
    assert r.groups[0].error_code == E.group_authorization_failed
    r = await call(b, list_groups, version)
    assert r.groups == ()
    r = await call(b, delete_groups, min(version, 2), groups_names=["g"])
    assert r.results[0].error_code == E.group_authorization_failed


@pytest.mark.parametrize("version", range(0, 7))
async def test_find_coordinator(version):
    b = denying_broker()
    for key_type, error in ((0, E.group_authorization_failed), (1, E.transactional_id_authorization_failed)):
        if version == 0 and key_type == 1:
            continue
        if version >= 4:
            r = await call(b, find_coordinator, version, key_type=key_type, coordinator_keys=["k"])
            assert r.coordinators[0].error_code == error
        else:
            r = await call(b, find_coordinator, version, key="k", key_type=key_type)
            assert r.error_code == error


@pytest.mark.parametrize("version", range(0, 6))
async def test_transactional_apis(version):
    b = denying_broker()
    b.txns = SimpleNamespace()  # never reached
    r = await call(
        b,
        init_producer_id,
        version,
        transactional_id="tx",
        transaction_timeout=ms(60000),
        producer_id=-1,
        producer_epoch=-1,
    )
    assert r.error_code == E.transactional_id_authorization_failed
    r = await call(
        b,
        init_producer_id,
        version,
        transactional_id=None,
        transaction_timeout=ms(60000),
        producer_id=-1,
        producer_epoch=-1,
    )
    assert r.error_code == E.cluster_authorization_failed
    if version <= 4:
        r = await call(
            b, end_txn, version, transactional_id="tx", producer_id=1, producer_epoch=0, committed=True
        )
        assert r.error_code == E.transactional_id_authorization_failed
        r = await call(
            b,
            add_offsets_to_txn,
            version,
            transactional_id="tx",
            producer_id=1,
            producer_epoch=0,
            group_id="g",
        )
        assert r.error_code == E.transactional_id_authorization_failed


# --- topic-level APIs: a broker with one topic "t" whose storage must never be reached --------
def topic_broker():
    b = denying_broker()
    info = SimpleNamespace(name="t", topic_id=uuid.uuid4(), num_partitions=1, internal=False)
    b.logs = SimpleNamespace(
        topics={"t": info}, cluster_id="c", get_log=lambda *_: pytest.fail("storage reached")
    )
    b.get_log = b.logs.get_log
    b.config = {
        "fetch.max.bytes": 1 << 20,
        "num.partitions": 1,
        "auto.create.topics.enable": True,
        "minibroker.max.partitions.per.request": 10,
        "minibroker.max.partitions": 10,
    }
    return b


def decode(module, version, raw):
    """A RawResponse (Fetch is hand-encoded) decoded with kio's reader."""
    return entity_reader(response_class(module.API_KEY, version))(b"".join(bytes(p) for p in raw.parts), 0)[0]


@pytest.mark.parametrize("version", range(3, 13))
async def test_produce(version):
    b = topic_broker()
    fields = dict(
        acks=-1, timeout=ms(1000), topic_data=[dict(name="t", partition_data=[dict(index=0, records=b"")])]
    )
    r = await call(b, produce, version, transactional_id=None, **fields)
    assert r.responses[0].partition_responses[0].error_code == E.topic_authorization_failed
    # Kafka checks the transactional id only for transactional records, and before the topics
    r = await call(b, produce, version, transactional_id="tx", **fields)
    assert r.responses[0].partition_responses[0].error_code == E.topic_authorization_failed
    txn = build_batch([(None, b"v")], producer_id=1, producer_epoch=0, base_sequence=0, transactional=True)
    fields["topic_data"][0]["partition_data"][0]["records"] = txn
    for transactional_id in ("tx", None):
        r = await call(b, produce, version, transactional_id=transactional_id, **fields)
        assert r.responses[0].partition_responses[0].error_code == E.transactional_id_authorization_failed


@pytest.mark.parametrize("version", range(4, 13))
async def test_fetch(version):
    req = build(
        request_class(fetch.API_KEY, version),
        dict(
            replica_id=-1,
            max_wait=ms(1000),
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            topics=[
                dict(topic="t", partitions=[dict(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])
            ],
        ),
    )
    raw = await fetch.handle(ctx_for(topic_broker(), fetch, version), req)
    assert decode(fetch, version, raw).responses[0].partitions[0].error_code == E.topic_authorization_failed


@pytest.mark.parametrize("version", range(1, 11))
async def test_list_offsets(version):
    r = await call(
        topic_broker(),
        list_offsets,
        version,
        replica_id=-1,
        isolation_level=0,
        topics=[dict(name="t", partitions=[dict(partition_index=0, timestamp=datetime.datetime.now())])],
    )
    assert r.topics[0].partitions[0].error_code == E.topic_authorization_failed


@pytest.mark.parametrize("version", range(2, 5))
async def test_offset_for_leader_epoch(version):
    r = await call(
        topic_broker(),
        offset_for_leader_epoch,
        version,
        replica_id=-1,
        topics=[dict(topic="t", partitions=[dict(partition=0, current_leader_epoch=-1, leader_epoch=0)])],
    )
    assert r.topics[0].partitions[0].error_code == E.topic_authorization_failed


@pytest.mark.parametrize("version", range(0, 14))
async def test_metadata(version):
    b = topic_broker()
    r = await call(
        b, metadata, version, topics=[dict(name="t"), dict(name="new")], allow_auto_topic_creation=True
    )
    assert [t.error_code for t in r.topics] == [E.topic_authorization_failed] * 2
    if version >= 1:
        r = await call(b, metadata, version, topics=None, allow_auto_topic_creation=False)
        assert r.topics == ()  # all-topics requests leave out what may not be described


@pytest.mark.parametrize("version", range(2, 8))
async def test_create_delete_and_grow_topics(version):
    b = topic_broker()
    r = await call(
        b,
        create_topics,
        version,
        topics=[dict(name="n", num_partitions=1, replication_factor=1, assignments=[], configs=[])],
        timeout=ms(1000),
        validate_only=False,
    )
    assert r.topics[0].error_code == E.topic_authorization_failed
    dv = min(version, 6)
    fields = dict(topics=[dict(name="t", topic_id=uuid.UUID(int=0))]) if dv >= 6 else dict(topic_names=["t"])
    r = await call(b, delete_topics, dv, timeout=ms(1000), **fields)
    assert r.responses[0].error_code == E.topic_authorization_failed
    r = await call(
        b,
        create_partitions,
        min(version, 3),
        topics=[dict(name="t", count=2, assignments=None)],
        timeout=ms(1000),
        validate_only=False,
    )
    assert r.results[0].error_code == E.topic_authorization_failed


@pytest.mark.parametrize("version", range(1, 5))
async def test_describe_configs(version):
    r = await call(
        topic_broker(),
        describe_configs,
        version,
        resources=[
            dict(resource_type=2, resource_name="t", configuration_keys=None),
            dict(resource_type=4, resource_name="", configuration_keys=None),
        ],
    )
    assert [x.error_code for x in r.results] == [E.topic_authorization_failed, E.cluster_authorization_failed]


async def test_producers_and_transactions_inspection():
    b = topic_broker()
    b.txns = SimpleNamespace(
        list_transactions=lambda *_: (
            [],
            [dict(transactional_id="tx", producer_id=1, transaction_state="Ongoing")],
        )
    )
    r = await call(b, describe_producers, 0, topics=[dict(name="t", partition_indexes=[0])])
    assert r.topics[0].partitions[0].error_code == E.topic_authorization_failed
    r = await call(b, describe_transactions, 0, transactional_ids=["tx"])
    assert r.transaction_states[0].error_code == E.transactional_id_authorization_failed
    r = await call(b, list_transactions, 1, state_filters=[], producer_id_filters=[])
    assert r.transaction_states == ()


@pytest.mark.parametrize("version", range(0, 5))
async def test_add_partitions_and_txn_offset_commit(version):
    b = topic_broker()
    if version <= 3:
        r = await call(
            b,
            add_partitions_to_txn,
            version,
            v3_and_below_transactional_id="tx",
            v3_and_below_producer_id=1,
            v3_and_below_producer_epoch=0,
            v3_and_below_topics=[dict(name="t", partitions=[0])],
        )
        code = r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
        assert code == E.transactional_id_authorization_failed
    r = await call(
        b,
        txn_offset_commit,
        version,
        transactional_id="tx",
        group_id="g",
        producer_id=1,
        producer_epoch=0,
        topics=[
            dict(name="t", partitions=[dict(partition_index=0, committed_offset=1, committed_metadata=None)])
        ],
    )
    assert r.topics[0].partitions[0].error_code == E.transactional_id_authorization_failed


async def test_offset_delete():
    r = await call(
        topic_broker(),
        offset_delete,
        0,
        group_id="g",
        topics=[dict(name="t", partitions=[dict(partition_index=0)])],
    )
    assert r.error_code == E.group_authorization_failed


@pytest.mark.parametrize("version", range(0, 3))
async def test_alter_configs_both_apis(version):
    b = topic_broker()
    b.dynamic_configs = SimpleNamespace(alter_result=lambda *a, **k: pytest.fail("configs altered"))
    resources = [
        dict(resource_type=2, resource_name="t", configs=[]),
        dict(resource_type=4, resource_name="1", configs=[]),
    ]
    r = await call(b, alter_configs, version, resources=resources, validate_only=False)
    assert [x.error_code for x in r.responses] == [
        E.topic_authorization_failed,
        E.cluster_authorization_failed,
    ]
    r = await call(b, incremental_alter_configs, min(version, 1), resources=resources, validate_only=False)
    assert [x.error_code for x in r.responses] == [
        E.topic_authorization_failed,
        E.cluster_authorization_failed,
    ]


@pytest.mark.parametrize("version", range(1, 5))
async def test_describe_log_dirs(version):
    r = await call(topic_broker(), describe_log_dirs, version, topics=None)
    assert r.results == ()
    if version >= 3:
        assert r.error_code == E.cluster_authorization_failed


@pytest.mark.parametrize("version", range(0, 3))
async def test_delete_records_and_write_txn_markers(version):
    b = topic_broker()
    r = await call(
        b,
        delete_records,
        version,
        topics=[dict(name="t", partitions=[dict(partition_index=0, offset=1)])],
        timeout=ms(1000),
    )
    assert r.topics[0].partitions[0].error_code == E.topic_authorization_failed
    if version >= 1:
        r = await call(
            b,
            write_txn_markers,
            version,
            markers=[
                dict(
                    producer_id=1,
                    producer_epoch=0,
                    transaction_result=True,
                    coordinator_epoch=0,
                    topics=[dict(name="t", partition_indexes=[0])],
                )
            ],
        )
        assert r.markers[0].topics[0].partitions[0].error_code == E.cluster_authorization_failed


@pytest.mark.parametrize("version", range(0, 3))
async def test_elect_leaders(version):
    r = await call(
        topic_broker(),
        elect_leaders,
        version,
        election_type=0,
        topic_partitions=[{"topic": "t", "partitions": [0, 1]}],
        timeout_ms=1000,
    )
    if version >= 1:
        assert r.error_code == E.cluster_authorization_failed
    assert [(x.topic, [p.error_code for p in x.partition_result]) for x in r.replica_election_results] == [
        ("t", [E.cluster_authorization_failed] * 2)
    ]
