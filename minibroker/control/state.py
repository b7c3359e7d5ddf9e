"""The broker's state from Python: partitions, producers, transactions, groups, committed offsets,
and waits on them (docs/control-plane/state.md). Every call is one request to the control plane
(`GET /v1/state/...`); the answers are the broker's JSON as dicts and lists.

    b.state.partition("orders", 0)["last_stable_offset"]
    b.state.wait_for_group("g", "Stable", members=2, timeout=30)
    b.state.committed("g")  # {("orders", 0): 42, ...}

A wait that times out raises ControlError (an AssertionError) with what the broker saw last.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from minibroker.control.client import ControlClient

__all__ = ["StateAPI"]

DEFAULT_TIMEOUT_S = 30.0


def _seg(value: object) -> str:
    """One path segment (a group id may hold '/', '?', ...)."""
    return quote(str(value), safe="")


class StateAPI:
    """`b.state` of a broker with the control plane on."""

    def __init__(self, client: ControlClient) -> None:
        self._client = client

    # --- partitions --------------------------------------------------------------------------
    def partition(self, topic: str, partition: int) -> dict[str, Any]:
        """{"topic", "partition", "log_start_offset", "high_watermark", "last_stable_offset",
        "log_end_offset", "segments", "size_bytes", "recovery_point", "producers": [{"producer_id",
        "producer_epoch", "last_sequence", "ongoing_txn_first_offset" (-1: none),
        "last_timestamp", "coordinator_epoch"}], "ongoing_transactions": [{"producer_id",
        "producer_epoch", "first_offset"}]}; ControlError 404 for an unknown topic or partition."""
        return dict(self._client.get(f"/v1/state/partitions/{_seg(topic)}/{int(partition)}"))

    def partitions(self, topic: str | None = None, *, internal: bool = False) -> list[dict[str, Any]]:
        """`partition()` of every partition (of `topic`; the internal topics only with
        `internal=True` or when named)."""
        answer = self._client.get("/v1/state/partitions", topic=topic, internal=internal or None)
        return list(answer["partitions"])

    # --- transactions ------------------------------------------------------------------------
    def transactions(self, state: str | None = None) -> list[dict[str, Any]]:
        """Every transactional id (in `state`, e.g. "Ongoing"): {"transactional_id",
        "producer_id", "producer_epoch", "state", "pending_state", "partitions": ["t-0", ...],
        "timeout_ms", "start_ms", "last_update_ms"}."""
        return list(self._client.get("/v1/state/transactions", state=state)["transactions"])

    def transaction(self, transactional_id: str) -> dict[str, Any]:
        """One transactional id (as in `transactions()`); ControlError 404 if unknown."""
        return dict(self._client.get(f"/v1/state/transactions/{_seg(transactional_id)}"))

    # --- groups ------------------------------------------------------------------------------
    def groups(self) -> list[dict[str, Any]]:
        """`group()` of every classic group."""
        return list(self._client.get("/v1/state/groups")["groups"])

    def group(self, group_id: str) -> dict[str, Any]:
        """{"group_id", "state", "protocol_type", "protocol", "generation", "leader", "members":
        [{"member_id", "group_instance_id", "client_id", "client_host", "session_timeout_ms",
        "rebalance_timeout_ms", "subscription": [topics], "assignment": {topic: [partitions]}}],
        "pending_members"}; ControlError 404 if unknown."""
        return dict(self._client.get(f"/v1/state/groups/{_seg(group_id)}"))

    def offsets(self, group_id: str) -> list[dict[str, Any]]:
        """The group's committed offsets: [{"topic", "partition", "offset", "metadata",
        "leader_epoch", "commit_timestamp_ms"}]."""
        return list(self._client.get(f"/v1/state/groups/{_seg(group_id)}/offsets")["offsets"])

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """{(topic, partition): committed offset} of the group."""
        return {(o["topic"], o["partition"]): o["offset"] for o in self.offsets(group_id)}

    # --- waits -------------------------------------------------------------------------------
    def wait_for_group(
        self,
        group_id: str,
        state: str | None = "Stable",
        members: int | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> dict[str, Any]:
        """The group (as `group()`) once it is in `state` (None: any) with `members` members
        (None: any number); ControlError 408 with what was seen after `timeout` seconds."""
        query = {"group": group_id, "state": state, "members": members, "timeout": timeout}
        return dict(self._client.request("GET", "/v1/state/wait/group", query=query, timeout=timeout))

    def wait_for_offset(
        self, group_id: str, topic: str, partition: int, offset: int, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> dict[str, Any]:
        """{"group_id", "topic", "partition", "offset", "metadata", "leader_epoch"} once the
        group's committed offset of the partition is >= `offset`; ControlError 408 otherwise."""
        query = {
            "group": group_id,
            "topic": topic,
            "partition": partition,
            "offset": offset,
            "timeout": timeout,
        }
        return dict(self._client.request("GET", "/v1/state/wait/offset", query=query, timeout=timeout))

    def wait_for_transactions_complete(self, *, timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
        """Returns once no transactional id is Ongoing, PrepareCommit, PrepareAbort or
        PrepareEpochFence and no partition has an open transaction; ControlError 408 with the
        ones still open otherwise."""
        query = {"timeout": timeout}
        return dict(
            self._client.request("GET", "/v1/state/wait/transactions-complete", query=query, timeout=timeout)
        )
