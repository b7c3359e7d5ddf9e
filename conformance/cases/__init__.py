"""The conformance cases, one module per area. `@case(name)` registers a function taking a
`conformance.session.Session`; cases run in registration order on both brokers."""

from __future__ import annotations

import importlib
import pkgutil

REGISTRY: list[tuple[str, object]] = []


def case(name: str):
    def register(fn):
        REGISTRY.append((name, fn))
        return fn

    return register


def versions(api_key: int) -> range:
    """The versions minibroker advertises for `api_key` (what every case must cover)."""
    from minibroker.broker.dispatch import HANDLERS  # noqa: PLC0415

    handler = HANDLERS[api_key]
    return range(handler.min_version, handler.max_version + 1)


for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_mod}")
