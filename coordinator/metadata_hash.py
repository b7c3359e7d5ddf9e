"""KIP-1101's metadata hash of a consumer group's subscribed topics, as Kafka 4.4 computes it
(`Utils.computeTopicHash` / `computeGroupHash`: xxh3-64 over each topic's id, name, partition
count and partition racks; the group's over its topics' hashes sorted by name). A group's epoch
is bumped when it changes (a subscribed topic gained partitions, was deleted or re-created), and
it is stored in ConsumerGroupMetadata (record type 3).

The bytes hashed are those of hash4j's HashStream64 (what Kafka uses): little-endian ints and
longs, a string as its UTF-16LE code units followed by its length in code units (int32). With
the `xxhash` package's xxh3_64 (seed 0) over the same bytes the values equal Kafka's
(tests/unit/test_metadata_hash.py checks them against values hash4j 0.22 computed)."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from uuid import UUID

import xxhash

__all__ = ["group_hash", "topic_hash"]

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_U64 = struct.Struct("<Q")


def _string(out: bytearray, value: str) -> None:
    """hash4j's putString: the UTF-16LE chars, then their number (a Java String's length)."""
    raw = value.encode("utf-16-le", "surrogatepass")
    out += raw
    out += _I32.pack(len(raw) // 2)


def _signed(digest: int) -> int:
    return digest - (1 << 64) if digest >= 1 << 63 else digest


def topic_hash(
    topic_id: UUID, name: str, num_partitions: int, racks: Mapping[int, Iterable[str]] | None = None
) -> int:
    """One topic's hash (signed int64, as Kafka stores it)."""
    out = bytearray(b"\x00")  # the hash's version (putByte(0))
    out += _U64.pack(topic_id.int >> 64)  # most significant bits
    out += _U64.pack(topic_id.int & 0xFFFF_FFFF_FFFF_FFFF)
    _string(out, name)
    out += _I32.pack(num_partitions)
    for partition in range(num_partitions):
        out += _I32.pack(partition)
        for rack in sorted((racks or {}).get(partition, ()), key=_java_string_order):
            out += _I32.pack(len(rack.encode("utf-16-le", "surrogatepass")) // 2)
            _string(out, rack)
    return _signed(xxhash.xxh3_64_intdigest(bytes(out)))


def group_hash(topic_hashes: Mapping[str, int]) -> int:
    """The group's hash over its subscribed topics' hashes (name -> hash); 0 for none."""
    if not topic_hashes:
        return 0
    out = bytearray()
    for name in sorted(topic_hashes, key=_java_string_order):
        out += _I64.pack(topic_hashes[name])
    return _signed(xxhash.xxh3_64_intdigest(bytes(out)))


def _java_string_order(value: str) -> bytes:
    """Java's String.compareTo order (UTF-16 code units; Python's differs beyond the BMP)."""
    return value.encode("utf-16-be", "surrogatepass")
