"""Partition logs on disk: segments, indexes, producer state, recovery.

Public names are imported lazily so that ``import storage.errors`` (which every layer uses)
stays cheap and free of import cycles with storage.producer_state.
"""

from __future__ import annotations

_EXPORTS = {
    "KafkaStorageError": "minibroker.storage.errors",
    "FileSlice": "minibroker.storage.file_slice",
    "LogConfig": "minibroker.storage.config",
    "PartitionLog": "minibroker.storage.log",
    "AppendInfo": "minibroker.storage.log",
    "ReadResult": "minibroker.storage.log",
    "LEADER_EPOCH": "minibroker.storage.log",
    "LogManager": "minibroker.storage.log_manager",
    "TopicInfo": "minibroker.storage.log_manager",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'storage' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
