"""Request faults and observers from Python (docs/control-plane/faults.md).

    f = b.faults.add(api="Produce", topic="orders", partition=0, error="NOT_LEADER_OR_FOLLOWER", count=3)
    f.wait(3, timeout=10)               # until it has fired 3 times
    seen = b.faults.observe(api="JoinGroup"); seen.wait(2, timeout=10); seen.count

`predicate=` makes the fault an `ask` fault: each matching request waits in the broker while a
daemon thread of this process calls `predicate(request)` with the request as a dict (its fields
by their Kafka names, durations in ms, bytes as base64, record batches as {"size": n}, a topic
given by id also named, and "header": {"api", "api_key", "api_version", "client_id",
"correlation_id"}: the same shape `where` paths walk), and fires the fault when it returns true.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from minibroker.control.client import ControlError

if TYPE_CHECKING:
    from minibroker.control.client import ControlClient

__all__ = ["Fault", "FaultsAPI"]

Predicate = Callable[[dict[str, Any]], object]

#: How long one long poll of the asks lasts (the thread checks for its stop between polls).
_ASK_POLL_S = 2.0


class Fault:
    """One fault or observer on the broker: `.count` (fired; observers: answered), `.matched`,
    `.wait(n, timeout)`, `.remove()`, `.info()`."""

    def __init__(self, api: FaultsAPI, info: dict[str, Any]) -> None:
        self._api = api
        self.id: int = info["id"]
        self._info = info
        self._asker: _Asker | None = None

    def info(self) -> dict[str, Any]:
        """The fault as the broker holds it now: its rule, "matched" and "fired"."""
        self._info = dict(self._api._client.get(f"/v1/faults/{self.id}"))
        return self._info

    @property
    def count(self) -> int:
        return int(self.info()["fired"])

    @property
    def matched(self) -> int:
        return int(self.info()["matched"])

    def wait(self, n: int = 1, timeout: float = 30.0) -> Fault:
        """Block until the fault has fired (an observer: answered) `n` times; AssertionError
        (ControlError, 408) with the count seen when `timeout` seconds pass first."""
        self._info = dict(
            self._api._client.request(
                "GET", f"/v1/faults/{self.id}/wait", query={"n": n, "timeout": timeout}, timeout=timeout
            )
        )
        return self

    def remove(self) -> None:
        """Remove the fault (a request parked on its predicate goes on unfaulted)."""
        if self._asker is not None:
            self._asker.stop()
        try:
            self._api._client.delete(f"/v1/faults/{self.id}")
        except ControlError as exc:
            if exc.status != 404:  # already gone (cleared)
                raise

    def __repr__(self) -> str:
        return f"Fault({self._info!r})"


class _Asker:
    """The daemon thread answering one ask fault's matches with the test's predicate."""

    def __init__(self, client: ControlClient, fault_id: int, predicate: Predicate) -> None:
        self._client = client
        self._fault_id = fault_id
        self._predicate = predicate
        self._stopped = threading.Event()
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name=f"fault-{fault_id}-predicate", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        path = f"/v1/faults/{self._fault_id}/asks"
        while not self._stopped.is_set():
            try:
                asks = self._client.request("GET", path, query={"timeout": _ASK_POLL_S}, timeout=_ASK_POLL_S)
            except ControlError:  # the fault was removed, or the broker is gone
                return
            for ask in asks["asks"]:
                try:
                    fire = bool(self._predicate(ask["request"]))
                except Exception as exc:  # noqa: BLE001 - a failing predicate does not fire; kept for the test
                    self.errors.append(exc)
                    fire = False
                try:
                    self._client.post(f"{path}/{ask['id']}", {"fire": fire})
                except ControlError:
                    pass  # timed out on the broker (not fired) or the fault was removed


class FaultsAPI:
    """`b.faults`: add, observe, list, remove and clear request faults."""

    def __init__(self, client: ControlClient) -> None:
        self._client = client
        self._askers: dict[int, _Asker] = {}

    def add(
        self,
        *,
        api: str | int | None = None,
        versions: tuple[int, int] | list[int] | None = None,
        topic: str | None = None,
        partition: int | None = None,
        client_id: str | None = None,
        transactional_id: str | None = None,
        group_id: str | None = None,
        where: dict[str, Any] | None = None,
        error: str | int | None = None,
        delay_ms: int | None = None,
        disconnect: str | None = None,
        throttle_ms: int | None = None,
        count: int | None = None,
        every: int | None = None,
        probability: float | None = None,
        seed: int | None = None,
        predicate: Predicate | None = None,
    ) -> Fault:
        """A fault: match keys (all must hold), actions (error, delay_ms, disconnect "before" |
        "after", throttle_ms; combinable) and triggers (count: the first N matches; every: every
        Nth; probability with seed; predicate: called with each matching request as a dict)."""
        rule = {
            "api": api,
            "versions": list(versions) if versions is not None else None,
            "topic": topic,
            "partition": partition,
            "client_id": client_id,
            "transactional_id": transactional_id,
            "group_id": group_id,
            "where": where,
            "error": error,
            "delay_ms": delay_ms,
            "disconnect": disconnect,
            "throttle_ms": throttle_ms,
            "count": count,
            "every": every,
            "probability": probability,
            "seed": seed,
            "ask": True if predicate is not None else None,
        }
        fault = Fault(self, self._client.post("/v1/faults", {k: v for k, v in rule.items() if v is not None}))
        if predicate is not None:
            fault._asker = self._askers[fault.id] = _Asker(self._client, fault.id, predicate)
        return fault

    def observe(
        self,
        *,
        api: str | int | None = None,
        versions: tuple[int, int] | list[int] | None = None,
        topic: str | None = None,
        partition: int | None = None,
        client_id: str | None = None,
        transactional_id: str | None = None,
        group_id: str | None = None,
        where: dict[str, Any] | None = None,
    ) -> Fault:
        """An observer: counts the matching requests once answered (`.count`, `.wait(n)`)."""
        rule = {
            "api": api,
            "versions": list(versions) if versions is not None else None,
            "topic": topic,
            "partition": partition,
            "client_id": client_id,
            "transactional_id": transactional_id,
            "group_id": group_id,
            "where": where,
            "observe": True,
        }
        return Fault(self, self._client.post("/v1/faults", {k: v for k, v in rule.items() if v is not None}))

    def list(self) -> list[dict[str, Any]]:
        return list(self._client.get("/v1/faults")["faults"])

    def get(self, fault_id: int) -> Fault:
        return Fault(self, self._client.get(f"/v1/faults/{fault_id}"))

    def remove(self, fault_id: int) -> None:
        asker = self._askers.pop(fault_id, None)
        if asker is not None:
            asker.stop()
        self._client.delete(f"/v1/faults/{fault_id}")

    def clear(self) -> None:
        """Remove every fault and observer."""
        for asker in self._askers.values():
            asker.stop()
        self._askers.clear()
        self._client.delete("/v1/faults")
