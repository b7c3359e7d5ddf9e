"""A broker for handler unit tests: broker.context.HandlerServices with the collaborators a test
gives, a coordinator runtime (running the operations of the test's coordinators) and None for
the rest (a handler that reaches one it was not given fails the test with an AttributeError on
None). tests/unit/test_handler_types.py keeps it in step with the Protocol."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from minibroker.broker.coordinator_runtime import CoordinatorRuntime
from minibroker.broker.fetch_sessions import FetchSessionCache
from minibroker.common.clock import ManualClock
from minibroker.common.faults import Faults
from minibroker.protocol.errors import ErrorCode


@dataclass
class FakeBroker:
    """The HandlerServices a handler test hands in (fields as in broker/context.py); each
    collaborator is a real one or a small fake of the test's own (AllowAll, DenyAll...)."""

    config: Any = None
    clock: Any = field(default_factory=ManualClock)
    node_id: int = 7
    host: str = "broker.example"
    port: int = 9999
    logs: Any = None
    groups: Any = None
    txns: Any = None
    security: Any = None
    durability: Any = None
    data_waiters: Any = None
    fetch_sessions: Any = field(default_factory=lambda: FetchSessionCache(1000, ManualClock()))
    dynamic_configs: Any = None
    quotas: Any = field(default_factory=lambda: SimpleNamespace(active=False))  # no client quotas
    features: Any = None
    group_configs: Any = None
    faults: Any = field(default_factory=Faults)  # none armed
    coordinators: Any = field(default_factory=lambda: CoordinatorRuntime(durability=None))
    share_coordinator: Any = None
    share_partitions: Any = None
    share_sessions: Any = None

    def get_log(self, topic: str, partition: int) -> Any:
        return self.logs.get_log(topic, partition)

    def auto_create_topic(self, name: str) -> ErrorCode:
        raise AssertionError(f"this test creates no topic ({name})")
