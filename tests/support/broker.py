"""Brokers for the project's own tests: minibroker.testing.BrokerProcess (the public testing API,
which starts `python -m minibroker --port 0 --port-file ...` the way a user would) with Kafka's
default properties, plus a factory that tears down every broker a test started.
"""

from __future__ import annotations

import sys
from pathlib import Path

from minibroker.testing import BrokerProcess, BrokerStartError  # noqa: F401 - re-exported for tests

REPO_ROOT = Path(__file__).resolve().parents[2]


class BrokerFactory:
    """Starts brokers for one test (or module) and tears all of them down."""

    def __init__(self, base_dir):
        self.base_dir = base_dir
        self.brokers: list[BrokerProcess] = []

    def __call__(
        self, overrides: dict | None = None, *, data_dir=None, start: bool = True, **kw
    ) -> BrokerProcess:
        if data_dir is None:
            data_dir = self.base_dir / f"data{len(self.brokers)}"
        b = BrokerProcess(data_dir, overrides, **kw)
        self.brokers.append(b)
        if start:
            b.start()
        return b

    def teardown(self, dump_logs: bool) -> None:
        """Stop every broker; if the test passed, a broker that does not exit 0 on SIGTERM
        makes the teardown fail (a clean stop is part of the contract)."""
        bad = []
        for b in self.brokers:
            rc = b.cleanup()
            if rc not in (None, 0):
                bad.append((b, rc))
            if dump_logs or rc not in (None, 0):
                print(b.log_tail(80), file=sys.stderr)
        if bad and not dump_logs:
            raise AssertionError(
                "broker did not stop cleanly on SIGTERM: "
                + ", ".join(f"{b.data_dir} exit {rc}" for b, rc in bad)
            )
