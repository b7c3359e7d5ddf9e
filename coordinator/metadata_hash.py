"""KIP-1101's metadata hash of a consumer group's subscribed topics, as Kafka 4.4 computes it
(`Utils.computeTopicHash` / `computeGroupHash`: xxh3-64 over each topic's id, name, partition
count and partition racks; the group's over its topics' hashes sorted by name). A group's epoch
is bumped when it changes (a subscribed topic gained partitions, was deleted or re-created), and
it is stored in ConsumerGroupMetadata (record type 3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from uuid import UUID

__all__ = ["group_hash", "topic_hash"]


def topic_hash(
    topic_id: UUID, name: str, num_partitions: int, racks: Mapping[int, Iterable[str]] | None = None
) -> int:
    """One topic's hash (signed int64, as Kafka stores it)."""
    raise NotImplementedError


def group_hash(topic_hashes: Mapping[str, int]) -> int:
    """The group's hash over its subscribed topics' hashes (name -> hash); 0 for none."""
    raise NotImplementedError
