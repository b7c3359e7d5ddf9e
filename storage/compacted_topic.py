"""Kafka's LogValidator.validateKey: a compacted topic refuses records without a key (KIP-467
per-record errors), since compaction could never keep or remove them by key. Decoding the
records (decompressing if needed) is the price, paid only for compacted topics."""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.record_batch import CorruptBatchError, iter_records
from storage.errors import KafkaStorageError

__all__ = ["reject_keyless_records"]


def reject_keyless_records(batch, topic: str, partition: int) -> None:
    """Raise INVALID_RECORD with one record error per keyless record (Kafka's messages)."""
    try:
        missing = [i for i, rec in enumerate(iter_records(batch)) if rec.key is None]
    except CorruptBatchError as exc:
        raise KafkaStorageError(ErrorCode.corrupt_message, str(exc)) from None
    if not missing:
        return
    message = f"Compacted topic cannot accept message without key in topic partition {topic}-{partition}."
    errors = [(i, message) for i in missing]
    exc = KafkaStorageError(
        ErrorCode.invalid_record,
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: {errors[:3]}")
    exc.record_errors = errors
    raise exc
