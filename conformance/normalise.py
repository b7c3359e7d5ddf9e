"""Make two correct brokers' answers comparable: remove what may legitimately differ.

What may differ (and why): cluster and topic ids, producer ids and member ids (chosen by the
broker at random or from counters), listener ports, throttle times, broker-chosen timestamps
(append time, transaction start), error message texts and config documentation (clients only
show them), fetch session ids. Everything else a client can read, including list contents, must
be equal; list order is compared only where the protocol gives it a meaning (records).
"""

from __future__ import annotations

import re
import struct

DROPPED = {"throttle_time_ms", "throttle_time", "error_message", "session_id"}
#: Broker-chosen ids: only "set or not" is comparable.
OPAQUE_IDS = {
    "cluster_id",
    "topic_id",
    "producer_id",
    "port",
    "client_instance_id",  # KIP-714: a fresh random id per client instance
    "log_dir",
    "total_bytes",
    "usable_bytes",
    "replica_directory_id",
}  # each broker's own directory and disk
#: Generated member ids: replaced by their order of first appearance in the case.
MEMBER_IDS = {"member_id", "leader", "group_leader"}
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
_WALL_CLOCK = range(10**12, 10**14)  # epoch milliseconds from 2001 on
_BATCH_HEAD = struct.Struct(">qiibIhiqqqhii")
#: Epoch milliseconds (and now - before.max.ms bounds) inside record error texts.
_CLOCK_IN_TEXT = re.compile(r"-?\d{13,}")


class Normaliser:
    def __init__(self) -> None:
        self.members: dict[str, str] = {}

    def __call__(self, value, key: str = ""):
        if isinstance(value, dict):
            return {str(k): self(v, str(k)) for k, v in value.items() if k not in DROPPED}
        if isinstance(value, list):
            items = [self(v, key) for v in value]
            if key == "entity" or (
                key == "entries" and all(isinstance(i, dict) and "entity" in i for i in items)
            ):
                items.sort(key=repr)  # client quota entities and their entries: Java hash-map order
            return items
        if key == "subscription_id" and isinstance(value, int):
            return "<subscription_id>"  # KIP-714: a CRC XOR the random instance id's hash
        if key in OPAQUE_IDS:
            if value is None or value == ZERO_UUID or (isinstance(value, int) and value < 0):
                return value
            return f"<{key}>"
        if key in MEMBER_IDS and isinstance(value, str) and value:
            return self.members.setdefault(value, f"<member#{len(self.members) + 1}>")
        if ("time" in key or "timestamp" in key) and isinstance(value, int) and value in _WALL_CLOCK:
            return "<wall-clock>"
        if key == "documentation" and isinstance(value, str):
            return "<text>"  # prose, like error messages: only whether it is given is compared
        if key == "batch_index_error_message" and isinstance(value, str):
            return _CLOCK_IN_TEXT.sub("<wall-clock>", value)
        if key == "records" and isinstance(value, str):
            return record_batches(bytes.fromhex(value))
        return value


def record_batches(data: bytes) -> list:
    """Magic-2 batch headers and record bytes; producer id and CRC (which covers it) dropped."""
    out, pos = [], 0
    while pos + 61 <= len(data):
        (
            base,
            length,
            leader_epoch,
            magic,
            _crc,
            attrs,
            last_delta,
            first_ts,
            max_ts,
            pid,
            epoch,
            base_seq,
            count,
        ) = _BATCH_HEAD.unpack_from(data, pos)
        end = pos + 12 + length
        if end > len(data):
            out.append({"partial_batch_bytes": len(data) - pos})
            break
        out.append(
            {
                "base_offset": base,
                "length": length,
                "leader_epoch": leader_epoch,
                "magic": magic,
                "attributes": attrs,
                "last_offset_delta": last_delta,
                # LogAppendTime batches and control batches (markers) carry the broker's clock
                "first_timestamp": "<wall-clock>" if attrs & 0x28 else first_ts,
                "max_timestamp": "<wall-clock>" if attrs & 0x28 else max_ts,
                "producer_id": "<producer_id>" if pid >= 0 else pid,
                "producer_epoch": epoch,
                "base_sequence": base_seq,
                "record_count": count,
                "records": data[pos + 61 : end].hex(),
            }
        )
        pos = end
    if pos < len(data) and not (out and "partial_batch_bytes" in out[-1]):
        out.append({"partial_batch_bytes": len(data) - pos})
    return out
