"""`python -m minibroker` and the `minibroker` script: the broker's command line (broker/cli.py)."""

import gc
import sys


def main() -> int:
    # kio registers hypothesis strategies for its types whenever hypothesis is importable (it is
    # in a venv with the test extras, the usual place a CI broker runs): about 100 ms of startup
    # and 5 MB the broker never uses. Marking it absent before anything imports kio makes kio
    # skip it. Only the broker's own process gets here, never a test process.
    if "hypothesis" not in sys.modules:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]
    # A broker's start is mostly imports: ~300 modules that allocate many objects and leave
    # next to no cyclic garbage, so the collector's ~60 passes over them are wasted (~6% of their
    # CPU). broker/cli.py turns it back on once the broker's code is imported.
    gc.disable()
    from minibroker.broker.cli import main as cli_main  # noqa: PLC0415 - after the line above

    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
