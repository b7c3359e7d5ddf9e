"""Partition logs on disk: segments, indexes, producer state, recovery.

Public names are imported lazily so that ``import storage.errors`` (which every layer uses)
stays cheap and free of import cycles with storage.producer_state.
"""

from __future__ import annotations

_EXPORTS = {
    "KafkaStorageError": "storage.errors",
    "FileSlice": "storage.file_slice",
    "LogConfig": "storage.config",
    "PartitionLog": "storage.log",
    "AppendInfo": "storage.log",
    "ReadResult": "storage.log",
    "LEADER_EPOCH": "storage.log",
    "LogManager": "storage.log_manager",
    "TopicInfo": "storage.log_manager",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'storage' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
