"""The data directory's lock: one broker per directory, as Kafka's ``.lock`` in each log dir.

``DataDirLock.acquire(dir)`` creates the directory if needed, opens ``<dir>/.lock`` and takes an
exclusive, non-blocking ``flock`` on it, before anything else in the directory is read or
written. The lock belongs to the open file description, so it lasts as long as the descriptor:
the process's life, or until ``release()``. The kernel drops it when the process dies however it
dies (SIGKILL included), so a restart right after a crash is never refused by a stale lock, and
the file itself is never deleted (unlinking it while another process opens it would let two
processes each lock a different inode). After locking, the holder writes its pid into the file,
so a refused broker and ``minibroker dump`` can say which process holds the directory.

``held_by(dir)`` answers "is a broker running on this directory" without taking the lock (see its
docstring for why that matters).
"""

from __future__ import annotations

import fcntl
import os

__all__ = ["LOCK_FILE", "DataDirLock", "DataDirLockedError", "DataDirUnusableError", "held_by"]

LOCK_FILE = ".lock"


class DataDirLockedError(OSError):
    """Another process holds the data directory's lock. ``holder_pid`` is None when the holder
    has not written its pid yet (it writes it right after locking)."""

    def __init__(self, data_dir: str, holder_pid: int | None) -> None:
        self.data_dir = data_dir
        self.holder_pid = holder_pid
        if holder_pid is None:
            who = "Another process"
        elif holder_pid == os.getpid():
            who = f"This process (pid {holder_pid}) already runs a broker that"
        else:
            who = f"Another process (pid {holder_pid})"
        super().__init__(
            f"Failed to acquire lock on file {LOCK_FILE} in {data_dir}. {who} is using this "
            f"directory. Stop that broker first, or give this one a data directory of its own "
            f"(--data-dir, log.dirs); two brokers on one directory would overwrite each other's data"
        )


class DataDirUnusableError(OSError):
    """The data directory cannot be created or opened (a file in its place, no permission)."""


def _prepare_dir(data_dir: str) -> None:
    try:
        os.makedirs(data_dir, exist_ok=True)
    except FileExistsError:  # makedirs with exist_ok raises this only when the path is not a directory
        raise DataDirUnusableError(
            f"data directory {data_dir} is a file, not a directory: give --data-dir (log.dirs) "
            f"the path of a directory (it is created if missing)"
        ) from None
    except NotADirectoryError:
        raise DataDirUnusableError(
            f"data directory {data_dir} cannot be created: a component of its path is a file, not a directory"
        ) from None
    except PermissionError as exc:
        raise DataDirUnusableError(
            f"data directory {data_dir} cannot be created: permission denied on {exc.filename}"
        ) from None


def _read_pid(fd: int) -> int | None:
    """The first line of the lock file, if it is a pid."""
    try:
        first = os.pread(fd, 32, 0).split(b"\n", 1)[0].strip()
    except OSError:
        return None
    return int(first) if first.isdigit() else None


class DataDirLock:
    """Held: ``fd`` is the locked ``.lock`` descriptor. Use ``DataDirLock.acquire(dir)``."""

    def __init__(self, data_dir: str, fd: int) -> None:
        self.data_dir = data_dir
        self.path = os.path.join(data_dir, LOCK_FILE)
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, data_dir: str) -> DataDirLock:
        """Lock ``data_dir`` (created if missing) or raise: DataDirLockedError when another
        process (or another broker in this one) holds it, DataDirUnusableError when the
        directory cannot be created or the lock file opened."""
        data_dir = os.path.abspath(str(data_dir))
        _prepare_dir(data_dir)
        path = os.path.join(data_dir, LOCK_FILE)
        try:
            # non-inheritable (PEP 446): a spawned child (the cleaner's workers) does not keep it
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise DataDirUnusableError(
                f"cannot open the lock file {path}: {exc.strerror} (the data directory must be "
                f"writable by the broker)"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise DataDirLockedError(data_dir, holder) from None
        except OSError as exc:  # ENOLCK: a file system without locks (some network mounts)
            os.close(fd)
            raise DataDirUnusableError(f"cannot lock {path}: {exc.strerror}") from None
        # Written in place, then cut: a reader (a refused broker) sees the new pid on the first
        # line at every moment in between, never an empty file.
        pid = f"{os.getpid()}\n".encode()
        try:
            os.pwrite(fd, pid, 0)
            os.ftruncate(fd, len(pid))
        except OSError:
            pass  # the pid is a courtesy to whoever is refused; the lock is what counts
        return cls(data_dir, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Unlock (closing the descriptor releases the flock). Idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def held_by(data_dir: str) -> int | None:
    """The pid of the process holding ``data_dir``'s lock, or None if nobody holds it (0 when
    it is held but the holder's pid is unknown). Never takes the lock.

    Why not try the lock (a shared, non-blocking flock, released at once): while a reader held
    it, a broker starting at that moment would be refused, and a read-only tool must never make
    a start fail. /proc/locks lists every flock on the machine with its holder's pid and the
    device and inode of the locked file, and reading it locks nothing. Where /proc/locks cannot
    be read (not Linux), the pid written in the file is taken as the holder if that process is
    alive: a guess (a pid can be reused), good enough for a notice."""
    path = os.path.join(str(data_dir), LOCK_FILE)
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            first = f.read(32).split(b"\n", 1)[0].strip()
    except OSError:  # no lock file: no broker ever ran here
        return None
    file_pid = int(first) if first.isdigit() else None
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            table = f.read()
    except OSError:
        return _alive(file_pid)
    dev = (os.major(st.st_dev), os.minor(st.st_dev))
    for line in table.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:9978657 0 EOF"; a waiter's line has "->" after
        # the number, and locks of processes outside this pid namespace are not listed
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK":
            continue
        try:
            major, minor, ino = fields[5].split(":")
            lock_dev, lock_ino, lock_pid = (int(major, 16), int(minor, 16)), int(ino), int(fields[4])
        except ValueError:
            continue
        if lock_ino != st.st_ino:
            continue
        # an overlay file system may report another device in stat than the kernel's lock table
        if lock_dev == dev or (file_pid is not None and lock_pid == file_pid):
            return lock_pid if lock_pid > 0 else (file_pid or 0)
    return None


def _alive(pid: int | None) -> int | None:
    if pid is None:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, someone else's
        return pid
    return pid
