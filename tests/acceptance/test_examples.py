"""The sample project under examples/ passes its own suite, run the way its README says: pytest
with the installed plugin, and plain unittest; the control plane's recipes (examples/control-plane/)
run as written and docs/control-plane.md shows each as it is."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

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


# --- the control plane's recipes (docs/control-plane.md shows each file as it is) -------------------
RECIPES = REPO_ROOT / "examples" / "control-plane"
#: recipe -> the parts of the control plane it uses (broker/control/<part>.py)
RECIPE_PARTS = {
    "producer_retries.py": ("faults", "state"),
    "rebalance_storm.py": ("faults",),
    "stuck_transaction_clock.py": ("clock", "state"),
    "exactly_once_crash.py": ("crash", "state"),
}


def test_every_recipe_is_shown_in_the_docs_as_it_is():
    docs = (REPO_ROOT / "docs" / "control-plane.md").read_text()
    assert sorted(p.name for p in RECIPES.glob("*.py")) == sorted(RECIPE_PARTS)
    for name in RECIPE_PARTS:
        assert (RECIPES / name).read_text().strip() in docs, f"docs/control-plane.md does not show {name}"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("recipe", sorted(RECIPE_PARTS))
def test_control_plane_recipe_runs(recipe):
    env = {k: v for k, v in os.environ.items() if k != "MINIBROKER_BOOTSTRAP_SERVERS"}
    result = subprocess.run(
        [sys.executable, str(RECIPES / recipe)], capture_output=True, text=True, timeout=280, env=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
