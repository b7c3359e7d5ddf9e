"""The layer rules of ARCHITECTURE.md, checked on the imports of every module (parsed, not run).

broker/ -> coordinator/ -> storage/ -> protocol/, and only broker/ owns the event loop:
- common/ (the clock, the crash points) imports nothing of the others; all of them may use it;
- protocol/ imports nothing of the others but common/;
- storage/ imports only protocol/;
- coordinator/ imports storage/ and protocol/, never broker/;
- coordinator/, storage/ and protocol/ never import asyncio or uvloop.
Imports inside `if TYPE_CHECKING:` count too: a layer should not even name what is above it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("broker", "coordinator", "storage", "protocol", "common")
EVENT_LOOP = {"asyncio", "uvloop"}

#: package -> the packages of the project it must not import
FORBIDDEN = {
    "common": {"broker", "coordinator", "storage", "protocol"},
    "protocol": {"broker", "coordinator", "storage"},
    "storage": {"broker", "coordinator"},
    "coordinator": {"broker"},
}


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """Absolute names of everything the module imports (relative imports resolved to its own
    package, `minibroker.storage.log` as written)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                names.add("minibroker." + path.relative_to(ROOT).parts[0])
            elif node.module:
                names.add(node.module)
    return names


def imported(path: Path) -> set[str]:
    """The project packages (broker, storage, ...) and other top-level names a module imports."""
    return {name.removeprefix("minibroker.").split(".")[0] for name in imported_modules(path)}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_lower_layers_do_not_import_higher_ones(package):
    offences = {str(p.relative_to(ROOT)): sorted(imported(p) & FORBIDDEN[package]) for p in modules(package)}
    assert {k: v for k, v in offences.items() if v} == {}


@pytest.mark.parametrize("package", ["coordinator", "storage", "protocol", "common"])
def test_only_the_broker_owns_the_event_loop(package):
    offences = {str(p.relative_to(ROOT)): sorted(imported(p) & EVENT_LOOP) for p in modules(package)}
    assert {k: v for k, v in offences.items() if v} == {}


def test_every_package_has_modules():
    # a moved or renamed package must not make the rules above pass vacuously
    for package in PACKAGES:
        assert len(modules(package)) >= 3, package


def test_the_checker_sees_imports(tmp_path):
    probe = ROOT / "coordinator" / "transactions.py"
    assert {"storage", "protocol", "coordinator"} <= imported(probe)


@pytest.mark.parametrize("package", PACKAGES + ("pipelines", "minibroker", "tests", "bench", "conformance"))
def test_project_packages_are_imported_under_minibroker(package):
    # installed, they exist only as minibroker.broker, minibroker.storage, ...: an import of the
    # bare name works in a checkout only, and would load a second copy of the module
    bare = set(PACKAGES) | {"pipelines"}
    offences = {
        str(p.relative_to(ROOT)): sorted(n for n in imported_modules(p) if n.split(".")[0] in bare)
        for p in modules(package)
    }
    assert {k: v for k, v in offences.items() if v} == {}
