"""What a handler sees of the request it serves, and the shapes a handler may answer with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from minibroker.protocol.codec import build, response_class

if TYPE_CHECKING:
    from minibroker.broker.state import Broker


@dataclass(slots=True)
class RawResponse:
    """A hand-encoded response body: bytes-like parts and storage FileSlices, sent in order."""

    parts: list
    size: int
    #: What was answered, per topic: [(topic, [protocol.fetch_response.PartitionData])], for
    #: observers (request log, metrics); the parts alone do not say.
    summary: list | None = None


class _NoResponse:
    """Produce with acks=0: Kafka sends nothing back."""

    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()


class CloseConnection(Exception):
    """Raised by a handler when Kafka would close the connection instead of answering (for
    example a failed Produce with acks=0, whose client gets no other signal)."""


@dataclass(slots=True)
class RequestContext:
    broker: Broker
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    peer: str
    session: Any = None  # broker.security.sasl.Session: listener, principal, authentication state

    def response(self, **fields: Any):
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
