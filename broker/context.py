"""What a handler sees of the request it serves, and the shapes a handler may answer with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.codec import build, response_class

if TYPE_CHECKING:
    from broker.state import Broker


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
    broker: "Broker"
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    peer: str

    def response(self, **fields: Any):
        """Build this request's response entity from plain values (see protocol.codec.build)."""
        return build(response_class(self.api_key, self.api_version), fields)
