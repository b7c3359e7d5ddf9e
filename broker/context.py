"""What a handler sees of the request it serves, and the shapes a handler may answer with."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from minibroker.protocol.codec import build, response_class
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.config import BrokerConfig
    from minibroker.broker.coordinator_runtime import CoordinatorRuntime
    from minibroker.broker.durability import Durability
    from minibroker.broker.dynamic_config import DynamicConfigs
    from minibroker.broker.features import FeatureStore
    from minibroker.broker.fetch_sessions import FetchSessionCache
    from minibroker.broker.group_configs import GroupConfigs
    from minibroker.broker.quotas import ClientQuotas
    from minibroker.broker.security.sasl import Session
    from minibroker.broker.security.service import Security
    from minibroker.broker.share_partitions import SharePartitionManager
    from minibroker.broker.share_sessions import ShareSessionCache
    from minibroker.broker.waiters import DataWaiters
    from minibroker.common.clock import Clock
    from minibroker.common.faults import Faults
    from minibroker.coordinator.groups import GroupCoordinator
    from minibroker.coordinator.share_coordinator import ShareCoordinator
    from minibroker.coordinator.transactions import TransactionCoordinator
    from minibroker.storage.log import PartitionLog
    from minibroker.storage.log_manager import LogManager

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


class HandlerServices(Protocol):
    """What a handler may use of the broker (`ctx.broker`): broker/state.py's Broker in the
    process, a small typed fake in the handler unit tests (tests/unit/handler_fakes.py)."""

    config: BrokerConfig
    clock: Clock
    node_id: int
    host: str  # advertised to clients of a listener without its own advertised address
    port: int
    logs: LogManager
    groups: GroupCoordinator
    txns: TransactionCoordinator
    coordinators: CoordinatorRuntime  # runs the coordinators' operations, answers parked ones
    security: Security
    durability: Durability
    data_waiters: DataWaiters
    fetch_sessions: FetchSessionCache  # KIP-227 incremental fetch sessions (in memory)
    dynamic_configs: DynamicConfigs
    quotas: ClientQuotas  # client quotas (DescribeClientQuotas, AlterClientQuotas, throttling)
    features: FeatureStore
    group_configs: GroupConfigs  # GROUP config resources (KIP-848 per-group settings)
    faults: Faults  # the named crash points (common/faults.py): Produce's produce.after_append
    share_coordinator: ShareCoordinator  # KIP-932 share-partition state (__share_group_state)
    share_partitions: SharePartitionManager  # the in-flight records of share groups
    share_sessions: ShareSessionCache  # ShareFetch share sessions

    def get_log(self, topic: str, partition: int) -> PartitionLog | None: ...

    def auto_create_topic(self, name: str) -> ErrorCode: ...


@dataclass(slots=True)
class RawResponse:
    """A hand-encoded response body: bytes-like parts and storage FileSlices, sent in order."""

    parts: list
    size: int
    #: What was answered, per topic: [(topic, [protocol.fetch_response.PartitionData])], for
    #: observers (request log, metrics); the parts alone do not say.
    summary: list | None = None


class NoResponse:
    """Produce with acks=0: Kafka sends nothing back (the one instance is NO_RESPONSE)."""

    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = NoResponse()


class CloseConnection(Exception):
    """Raised by a handler when Kafka would close the connection instead of answering (for
    example a failed Produce with acks=0, whose client gets no other signal)."""


@dataclass(slots=True)
class RequestContext:
    broker: HandlerServices
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    peer: str
    session: Session | None = None  # listener, principal, authentication state (None in unit tests)
    connection_id: int = 0  # the client connection's (a share session remembers the one opening it)

    def response(self, **fields: Any) -> Any:
        """Build this request's response entity from plain values (see protocol.codec.build)."""
        cls = response_class(self.api_key, self.api_version)
        if cls is None:  # dispatch serves advertised versions only
            raise LookupError(f"no response schema for api key {self.api_key} v{self.api_version}")
        return build(cls, fields)

    # --- authorization helpers: every handler's checks go through these (broker/security) ------
    def allowed(self, operation: int, resource_type: int, name: str) -> bool:
        """May this connection's principal do `operation` on the resource? (True without an
        authorizer.)"""
        return self.broker.security.allowed(self.session, operation, resource_type, name)

    def allowed_any(self, operation: int, resource_type: int) -> bool:
        """May the principal do `operation` on some resource of this type (Kafka's
        authorizeByResourceType)?"""
        return self.broker.security.allowed_any(self.session, operation, resource_type)

    def authorized_operations(self, resource_type: int, name: str) -> int:
        """The authorized-operations bit field for the resource."""
        return self.broker.security.authorized_operations(self.session, resource_type, name)

    @property
    def advertised(self) -> tuple[str, int]:
        """The host and port clients of this connection's listener are told to use."""
        listener = self.session.listener if self.session is not None else None
        if listener is None:
            return self.broker.host, self.broker.port
        return listener.advertised_host, listener.advertised_port


def each_once(items: Sequence[T], key: Callable[[T], K]) -> Iterator[tuple[T, bool]]:
    """Kafka's rule for a name (topic, partition) given more than once in one request: it is
    answered once, with an error, and nothing is done for it. Yields (item, repeated) for every
    item whose key is unique and for the first of each repeated key, in request order."""
    counts = Counter(key(item) for item in items)
    seen: set[K] = set()
    for item in items:
        k = key(item)
        if counts[k] == 1:
            yield item, False
        elif k not in seen:
            seen.add(k)
            yield item, True
