"""What log compaction writes: a batch holding only some of its records, or stamped with a delete
horizon (Kafka's MemoryRecords.filterTo)."""

from __future__ import annotations

from collections.abc import Sequence

from minibroker.protocol.records.batch import ATTR_DELETE_HORIZON, seal
from minibroker.protocol.records.build import zigzag_bytes
from minibroker.protocol.records.compression import compress
from minibroker.protocol.records.walk import read_varint, walk_batch
from minibroker.protocol.varint import BytesLike

__all__ = ["rewrite_batch"]


def rewrite_batch(
    batch: BytesLike, keep: Sequence[bool] | None, delete_horizon_ms: int | None = None
) -> bytes:
    """The batch with only the records whose ``keep`` flag is set (all if None; at least one).
    Like Kafka's filterTo it keeps the base offset, last offset delta, max timestamp, producer
    id/epoch/base sequence and attributes (offsets and producer state are unchanged), and
    compresses with the batch's own codec. Records keep their offset and timestamp deltas,
    relative to a base that stays, so survivors are copied byte for byte.

    With ``delete_horizon_ms`` (Kafka 2.8+, KIP-534: the time after which a later pass may drop
    the batch's tombstones or its marker) the base timestamp becomes the horizon and the
    delete-horizon attribute bit is set; each record's timestamp delta is re-encoded against
    the new base so its timestamp stays. Raises CorruptBatchError."""
    h, buf, pos, fields = walk_batch(batch)
    parts: list[bytes | memoryview] = []
    if delete_horizon_ms is None:
        run_start = -1  # survivors are copied in runs
        start = pos
        for i, f in enumerate(fields):
            if keep is None or keep[i]:
                if run_start < 0:
                    run_start = start
            elif run_start >= 0:
                parts.append(buf[run_start:start])
                run_start = -1
            start = f[1]
        if run_start >= 0:
            parts.append(buf[run_start:start])
    else:
        shift = h.base_timestamp - delete_horizon_ms
        for i, (body, rec_end, ts_delta, *_) in enumerate(fields):
            if keep is None or keep[i]:
                after_delta = read_varint(buf, body + 1, long=True)[1]
                record = b"".join(
                    (buf[body : body + 1], zigzag_bytes(ts_delta + shift), buf[after_delta:rec_end])
                )
                parts += (zigzag_bytes(len(record)), record)
    kept = len(fields) if keep is None else sum(1 for k in keep[: len(fields)] if k)
    if not kept:
        raise ValueError("a rewritten batch keeps at least one record")
    section = b"".join(parts)
    if h.compression:
        section = compress(h.compression, section)
    if delete_horizon_ms is None:
        return seal(h, section, count=kept)
    return seal(
        h,
        section,
        count=kept,
        attributes=h.attributes | ATTR_DELETE_HORIZON,
        base_timestamp=delete_horizon_ms,
    )
