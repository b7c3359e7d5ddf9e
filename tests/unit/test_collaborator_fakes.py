"""The coordinators' unit tests run on fakes; each fake must implement its protocol in full
(coordinator/collaborators.py), and so must the real collaborators broker/state.py wires."""

from __future__ import annotations

import pytest
from minibroker.broker.coordinator_runtime import CoordinatorRuntime
from minibroker.common.clock import SYSTEM_CLOCK
from minibroker.coordinator import collaborators as c
from minibroker.coordinator.group_store import LogOffsetsStore
from minibroker.coordinator.producer_ids import ProducerIdManager
from minibroker.coordinator.txn_log import LogTxnStore
from minibroker.storage.log_manager import LogManager

from tests.unit.coordinator_fakes import (
    EveryTopicCatalog,
    MemoryOffsetsStore,
    MemoryTopicCatalog,
    MemoryTxnStore,
)
from tests.unit.test_group_commit import NoGroups, open_logs
from tests.unit.test_groups import CONFIG, FakeScheduler, group_coordinator
from tests.unit.test_transactions import FakeGroups, FakeIds, FakeLog, FakeLogs


@pytest.mark.parametrize(
    "fake, protocol",
    [
        (MemoryOffsetsStore(1), c.OffsetsStore),
        (MemoryTxnStore(1), c.TxnStore),
        (EveryTopicCatalog(), c.TopicCatalog),
        (MemoryTopicCatalog({"t": 1}), c.TopicCatalog),
        (FakeScheduler(), c.Scheduler),
        (FakeScheduler().call_later(1, lambda: None), c.TimerHandle),
        (FakeLogs([]), c.TransactionPartitions),
        (FakeLog("t", 0, []), c.MarkerLog),
        (FakeGroups([]), c.TxnOffsetsParticipant),
        (NoGroups(), c.TxnOffsetsParticipant),
        (FakeIds(), c.ProducerIdSource),
    ],
)
def test_fakes_implement_their_protocol(fake, protocol):
    assert isinstance(fake, protocol)


def test_real_collaborators_implement_the_protocols(tmp_path):
    logs: LogManager = open_logs(tmp_path)
    logs.create_topic("t", 1, {})
    assert isinstance(logs, c.TopicCatalog) and isinstance(logs, c.TransactionPartitions)
    assert isinstance(logs.get_log("t", 0), c.MarkerLog)
    assert isinstance(LogOffsetsStore(logs, 1, clock=SYSTEM_CLOCK), c.OffsetsStore)
    assert isinstance(LogTxnStore(logs, 1, clock=SYSTEM_CLOCK), c.TxnStore)
    assert isinstance(CoordinatorRuntime(durability=None).timer(), c.Scheduler)
    assert isinstance(ProducerIdManager(str(tmp_path)), c.ProducerIdSource)
    gc = group_coordinator(dict(CONFIG), store=MemoryOffsetsStore(1), scheduler=FakeScheduler())
    assert isinstance(gc, c.TxnOffsetsParticipant)
    logs.close()
