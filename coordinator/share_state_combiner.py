"""Merging a share-partition's persisted state batches (Kafka 4.4's PersisterStateBatchCombiner).

The share coordinator keeps, per share-partition, the ranges of records whose delivery state
or count differs from "available, never delivered". A ShareUpdate carries only the ranges that
changed; replay merges them into what is known, and a ShareSnapshot writes the merged list.

Kafka's rule, kept here exactly so the state a load rebuilds is Kafka's:
1. prune: drop every batch that ends below the start offset and cut the one that straddles it
   (a start offset of -1 prunes nothing);
2. sweep: where batches overlap, the one with the highest delivery count wins, then the one
   with the highest delivery state (an ACKNOWLEDGED/ARCHIVED record is never made AVAILABLE
   again by an older batch: both only grow as a record goes on);
3. coalesce: adjacent pieces with the same state and count become one batch.
The result is sorted by offset and non-overlapping.
"""

from __future__ import annotations

from collections.abc import Iterable

from minibroker.coordinator.share_types import StateBatch

__all__ = ["combine_state_batches"]


def combine_state_batches(
    so_far: Iterable[StateBatch], new: Iterable[StateBatch], start_offset: int
) -> tuple[StateBatch, ...]:
    """The batches `so_far` and the `new` ones merged, nothing below `start_offset`."""
    pruned = _prune(so_far, start_offset) + _prune(new, start_offset)
    if len(pruned) <= 1:
        return tuple(pruned)
    return _sweep_merge(pruned)


def _prune(batches: Iterable[StateBatch], start_offset: int) -> list[StateBatch]:
    if start_offset == -1:
        return list(batches)
    out = []
    for b in batches:
        if b.last_offset < start_offset:
            continue
        out.append(b._replace(first_offset=start_offset) if b.first_offset < start_offset else b)
    return out


def _sweep_merge(batches: list[StateBatch]) -> tuple[StateBatch, ...]:
    # events: (offset, is_begin, priority); priority = (delivery_count, delivery_state), highest wins
    events: list[tuple[int, bool, tuple[int, int]]] = []
    for b in batches:
        priority = (b.delivery_count, b.delivery_state)
        events.append((b.first_offset, True, priority))
        events.append((b.last_offset + 1, False, priority))
    events.sort(key=lambda e: (e[0], e[1]))
    active: dict[tuple[int, int], int] = {}  # priority -> how many open batches have it
    out: list[StateBatch] = []
    open_from = -1
    winner: tuple[int, int] | None = None
    i, n = 0, len(events)
    while i < n:
        offset = events[i][0]
        if winner is not None and offset > open_from:
            _append_coalesced(out, open_from, offset - 1, winner)
        while i < n and events[i][0] == offset:
            _, is_begin, priority = events[i]
            i += 1
            if is_begin:
                active[priority] = active.get(priority, 0) + 1
            elif active[priority] == 1:
                del active[priority]
            else:
                active[priority] -= 1
        winner = max(active) if active else None
        open_from = offset
    return tuple(out)


def _append_coalesced(out: list[StateBatch], first: int, last: int, winner: tuple[int, int]) -> None:
    count, state = winner
    if out:
        tail = out[-1]
        if tail.last_offset + 1 == first and tail.delivery_state == state and tail.delivery_count == count:
            out[-1] = tail._replace(last_offset=last)
            return
    out.append(StateBatch(first, last, state, count))
