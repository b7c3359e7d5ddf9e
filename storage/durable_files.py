"""Making files durable: the one way the broker replaces a small file and fsyncs a path.

Every small state file (checkpoints, producer snapshots, the producer-id block, topic and
dynamic configs, security stores, the cleaner's swap list) is replaced with ``atomic_write``:
write a temporary file beside it, fsync it, rename it over ``path``, fsync the directory. A
crash at any point leaves the old file or the new one, plus at worst a temporary file
(``.tmp-<random>``: short, so a 249-character topic name still fits the 255-byte name limit)
that the directory's owner removes at start with ``remove_temp_files``.
``read_json`` reads such a file back at startup (a damaged one is KAFKA_STORAGE_ERROR with what
the operator can do).

Error policy, the same for every caller: an fsync that fails raises ``OSError``. Swallowing it
would let the caller acknowledge or checkpoint data the disk may never hold (after a failed
fsync Linux may drop the dirty pages and report success next time), so the caller decides: an
append turns it into KAFKA_STORAGE_ERROR, a flush leaves the recovery point where it was. The
one exception is a path that no longer exists when its fsync runs (``FileNotFoundError`` on
open): retention, compaction or DeleteTopics removed it meanwhile (fsyncs run in worker
threads), so there is nothing left to make durable.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from minibroker.protocol.errors import ErrorCode
from minibroker.storage.errors import KafkaStorageError

__all__ = ["atomic_write", "fsync_dir", "fsync_file", "read_json", "remove_temp_files", "TEMP_PREFIX"]

T = TypeVar("T")

TEMP_PREFIX = ".tmp-"


def fsync_file(path: str) -> None:
    """fsync the file or directory at ``path`` through a descriptor of its own (so it may run
    in a worker thread while the owner closes or reopens its descriptors). A path that is gone
    is skipped; any other failure raises OSError."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str) -> None:
    """Make the directory entries of ``path`` (creations, renames, deletions) durable."""
    fsync_file(path)


def atomic_write(path: str, data: bytes, *, before_rename: Callable[[], None] | None = None) -> None:
    """Replace ``path`` with ``data``: a crash leaves the old content or the new, never a mix.
    ``before_rename`` is called between the two (the temporary file written and fsynced)."""
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(directory, TEMP_PREFIX + uuid.uuid4().hex)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    if before_rename is not None:
        before_rename()
    os.replace(tmp, path)
    fsync_dir(directory)


def read_json(path: str, parse: Callable[[Any], T], remedy: str) -> T:
    """What ``parse`` makes of the JSON state file ``path`` (one ``atomic_write`` replaces), read
    at startup. A file that is not UTF-8 JSON, or that ``parse`` rejects (ValueError, TypeError,
    KeyError), raises KAFKA_STORAGE_ERROR naming the file and ``remedy``, what the operator can do
    besides restoring a backup ("move it away and ...")."""
    try:
        with open(path, "rb") as f:
            return parse(json.loads(f.read().decode("utf-8")))
    except (UnicodeDecodeError, ValueError, TypeError, KeyError) as exc:
        raise KafkaStorageError(
            ErrorCode.kafka_storage_error,
            f"{path} is damaged ({type(exc).__name__}: {exc}): restore it from a backup, or {remedy}",
        ) from None


def remove_temp_files(directory: str) -> int:
    """Delete what interrupted ``atomic_write``s left in ``directory`` (call it before writing
    there); returns how many. A missing directory has none."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return 0
    removed = 0
    for name in names:
        if name.startswith(TEMP_PREFIX):
            try:
                os.unlink(os.path.join(directory, name))
                removed += 1
            except FileNotFoundError:
                pass
    return removed
