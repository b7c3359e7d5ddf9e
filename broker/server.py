"""The socket side: accept connections, read length-prefixed frames, answer them in order.

Each connection handles one request at a time in arrival order, as Kafka does (a client may
pipeline several; the answers must come back in the same order). Malformed input never escapes as
an exception: the request gets a Kafka error code where the protocol has one, otherwise the
reason is logged and the connection closed; other connections are unaffected.
"""

from __future__ import annotations

import asyncio
import functools
import struct
import time

import structlog

from broker.context import NO_RESPONSE, CloseConnection, RawResponse, RequestContext
from broker.dispatch import HANDLERS, supports
from broker.handlers import api_versions
from broker.limits import ConnectionLimits, RequestBudget, idle_or_stalled
from broker.security.listeners import finish_binding, tls_principal
from broker.security.sasl import ANONYMOUS, Session
from broker.security.scram import AuthenticationFailed
from protocol.codec import DecodeError, decode_request, encode_response, request_class
from protocol.frames import API_VERSIONS_KEY, parse_request_header, response_header

log = structlog.get_logger("broker.server")

_INT32 = struct.Struct(">i")
# Reading a FileSlice into memory in pieces of at most this many bytes keeps memory flat.
_SLICE_READ = 1 << 20


class ClosingConnection(Exception):
    """The connection must be closed after logging this reason."""


class Server:
    def __init__(self, broker) -> None:
        self.broker = broker
        config = broker.config
        self._servers: list[asyncio.base_events.Server] = []
        self._connections: set[Connection] = set()
        self.limits = ConnectionLimits(config["max.connections"], config["max.connections.per.ip"])
        self.budget = RequestBudget(config["queued.max.requests"], config["queued.max.request.bytes"])
        self._idle_s = config["connections.max.idle.ms"] / 1000
        self._receive_timeout_s = config["minibroker.request.receive.timeout.ms"] / 1000
        self._watchdog: asyncio.Task | None = None
        self._refused, self._refusal_logged_at = 0, float("-inf")

    async def start(self, listeners) -> None:
        """Bind every listener (broker/security/listeners.py), TLS ones with their context."""
        for listener in listeners:
            server = await asyncio.start_server(
                functools.partial(self._on_connect, listener), listener.host, listener.port,
                reuse_address=True, ssl=listener.ssl_context)
            finish_binding(listener, server.sockets[0].getsockname()[1])
            self._servers.append(server)
        self._watchdog = asyncio.create_task(self._close_idle_and_stalled(), name="connection-watchdog")

    async def _on_connect(self, listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        ip = peer[0] if isinstance(peer, tuple) else str(peer)
        refusal = self.limits.admit(ip)
        if refusal is not None:
            self._log_refusal(ip, listener.name, refusal)
            writer.transport.abort()
            return
        principal = tls_principal(writer.get_extra_info("peercert")) if listener.uses_tls else None
        conn = Connection(self.broker, reader, writer, Session(listener, ip, principal or ANONYMOUS), self.budget)
        self._connections.add(conn)
        try:
            await conn.run()
        finally:
            self._connections.discard(conn)
            self.limits.release(ip)

    def _log_refusal(self, ip: str, listener: str, reason: str) -> None:
        """At most one warning a second: a client reconnecting in a loop must not flood the log."""
        self._refused += 1
        now = time.monotonic()
        if now - self._refusal_logged_at >= 1.0:
            log.warning("connections refused", ip=ip, listener=listener, reason=reason, count=self._refused)
            self._refused, self._refusal_logged_at = 0, now

    async def _close_idle_and_stalled(self) -> None:
        interval = min(1.0, max(0.05, min(self._idle_s, self._receive_timeout_s) / 4))
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for conn in list(self._connections):
                if conn.aborted:  # e.g. still waiting for the request budget: goes when woken
                    continue
                reason = idle_or_stalled(now, conn.last_activity, conn.frame_started, conn.writing_since,
                                         conn._busy, self._idle_s, self._receive_timeout_s)
                if reason is not None:
                    log.info("closing connection", peer=conn.peer, reason=reason)
                    conn.abort()

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let each connection finish the request it is handling, then close."""
        for server in self._servers:
            server.close()
        if self._watchdog is not None:
            self._watchdog.cancel()
        for conn in list(self._connections):
            conn.stop_after_current()
        deadline = asyncio.get_running_loop().time() + grace_s
        while self._connections and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self._connections):
            conn.abort()


class Connection:
    def __init__(self, broker, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 session: Session, budget: RequestBudget) -> None:
        self.broker = broker
        self.reader = reader
        self.writer = writer
        self.session = session
        self.budget = budget
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._busy = False
        self._stopping = False
        self.max_frame = broker.config["socket.request.max.bytes"]
        self.last_activity = time.monotonic()
        self.frame_started: float | None = None  # a frame's body is being received since then
        self.writing_since: float | None = None  # a response is being written since then
        self._held_bytes: int | None = None  # request bytes counted in the budget
        self.aborted = False

    def stop_after_current(self) -> None:
        self._stopping = True
        if not self._busy:
            self.abort()

    def abort(self) -> None:
        self.aborted = True
        self.writer.transport.abort()

    async def run(self) -> None:
        try:
            while not self._stopping:
                try:
                    head = await self.reader.readexactly(4)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                (size,) = _INT32.unpack(head)
                if size < 0 or size > self.max_frame:
                    raise ClosingConnection(
                        f"request of {size} bytes exceeds socket.request.max.bytes={self.max_frame}"
                        if size > 0 else f"invalid frame size {size}"
                    )
                if not self.budget.try_acquire(size):
                    await self.budget.acquire(size)  # queued.max.request(s/.bytes): wait unread
                self._held_bytes = size
                try:
                    self.frame_started = time.monotonic()
                    try:
                        frame = await self.reader.readexactly(size)
                    except (asyncio.IncompleteReadError, ConnectionError):
                        return
                    self.frame_started = None
                    self._busy = True
                    if self.session.raw_tokens and not self.session.authenticated:
                        await self._serve_raw_sasl_token(frame)
                        continue
                    await self._serve(frame)
                finally:
                    self._busy = False
                    self._release_budget()
                    self.last_activity = time.monotonic()
        except ClosingConnection as exc:
            log.warning("closing connection", peer=self.peer, reason=str(exc))
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.writer.transport.abort() if self.writer.transport.is_closing() else self.writer.close()

    async def _serve(self, frame: bytes) -> None:
        try:
            header = parse_request_header(frame)
        except DecodeError as exc:
            raise ClosingConnection(f"malformed request header: {exc}") from None
        key, version = header.api_key, header.api_version
        refusal = self.session.refusal(key)
        if refusal is not None:
            raise ClosingConnection(refusal)
        if not supports(key, version) or request_class(key, version) is None:
            if key == API_VERSIONS_KEY:
                # Answer with a v0 body and UNSUPPORTED_VERSION so the client can retry lower;
                # never parse the body and never close (clients treat that as a dead broker).
                body = api_versions.unsupported_version_body()
                await self._send(header.correlation_id, response_header(key, 0, header.correlation_id), body)
                return
            name = HANDLERS[key].__name__.rsplit(".", 1)[-1] if key in HANDLERS else "unknown"
            raise ClosingConnection(f"unsupported request: api key {key} ({name}) version {version}")
        try:
            request, _consumed = decode_request(request_class(key, version), frame, header.body_offset)
        except DecodeError as exc:
            raise ClosingConnection(f"malformed api key {key} v{version} request body: {exc}") from None
        ctx = RequestContext(self.broker, key, version, header.correlation_id, header.client_id, self.peer, self.session)
        observe = self.broker.request_observer  # request log / metrics; None when both are off
        started = time.perf_counter() if observe is not None else 0.0
        try:
            result = await HANDLERS[key].handle(ctx, request)
        except CloseConnection as exc:
            raise ClosingConnection(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a handler bug must not take the broker down
            log.exception("request handler failed", api_key=key, api_version=version, peer=self.peer)
            raise ClosingConnection(f"internal error handling api key {key} v{version}: {exc}") from None
        # the request is served: its bytes and its queue slot are free while the response is sent
        # (a client that never reads must not hold them)
        self._release_budget()
        if result is not NO_RESPONSE:
            head = response_header(key, version, header.correlation_id)
            if isinstance(result, RawResponse):
                await self._send_raw(head, result)
            else:
                await self._send(header.correlation_id, head, encode_response(result))
        if observe is not None:
            observe(ctx, request, result, time.perf_counter() - started)
        if self.session.close_reason is not None:
            raise ClosingConnection(self.session.close_reason)

    async def _serve_raw_sasl_token(self, token: bytes) -> None:
        try:
            challenge = self.session.evaluate_raw_token(token)
        except AuthenticationFailed as exc:
            raise ClosingConnection(f"authentication failed on listener {self.session.listener.name}: {exc}") from None
        self.writer.write(_INT32.pack(len(challenge)) + challenge)
        await self.writer.drain()

    def _release_budget(self) -> None:
        if self._held_bytes is not None:
            self.budget.release(self._held_bytes)
            self._held_bytes = None

    def _ensure_open(self) -> None:
        # The client may have reset the connection while its request waited (a parked Fetch);
        # writing to the closed transport would raise RuntimeError, so end the connection quietly.
        if self.writer.transport.is_closing():
            raise ConnectionResetError("client closed the connection before its response")

    async def _send(self, _correlation_id: int, head: bytes, body: bytes) -> None:
        self._ensure_open()
        self.writer.write(_INT32.pack(len(head) + len(body)) + head + body)
        self.writing_since = time.monotonic()
        await self.writer.drain()
        self.writing_since = None

    async def _send_raw(self, head: bytes, raw: RawResponse) -> None:
        self._ensure_open()
        self.writing_since = time.monotonic()
        self.writer.write(_INT32.pack(len(head) + raw.size) + head)
        for part in raw.parts:
            if isinstance(part, (bytes, bytearray, memoryview)):
                self.writer.write(part)
                continue
            # A FileSlice: record bytes straight from the segment file.
            pieces = part.pieces(_SLICE_READ)
            while True:
                try:
                    chunk = next(pieces, None)
                except OSError as exc:  # the segment was deleted (topic deleted) meanwhile
                    raise ClosingConnection(f"segment file unreadable: {exc}") from None
                if chunk is None:
                    break
                self.writer.write(chunk)
                # back-pressure: hold at most one chunk beyond the transport's high-water mark
                # for a client that does not read
                await self.writer.drain()
        await self.writer.drain()
        self.writing_since = None
