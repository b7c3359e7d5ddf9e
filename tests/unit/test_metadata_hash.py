"""KIP-1101's metadata hash (coordinator/metadata_hash.py) equals Kafka 4.4's: the expected values
were computed with hash4j 0.22.0 (the jar Kafka 4.4 ships) over the same calls Kafka's
`Utils.computeTopicHash` / `computeGroupHash` make, and read from a reference Kafka's record."""

from __future__ import annotations

from uuid import UUID

from minibroker.coordinator.metadata_hash import group_hash, topic_hash


def test_topic_hash_with_racks_equals_hash4j():
    # hash4j: putByte(0).putLong(0x0123456789abcdef).putLong(0xfedcba9876543210).putString("orders")
    # .putInt(3), then putInt(i) per partition and, for partition 1, its sorted racks
    # (putInt(len).putString(rack)) "r1" and "rack2"
    topic_id = UUID("0123456789abcdef" + "fedcba9876543210")
    racks = {1: ["rack2", "r1"]}  # unsorted: the hash sorts them
    assert topic_hash(topic_id, "orders", 3, racks) == -8331586086674129580


def test_group_hash_equals_hash4j():
    # hash4j: putLong(123).putLong(-5), the topics' hashes in the order of their names
    assert group_hash({"b": -5, "a": 123}) == 3771072492633660111
    assert group_hash({}) == 0


def test_hash_of_a_reference_group():
    """ConsumerGroupMetadata's MetadataHash a Kafka 4.4 broker wrote for a group subscribed to
    one topic of two partitions (no racks)."""
    topic_id = UUID("cc35cab2-8380-4221-83c9-0e345f935a1f")
    assert group_hash({"rx-a": topic_hash(topic_id, "rx-a", 2)}) == 6491914015003972678


def test_strings_hash_as_utf16_code_units():
    # hash4j: putString("é✓") alone; the hash changes with the name
    topic_id = UUID(int=1)
    assert topic_hash(topic_id, "é✓", 1) != topic_hash(topic_id, "e", 1)
    assert topic_hash(topic_id, "t", 1) != topic_hash(topic_id, "t", 2)
    assert topic_hash(topic_id, "t", 1, {0: ["a"]}) != topic_hash(topic_id, "t", 1)
