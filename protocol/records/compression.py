"""The records section of a compressed batch: gzip, snappy (raw or xerial-framed), lz4, zstd,
through cramjam (imported at first use: the broker's hot path sees uncompressed batches)."""

from __future__ import annotations

import struct
from types import ModuleType
from typing import overload

from minibroker.protocol.records.batch import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    CorruptBatchError,
)
from minibroker.protocol.varint import BytesLike

__all__ = ["DecompressedTooLarge", "compress", "decompress"]

_I32 = struct.Struct(">i")
_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_FIRST_GUESS_RATIO = 16  # most batches decompress to less than this many times their size
_TOO_SMALL = ("failed to write whole buffer", "smaller than required")


class DecompressedTooLarge(CorruptBatchError):
    """The records decompress to more than the caller's limit."""


def compress(codec: int, data: bytes) -> bytes:
    """The records section ``data`` compressed with ``codec`` (as Kafka's clients write it)."""
    import cramjam  # only needed for compressed batches (tests, compaction)

    if codec == COMPRESSION_GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == COMPRESSION_SNAPPY:
        # xerial snappy-java framing, what the Java client writes; every client reads it.
        block = bytes(cramjam.snappy.compress_raw(data))
        return _XERIAL_HEADER + _I32.pack(len(block)) + block
    if codec == COMPRESSION_LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == COMPRESSION_ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def _bounded(module: ModuleType, data: bytes, limit: int) -> memoryview:
    """Decompress into a buffer of at most ``limit`` bytes (cramjam's ``decompress_into``) so a
    small payload that expands to gigabytes cannot exhaust memory. A first, smaller buffer
    covers ordinary ratios; only a payload that does not fit gets a second try at ``limit``."""
    import cramjam

    size = min(limit, max(1 << 16, _FIRST_GUESS_RATIO * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = module.decompress_into(data, out)
        except cramjam.DecompressionError as exc:
            if size < limit and any(t in str(exc) for t in _TOO_SMALL):
                size = limit
                continue
            if any(t in str(exc) for t in _TOO_SMALL):
                raise DecompressedTooLarge(f"records decompress to more than {limit} bytes") from None
            raise
        return memoryview(out)[:n]


def _snappy_raw(data: bytes, limit: int | None) -> bytes:
    import cramjam

    if limit is not None and cramjam.snappy.decompress_raw_len(data) > limit:
        raise DecompressedTooLarge(f"records decompress to more than {limit} bytes")
    return bytes(cramjam.snappy.decompress_raw(data))


def _xerial(data: bytes, limit: int | None) -> bytes:
    """xerial framing: 16-byte header, then [int32 length, raw snappy block]*."""
    out = []
    pos = 16
    total = 0
    while pos < len(data):  # consumers refuse a partial chunk: so do we
        if pos + 4 > len(data):
            raise ValueError("xerial snappy chunk length is truncated")
        n = _I32.unpack_from(data, pos)[0]
        pos += 4
        if n < 0 or pos + n > len(data):
            raise ValueError(f"xerial snappy chunk of {n} bytes is truncated")
        chunk = _snappy_raw(data[pos : pos + n], None if limit is None else limit - total)
        total += len(chunk)
        out.append(chunk)
        pos += n
    return b"".join(out)


@overload
def decompress(codec: int, data: BytesLike, limit: None = None) -> bytes: ...
@overload
def decompress(codec: int, data: BytesLike, limit: int) -> bytes | memoryview: ...
def decompress(codec: int, data: BytesLike, limit: int | None = None) -> bytes | memoryview:
    """The records section of a compressed batch, decompressed (bytes-like). With ``limit``,
    more than ``limit`` decompressed bytes is an error instead of an allocation. Raises
    CorruptBatchError (DecompressedTooLarge past ``limit``)."""
    import cramjam

    try:
        data = bytes(data)
        if codec == COMPRESSION_SNAPPY:
            if data[:8] == _XERIAL_HEADER[:8]:
                return _xerial(data, limit)
            return _snappy_raw(data, limit)  # librdkafka: raw snappy
        module = {
            COMPRESSION_GZIP: cramjam.gzip,
            COMPRESSION_LZ4: cramjam.lz4,
            COMPRESSION_ZSTD: cramjam.zstd,
        }.get(codec)
        if module is None:
            raise CorruptBatchError(f"unknown compression codec {codec}")
        if limit is None:
            return bytes(module.decompress(data))
        return _bounded(module, data, limit)
    except DecompressedTooLarge:
        raise
    except (cramjam.DecompressionError, ValueError) as exc:
        raise CorruptBatchError(f"cannot decompress records (codec {codec}): {exc}") from None
