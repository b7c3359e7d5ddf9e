"""The answer of the partition-wise APIs: per topic of the request, one entry per partition
(OffsetCommit, TxnOffsetCommit, OffsetDelete, DeleteRecords, WriteTxnMarkers, DescribeProducers).
`per_partition` builds it; `answer_partitions` adds the per-topic authorization refusal."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from minibroker.protocol.errors import ErrorCode

__all__ = ["answer_partitions", "error_codes", "per_partition"]

Entry = dict[str, Any]
P = TypeVar("P")
P_co = TypeVar("P_co", covariant=True)


def per_partition(topics: Iterable[tuple[str, Iterable[P]]], entry: Callable[[str, P], Entry]) -> list[Entry]:
    """[{name, partitions: [entry(name, partition), ...]}, ...] in the request's order."""
    return [dict(name=name, partitions=[entry(name, p) for p in partitions]) for name, partitions in topics]


class NamedTopic(Protocol[P_co]):
    """A topic entry of a partitioned request: its name and the partitions it names."""

    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[P_co]: ...


def answer_partitions(
    topics: Iterable[NamedTopic[Any]],
    denied: Container[str],
    answer: Callable[[str, Any], Entry],
    failed: Callable[[Any, int], Entry],
) -> list[Entry]:
    """Every topic of the request with every partition it names: a topic in ``denied`` answers
    each with ``failed(partition, TOPIC_AUTHORIZATION_FAILED)``, the others
    ``answer(topic, partition)`` (DeleteRecords, OffsetDelete)."""

    def entry(name: str, p: Any) -> Entry:
        return failed(p, ErrorCode.topic_authorization_failed) if name in denied else answer(name, p)

    return per_partition(((t.name, t.partitions) for t in topics), entry)


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
