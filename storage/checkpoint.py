"""Kafka's OffsetCheckpointFile: a small text file mapping (topic, partition) to an offset.

Format (identical to Kafka's, so the files read the same to anyone who knows Kafka)::

    0                  version
    2                  number of entries
    orders 0 1234      topic partition offset
    orders 1 99

Used for ``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint``. Written
atomically (``storage/durable_files.py``). A damaged file is never fatal: the
reader logs what it could not read and returns what the caller should fall back to (nothing).
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from minibroker.storage.durable_files import atomic_write

__all__ = ["read_offset_checkpoint", "write_offset_checkpoint"]

log = structlog.get_logger(__name__)


def read_offset_checkpoint(path: str, what: str) -> dict[tuple[str, int], int]:
    """The entries of the file; {} if it is absent. A damaged file (not text, wrong version,
    wrong count, non-numeric offsets) is logged with ``what`` the caller falls back to and
    gives {}."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return {}
    try:
        lines = raw.decode("utf-8").splitlines()
        if not lines or lines[0].strip() != "0":
            raise ValueError(f"unknown version line {lines[0][:20]!r}" if lines else "empty file")
        count = int(lines[1])
        out = {}
        for line in lines[2 : 2 + count]:
            topic, p, offset = line.split()
            out[(topic, int(p))] = int(offset)
        if len(out) != count:
            raise ValueError(f"{count} entries announced, {len(out)} found")
        return out
    except (IndexError, ValueError, UnicodeDecodeError) as exc:
        log.warning(f"offset checkpoint file is damaged; {what}", path=path, error=str(exc))
        return {}


def write_offset_checkpoint(
    path: str, entries: dict[tuple[str, int], int], before_rename: Callable[[], None] | None = None
) -> None:
    """``before_rename``: called once the new content is in its temporary file (a test's crash
    point, ``checkpoint.mid_write``)."""
    lines = [f"{t} {p} {offset}\n" for (t, p), offset in sorted(entries.items())]
    atomic_write(path, ("0\n" + f"{len(lines)}\n" + "".join(lines)).encode(), before_rename=before_rename)
