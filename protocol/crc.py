"""CRC-32C (the record-batch checksum): the crc32c package's C function, without its package.

The crc32c package's ``__init__`` imports ``importlib.metadata`` (for ``__version__``) and its
command-line module (argparse): email, zipfile and friends, about 2.8 MB of resident memory and
10-90 ms of startup the broker never uses. The C extension inside it stands alone, so it is
loaded directly from the package's directory; if that ever fails (a different layout), the
package is imported the ordinary way.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
from collections.abc import Callable

__all__ = ["crc32c"]


def _load_extension() -> Callable[..., int]:
    package = importlib.util.find_spec("crc32c")  # finds the package without executing it
    for directory in (package.submodule_search_locations or []) if package else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(directory, "_crc32c" + suffix)
            if not os.path.exists(path):
                continue
            spec = importlib.util.spec_from_file_location("crc32c._crc32c", path)
            if spec is None or spec.loader is None:
                continue
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            loaded: Callable[..., int] = module.crc32c  # crc32c(data, value=0) -> int
            return loaded
    from crc32c import crc32c as impl  # noqa: PLC0415 - fallback: the whole package

    return impl


crc32c: Callable[..., int] = _load_extension()
