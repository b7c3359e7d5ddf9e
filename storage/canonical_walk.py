"""The fast record walk of a Produce batch, on aiokafka's compiled (Cython) record reader.

``storage/log_validator.py`` defines what Kafka accepts with a pure-Python walk over every
record; at about 0.75 us per record that walk was most of the broker's CPU per produced record.
This module proves the same verdict for the batches real clients send at C speed. aiokafka's
``DefaultRecordBatch`` reads the records (bounds-checked, exactly ``recordsCount`` records that
end exactly at the end of the batch, header keys decoded as UTF-8), and its
``DefaultRecordBatchBuilder.size_in_bytes`` gives each record's canonical size: every varint
minimal, attributes one byte, a null written as -1, timestamp deltas from the batch's
baseTimestamp, offset delta ``i`` for record ``i``.

aiokafka's reader alone is laxer than Kafka: it accepts int32 varints of 6 to 10 bytes and
reads any negative length as null, and its output no longer shows either. So the walk vouches
for a batch only if, besides offset deltas 0, 1, 2..., the canonical sizes add up to the real
record area (no field can be shorter than canonical, so every field is canonical) and each
null key or value is the byte -1 itself (-2..-64 also take one byte). Then Kafka's
LogValidator and every consumer read exactly what aiokafka read. Anything else (non-minimal
varints, which Kafka accepts up to 5 bytes, a null header value, a producer's LogAppendTime
flag, a malformed or hostile batch, any reader error) returns None and the reference walk
decides, with Kafka's error and message.

The batch is handed over with 16 zero bytes after it, inside the same buffer: aiokafka reads a
varint's continuation bytes and header-key lengths without a bounds check, up to two bytes past
the end of a truncated batch, which must not be past the end of the allocation.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import sys
import types
from typing import NamedTuple

import structlog

__all__ = ["CanonicalRecords", "PADDING", "padded_copy", "walk_canonical", "load_reader_without_client"]

log = structlog.get_logger(__name__)

#: zero bytes after the batch (see the module docstring)
PADDING = bytes(16)
#: the largest scratch buffer kept between batches (a bigger decompressed batch gets its own)
_KEPT_SCRATCH = 4 << 20
_scratch = bytearray()

_HEADER_SIZE = 61
_TIMESTAMP = struct.Struct(">q")
_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
_NULL = 1  # -1, zig-zag encoded
_LOG_APPEND_TIME = 0x08  # in the attributes' low byte
_NO_LIMIT = 1 << 62  # the builder's batch size: never refuse a record


class CanonicalRecords(NamedTuple):
    min_timestamp: int
    max_timestamp: int
    null_keys: list[int]  # indexes of records with a null key


class _Engine(NamedTuple):
    reader: type
    builder: type


_engine: list[_Engine | None] = []  # empty until the first batch
_without_client: list[bool] = []  # [True] once load_reader_without_client() was called

# The packages above the reader, whose __init__ files import aiokafka's asyncio client
_READER_PACKAGES = (
    ("aiokafka", ()),
    ("aiokafka.record", ("record",)),
    ("aiokafka.record._crecords", ("record", "_crecords")),
)


def load_reader_without_client() -> None:
    """For the broker's own process only (``python -m minibroker``), which never uses aiokafka
    as a client: the reader will be loaded without running the ``__init__`` of the packages
    above it, which import aiokafka's whole client (about 30 ms of CPU and 2 MB at the first
    Produce instead of 5 ms). Never in a process that may import aiokafka itself: its packages
    stay bare namespaces there."""
    _without_client[:] = [True]


def _bare_reader_packages() -> None:
    """aiokafka's packages above the reader as bare namespaces (a path, no ``__init__`` run):
    the reader's own imports (aiokafka.codec, aiokafka.errors, its cutil module) load as
    usual through them."""
    spec = importlib.util.find_spec("aiokafka")
    if spec is None or not spec.submodule_search_locations:
        return
    root = list(spec.submodule_search_locations)[0]
    for name, parts in _READER_PACKAGES:
        package = types.ModuleType(name)
        package.__path__ = [os.path.join(root, *parts)]
        sys.modules[name] = package


def _load() -> _Engine | None:
    """aiokafka's compiled reader and record sizer, imported at the first Produce (a broker
    that never receives a Produce does not pay for them at start-up). None where aiokafka is
    installed without its extensions: then every batch takes the reference walk."""
    if not _engine:
        if _without_client and "aiokafka" not in sys.modules:
            _bare_reader_packages()
        try:
            from aiokafka.record._crecords.default_records import (
                DefaultRecordBatch,
                DefaultRecordBatchBuilder,
            )
        except ImportError as exc:
            log.warning(
                "aiokafka's compiled record reader could not be loaded: every Produce batch takes"
                " the reference walk, 2-3 times slower (reinstall aiokafka from a wheel)",
                error=str(exc),
            )
            _engine.append(None)
        else:
            _engine.append(_Engine(DefaultRecordBatch, DefaultRecordBatchBuilder))
    return _engine[0]


def padded_copy(*parts) -> tuple[bytearray, int]:
    """The concatenated ``parts`` followed by ``PADDING``, in a buffer reused from batch to batch
    (a fresh 1 MB allocation costs more in page faults than the copy itself), and their size.
    Valid until the next call; the event loop makes calls one at a time."""
    global _scratch
    size = sum(map(len, parts))
    need = size + len(PADDING)
    buf = _scratch
    if len(buf) < need:
        if need <= _KEPT_SCRATCH:  # grown in powers of two: batches of a run grow gradually
            buf = _scratch = bytearray(min(_KEPT_SCRATCH, 1 << (need - 1).bit_length()))
        else:
            buf = bytearray(need)
    pos = 0
    for part in parts:
        end = pos + len(part)
        buf[pos:end] = part
        pos = end
    buf[size:need] = PADDING
    return buf, size


def _varint_size(zigzag: int) -> int:
    return max(1, (zigzag.bit_length() + 6) // 7)


def _length_size(record_size: int) -> int:
    """Bytes of the canonical length varint of a record of ``record_size`` bytes in all."""
    k = 1
    while _varint_size(2 * (record_size - k)) != k:
        k += 1
    return k


def walk_canonical(padded: bytes | bytearray, size: int) -> CanonicalRecords | None:
    """``padded``: an uncompressed batch of ``size`` bytes (header and records; the caller has
    checked the header) followed by ``PADDING`` (``padded_copy``). The records' timestamps and
    null keys when the record area is canonical (see above), else None."""
    engine = _load()
    if engine is None:
        return None
    if padded[22] & _LOG_APPEND_TIME:  # the reader then reports maxTimestamp, not the deltas
        return None
    base = _TIMESTAMP.unpack_from(padded, 27)[0]
    try:
        walked = _walk(engine, padded, size, base)
    except Exception:  # noqa: BLE001 - any reader complaint: the reference walk gives the verdict
        return None
    return walked


def _walk(
    engine: _Engine,
    padded: bytes | bytearray,
    size: int,
    base: int,  # noqa: C901
) -> CanonicalRecords | None:
    """The records read and sized; None as soon as one is not canonical. The loop is the
    per-record cost of a Produce: the common cases are inline, not calls."""
    null_keys: list[int] = []
    low, high = _INT64_MAX, _INT64_MIN
    pos = i = 0
    sizer = engine.builder(2, 0, 0, -1, -1, -1, _NO_LIMIT)
    sizer.append(0, base, None, None, [])  # timestamp deltas from the batch's base
    canonical_size = sizer.size_in_bytes
    for r in engine.reader(memoryview(padded)[:size]):  # streamed: no list of objects
        if r.offset != i:
            return None
        ts = r.timestamp
        if ts < low:
            low = ts
        if ts > high:
            high = ts
        key = r.key
        value = r.value
        headers = r.headers
        n = canonical_size(i, ts, key, value, headers)
        if key is None:
            if value is not None and not headers:  # a keyless producer's record: inline
                lv = len(value)  # the key's length byte is just before the value's length
                at = (
                    _HEADER_SIZE
                    + pos
                    + n
                    - lv
                    - (3 if lv < 64 else 4 if lv < 8192 else 2 + _varint_size(2 * lv))
                )
                if padded[at] != _NULL:
                    return None
            elif not _nulls_are_minus_one(padded, pos, n, i, ts - base, key, value):
                return None
            null_keys.append(i)
        elif value is None and not _nulls_are_minus_one(padded, pos, n, i, ts - base, key, value):
            return None
        if headers and any(v is None for _, v in headers):
            return None
        pos += n
        i += 1
    if not i or pos != size - _HEADER_SIZE:
        return None
    return CanonicalRecords(low, high, null_keys)


def _nulls_are_minus_one(
    padded: bytes | bytearray, start: int, n: int, i: int, delta: int, key: bytes | None, value: bytes | None
) -> bool:
    """Record ``i`` (``n`` bytes at ``start`` in the record area) has its null key or value
    written as the byte for -1 (its canonical size cannot tell -2..-64 from it)."""
    at = _HEADER_SIZE + start + _length_size(n) + 1  # length, attributes
    delta = (delta + (1 << 63)) % (1 << 64) - (1 << 63)  # the reader's int64 arithmetic
    at += _varint_size((delta << 1) ^ (delta >> 63)) + _varint_size(2 * i)
    if key is None:
        if padded[at] != _NULL:
            return False
        at += 1
    else:
        at += _varint_size(2 * len(key)) + len(key)
    return value is not None or padded[at] == _NULL
