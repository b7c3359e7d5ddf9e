"""A fault-injecting TCP proxy that understands Kafka framing (issue 3 tests).

    client  <->  KafkaFaultProxy (127.0.0.1, own thread + event loop)  <->  broker

Every request frame (4-byte big-endian length, then api_key int16, api_version int16,
correlation_id int32, ...) is forwarded as is; the proxy remembers, per connection and in order,
which requests expect a response (Produce with acks=0 does not) and matches each response frame
from the broker to the oldest pending request (Kafka answers in order on a connection; a response
whose correlation id does not match is recorded in `errors`).

Faults, applied to Produce requests only (api key 0):

* mode A, ``drop_every(n)``: every n-th Produce request is forwarded, the broker's response is
  read and thrown away, and both sides of the connection are closed. The broker has written the
  batch, the client never hears so and must retry it: exactly the case idempotence is for.
* mode B, ``delay_every(n, seconds)``: the response to every n-th Produce request is held back
  for `seconds` (later responses on that connection queue behind it, so order is kept). Responses
  are read from the broker as soon as they come, so a broker that closes the connection (or is
  killed) is noticed at once; responses still held back then are lost (`hold()` + SIGKILL: the
  broker wrote batches that the client never hears about).

The proxy also decodes each forwarded Produce request far enough to see, per partition, the
batch header (producer id, epoch, base sequence, record count), so a test can prove that the
same batch really was sent more than once (`retransmitted_batches`).

It runs in its own thread with its own asyncio loop (so blocking clients such as kafka-python
and confluent-kafka, and asyncio clients on another loop, can all use it), is bounded
(`lifetime` seconds, after which it stops by itself), and `stop()` closes everything. The
upstream (broker address) may be changed at any time (`set_upstream`) and is read for each new
client connection; while the broker is down, new connections are accepted and closed at once.
"""

from __future__ import annotations

import asyncio
import collections
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

PRODUCE = 0
MAX_FRAME = 256 * 1024 * 1024


@dataclass
class _Pending:
    api_key: int
    api_version: int
    correlation_id: int
    action: str = "forward"  # forward | drop | delay
    delay: float = 0.0
    batches: tuple = ()  # producer batch keys of a Produce request (see ProxyStats.batches)


@dataclass
class ProxyStats:
    connections: int = 0
    upstream_connect_failures: int = 0
    requests: int = 0
    produce_requests: int = 0
    responses: int = 0
    dropped_responses: int = 0
    delayed_responses: int = 0
    closed_by_fault: int = 0
    #: (topic, partition, producer_id, epoch, base_sequence, record_count) -> times forwarded
    batches: collections.Counter = field(default_factory=collections.Counter)
    #: batch keys the broker answered but whose answer never reached the client (dropped in
    #: mode A, or held back in mode B when the connection died), in the order it happened
    lost_batches: list = field(default_factory=list)
    errors: list = field(default_factory=list)


# ----------------------------------------------------------------------------- Produce parsing
class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes, pos: int = 0):
        self.buf, self.pos = buf, pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise ValueError(f"short frame: need {n} bytes at {self.pos} of {len(self.buf)}")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def i16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def i32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def string(self, flexible: bool) -> str | None:
        if flexible:
            n = self.uvarint() - 1
        else:
            n = self.i16()
        return None if n < 0 else self.take(n).decode("utf-8", "replace")

    def bytes_(self, flexible: bool) -> bytes | None:
        n = self.uvarint() - 1 if flexible else self.i32()
        return None if n < 0 else self.take(n)

    def array_len(self, flexible: bool) -> int:
        return self.uvarint() - 1 if flexible else self.i32()

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def parse_produce(frame: bytes):
    """(acks, [(topic, partition, producer_id, epoch, base_sequence, record_count)]) of a
    Produce request frame (without its length prefix), versions 3-12 (flexible from 9). Topic
    names are None from v13 (topic ids). Only the first batch of each partition is reported."""
    r = _Reader(frame)
    api_key, version = r.i16(), r.i16()
    assert api_key == PRODUCE
    r.i32()  # correlation id
    n = r.i16()  # client id: always an int16 string, also in header v2
    if n > 0:
        r.take(n)
    flexible = version >= 9
    if flexible:
        r.skip_tags()
    if version >= 3:
        r.string(flexible)  # transactional id
    acks = r.i16()
    r.i32()  # timeout
    batches = []
    for _ in range(max(r.array_len(flexible), 0)):
        if version >= 13:
            r.take(16)
            topic = None
        else:
            topic = r.string(flexible)
        for _ in range(max(r.array_len(flexible), 0)):
            index = r.i32()
            records = r.bytes_(flexible)
            if flexible:
                r.skip_tags()
            if records and len(records) >= 61 and records[16] == 2:
                pid, epoch, seq, count = struct.unpack_from(">qhii", records, 43)
                batches.append((topic, index, pid, epoch, seq, count))
        if flexible:
            r.skip_tags()
    return acks, batches


# ----------------------------------------------------------------------------- the proxy
class KafkaFaultProxy:
    def __init__(
        self,
        upstream: tuple[str, int] | None = None,
        *,
        host: str = "127.0.0.1",
        lifetime: float = 240.0,
        connect_timeout: float = 3.0,
    ):
        self.host = host
        self.upstream = upstream
        self.lifetime = lifetime
        self.connect_timeout = connect_timeout
        self.stats = ProxyStats()
        self._drop_every = 0
        self._drop_limit: int | None = None
        self._delay_every = 0
        self._delay_seconds = 0.0
        self._produce_seen = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, 0))
        self._sock.listen(128)
        self.port: int = self._sock.getsockname()[1]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._conns: set = set()
        self.stopped_by_lifetime = False

    # ------------------------------------------------------------------ control (any thread)
    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def set_upstream(self, host: str, port: int) -> None:
        self.upstream = (host, port)

    def passthrough(self) -> None:
        self._drop_every = 0
        self._delay_every = 0

    def drop_every(self, n: int, limit: int | None = None) -> None:
        """Mode A: forward every n-th Produce, swallow its response and close the connection
        (at most `limit` times)."""
        assert n >= 1
        self._drop_limit = limit
        self._drop_every = n

    def delay_every(self, n: int, seconds: float) -> None:
        """Mode B: hold back the response to every n-th Produce for `seconds`."""
        assert n >= 1 and 0 < seconds < 60
        self._delay_seconds = seconds
        self._delay_every = n

    def close_connections(self) -> None:
        """Abort every proxied connection now (both sides)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._abort_all)

    def hold(self, seconds: float = 30.0) -> None:
        """Hold back every Produce response from now on (mode B with a long delay): with the
        broker killed meanwhile, batches it wrote are never acknowledged."""
        self.delay_every(1, seconds)

    def lost_and_resent(self) -> tuple[int, int]:
        """(producer batches whose response was lost, how many of them were sent again)."""
        lost = {b for b in self.stats.lost_batches if b[2] >= 0}
        return len(lost), sum(1 for b in lost if self.stats.batches[b] > 1)

    @property
    def retransmitted_batches(self) -> int:
        """Producer batches (pid >= 0) the proxy forwarded more than once."""
        return sum(1 for k, n in list(self.stats.batches.items()) if k[2] >= 0 and n > 1)

    def summary(self) -> str:
        s = self.stats
        return (
            f"proxy: {s.connections} connections, {s.upstream_connect_failures} upstream connect "
            f"failures, {s.requests} requests ({s.produce_requests} Produce), {s.responses} responses, "
            f"{s.dropped_responses} dropped, {s.delayed_responses} delayed, "
            f"{self.retransmitted_batches} batches sent more than once, errors: {s.errors[:3]}"
        )

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> KafkaFaultProxy:
        self._thread = threading.Thread(target=self._run, name=f"kafka-proxy-{self.port}", daemon=True)
        self._thread.start()
        if not self._ready.wait(5):
            raise AssertionError("proxy thread did not start within 5s")
        return self

    def stop(self, timeout: float = 5.0) -> None:
        if self._loop is not None and self._stop is not None and self._thread and self._thread.is_alive():
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:
                pass  # loop already closed
        if self._thread is not None:
            self._thread.join(timeout)
            assert not self._thread.is_alive(), "proxy thread did not stop"
        try:
            self._sock.close()
        except OSError:
            pass

    def __enter__(self) -> KafkaFaultProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, sock=self._sock)
        self._ready.set()
        try:
            await asyncio.wait_for(self._stop.wait(), self.lifetime)
        except TimeoutError:
            self.stopped_by_lifetime = True
        server.close()
        self._abort_all()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _abort_all(self) -> None:
        for writers in list(self._conns):
            for w in writers:
                w.transport.abort()
        self._conns.clear()

    # ------------------------------------------------------------------ one connection
    async def _handle(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        self.stats.connections += 1
        upstream = self.upstream
        try:
            if upstream is None:
                raise OSError("no upstream configured")
            u_reader, u_writer = await asyncio.wait_for(
                asyncio.open_connection(*upstream), self.connect_timeout
            )
        except (TimeoutError, OSError):
            self.stats.upstream_connect_failures += 1
            c_writer.transport.abort()
            return
        for w in (c_writer, u_writer):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = (c_writer, u_writer)
        self._conns.add(pair)
        pending: collections.deque[_Pending] = collections.deque()
        outbox: asyncio.Queue = asyncio.Queue()
        tasks = [
            asyncio.create_task(self._pump_requests(c_reader, u_writer, pending)),
            asyncio.create_task(self._pump_responses(u_reader, pending, outbox)),
            asyncio.create_task(self._deliver(outbox, c_writer)),
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for w in pair:
                w.transport.abort()
            self._conns.discard(pair)
            while not outbox.empty():  # answered by the broker, never delivered
                _, _, entry = outbox.get_nowait()
                if entry is not None:
                    self.stats.lost_batches.extend(entry.batches)

    @staticmethod
    async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
        try:
            head = await reader.readexactly(4)
            (size,) = struct.unpack(">i", head)
            if not 0 <= size <= MAX_FRAME:
                raise ValueError(f"bad frame size {size}")
            return await reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None

    async def _pump_requests(self, reader, writer, pending) -> None:
        while True:
            frame = await self._read_frame(reader)
            if frame is None or len(frame) < 8:
                return
            api_key, api_version, corr = struct.unpack_from(">hhi", frame, 0)
            self.stats.requests += 1
            entry = _Pending(api_key, api_version, corr)
            expects_response = True
            if api_key == PRODUCE:
                self.stats.produce_requests += 1
                try:
                    acks, batches = parse_produce(frame)
                except (ValueError, struct.error, UnicodeDecodeError) as exc:
                    self.stats.errors.append(f"unparseable Produce v{api_version}: {exc}")
                    acks, batches = -1, []
                for b in batches:
                    self.stats.batches[b] += 1
                entry.batches = tuple(batches)
                expects_response = acks != 0
                if expects_response:
                    self._produce_seen += 1
                    n = self._produce_seen
                    if (
                        self._drop_every
                        and n % self._drop_every == 0
                        and (self._drop_limit is None or self.stats.dropped_responses < self._drop_limit)
                    ):
                        entry.action = "drop"
                    elif self._delay_every and n % self._delay_every == 0:
                        entry.action, entry.delay = "delay", self._delay_seconds
            if expects_response:
                pending.append(entry)
            writer.write(struct.pack(">i", len(frame)) + frame)
            await writer.drain()

    async def _pump_responses(self, reader, pending, outbox: asyncio.Queue) -> None:
        """Read responses as soon as the broker sends them (so a broker that goes away is noticed
        at once, even while responses are held back) and queue them with their release time."""
        release = 0.0
        while True:
            frame = await self._read_frame(reader)
            if frame is None:
                return  # broker closed: whatever is still held back is lost with it
            self.stats.responses += 1
            if not pending:
                self.stats.errors.append("response without a pending request")
                entry = None
            else:
                entry = pending.popleft()
                corr = struct.unpack_from(">i", frame, 0)[0] if len(frame) >= 4 else None
                if corr != entry.correlation_id:
                    self.stats.errors.append(
                        f"response correlation id {corr} != {entry.correlation_id} (api {entry.api_key})"
                    )
            now = time.monotonic()
            if entry is not None and entry.action == "drop":
                self.stats.dropped_responses += 1
                self.stats.closed_by_fault += 1
                self.stats.lost_batches.extend(entry.batches)
                return  # the caller aborts both sides: this response (and any held one) is lost
            if entry is not None and entry.action == "delay":
                self.stats.delayed_responses += 1
                release = max(release, now + entry.delay)
            else:
                release = max(release, now)  # never overtake a held response: order is kept
            outbox.put_nowait((release, frame, entry))

    @staticmethod
    async def _deliver(outbox: asyncio.Queue, writer) -> None:
        while True:
            release, frame, _ = await outbox.get()
            wait = release - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(struct.pack(">i", len(frame)) + frame)
            await writer.drain()


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (bind to 0, read, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_port_closed(host: str, port: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=0.2).close()
        except OSError:
            return
        time.sleep(0.05)
    raise AssertionError(f"{host}:{port} still accepts connections {timeout}s later")
