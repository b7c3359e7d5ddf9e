"""The README's install routes on a fresh virtualenv: the wheel `make dist` builds, and a git URL
(`pip install "minibroker @ git+file://..."`, the same route as a git+https URL). Each installs
into an empty venv (dependencies from the package index or pip's cache), then the `minibroker`
script answers `--version` and a broker starts, answers and stops cleanly. Both skip, saying
why, when the package index cannot be reached; any other failure fails."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import minibroker
from tests.support.broker import REPO_ROOT

# Measured with a warm pip cache on 2 busy cores: 33 s for the wheel test (two venvs, build,
# install), 17 s for the git one. A cold cache also downloads the broker's dependencies (about
# 30 MB) and build's setuptools.
pytestmark = pytest.mark.timeout(300)

INSTALL_TIMEOUT_S = 120  # one pip install (or one `python -m build`) into a fresh venv
DEFAULT_INDEX = "https://pypi.org/simple/"


@functools.cache
def _index_unreachable() -> str | None:
    """Why the package index cannot be reached, or None. Both routes need it: a fresh venv
    installs minibroker's dependencies from it, and `python -m build` fetches setuptools."""
    index = os.environ.get("PIP_INDEX_URL")
    if not index:
        listed = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60
        ).stdout
        found = [
            line.split("=", 1)[1].strip().strip("'\"")
            for line in listed.splitlines()
            if ".index-url=" in line
        ]
        index = found[0] if found else DEFAULT_INDEX
    try:
        with urllib.request.urlopen(index.rstrip("/") + "/pip/", timeout=10):
            pass
    except urllib.error.HTTPError:
        return None  # the index answered (an index without /pip/ is still reachable)
    except (OSError, ValueError) as exc:  # URLError is an OSError; ValueError: not a URL
        return f"the package index {index} is unreachable ({exc}): a fresh venv cannot install from it"
    return None


def _need_index() -> None:
    reason = _index_unreachable()
    if reason is not None:
        pytest.skip(reason)  # printed in the summary (-rs in pyproject.toml)


def _run(cmd: list[str], *, cwd: Path | None = None, timeout: float = INSTALL_TIMEOUT_S, env=None):
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert result.returncode == 0, f"{cmd} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def _fresh_venv(path: Path) -> Path:
    _run([sys.executable, "-m", "venv", str(path)], timeout=60)
    return path / "bin"


def _check_installed(bin_dir: Path, data_dir: Path) -> None:
    # run outside the checkout, whose minibroker/ folder would otherwise shadow the installed one
    answer = _run([str(bin_dir / "minibroker"), "--version"], cwd=data_dir, timeout=60)
    version = answer.stdout + answer.stderr  # argparse's exit message goes to stderr
    assert version.strip() == f"minibroker {minibroker.__version__}", version
    # the installed package (with its C record walk) is the venv's own, not this checkout's
    where = _run(
        [str(bin_dir / "python"), "-c", "import minibroker.storage._record_walk as w; print(w.__file__)"],
        cwd=data_dir,
    ).stdout
    assert str(bin_dir.parent) in where and str(REPO_ROOT) not in where, where
    # a broker from that install starts (all its dependencies are there) and stops with exit 0
    port_file = data_dir / "port"
    proc = subprocess.Popen(
        [str(bin_dir / "minibroker"), "--port", "0", "--data-dir", str(data_dir / "d")]
        + ["--port-file", str(port_file)],
        cwd=data_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert proc.poll() is None, f"the installed broker exited {proc.returncode}\n{proc.stdout.read()}"
            assert time.monotonic() < deadline, "the installed broker did not become ready in 60 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_make_dist_wheel_installs_into_a_fresh_venv(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    _need_index()
    dist = tmp_path / "dist"
    # `build` goes into a venv of the test's own, not into the shared .venv
    build_venv = _fresh_venv(tmp_path / "build-venv").parent
    _run(
        ["make", "dist", f"DIST={dist}", f"BUILD_VENV={build_venv}"],
        cwd=REPO_ROOT,
        timeout=2 * INSTALL_TIMEOUT_S,
    )
    wheels = sorted(dist.glob("minibroker-*.whl"))
    sdists = sorted(dist.glob("minibroker-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in dist.iterdir())
    bin_dir = _fresh_venv(tmp_path / "venv")
    _run([str(bin_dir / "pip"), "install", "-q", str(wheels[0])])
    _check_installed(bin_dir, tmp_path)


def test_git_url_installs_into_a_fresh_venv(tmp_path):
    """What `pip install "minibroker @ git+https://.../minibroker"` does, from a local clone of
    this working tree (tracked and new files, as a commit would hold them)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _need_index()
    files = _run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT, timeout=60
    ).stdout.split("\0")
    clone = tmp_path / "clone"
    for name in filter(None, files):
        source = REPO_ROOT / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "snapshot"]):
        _run(cmd, cwd=clone, timeout=120, env=env)
    bin_dir = _fresh_venv(tmp_path / "venv")
    # `git+file:///path` is refused by the pip that Python 3.11's venv bundles (23.2, "Invalid
    # requirement"); with a host part it is the same URL to git
    _run([str(bin_dir / "pip"), "install", "-q", f"minibroker @ git+file://localhost{clone}"])
    _check_installed(bin_dir, tmp_path)
