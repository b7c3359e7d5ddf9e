"""The HTTP JSON client of the control plane (standard library only: a test process imports
nothing else for it)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from functools import cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

if TYPE_CHECKING:
    from minibroker.control.clock import ClockAPI
    from minibroker.control.faults import FaultsAPI
    from minibroker.control.state import StateAPI

__all__ = ["ControlClient", "ControlError"]

#: Added to a wait's own timeout for the HTTP round trip.
_SLACK_S = 10.0


class ControlError(AssertionError):
    """The control plane refused a request (`status`, the broker's `message`), or could not be
    reached (status 0)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(
            f"control plane: {message} (HTTP {status})" if status else f"control plane: {message}"
        )
        self.status = status
        self.message = message


class ControlClient:
    """One broker's control plane at `address` ("host:port" or "http://host:port")."""

    def __init__(self, address: str, token: str | None = None, *, timeout: float = 30.0) -> None:
        self.base = address if address.startswith("http") else f"http://{address}"
        self.base = self.base.rstrip("/")
        self.token = token or None
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """One call: the decoded JSON answer, or ControlError with the broker's reason."""
        url = self.base + path
        if query:
            url += "?" + urlencode({k: _query_value(v) for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - http to our own endpoint
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=(timeout or self.timeout) + _SLACK_S) as response:  # noqa: S310
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read()).get("error", exc.reason)
            except ValueError:
                message = str(exc.reason)
            raise ControlError(exc.code, message) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ControlError(0, f"cannot reach {self.base}: {reason}") from None

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query)

    def post(self, path: str, body: Any = None, **query: Any) -> Any:
        return self.request("POST", path, body if body is not None else {}, query=query)

    def delete(self, path: str, **query: Any) -> Any:
        return self.request("DELETE", path, query=query)

    # --- the parts -------------------------------------------------------------------------------
    @cached_property
    def faults(self) -> FaultsAPI:
        from minibroker.control.faults import FaultsAPI  # noqa: PLC0415

        return FaultsAPI(self)

    @cached_property
    def clock(self) -> ClockAPI:
        from minibroker.control.clock import ClockAPI  # noqa: PLC0415

        return ClockAPI(self)

    @cached_property
    def state(self) -> StateAPI:
        from minibroker.control.state import StateAPI  # noqa: PLC0415

        return StateAPI(self)

    def crash_at(
        self, point: str, *, key: str | None = None, after: int | None = None, hits: int | None = None
    ) -> dict[str, Any]:
        """Arm a crash point (docs/control-plane/crash-points.md): the broker dies as SIGKILL
        would when it is reached (limited to `key`; txn.after_markers after `after` partitions'
        markers; the `hits`th time). Returns {"armed": [...]}."""
        body = {"point": point, "key": key, "after": after, "hits": hits}
        return dict(self.post("/v1/crash", {k: v for k, v in body.items() if v is not None}))

    def crash_points(self) -> dict[str, Any]:
        """{"armed": [...], "points": {name: what is durable when it fires}}."""
        return dict(self.get("/v1/crash"))

    def disarm(self) -> None:
        """Disarm every crash point."""
        self.delete("/v1/crash")

    def reset(self) -> None:
        """Remove every fault and observer and disarm every crash point."""
        self.post("/v1/reset")

    def routes(self) -> list[dict[str, str]]:
        return list(self.get("/v1")["routes"])

    def __repr__(self) -> str:
        return f"ControlClient({self.base!r})"


class ControlParts:
    """The control plane's parts on a broker object (`minibroker.testing.BrokerProcess`, the pytest
    plugin's `ExternalBroker`): each delegates to the object's `control` (a ControlClient)."""

    @property
    def control(self) -> ControlClient:
        raise NotImplementedError

    @property
    def faults(self) -> FaultsAPI:
        """Request faults and observers: `b.faults.add(api="Produce", error=..., count=3)`."""
        return self.control.faults

    @property
    def clock(self) -> ClockAPI:
        """The broker's clock: `b.clock.advance(61)` (seconds), with `clock="manual"`."""
        return self.control.clock

    @property
    def state(self) -> StateAPI:
        """What the broker holds: `b.state.partition("orders", 0)`, `b.state.transactions()`."""
        return self.control.state

    def crash_at(
        self, point: str, *, key: str | None = None, after: int | None = None, hits: int | None = None
    ) -> None:
        """Arm a crash point: the broker dies as if SIGKILLed when it gets there."""
        self.control.crash_at(point, key=key, after=after, hits=hits)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
