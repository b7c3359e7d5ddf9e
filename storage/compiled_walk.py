"""The compiled record walks (storage/_record_walk.c), or None where the package was installed
without a C compiler.

The extension is built inside ``minibroker.storage`` (pyproject.toml) and protocol/ imports
nothing of storage/, so it is imported here, once; protocol/records/walk.py decides when to use
it (``check_records`` for the Produce validator, ``record_keys`` for the log cleaner), and its
Python walk does the work where the extension is absent or declines a batch.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from minibroker.protocol.records import CompiledKeys, CompiledWalk

__all__ = ["compiled_walk", "compiled_keys", "tune_malloc"]

compiled_walk: CompiledWalk | None
compiled_keys: CompiledKeys | None
#: glibc's mallopt for the broker's process (broker/cli.py tune_malloc); None without the extension
tune_malloc: Callable[[int, int], bool] | None
try:
    from minibroker.storage._record_walk import keys as compiled_keys
    from minibroker.storage._record_walk import tune_malloc
    from minibroker.storage._record_walk import walk as compiled_walk
except ImportError as _missing:  # installed without a C compiler: the Python walk does it all
    compiled_walk = compiled_keys = tune_malloc = None
    structlog.get_logger(__name__).warning(
        "the compiled record walk is not installed, so every produced record is walked in"
        " Python at about five times the CPU (reinstall minibroker where a C compiler is found)",
        error=str(_missing),
    )
