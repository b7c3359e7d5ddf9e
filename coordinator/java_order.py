"""Java's hash iteration order, so the assignors give the same answer as Kafka's for the same
input: `java.util.HashMap`/`HashSet` iterate by bucket (the spread hash of the key's hashCode,
masked by the table size) and, within a bucket, by insertion; the table doubles past 0.75 full.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar
from uuid import UUID

__all__ = ["hash_int", "hash_string", "hash_uuid", "hashset_capacity", "java_hash_order"]

K = TypeVar("K")


def hash_string(value: str) -> int:
    """`String.hashCode()` (over UTF-16 code units, int32 wrap)."""
    raise NotImplementedError


def hash_uuid(value: UUID) -> int:
    """Kafka `Uuid.hashCode()`."""
    raise NotImplementedError


def hash_int(value: int) -> int:
    """`Integer.hashCode()`."""
    raise NotImplementedError


def hashset_capacity(n: int) -> int:
    """The table size of `new HashSet<>(collection of n)`."""
    raise NotImplementedError


def java_hash_order(keys: Iterable[K], hash_code: Callable[[K], int], capacity: int | None = None) -> list[K]:
    """`keys` (inserted in this order into a HashMap/HashSet of `capacity`, default 16 and
    growing) in the order Java iterates them."""
    raise NotImplementedError
