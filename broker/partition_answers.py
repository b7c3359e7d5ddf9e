"""The answer of the partition-wise APIs: per topic of the request, one entry per partition
(OffsetCommit, TxnOffsetCommit, OffsetDelete, WriteTxnMarkers, DescribeProducers)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["error_codes", "per_partition"]

Entry = dict[str, Any]


def per_partition(
    topics: Iterable[tuple[str, Iterable[int]]], entry: Callable[[str, int], Entry]
) -> list[Entry]:
    """[{name, partitions: [entry(name, partition), ...]}, ...] in the request's order."""
    return [dict(name=name, partitions=[entry(name, p) for p in partitions]) for name, partitions in topics]


def error_codes(
    codes: Mapping[tuple[str, int], int], default: int | None = None
) -> Callable[[str, int], Entry]:
    """The entry of a partition whose answer is only its error code, looked up in `codes` (a
    partition missing there answers `default`, when one is given)."""
    if default is None:
        return lambda name, partition: dict(partition_index=partition, error_code=codes[(name, partition)])
    return lambda name, partition: dict(
        partition_index=partition, error_code=codes.get((name, partition), default)
    )
