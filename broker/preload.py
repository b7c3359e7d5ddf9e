"""Import, before serving, every module the request path would otherwise import lazily.

kio loads one schema module per (API, version) on first use, and compression codecs load on
the first compressed batch. An import needs a file descriptor; when a client has taken them all
(or the open-files limit is low) a lazy import fails in the middle of a request. Loading them at
startup costs a fraction of a second and makes the request path need no new descriptors but the
ones its own work opens."""

from __future__ import annotations

import importlib

from protocol.codec import request_class, response_class

__all__ = ["preload_request_path"]

# imported inside functions on the compressed-batch path (protocol/record_batch.py) and on the
# first Produce (storage/canonical_walk.py: aiokafka's record reader)
_LAZY_MODULES = ("cramjam", "aiokafka.record._crecords")


def preload_request_path(handlers: dict) -> int:
    """Load the request and response schemas of every version of every handled API, and the
    lazily imported modules; returns how many schema classes were loaded."""
    loaded = 0
    for api_key, module in handlers.items():
        for version in range(module.MIN_VERSION, module.MAX_VERSION + 1):
            loaded += request_class(api_key, version) is not None
            loaded += response_class(api_key, version) is not None
    for name in _LAZY_MODULES:
        importlib.import_module(name)
    return loaded
