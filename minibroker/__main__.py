"""`python -m minibroker` and the `minibroker` script: the broker's command line (broker/cli.py)."""

import sys


def main() -> int:
    # kio registers hypothesis strategies for its types whenever hypothesis is importable (it is
    # in a venv with the test extras, the usual place a CI broker runs): about 100 ms of startup
    # and 5 MB the broker never uses. Marking it absent before anything imports kio makes kio
    # skip it. Only the broker's own process gets here, never a test process.
    if "hypothesis" not in sys.modules:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]
    from minibroker.broker.cli import main as cli_main  # noqa: PLC0415 - after the line above
    from minibroker.storage.canonical_walk import load_reader_without_client  # noqa: PLC0415

    load_reader_without_client()  # this process never uses aiokafka's client, only its reader
    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
