"""storage.data_dir_lock: one holder per data directory, the holder's pid named to whoever is
refused, the lock gone with its process (SIGKILL included), and held_by() never locking."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import textwrap

import pytest
from minibroker.broker.config import BrokerConfig, ConfigError
from minibroker.common.clock import SYSTEM_CLOCK
from minibroker.storage.data_dir_lock import (
    LOCK_FILE,
    DataDirLock,
    DataDirLockedError,
    DataDirUnusableError,
    held_by,
)

pytestmark = pytest.mark.timeout(30)

# a child process that takes the lock, says so on stdout, and holds it until its stdin closes
HOLDER = textwrap.dedent(
    """
    import sys
    from minibroker.storage.data_dir_lock import DataDirLock, DataDirLockedError
    try:
        lock = DataDirLock.acquire(sys.argv[1])
    except DataDirLockedError as exc:
        print("refused", exc.holder_pid, flush=True)
        sys.exit(0)
    print("won", flush=True)
    sys.stdin.read()
    """
)


def holder(data_dir) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def first_line(child: subprocess.Popen) -> str:
    assert child.stdout is not None
    return child.stdout.readline()


def let_go(child: subprocess.Popen) -> None:
    assert child.stdin is not None
    child.stdin.close()
    child.wait(10)


def test_acquire_creates_the_directory_and_writes_the_pid(tmp_path):
    data_dir = tmp_path / "a" / "b"
    lock = DataDirLock.acquire(str(data_dir))
    try:
        assert lock.held and (data_dir / LOCK_FILE).read_text() == f"{os.getpid()}\n"
        assert held_by(str(data_dir)) == os.getpid()
    finally:
        lock.release()
    assert not lock.held and held_by(str(data_dir)) is None
    lock.release()  # idempotent
    assert (data_dir / LOCK_FILE).exists(), "the lock file is never deleted"


def test_a_second_lock_in_the_same_process_is_refused_until_released(tmp_path):
    first = DataDirLock.acquire(str(tmp_path))
    with pytest.raises(DataDirLockedError) as refused:
        DataDirLock.acquire(str(tmp_path))
    assert refused.value.holder_pid == os.getpid()
    assert f"Failed to acquire lock on file .lock in {tmp_path}" in str(refused.value)
    assert isinstance(refused.value, OSError)  # the CLI's "cannot start", exit code 1
    assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n", "a refused attempt rewrote the pid"
    first.release()
    DataDirLock.acquire(str(tmp_path)).release()


def test_another_process_is_refused_with_the_holders_pid_and_sigkill_frees_the_lock(tmp_path):
    child = holder(tmp_path)
    try:
        assert first_line(child) == "won\n"
        assert held_by(str(tmp_path)) == child.pid
        with pytest.raises(DataDirLockedError) as refused:
            DataDirLock.acquire(str(tmp_path))
        assert refused.value.holder_pid == child.pid and f"(pid {child.pid})" in str(refused.value)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    assert held_by(str(tmp_path)) is None  # the kernel dropped the lock with the process
    lock = DataDirLock.acquire(str(tmp_path))
    assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    lock.release()


def test_processes_racing_for_one_directory_have_exactly_one_winner(tmp_path):
    children = [holder(tmp_path) for _ in range(6)]
    try:
        answers = [first_line(c).split() for c in children]
    finally:
        for c in children:
            let_go(c)
    winners = [c.pid for c, a in zip(children, answers, strict=True) if a == ["won"]]
    assert len(winners) == 1, answers
    refused = [a for a in answers if a[0] == "refused"]
    assert len(refused) == 5, answers
    # a refused child read the winner's pid, or none if it looked before the winner wrote it
    assert all(a[1] in (str(winners[0]), "None") for a in refused), (winners, answers)


def test_held_by_takes_no_lock_and_opens_nothing_for_writing(tmp_path):
    """A lock taken even for a moment (a non-blocking try) would refuse a broker starting at that
    moment: held_by must never call flock/lockf/fcntl, which an audit hook sees (in a child
    process: an audit hook cannot be removed)."""
    assert held_by(str(tmp_path)) is None  # no lock file at all
    script = textwrap.dedent(
        """
        import sys
        from minibroker.storage.data_dir_lock import held_by
        seen = []
        def hook(event, args):
            if event.startswith("fcntl.") or (event == "open" and args[1] not in ("r", "rb")):
                seen.append((event, repr(args)))
        sys.addaudithook(hook)
        print(held_by(sys.argv[1]), seen)
        """
    )
    lock = DataDirLock.acquire(str(tmp_path))
    try:
        out = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=20
        )
    finally:
        lock.release()
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{os.getpid()} []\n"


def test_a_file_in_place_of_the_directory_gets_a_clear_message(tmp_path):
    path = tmp_path / "data"
    path.write_text("not a directory")
    with pytest.raises(DataDirUnusableError, match="is a file, not a directory"):
        DataDirLock.acquire(str(path))
    with pytest.raises(DataDirUnusableError, match="a component of its path is a file"):
        DataDirLock.acquire(str(path / "sub"))
    assert path.read_text() == "not a directory"


def test_a_broker_that_fails_to_build_releases_the_lock(tmp_path):
    from minibroker.broker.state import Broker

    config = BrokerConfig({"log.dirs": str(tmp_path), "minibroker.scram.credentials": "garbage"})
    with pytest.raises(ConfigError):
        Broker(config)
    DataDirLock.acquire(str(tmp_path)).release()  # not left held by the failed attempt


def _config(data_dir, port: int = 0, *extra: str):
    from minibroker.broker.cli import build_config, parse_args

    args = ["--port", str(port), "--data-dir", str(data_dir)]
    for setting in extra:
        args += ["--set", setting]
    return build_config(parse_args(args))


def _taken_port() -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


SCRAM = "minibroker.scram.credentials=SCRAM-SHA-256=[name=alice,password=alice-secret]"


async def test_a_start_whose_port_is_taken_writes_nothing_but_the_lock_and_can_be_retried(tmp_path):
    from minibroker.broker.state import Broker

    taken = _taken_port()
    port = taken.getsockname()[1]
    try:
        broker = Broker(_config(tmp_path, port, SCRAM))  # SCRAM users to store: written after the bind
        with pytest.raises(OSError, match="in use"):
            await broker.start()
        assert sorted(os.listdir(tmp_path)) == [LOCK_FILE]
        assert held_by(str(tmp_path)) is None  # released by the failed start
    finally:
        taken.close()
    broker = Broker(_config(tmp_path, port, SCRAM))  # same directory, same port, same process
    await broker.start()
    try:
        assert broker.bound_port == port
        assert os.path.exists(tmp_path / "security" / "scram-credentials.json")
    finally:
        await broker.stop()
    assert held_by(str(tmp_path)) is None


async def test_a_start_that_fails_after_binding_releases_the_listener_and_the_lock(tmp_path):
    from minibroker.broker.state import Broker
    from minibroker.storage.errors import KafkaStorageError

    (tmp_path / "meta.properties").write_text("cluster.id=\n")  # damaged: recovery refuses it
    broker = Broker(_config(tmp_path))
    with pytest.raises(KafkaStorageError, match="meta.properties is damaged"):
        await broker.start()
    port = broker.security.listeners[0].bound_port
    assert port > 0
    assert held_by(str(tmp_path)) is None
    DataDirLock.acquire(str(tmp_path)).release()
    (tmp_path / "meta.properties").unlink()  # mended: the retry on the same port starts
    broker = Broker(_config(tmp_path, port))
    await broker.start()
    try:
        assert broker.bound_port == port
    finally:
        await broker.stop()


def _fail_close_of(monkeypatch, failing) -> None:
    """PartitionLog.close raises ENOSPC (naming a file) for the log `failing`, as on a full disk."""
    from minibroker.storage.log import PartitionLog

    real_close = PartitionLog.close

    def close(self, **kw):
        if self is failing:
            raise OSError(errno.ENOSPC, "No space left on device", os.path.join(self.dir, "x.snapshot"))
        real_close(self, **kw)

    monkeypatch.setattr(PartitionLog, "close", close)


def test_log_manager_close_goes_on_after_a_partition_fails(tmp_path, monkeypatch):
    from minibroker.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager

    logs = LogManager(str(tmp_path), {}, clock=SYSTEM_CLOCK)
    logs.open()
    logs.create_topic("t", 3)
    plogs = [logs.get_log("t", p) for p in range(3)]
    _fail_close_of(monkeypatch, plogs[1])
    with pytest.raises(OSError, match="No space left"):
        logs.close()
    assert plogs[0].closed and plogs[2].closed  # the ones after the failure are closed too
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()  # the next start recovers


async def test_a_stop_that_could_not_write_keeps_the_lock_and_names_the_file(tmp_path, monkeypatch):
    import structlog
    from minibroker.broker.state import Broker

    broker = Broker(_config(tmp_path))
    await broker.start()
    broker.logs.create_topic("t", 2)
    _fail_close_of(monkeypatch, broker.logs.get_log("t", 1))
    with structlog.testing.capture_logs() as logs:
        await broker.stop()
    warning = [e for e in logs if e["event"].startswith("broker stopped, but not cleanly")]
    assert len(warning) == 1, logs
    assert warning[0]["could_not_write"].endswith("x.snapshot"), warning
    assert "broker stopped cleanly" not in [e["event"] for e in logs]
    assert broker.durability.closed  # no fsync thread left running
    # held until the process exits: nothing else opens a directory that may hold half-written files
    with pytest.raises(DataDirLockedError):
        DataDirLock.acquire(str(tmp_path))
    broker.data_dir_lock.release()  # what the process's exit would do
