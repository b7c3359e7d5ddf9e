"""Kafka's record format, magic 2, in one place: pure functions, no I/O.

- ``batch.py``: the 61-byte batch header (parse, CRC-32C, ``stamp_header``: the one place an
  appended batch's baseOffset/epoch/maxTimestamp/CRC are patched; ``seal``: the one place a
  batch is assembled), ``iter_batches`` over concatenated batches;
- ``walk.py``: the record walk every reader uses (``walk_records``, ``iter_records``, ``record_keys``,
  the Produce validator's ``check_records`` with its C twin, storage/_record_walk.c);
- ``compression.py``: gzip, snappy, lz4, zstd records sections;
- ``build.py``: building batches (internal topics, tests); ``control.py``: end-transaction
  markers; ``rewrite.py``: what log compaction writes (``rewrite_batch``).

Import from the package: ``from minibroker.protocol.records import parse_header``.
"""

from minibroker.protocol.records.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_LOG_APPEND_TIME,
    ATTR_TRANSACTIONAL,
    BATCH_OVERHEAD_LENGTH,
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    HEADER_STRUCT,
    MAGIC,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    BatchHeader,
    CorruptBatchError,
    crc_ok,
    iter_batches,
    parse_header,
    stamp_header,
)
from minibroker.protocol.records.build import build_batch
from minibroker.protocol.records.compression import DecompressedTooLarge, compress, decompress
from minibroker.protocol.records.control import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    build_control_batch,
    parse_control_record,
)
from minibroker.protocol.records.rewrite import rewrite_batch
from minibroker.protocol.records.walk import (
    Checked,
    CompiledKeys,
    CompiledWalk,
    InvalidRecord,
    Record,
    RecordsTruncated,
    check_records,
    iter_records,
    record_keys,
    records_area,
    timestamp_deltas,
    walk_records,
)

__all__ = [
    "ATTR_COMPRESSION_MASK",
    "ATTR_CONTROL",
    "ATTR_DELETE_HORIZON",
    "ATTR_LOG_APPEND_TIME",
    "ATTR_TRANSACTIONAL",
    "BATCH_OVERHEAD_LENGTH",
    "COMPRESSION_GZIP",
    "COMPRESSION_LZ4",
    "COMPRESSION_NONE",
    "COMPRESSION_SNAPPY",
    "COMPRESSION_ZSTD",
    "CONTROL_ABORT",
    "CONTROL_COMMIT",
    "HEADER_SIZE",
    "HEADER_STRUCT",
    "MAGIC",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "BatchHeader",
    "Checked",
    "CompiledKeys",
    "CompiledWalk",
    "CorruptBatchError",
    "DecompressedTooLarge",
    "InvalidRecord",
    "Record",
    "RecordsTruncated",
    "build_batch",
    "build_control_batch",
    "check_records",
    "compress",
    "crc_ok",
    "decompress",
    "iter_batches",
    "iter_records",
    "parse_control_record",
    "parse_header",
    "record_keys",
    "records_area",
    "rewrite_batch",
    "stamp_header",
    "timestamp_deltas",
    "walk_records",
]
