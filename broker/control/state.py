"""The broker's state as tests read it, and waits on it (issue 24 part 4; docs/control-plane/state.md).

Read-only views, built on the broker's loop from the objects that own the state: the partition
logs and their producer state (storage/), the transaction coordinator's transactional ids and the
group coordinator's classic groups and committed offsets (coordinator/). Nothing here changes the
broker; the snapshot functions take those objects (not the Broker), so unit tests call them on a
PartitionLog, TransactionMetadata or Group of their own.

Names are Kafka's: transaction states as its TransactionState prints them (Ongoing,
PrepareCommit...), group states as its classic GroupState (Stable, CompletingRebalance...), a
producer without an open transaction has ongoing_txn_first_offset -1 (DescribeProducers' value).

Waits re-check their condition on a short loop timer (`POLL_S`) until it holds or their timeout
(seconds, at most MAX_WAIT_S) passes; the timeout answers 408 with what was seen last. The timeout
is the caller's real time, not the broker's clock (a manual clock does not move while a test
waits).
"""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from minibroker.broker.control.http import MAX_WAIT_S, ControlError, route
from minibroker.coordinator.group_metadata import Group, GroupState, parse_subscription_topics
from minibroker.coordinator.txn_state import TransactionMetadata, TxnState

if TYPE_CHECKING:
    from minibroker.broker.control import ControlPlane
    from minibroker.coordinator.transactions import TransactionCoordinator
    from minibroker.storage.log import PartitionLog
    from minibroker.storage.log_manager import LogManager

__all__ = [
    "ROUTES",
    "decode_assignment",
    "group_offsets",
    "group_state",
    "partition_state",
    "transaction_state",
    "unfinished_transactions",
]

#: How often a wait looks again (the coordinators have no wake-up to hang on).
POLL_S = 0.015
DEFAULT_WAIT_S = 30.0

#: Transaction states a wait for completion waits out (Kafka's: not yet ended).
OPEN_TXN_STATES = frozenset(
    {TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE}
)
_GROUP_STATES = {s.value.lower(): s for s in GroupState}


# ============================================================================ snapshots
def partition_state(plog: PartitionLog) -> dict[str, Any]:
    """Offsets, segments, producers and open transactions of one partition log."""
    ps = plog.producer_state
    ongoing = ps.ongoing_transactions()
    producers = sorted(ps.producers(), key=lambda e: e.producer_id)
    epochs = {e.producer_id: e.epoch for e in producers}
    return {
        "topic": plog.topic,
        "partition": plog.partition,
        "log_start_offset": plog.log_start_offset,
        "high_watermark": plog.high_watermark,
        "last_stable_offset": plog.last_stable_offset,
        "log_end_offset": plog.log_end_offset,
        "segments": len(plog.segments),
        "size_bytes": sum(seg.size for seg in plog.segments),
        "recovery_point": plog.recovery_point,
        "producers": [
            {
                "producer_id": e.producer_id,
                "producer_epoch": e.epoch,
                "last_sequence": e.last_sequence,
                "ongoing_txn_first_offset": e.current_txn_first_offset_raw,
                "last_timestamp": e.last_timestamp,
                "coordinator_epoch": e.coordinator_epoch,
            }
            for e in producers
        ],
        "ongoing_transactions": [
            {"producer_id": pid, "producer_epoch": epochs.get(pid, -1), "first_offset": first}
            for pid, first in sorted(ongoing.items(), key=lambda item: (item[1], item[0]))
        ],
    }


def transaction_state(meta: TransactionMetadata, pending: TxnState | None = None) -> dict[str, Any]:
    """One transactional id as its coordinator holds it (`pending`: the state being written)."""
    return {
        "transactional_id": meta.transactional_id,
        "producer_id": meta.producer_id,
        "producer_epoch": meta.producer_epoch,
        "state": meta.state.display,
        "pending_state": pending.display if pending is not None else None,
        "partitions": [f"{t}-{p}" for t, p in sorted(meta.partitions)],
        "timeout_ms": meta.timeout_ms,
        "start_ms": meta.txn_start_ms,
        "last_update_ms": meta.last_update_ms,
    }


def group_state(group: Group) -> dict[str, Any]:
    """One classic group: state, generation, protocol, leader and members with their decoded
    consumer assignment ({topic: [partitions]}; None when the group is not a consumer group or
    the bytes are not a ConsumerProtocolAssignment)."""
    consumer = group.protocol_type == "consumer"
    members = []
    for m in group.members.values():
        subscription: list[str] | None = None
        if consumer and group.protocol_name:
            try:
                subscription = sorted(parse_subscription_topics(m.metadata(group.protocol_name)))
            except (KeyError, ValueError, struct.error, UnicodeDecodeError):
                subscription = None
        members.append(
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "session_timeout_ms": m.session_timeout_ms,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "subscription": subscription,
                "assignment": decode_assignment(m.assignment) if consumer else None,
            }
        )
    return {
        "group_id": group.group_id,
        "state": group.state.value,
        "protocol_type": group.protocol_type,
        "protocol": group.protocol_name,
        "generation": group.generation_id,
        "leader": group.leader_id,
        "members": members,
        "pending_members": len(group.pending_members),
    }


def group_offsets(group: Group) -> dict[str, Any]:
    """The group's committed offsets, and the transactional ones staged until their commit."""
    return {
        "offsets": [
            {
                "topic": t,
                "partition": p,
                "offset": o.offset,
                "metadata": o.metadata,
                "leader_epoch": o.leader_epoch,
                "commit_timestamp_ms": o.commit_timestamp,
            }
            for (t, p), o in sorted(group.offsets.items())
        ],
        "pending_transactional": [
            {"producer_id": pid, "topic": t, "partition": p, "offset": o.offset}
            for pid, staged in sorted(group.pending_txn_offsets.items())
            for (t, p), o in sorted(staged.items())
        ],
    }


def unfinished_transactions(txns: TransactionCoordinator, logs: LogManager) -> dict[str, Any]:
    """What keeps transactions from being complete: transactional ids in (or being written to)
    Ongoing, PrepareCommit, PrepareAbort or PrepareEpochFence, and partitions with an open
    transaction (their LSO below the high watermark). Both lists empty: all complete."""
    ids = []
    for txn_id, meta in sorted(txns.txns.items()):
        pending = txns.pending_state(txn_id)
        if meta.state in OPEN_TXN_STATES or pending in OPEN_TXN_STATES:
            ids.append(transaction_state(meta, pending))
    partitions = []
    for plog in logs.all_logs():
        if plog.producer_state.first_unstable_offset() is not None:
            state = partition_state(plog)
            partitions.append(
                {
                    "topic": plog.topic,
                    "partition": plog.partition,
                    "last_stable_offset": state["last_stable_offset"],
                    "high_watermark": state["high_watermark"],
                    "ongoing_transactions": state["ongoing_transactions"],
                }
            )
    partitions.sort(key=lambda d: (d["topic"], d["partition"]))
    return {"transactions": ids, "partitions": partitions}


def decode_assignment(data: bytes) -> dict[str, list[int]] | None:
    """{topic: [partitions]} of a ConsumerProtocolAssignment (versions 0-3 share the layout:
    int16 version, [topic string, [int32 partition]], user data); None if it is not one. An
    empty assignment (no bytes: not yet synced) is {}."""
    buf = bytes(data)
    if not buf:
        return {}
    try:
        pos = 2  # the version
        (count,) = struct.unpack_from(">i", buf, pos)
        pos += 4
        if count < 0 or count > len(buf):
            return None
        out: dict[str, list[int]] = {}
        for _ in range(count):
            (length,) = struct.unpack_from(">h", buf, pos)
            pos += 2
            if length < 0 or pos + length > len(buf):
                return None
            topic = buf[pos : pos + length].decode("utf-8")
            pos += length
            (n,) = struct.unpack_from(">i", buf, pos)
            pos += 4
            if n < 0 or pos + 4 * n > len(buf):
                return None
            out.setdefault(topic, []).extend(struct.unpack_from(f">{n}i", buf, pos))
            pos += 4 * n
        return {t: sorted(ps) for t, ps in out.items()}
    except (struct.error, UnicodeDecodeError):
        return None


# ============================================================================ routes
def _param(params: dict[str, str], name: str) -> str:
    return params[name]  # percent-decoded by broker/control/http.py


def _required(query: dict[str, str], name: str) -> str:
    value = query.get(name)
    if value is None or value == "":
        raise ControlError(400, f"query parameter {name!r} is required")
    return value


def _int(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ControlError(400, f"{name} must be an integer, not {value!r}") from None


def _timeout(query: dict[str, str]) -> float:
    raw = query.get("timeout")
    if raw is None or raw == "":
        return DEFAULT_WAIT_S
    try:
        seconds = float(raw)
    except ValueError:
        raise ControlError(400, f"timeout must be a number of seconds, not {raw!r}") from None
    if not seconds >= 0:
        raise ControlError(400, f"timeout must be >= 0 seconds, not {raw!r}")
    return min(seconds, MAX_WAIT_S)


def _flag(query: dict[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("1", "true", "yes")


def _plog(plane: ControlPlane, topic: str, partition: int) -> PartitionLog:
    logs = plane.broker.logs
    info = logs.topics.get(topic)
    if info is None:
        raise ControlError(404, f"no topic {topic!r}")
    plog = logs.get_log(topic, partition)
    if plog is None:
        raise ControlError(
            404, f"topic {topic!r} has {info.num_partitions} partition(s): no partition {partition}"
        )
    return plog


def _group(plane: ControlPlane, group_id: str) -> Group:
    group = plane.broker.groups.groups.get(group_id)
    if group is None:
        raise ControlError(404, f"no group {group_id!r} (GET /v1/state/groups lists them)")
    return group


async def _wait(check: Callable[[], tuple[bool, Any]], timeout_s: float, what: str) -> Any:
    """What `check` saw once it holds; 408 with what it saw last after `timeout_s`."""
    done, seen = check()
    if done:
        return seen
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                await asyncio.sleep(POLL_S)
                done, seen = check()
                if done:
                    return seen
    except TimeoutError:
        raise ControlError(
            408, f"{what}: not reached within {timeout_s:g}s; last seen: {json.dumps(seen, default=str)}"
        ) from None


@route(
    "GET",
    "/v1/state/partitions",
    "every partition's offsets, producers and open transactions (?topic=, ?internal=true)",
)
async def _partitions(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    logs = plane.broker.logs
    topic = query.get("topic")
    if topic:
        if topic not in logs.topics:
            raise ControlError(404, f"no topic {topic!r}")
        names = [topic]
    else:
        internal = _flag(query, "internal")
        names = sorted(name for name, info in logs.topics.items() if internal or not info.internal)
    out = []
    for name in names:
        for p in range(logs.topics[name].num_partitions):
            plog = logs.get_log(name, p)
            if plog is not None:
                out.append(partition_state(plog))
    return {"partitions": out}


@route(
    "GET",
    "/v1/state/partitions/{topic}/{partition}",
    "one partition's offsets, producers and open transactions",
)
async def _partition(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    topic = _param(params, "topic")
    return partition_state(_plog(plane, topic, _int(_param(params, "partition"), "partition")))


@route("GET", "/v1/state/transactions", "every transactional id with its state (?state=Ongoing)")
async def _transactions(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    txns = plane.broker.txns
    wanted = query.get("state")
    return {
        "transactions": [
            transaction_state(meta, txns.pending_state(txn_id))
            for txn_id, meta in sorted(txns.txns.items())
            if not wanted or meta.state.display.lower() == wanted.lower()
        ]
    }


@route("GET", "/v1/state/transactions/{transactional_id}", "one transactional id")
async def _transaction(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    txns = plane.broker.txns
    txn_id = _param(params, "transactional_id")
    meta = txns.txns.get(txn_id)
    if meta is None:
        raise ControlError(404, f"no transactional id {txn_id!r} (GET /v1/state/transactions lists them)")
    return transaction_state(meta, txns.pending_state(txn_id))


@route("GET", "/v1/state/groups", "every classic group with its state, members and assignments")
async def _groups(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    groups = plane.broker.groups.groups
    return {"groups": [group_state(groups[g]) for g in sorted(groups)]}


@route("GET", "/v1/state/groups/{group}", "one group: state, generation, leader, members, assignments")
async def _group_route(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    return group_state(_group(plane, _param(params, "group")))


@route("GET", "/v1/state/groups/{group}/offsets", "one group's committed offsets")
async def _offsets(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    return group_offsets(_group(plane, _param(params, "group")))


@route(
    "GET", "/v1/state/wait/group", "until the group is in ?state= and/or has ?members= members (?timeout= s)"
)
async def _wait_group(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    group_id = _required(query, "group")
    state: GroupState | None = None
    if query.get("state"):
        state = _GROUP_STATES.get(query["state"].lower())
        if state is None:
            raise ControlError(
                400,
                f"unknown group state {query['state']!r}: one of {', '.join(s.value for s in GroupState)}",
            )
    members = _int(query["members"], "members") if query.get("members") else None
    groups = plane.broker.groups.groups

    def check() -> tuple[bool, Any]:
        group = groups.get(group_id)
        if group is None:  # Dead with no members to Kafka's DescribeGroups, but does not exist
            absent: dict[str, Any] = {"group_id": group_id, "state": None, "members": []}
            asked = state is not None or members is not None
            return asked and state in (None, GroupState.DEAD) and members in (None, 0), absent
        seen = group_state(group)
        return (state is None or group.state == state) and (members is None or group.size == members), seen

    wanted = " with ".join(
        part
        for part in (state.value if state else None, f"{members} member(s)" if members is not None else None)
        if part
    )
    return await _wait(check, _timeout(query), f"group {group_id!r} {wanted or 'exists'}")


@route(
    "GET",
    "/v1/state/wait/offset",
    "until the group's committed offset of ?topic=&partition= is >= ?offset= (?timeout= s)",
)
async def _wait_offset(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    group_id = _required(query, "group")
    tp = (_required(query, "topic"), _int(_required(query, "partition"), "partition"))
    offset = _int(_required(query, "offset"), "offset")
    groups = plane.broker.groups.groups

    def check() -> tuple[bool, Any]:
        group = groups.get(group_id)
        committed = group.offsets.get(tp) if group is not None else None
        seen = {
            "group_id": group_id,
            "topic": tp[0],
            "partition": tp[1],
            "offset": committed.offset if committed is not None else None,
            "metadata": committed.metadata if committed is not None else None,
            "leader_epoch": committed.leader_epoch if committed is not None else None,
        }
        return committed is not None and committed.offset >= offset, seen

    return await _wait(
        check, _timeout(query), f"group {group_id!r} committed offset >= {offset} on {tp[0]}-{tp[1]}"
    )


@route(
    "GET",
    "/v1/state/wait/transactions-complete",
    "until no transaction is open or being completed (?timeout= s)",
)
async def _wait_transactions(
    plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any
) -> Any:
    broker = plane.broker

    def check() -> tuple[bool, Any]:
        seen = unfinished_transactions(broker.txns, broker.logs)
        return not seen["transactions"] and not seen["partitions"], seen

    return await _wait(check, _timeout(query), "every transaction complete")


ROUTES = [
    _partitions,
    _partition,
    _transactions,
    _transaction,
    _groups,
    _group_route,
    _offsets,
    _wait_group,
    _wait_offset,
    _wait_transactions,
]
