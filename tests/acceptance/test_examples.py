"""The sample project under examples/ passes its own suite, run the way its README says: pytest
with the installed plugin, and plain unittest."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.broker import REPO_ROOT

ORDERS = REPO_ROOT / "examples" / "orders"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MINIBROKER_BOOTSTRAP_SERVERS"}
    return subprocess.run(
        [sys.executable, *args], cwd=ORDERS, capture_output=True, text=True, timeout=300, env=env
    )


def test_orders_example_with_pytest_plugin():
    result = _run("-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout, result.stdout
    # its pytest.ini has no warning filter: the plugin keeps kafka-python's warnings out
    assert "warnings summary" not in result.stdout, result.stdout


def test_orders_example_with_unittest():
    result = _run("-m", "unittest", "discover", "-s", "tests")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Ran 1 test" in result.stderr and "OK" in result.stderr, result.stderr
