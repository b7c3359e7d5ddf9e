"""Java's hash iteration order, so the assignors give the same answer as Kafka's for the same
input: `java.util.HashMap`/`HashSet` iterate by bucket (the spread hash of the key's hashCode,
masked by the table size) and, within a bucket, by insertion; the table doubles past 0.75 full.

A resize splits each bucket in two keeping the entries' relative order, so the final order
depends only on the final table size and the insertion order. Tree bins (8+ keys in one bucket
of a 64+ table) are not modelled: the assignors' keys never get there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar
from uuid import UUID

__all__ = [
    "hash_int",
    "hash_string",
    "hash_uuid",
    "hashset_capacity",
    "java_hash_order",
    "signed_long",
    "table_size_for",
    "uuid_compare_key",
]

K = TypeVar("K")

_MAX_CAPACITY = 1 << 30


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def signed_long(value: int) -> int:
    """An unsigned 64-bit value as Java's `long`."""
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value & (1 << 63) else value


def hash_string(value: str) -> int:
    """`String.hashCode()` (over UTF-16 code units, int32 wrap)."""
    data = value.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def hash_uuid(value: UUID) -> int:
    """Kafka `Uuid.hashCode()`: the two halves of most ^ least significant bits, xored."""
    x = (value.int >> 64) ^ (value.int & 0xFFFFFFFFFFFFFFFF)
    return _int32((x >> 32) ^ x)


def hash_int(value: int) -> int:
    """`Integer.hashCode()`."""
    return _int32(value)


def uuid_compare_key(value: UUID) -> tuple[int, int]:
    """A sort key giving Kafka's `Uuid.compareTo` (signed most, then signed least significant bits)."""
    return signed_long(value.int >> 64), signed_long(value.int)


def table_size_for(capacity: int) -> int:
    """`HashMap.tableSizeFor`: the smallest power of two >= capacity (at least 1)."""
    n = 1
    while n < capacity and n < _MAX_CAPACITY:
        n <<= 1
    return n


def hashset_capacity(n: int) -> int:
    """The table size of `new HashSet<>(collection of n)` (as requested: it still doubles if
    needed when the elements go in)."""
    return table_size_for(max(int(n / 0.75) + 1, 16))


def _spread(h: int) -> int:
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def java_hash_order(keys: Iterable[K], hash_code: Callable[[K], int], capacity: int | None = None) -> list[K]:
    """`keys` (inserted in this order into a HashMap/HashSet of `capacity`, default 16 and
    growing) in the order Java iterates them. A key inserted twice keeps its first place."""
    distinct = list(dict.fromkeys(keys))
    table = table_size_for(16 if capacity is None else capacity)
    while len(distinct) > int(table * 0.75) and table < _MAX_CAPACITY:
        table <<= 1
    mask = table - 1
    positions = {key: i for i, key in enumerate(distinct)}
    return sorted(distinct, key=lambda key: (_spread(hash_code(key)) & mask, positions[key]))
