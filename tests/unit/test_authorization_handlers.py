"""Every handler with an authorization block refuses a principal that may do nothing, with the
error code Kafka uses, over each advertised version (the response must also encode)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from broker.handlers import (
    add_offsets_to_txn,
    delete_groups,
    describe_groups,
    end_txn,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_fetch,
    sync_group,
)
from protocol.errors import ErrorCode as E
from tests.unit.test_groups_handlers import PROTOCOLS, call, make_broker, ms


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
    r = await call(denying_broker(), join_group, version, group_id="g", session_timeout=ms(5000),
                   rebalance_timeout=ms(5000), member_id="", group_instance_id=None, protocol_type="consumer",
                   protocols=PROTOCOLS)
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
    r = await call(denying_broker(), offset_commit, version, group_id="g", generation_id_or_member_epoch=-1,
                   member_id="", topics=[dict(name="t", partitions=[dict(partition_index=0, committed_offset=1,
                                                                          committed_metadata=None)])])
    assert r.topics[0].partitions[0].error_code == E.group_authorization_failed


@pytest.mark.parametrize("version", range(1, 10))
async def test_offset_fetch(version):
    wanted = [dict(name="t", partition_indexes=[0])]
    if version >= 8:
        r = await call(denying_broker(), offset_fetch, version, require_stable=False,
                       groups=[dict(group_id="g", topics=wanted)])
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
    r = await call(b, init_producer_id, version, transactional_id="tx", transaction_timeout=ms(60000),
                   producer_id=-1, producer_epoch=-1)
    assert r.error_code == E.transactional_id_authorization_failed
    r = await call(b, init_producer_id, version, transactional_id=None, transaction_timeout=ms(60000),
                   producer_id=-1, producer_epoch=-1)
    assert r.error_code == E.cluster_authorization_failed
    if version <= 4:
        r = await call(b, end_txn, version, transactional_id="tx", producer_id=1, producer_epoch=0, committed=True)
        assert r.error_code == E.transactional_id_authorization_failed
        r = await call(b, add_offsets_to_txn, version, transactional_id="tx", producer_id=1, producer_epoch=0,
                       group_id="g")
        assert r.error_code == E.transactional_id_authorization_failed
