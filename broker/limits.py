"""Resource limits that keep one client from taking the broker down (sans I/O, but the budget
waits on the event loop).

- ConnectionLimits: `max.connections` and `max.connections.per.ip`; a connection over either is
  closed as soon as it is accepted (Kafka instead delays accepting when the total is reached).
- RequestBudget: `queued.max.requests` requests and `queued.max.request.bytes` request bytes may
  be held at once across all connections, from reading a frame until its handler returns; a
  connection whose next frame does not fit is not read until others finish (Kafka mutes such
  channels the same way).
- idle_or_stalled: `connections.max.idle.ms` without a request or without the client reading
  its response, or a request frame started and not finished within
  `minibroker.request.receive.timeout.ms` (slow-loris), closes a connection.
- partition_limit_error: CreateTopics, CreatePartitions and auto-creation may not create more
  than `minibroker.max.partitions.per.request` partitions in one request (Kafka's
  POLICY_VIOLATION for an excessively large batch) nor exceed `minibroker.max.partitions`, nor
  leave fewer than FD_RESERVE file descriptors free (each partition keeps one open).
- raise_open_file_limit: like the JVM under Kafka (-XX:+MaxFDLimit), raise the soft limit on
  open files to the hard limit at startup.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter, deque

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

# descriptors kept free for connections, new segments and lazily imported modules
FD_RESERVE = 256


class ConnectionLimits:
    def __init__(self, max_total: int, max_per_ip: int) -> None:
        self.max_total = max_total
        self.max_per_ip = max_per_ip
        self.total = 0
        self.per_ip: Counter[str] = Counter()

    def admit(self, ip: str) -> str | None:
        """Count the connection in, or return why it must be closed."""
        if self.total >= self.max_total:
            return f"max.connections={self.max_total} reached"
        if self.per_ip[ip] >= self.max_per_ip:
            return f"max.connections.per.ip={self.max_per_ip} reached for {ip}"
        self.total += 1
        self.per_ip[ip] += 1
        return None

    def release(self, ip: str) -> None:
        self.total -= 1
        self.per_ip[ip] -= 1
        if self.per_ip[ip] <= 0:
            del self.per_ip[ip]


class RequestBudget:
    """Counts requests and request bytes being served; waiters are served in arrival order."""

    def __init__(self, max_requests: int, max_bytes: int) -> None:
        self.max_requests = max_requests
        self.max_bytes = max_bytes  # -1: no bound
        self.requests = 0
        self.bytes = 0
        self._waiters: deque[tuple[int, asyncio.Future]] = deque()

    def _fits(self, size: int) -> bool:
        if self.requests >= self.max_requests:
            return False
        # one request larger than the whole budget is still served, alone
        return self.max_bytes < 0 or self.bytes == 0 or self.bytes + size <= self.max_bytes

    def try_acquire(self, size: int) -> bool:
        if self._waiters or not self._fits(size):
            return False
        self.requests += 1
        self.bytes += size
        return True

    async def acquire(self, size: int) -> None:
        if self.try_acquire(size):
            return
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append((size, fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release(size)  # granted just as we were cancelled
            else:
                self._waiters.remove((size, fut))
            raise

    def release(self, size: int) -> None:
        self.requests -= 1
        self.bytes -= size
        while self._waiters and self._fits(self._waiters[0][0]):
            size_next, fut = self._waiters.popleft()
            if fut.cancelled():
                continue
            self.requests += 1
            self.bytes += size_next
            fut.set_result(None)


def idle_or_stalled(
    now: float,
    last_activity: float,
    frame_started: float | None,
    writing_since: float | None,
    busy: bool,
    idle_s: float,
    receive_timeout_s: float,
) -> str | None:
    """Why a connection should be closed now, or None. A request being served (a long-polling
    Fetch, a parked JoinGroup) is not idleness; a response the client has not taken for
    connections.max.idle.ms is."""
    if writing_since is not None:
        if now - writing_since > idle_s:
            return f"client has not read its response for connections.max.idle.ms={int(idle_s * 1000)}"
        return None
    if frame_started is not None:
        if now - frame_started > receive_timeout_s:
            timeout_ms = int(receive_timeout_s * 1000)
            return f"request not received in full within minibroker.request.receive.timeout.ms={timeout_ms}"
        return None
    if not busy and now - last_activity > idle_s:
        return f"idle for longer than connections.max.idle.ms={int(idle_s * 1000)}"
    return None


def partition_limit_error(config, existing_partitions: int, requested: int) -> str | None:
    """Why creating `requested` more partitions in one request is refused, or None."""
    per_request = config["minibroker.max.partitions.per.request"]
    if requested > per_request:
        return (
            f"Unable to perform excessively large batch operation: {requested} partitions in one request "
            f"(minibroker.max.partitions.per.request={per_request})"
        )
    total = config["minibroker.max.partitions"]
    if existing_partitions + requested > total:
        return (
            f"the broker would have {existing_partitions + requested} partitions, more than "
            f"minibroker.max.partitions={total}"
        )
    free = free_file_descriptors()
    if free is not None and requested > free - FD_RESERVE:
        return (
            f"{requested} new partitions would leave fewer than {FD_RESERVE} of the {free} free file "
            "descriptors; raise the open-files limit (ulimit -n)"
        )
    return None


def free_file_descriptors() -> int | None:
    """Open-file headroom of this process, or None where it cannot be counted."""
    if resource is None:
        return None
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    for fd_dir in ("/proc/self/fd", "/dev/fd"):
        if os.path.isdir(fd_dir):
            return limit - len(os.listdir(fd_dir))
    return None


def raise_open_file_limit() -> tuple[int, int] | None:
    """Raise the soft open-files limit to the hard one; returns (old, new) when it changed."""
    if resource is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft == hard:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):  # macOS refuses RLIM_INFINITY for files
        return None
    return soft, hard
