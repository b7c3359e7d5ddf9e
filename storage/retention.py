"""Which old segments of a partition log retention deletes (Kafka's
``UnifiedLog.deleteOldSegments``), as a pure decision over the segment list.

Three rules, checked in Kafka's order; each deletes a run of segments from the head of the log
(never a segment in the middle, never part of a segment):

* ``retention.ms`` (policy ``delete``): the segment's largest record timestamp (its file's
  modification time if it holds no timestamp) is older than ``now - retention.ms``; -1 = never.
* ``retention.bytes`` (policy ``delete``): the log is larger than ``retention.bytes``; oldest
  segments go while the log stays at or above the limit without them; -1 = no limit.
* log start offset (any policy): every offset of the segment is below the log start offset
  (moved by DeleteRecords).

A segment qualifies only while everything before it qualifies, and the last segment only when it
is not empty (the log then rolls first, so the deleted one is never the segment being appended
to). ``PartitionLog.delete_oldest_segments`` does the deleting.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from minibroker.storage.config import LogConfig
    from minibroker.storage.segment import LogSegment

__all__ = ["RetentionDecision", "segments_to_delete"]


class RetentionDecision(NamedTuple):
    segments: int  # how many, from the oldest
    reason: str  # for the log line


def _largest_timestamp(seg: LogSegment) -> int:
    if seg.max_timestamp >= 0:
        return seg.max_timestamp
    try:
        return int(os.stat(seg.log_path).st_mtime * 1000)
    except OSError:
        return -1


def _count_while(
    segments: Sequence[LogSegment], predicate: Callable[[LogSegment, LogSegment | None], bool]
) -> int:
    count = 0
    last = len(segments) - 1
    for i, seg in enumerate(segments):
        nxt = segments[i + 1] if i < last else None
        if nxt is None and seg.size == 0:
            break
        if not predicate(seg, nxt):
            break
        count += 1
    return count


def segments_to_delete(
    segments: Sequence[LogSegment], config: LogConfig, log_start_offset: int, now_ms: int
) -> RetentionDecision | None:
    """The first rule (in Kafka's order) that deletes something, or None."""
    delete_policy = "delete" in config.cleanup_policy.split(",")
    if delete_policy and config.retention_ms >= 0:
        limit = config.retention_ms
        n = _count_while(segments, lambda s, _n: now_ms - _largest_timestamp(s) > limit)
        if n:
            return RetentionDecision(n, f"retention.ms {limit} breached")
    if delete_policy and config.retention_bytes >= 0:
        total = sum(s.size for s in segments)
        excess = total - config.retention_bytes
        if excess > 0:

            def fits(seg: LogSegment, _n: LogSegment | None) -> bool:
                nonlocal excess
                if excess - seg.size < 0:
                    return False
                excess -= seg.size
                return True

            n = _count_while(segments, fits)
            if n:
                return RetentionDecision(
                    n, f"retention.bytes {config.retention_bytes} breached (log size {total})"
                )
    n = _count_while(segments, lambda _s, nxt: nxt is not None and nxt.base_offset <= log_start_offset)
    if n:
        return RetentionDecision(n, f"below the log start offset {log_start_offset}")
    return None
