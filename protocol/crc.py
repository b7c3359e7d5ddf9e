"""CRC-32C (the record-batch checksum), loaded on first use.

The crc32c package's ``__init__`` imports ``importlib.metadata`` for its ``__version__``: 10 ms on
a quiet machine, up to 90 ms on a loaded one, which the first requests (ApiVersions, Metadata)
never need. The C function is looked up once and then called directly.
"""

from __future__ import annotations

__all__ = ["crc32c"]

_impl = None


def crc32c(data, value: int = 0) -> int:
    impl = _impl or _load()
    return impl(data, value)


def _load():
    global _impl
    from crc32c import crc32c as impl  # noqa: PLC0415 - deliberately lazy, see the docstring

    _impl = impl
    return impl
