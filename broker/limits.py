"""Resource limits that keep one client from taking the broker down (sans I/O, but the budget
waits on the event loop).

- ConnectionSettings: the connection properties below, read from the configuration once at
  start (none of them is dynamic here) and handed to the Server and each Connection.
- ConnectionLimits: `max.connections` and `max.connections.per.ip`; a connection over either is
  closed as soon as it is accepted (Kafka instead delays accepting when the total is reached).
- RequestBudget: `queued.max.requests` complete requests and `queued.max.request.bytes` request
  bytes may be held at once across all connections, until their handler returns (give or take
  one frame and each connection's read-ahead: see RequestBudget). Bytes are charged as they
  arrive, not for the size a frame announces, so a client that announces large frames and
  stalls holds nothing it has not sent; a connection whose frame is still arriving stops being
  read while the budget is full (Kafka mutes such channels the same way).
- idle_or_stalled: `connections.max.idle.ms` without a request or without the client reading
  its response, or a request frame started and not finished within
  `minibroker.request.receive.timeout.ms` (slow-loris), closes a connection.
- partition_limit_error: CreateTopics, CreatePartitions and auto-creation may not create more
  than `minibroker.max.partitions.per.request` partitions in one request (Kafka's
  POLICY_VIOLATION for an excessively large batch) nor exceed `minibroker.max.partitions`, nor
  leave fewer than FD_RESERVE file descriptors free (each partition keeps one open).
- LogThrottle: a warning that may repeat in a loop is logged at most once an interval, with a
  count.
- raise_open_file_limit: like the JVM under Kafka (-XX:+MaxFDLimit), raise the soft limit on
  open files to the hard limit at startup.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter, deque
from typing import TYPE_CHECKING, NamedTuple

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from minibroker.broker.config import BrokerConfig

# descriptors kept free for connections, new segments and lazily imported modules
FD_RESERVE = 256


class ConnectionSettings(NamedTuple):
    """How connections are admitted, bounded and timed out (Kafka's property names in the
    comments; durations in seconds). Per-listener settings live on the Listener
    (broker/security/listeners.py)."""

    max_request_bytes: int  # socket.request.max.bytes
    max_connections: int  # max.connections
    max_connections_per_ip: int  # max.connections.per.ip
    queued_max_requests: int  # queued.max.requests
    queued_max_request_bytes: int  # queued.max.request.bytes (-1: no bound)
    idle_s: float  # connections.max.idle.ms
    receive_timeout_s: float  # minibroker.request.receive.timeout.ms
    ssl_handshake_timeout_s: float  # minibroker.ssl.handshake.timeout.ms
    failed_authentication_delay_s: float  # connection.failed.authentication.delay.ms

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ConnectionSettings:
        return cls(
            max_request_bytes=config["socket.request.max.bytes"],
            max_connections=config["max.connections"],
            max_connections_per_ip=config["max.connections.per.ip"],
            queued_max_requests=config["queued.max.requests"],
            queued_max_request_bytes=config["queued.max.request.bytes"],
            idle_s=config["connections.max.idle.ms"] / 1000,
            receive_timeout_s=config["minibroker.request.receive.timeout.ms"] / 1000,
            ssl_handshake_timeout_s=config["minibroker.ssl.handshake.timeout.ms"] / 1000,
            failed_authentication_delay_s=config["connection.failed.authentication.delay.ms"] / 1000,
        )


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
    """`queued.max.requests` and `queued.max.request.bytes` across all connections.

    Bytes are charged as they arrive, never for the size a frame announces: a connection that
    announces 100 MiB and sends 3 bytes holds 3 bytes, so stalled announcements take nothing from
    the others. A frame that arrived whole is never held back (its bytes are in memory already:
    each connection's stream reads ahead about 128-384 KiB, twice its 64 KiB limit plus one socket
    read, before it stops reading); a frame still arriving is not read further while the budget
    is full (its client's socket fills and TCP stops it), except that one such frame at a time may
    go on past the budget (the overdraft), so frames arriving together can never wait on each
    other for good. The memory bound is thus queued.max.request.bytes plus one frame
    (socket.request.max.bytes) plus about 384 KiB per connection; and a client that holds the
    overdraft and stalls holds back the frames arriving in pieces until
    minibroker.request.receive.timeout.ms closes it.

    A request slot (`queued.max.requests`) is taken once a frame is complete and given back when
    its handler returns; a frame still arriving holds none. Waiters are served in arrival order.
    """

    def __init__(self, max_requests: int, max_bytes: int) -> None:
        self.max_requests = max_requests
        self.max_bytes = max_bytes  # -1: no bound
        self.requests = 0
        self.bytes = 0
        self._slot_waiters: deque[asyncio.Future[None]] = deque()
        self._room_waiters: deque[tuple[object, asyncio.Future[None]]] = deque()
        self._overdraft: object | None = None  # the reader allowed past a full budget

    def full(self) -> bool:
        return 0 <= self.max_bytes <= self.bytes

    def charge(self, size: int) -> None:
        """Bytes of a frame still arriving, counted as they are read."""
        self.bytes += size

    def try_take_slot(self, size: int) -> bool:
        """Count `size` more bytes (a frame that arrived whole; 0 after charge()) and take a request
        slot if one is free without waiting."""
        self.bytes += size
        if self.requests >= self.max_requests or self._slot_waiters:
            return False
        self.requests += 1
        return True

    async def take_slot(self) -> None:
        """Wait for a request slot (after try_take_slot said no)."""
        fut = asyncio.get_running_loop().create_future()
        self._slot_waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.requests -= 1  # granted just as we were cancelled
                self._wake()
            else:  # _wake() may have dropped the cancelled future already
                with contextlib.suppress(ValueError):
                    self._slot_waiters.remove(fut)
            raise

    async def wait_for_room(self, reader: object) -> None:
        """Called by `reader` in the middle of a frame while full(): returns when there is room
        again, or at once if it takes (or holds) the overdraft."""
        if self._overdraft is None or self._overdraft is reader:
            self._overdraft = reader
            return
        fut = asyncio.get_running_loop().create_future()
        entry = (reader, fut)
        self._room_waiters.append(entry)
        try:
            await fut
        except asyncio.CancelledError:
            if not fut.done():
                self._room_waiters.remove(entry)
            self.end_overdraft(reader)
            raise

    def end_overdraft(self, reader: object) -> None:
        """`reader`'s frame is complete or abandoned: the overdraft goes to the next waiter."""
        if self._overdraft is reader:
            self._overdraft = None
            self._wake()

    def release(self, size: int, slot: bool) -> None:
        """A frame's bytes (and its request slot, once taken) are free again."""
        self.bytes -= size
        if slot:
            self.requests -= 1
        self._wake()

    def _wake(self) -> None:
        while self._slot_waiters and self.requests < self.max_requests:
            fut = self._slot_waiters.popleft()
            if not fut.done():
                self.requests += 1
                fut.set_result(None)
        while self._room_waiters:
            if self.full():
                if self._overdraft is not None:
                    return
                self._overdraft = self._room_waiters[0][0]
            reader, fut = self._room_waiters.popleft()
            if not fut.done():
                fut.set_result(None)
            elif self._overdraft is reader:
                self._overdraft = None


class LogThrottle:
    """At most one log line every `interval_s` for an event that may repeat in a loop (a client
    reconnecting, a producer retrying against a full disk), with how many happened since."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._count = 0
        self._logged_at = float("-inf")

    def due(self, now: float) -> tuple[int, float | None] | None:
        """Count one event at `now` (monotonic seconds, the broker's clock). When a line is due:
        (events since the previous line, this one included; seconds since the previous line,
        None for the first), else None."""
        self._count += 1
        since = now - self._logged_at
        if since < self.interval_s:
            return None
        count, self._count, self._logged_at = self._count, 0, now
        return count, None if since == float("inf") else round(since, 1)


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


def partition_limit_error(config: BrokerConfig, existing_partitions: int, requested: int) -> str | None:
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
