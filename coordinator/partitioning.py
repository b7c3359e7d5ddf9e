"""Which partition of an internal topic holds a key: Kafka's formula, in one place.

Both coordinators place their keys (group ids in `__consumer_offsets`, transactional ids in
`__transaction_state`) with `Utils.abs(key.hashCode()) % numPartitions`, so a client's
FindCoordinator answer and the broker's own bookkeeping agree with Apache Kafka's for any
partition count.
"""

from __future__ import annotations

_INT_MIN = -(1 << 31)


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, int32 arithmetic)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: str, num_partitions: int) -> int:
    """Kafka's `Utils.abs(key.hashCode) % partitions` (Utils.abs maps MIN_VALUE to 0)."""
    h = java_string_hash(key)
    return (0 if h == _INT_MIN else abs(h)) % num_partitions
