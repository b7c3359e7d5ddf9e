"""The socket side: accept connections, read length-prefixed frames, answer them in order.

Each connection handles one request at a time in arrival order, as Kafka does (a client may
pipeline several; the answers must come back in the same order). Malformed input never escapes as
an exception: the request gets a Kafka error code where the protocol has one, otherwise the
reason is logged and the connection closed; other connections are unaffected.
"""

from __future__ import annotations

import asyncio
import os
import struct
import time

import structlog

from broker.context import NO_RESPONSE, CloseConnection, RawResponse, RequestContext
from broker.dispatch import HANDLERS, supports
from broker.handlers import api_versions
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
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[Connection] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._on_connect, host, port, reuse_address=True)
        sockname = self._server.sockets[0].getsockname()
        return sockname[0], sockname[1]

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(self.broker, reader, writer)
        self._connections.add(conn)
        try:
            await conn.run()
        finally:
            self._connections.discard(conn)

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let each connection finish the request it is handling, then close."""
        if self._server is not None:
            self._server.close()
        for conn in list(self._connections):
            conn.stop_after_current()
        deadline = asyncio.get_running_loop().time() + grace_s
        while self._connections and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self._connections):
            conn.abort()


class Connection:
    def __init__(self, broker, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.broker = broker
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._busy = False
        self._stopping = False
        self.max_frame = broker.config["socket.request.max.bytes"]

    def stop_after_current(self) -> None:
        self._stopping = True
        if not self._busy:
            self.abort()

    def abort(self) -> None:
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
                try:
                    frame = await self.reader.readexactly(size)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                self._busy = True
                try:
                    await self._serve(frame)
                finally:
                    self._busy = False
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
        ctx = RequestContext(self.broker, key, version, header.correlation_id, header.client_id, self.peer)
        observe = self.broker.request_observer  # request log / metrics; None when both are off
        started = time.perf_counter() if observe is not None else 0.0
        try:
            result = await HANDLERS[key].handle(ctx, request)
        except CloseConnection as exc:
            raise ClosingConnection(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a handler bug must not take the broker down
            log.exception("request handler failed", api_key=key, api_version=version, peer=self.peer)
            raise ClosingConnection(f"internal error handling api key {key} v{version}: {exc}") from None
        if result is not NO_RESPONSE:
            head = response_header(key, version, header.correlation_id)
            if isinstance(result, RawResponse):
                await self._send_raw(head, result)
            else:
                await self._send(header.correlation_id, head, encode_response(result))
        if observe is not None:
            observe(ctx, request, result, time.perf_counter() - started)

    def _ensure_open(self) -> None:
        # The client may have reset the connection while its request waited (a parked Fetch);
        # writing to the closed transport would raise RuntimeError, so end the connection quietly.
        if self.writer.transport.is_closing():
            raise ConnectionResetError("client closed the connection before its response")

    async def _send(self, _correlation_id: int, head: bytes, body: bytes) -> None:
        self._ensure_open()
        self.writer.write(_INT32.pack(len(head) + len(body)) + head + body)
        await self.writer.drain()

    async def _send_raw(self, head: bytes, raw: RawResponse) -> None:
        self._ensure_open()
        self.writer.write(_INT32.pack(len(head) + raw.size) + head)
        for part in raw.parts:
            if isinstance(part, (bytes, bytearray, memoryview)):
                self.writer.write(part)
                continue
            # A FileSlice: record bytes straight from the segment file.
            position, remaining = part.position, part.length
            while remaining > 0:
                try:
                    chunk = os.pread(part.fd, min(remaining, _SLICE_READ), position)
                except OSError as exc:  # the segment was deleted (topic deleted) meanwhile
                    raise ClosingConnection(f"segment file unreadable: {exc}") from None
                if not chunk:
                    raise ClosingConnection("segment file shorter than its index says")
                self.writer.write(chunk)
                position += len(chunk)
                remaining -= len(chunk)
        await self.writer.drain()
