"""The README's first hour, run as written: its hello-world snippets against a broker, its pytest
example in a pytester session, and no install route that cannot work (minibroker is not on PyPI)."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.support.broker import REPO_ROOT

pytest_plugins = ("pytester",)

README = REPO_ROOT / "README.md"
README_ADDRESS = "127.0.0.1:9092"


def _section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _python_blocks(title: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", _section(title), re.S)


def test_the_two_setup_commands_lead_the_readme():
    first_block = re.search(r"```sh\n(.*?)```", README.read_text(), re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["make run", "make test"], commands


def test_hello_world_snippets_produce_and_consume(broker):
    blocks = _python_blocks("Hello, world")
    assert len(blocks) == 2, blocks  # kafka-python and confluent-kafka
    for block in blocks:
        assert len(block.strip().splitlines()) <= 12, block
        code = block.replace(README_ADDRESS, broker.bootstrap)
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=90, cwd=REPO_ROOT
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "hello, minibroker" in result.stdout, result.stdout + result.stderr


def test_pytest_example_passes_as_written(pytester):
    (block,) = _python_blocks("Using it from pytest")
    pytester.makepyfile(test_readme_example=block)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest_subprocess("-q", "-W", "error::DeprecationWarning", timeout=120)
    result.assert_outcomes(passed=1)


def test_no_install_route_that_fails():
    """`pip install minibroker` (the bare name) cannot work: the package is not on PyPI."""
    bare = re.compile(r"pip install minibroker(?![\w\[@-])")
    offenders = []
    for path in [
        README,
        *sorted((REPO_ROOT / "docs").glob("*.md")),
        *sorted((REPO_ROOT / "examples").rglob("*.md")),
    ]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if bare.search(line) and "fails" not in line:
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert offenders == [], "\n".join(offenders)
