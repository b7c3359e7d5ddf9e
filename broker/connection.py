"""One client connection: read length-prefixed frames, answer them in order, write responses.

Each connection handles one request at a time in arrival order, as Kafka does (a client may
pipeline several; the answers must come back in the same order). Malformed input never escapes as
an exception: the request gets a Kafka error code where the protocol has one, otherwise the
reason is logged and the connection closed; other connections are unaffected.

Responses go out in as few writes as possible: the framing and small parts in one writev, and on
plain TCP the record bytes of large file slices (Fetch) straight from the segment file with
os.sendfile, never copied into Python. TLS (and a socket whose buffer is full) falls back to
reading the slice in pieces of at most _SLICE_READ bytes, so memory stays flat.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, NoReturn

import structlog
from minibroker.broker.context import NO_RESPONSE, CloseConnection, RawResponse, RequestContext
from minibroker.broker.dispatch import HANDLERS, supports
from minibroker.broker.handlers import api_versions
from minibroker.broker.limits import ConnectionSettings, RequestBudget
from minibroker.broker.security.sasl import Session
from minibroker.broker.security.scram_store import AuthenticationFailed
from minibroker.protocol.codec import DecodeError, decode_request, encode_response, request_class
from minibroker.protocol.frames import API_VERSIONS_KEY, RequestHeader, parse_request_header, response_header
from minibroker.storage.file_slice import FileSlice, ShortSliceError

if TYPE_CHECKING:
    from minibroker.broker.state import Broker

log = structlog.get_logger("minibroker.broker.server")

_INT32 = struct.Struct(">i")
# A FileSlice read into memory goes in pieces of at most this many bytes (memory stays flat).
_SLICE_READ = 1 << 20
# Slices at least this large go by os.sendfile; smaller ones are read and leave in the same write
# as the framing around them (one writev beats a write plus a sendfile for a few kB).
SENDFILE_MIN = 32 << 10
_BYTES_LIKE = (bytes, bytearray, memoryview)
_CONNECTION_IDS = itertools.count(1)  # RequestContext.connection_id


class ClosingConnection(Exception):
    """The connection must be closed after logging this reason."""


class Connection:
    def __init__(
        self,
        broker: Broker,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        session: Session,
        budget: RequestBudget,
        settings: ConnectionSettings,
    ) -> None:
        self.broker = broker
        self.reader = reader
        self.writer = writer
        self.session = session
        self.budget = budget
        self.peer = peer_text(writer.get_extra_info("peername"))
        self.id = next(_CONNECTION_IDS)
        self.busy = False  # a request is being served (not idleness, however long)
        self._stopping = False
        self.max_frame = settings.max_request_bytes
        # before authentication on a SASL listener, frames are capped lower (Kafka's rule)
        self.max_unauthenticated_frame = session.listener.sasl_max_receive_size
        self.failed_authentication_delay_s = settings.failed_authentication_delay_s
        self.clock = broker.clock
        self.last_activity = self.clock.monotonic()
        self.frame_started: float | None = None  # a frame's body is being received since then
        self.writing_since: float | None = None  # a response is being written since then
        self._held_bytes = 0  # request bytes counted in the budget
        self._holds_slot = False  # a queued.max.requests slot is taken
        self.aborted = False
        self._sendfile_fd = _sendfile_socket(writer)  # -1: TLS or no os.sendfile, read instead
        self.muted_until = 0.0  # a client quota's throttle: nothing is read before then (KIP-219)
        self._unmuted: asyncio.Future[None] | None = None  # the throttle's end, or a stop

    def stop_after_current(self) -> None:
        self._stopping = True
        if self._unmuted is not None:
            _wake(self._unmuted)  # a throttled connection does not hold the stop
        if not self.busy:
            self.abort()

    def abort(self) -> None:
        self.aborted = True
        self.writer.transport.abort()

    async def run(self) -> None:
        try:
            while not self._stopping:
                if self.muted_until:
                    await self._wait_unmuted()
                    continue
                try:
                    head = await self.reader.readexactly(4)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                (size,) = _INT32.unpack(head)
                if size > self.max_frame or size < 0:
                    raise ClosingConnection(
                        f"request of {size} bytes exceeds socket.request.max.bytes={self.max_frame}"
                        if size > 0
                        else f"invalid frame size {size}"
                    )
                if size > self.max_unauthenticated_frame and not self.session.authenticated:
                    limit = self.max_unauthenticated_frame
                    await self._fail_authentication(
                        "Failing SASL authentication due to invalid receive size: a frame of "
                        f"{size} bytes before authentication, sasl.server.max.receive.size={limit}"
                    )
                try:
                    self.frame_started = self.clock.monotonic()
                    try:
                        first = await self.reader.read(size) if size else b""
                        if len(first) == size:  # arrived whole: charged now
                            frame: bytes | memoryview = first
                            charge = size
                        else:  # still arriving: read and charged as it arrives
                            rest = await self._read_rest(first, size)
                            if rest is None:  # end of stream mid-frame
                                return
                            frame, charge = rest, 0
                        del first
                    except ConnectionError:
                        return
                    self.frame_started = None
                    self._held_bytes += charge
                    if not self.budget.try_take_slot(charge):
                        await self.budget.take_slot()  # queued.max.requests: wait, not read further
                    self._holds_slot = True
                    self.busy = True
                    if self.session.raw_tokens and not self.session.authenticated:
                        await self._serve_raw_sasl_token(bytes(frame))
                        continue
                    await self._serve(frame)
                finally:
                    self.busy = False
                    self._release_budget()
                    self.last_activity = self.clock.monotonic()
        except ClosingConnection as exc:
            log.warning("closing connection", peer=self.peer, reason=str(exc))
        except ConnectionError as exc:  # reset while its request was served or answered
            if self.writing_since is not None:
                log.info(
                    "client closed the connection in the middle of its response",
                    peer=self.peer,
                    reason=str(exc),
                )
            else:
                log.debug("client closed the connection before its response", peer=self.peer, reason=str(exc))
        except asyncio.CancelledError:
            pass
        finally:
            self.writer.transport.abort() if self.writer.transport.is_closing() else self.writer.close()
            self.broker.share_sessions.connection_closed(self.id)  # its share session goes (KIP-932)

    async def _serve(self, frame: bytes | memoryview) -> None:
        try:
            header = parse_request_header(frame)
        except DecodeError as exc:
            raise ClosingConnection(f"malformed request header: {exc}") from None
        key, version = header.api_key, header.api_version
        refusal = self.session.refusal(key)
        if refusal is not None:  # Kafka's IllegalSaslStateException: a failed authentication
            await self._fail_authentication(refusal)
        schema = self._request_schema(header)
        if schema is None:  # ApiVersions of an unknown version: answered with v0, never closed
            await self._send(
                response_header(key, 0, header.correlation_id), api_versions.unsupported_version_body()
            )
            return
        try:
            request, _consumed = decode_request(schema, frame, header.body_offset)
        except DecodeError as exc:
            raise ClosingConnection(f"malformed api key {key} v{version} request body: {exc}") from None
        ctx = RequestContext(
            self.broker,
            key,
            version,
            header.correlation_id,
            header.client_id,
            self.peer,
            self.session,
            self.id,
        )
        observe = self.broker.request_observer  # request log / metrics; None when both are off
        started = self.clock.monotonic() if observe is not None else 0.0
        durability = self.broker.durability
        marks = durability.marks
        # the test control plane (broker/control/) sees every request when it is on; None: off
        control = self.broker.control
        result = await (
            self._run_handler(ctx, request) if control is None else self._through_control(ctx, request)
        )
        quotas = self.broker.quotas
        if quotas.active and key <= 1:  # Produce and Fetch under a client quota (broker/quotas.py)
            result, throttle_ms = quotas.meter(ctx, result, len(frame))
            if throttle_ms:  # answered at once; the connection is read again after the throttle
                self.muted_until = self.clock.monotonic() + throttle_ms / 1000
        if durability.marks != marks:  # a log came due or a file was written: answer once on disk
            try:
                await durability.settle(marks)  # broker/durability.py
            except OSError as exc:
                raise ClosingConnection(f"cannot make durable what the answer depends on: {exc}") from None
        # the request is served: its bytes and its queue slot are free while the response is sent
        # (a client that never reads must not hold them)
        self._release_budget()
        session = self.session
        if session.close_reason is not None and session.failed_authentication:
            await asyncio.sleep(self.failed_authentication_delay_s)  # Kafka's brake on guessing
        if result is not NO_RESPONSE:
            head = response_header(key, version, header.correlation_id)
            if isinstance(result, RawResponse):
                await self._send_raw(head, result)
            else:
                await self._send(head, encode_response(result))
        if observe is not None:
            observe(ctx, request, result, self.clock.monotonic() - started)
        if session.close_reason is not None:
            raise ClosingConnection(session.close_reason)

    async def _through_control(self, ctx: RequestContext, request: object) -> object:
        """A request through the control plane's faults (which call the handler, or not)."""
        control = self.broker.control
        assert control is not None
        try:
            result = await control.faults.handle(ctx, request, self._run_handler)
        except CloseConnection as exc:  # a disconnect fault
            raise ClosingConnection(str(exc)) from None
        throttle_ms = control.faults.take_throttle(ctx)  # a throttle fault mutes as a quota does
        if throttle_ms:
            self.muted_until = self.clock.monotonic() + throttle_ms / 1000
        return result

    async def _run_handler(self, ctx: RequestContext, request: object) -> object:
        key, version = ctx.api_key, ctx.api_version
        try:
            return await HANDLERS[key].handle(ctx, request)
        except CloseConnection as exc:
            raise ClosingConnection(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a handler bug must not take the broker down
            log.exception("request handler failed", api_key=key, api_version=version, peer=self.peer)
            raise ClosingConnection(f"internal error handling api key {key} v{version}: {exc}") from None

    def _request_schema(self, header: RequestHeader) -> type | None:
        """The request class to decode with; None for an ApiVersions version this broker does not
        know (Kafka answers it with a v0 body and UNSUPPORTED_VERSION so the client retries
        lower); raises ClosingConnection for any other unsupported request."""
        key, version = header.api_key, header.api_version
        try:
            schema = request_class(key, version) if supports(key, version) else None
        except (ImportError, OSError) as exc:  # a lazy schema import with no descriptor left
            raise ClosingConnection(f"cannot load the schema of api key {key} v{version}: {exc}") from None
        if schema is None and key != API_VERSIONS_KEY:
            name = HANDLERS[key].name if key in HANDLERS else "unknown"
            raise ClosingConnection(f"unsupported request: api key {key} ({name}) version {version}")
        return schema

    async def _wait_unmuted(self) -> None:
        """Kafka's throttled channel: the client's next request is read once the throttle time
        of its last answer has passed (or the broker stops)."""
        delay = self.muted_until - self.clock.monotonic()
        self.muted_until = 0.0
        if delay <= 0:
            return
        loop = asyncio.get_running_loop()
        self._unmuted = unmuted = loop.create_future()
        timer = loop.call_later(delay, _wake, unmuted)
        try:
            await unmuted
        finally:
            timer.cancel()
            self._unmuted = None

    async def _serve_raw_sasl_token(self, token: bytes) -> None:
        try:
            challenge = self.session.evaluate_raw_token(token)
        except AuthenticationFailed as exc:
            listener = self.session.listener.name
            await self._fail_authentication(f"authentication failed on listener {listener}: {exc}")
        self._ensure_open()
        self.writer.write(_INT32.pack(len(challenge)) + challenge)
        await self.writer.drain()

    async def _read_rest(self, first: bytes, size: int) -> memoryview | None:
        """The rest of a frame that did not arrive whole, or None at the end of the stream.

        The bytes go into one buffer grown as they arrive (never a second copy of the frame, nor
        memory for the size the frame only announces), each piece charged to the request budget;
        while the budget is full the connection stops reading (its client's socket fills up)."""
        budget = self.budget
        buf = bytearray(first)
        self._held_bytes += len(first)
        budget.charge(len(first))
        try:
            while len(buf) < size:
                if budget.full():
                    self.frame_started = None  # waiting on others is not this client's stall
                    await budget.wait_for_room(self)
                    self.frame_started = self.clock.monotonic()
                chunk = await self.reader.read(size - len(buf))
                if not chunk:
                    return None
                self._held_bytes += len(chunk)
                budget.charge(len(chunk))
                buf += chunk
                del chunk
        finally:
            budget.end_overdraft(self)
        return memoryview(buf).toreadonly()  # kio reads read-only buffers only

    async def _fail_authentication(self, reason: str) -> NoReturn:
        """Close after connection.failed.authentication.delay.ms, as Kafka does after a failed
        authentication (the connection is not read meanwhile): slows password guessing."""
        self.session.failed_authentication = True
        self._release_budget()
        await asyncio.sleep(self.failed_authentication_delay_s)
        raise ClosingConnection(reason)

    def _release_budget(self) -> None:
        if self._held_bytes or self._holds_slot:
            self.budget.release(self._held_bytes, self._holds_slot)
            self._held_bytes, self._holds_slot = 0, False

    def _ensure_open(self) -> None:
        # The client may have reset the connection while its request waited (a parked Fetch);
        # writing to the closed transport would raise RuntimeError, so end the connection quietly.
        if self.writer.transport.is_closing():
            raise ConnectionResetError("client closed the connection before its response")

    async def _send(self, head: bytes, body: bytes) -> None:
        self._ensure_open()
        self.writer.write(_INT32.pack(len(head) + len(body)) + head + body)
        self.writing_since = self.clock.monotonic()
        await self.writer.drain()
        self.writing_since = None

    async def _send_raw(self, head: bytes, raw: RawResponse) -> None:
        """Bytes parts and small slices gathered into one writev; large slices by sendfile."""
        self._ensure_open()
        self.writing_since = self.clock.monotonic()
        pending: list[bytes | bytearray | memoryview] = [_INT32.pack(len(head) + raw.size) + head]
        pending_size = 0
        for part in raw.parts:
            if isinstance(part, _BYTES_LIKE):
                pending.append(part)
                continue
            if self._sendfile_fd >= 0 and part.length >= SENDFILE_MIN:
                self.writer.writelines(pending)
                pending, pending_size = [], 0
                await self._sendfile(part)
                continue
            for chunk in _pieces(part):
                pending.append(chunk)
                pending_size += len(chunk)
                if pending_size >= _SLICE_READ:
                    # back-pressure: hold at most about one piece beyond the transport's
                    # high-water mark for a client that does not read
                    self.writer.writelines(pending)
                    pending, pending_size = [], 0
                    await self.writer.drain()
                    self._ensure_open()
        self.writer.writelines(pending)
        await self.writer.drain()
        self.writing_since = None

    async def _sendfile(self, part: FileSlice) -> None:
        """The slice from the segment file to the socket by os.sendfile, after everything the
        transport already holds (nothing may overtake it). When the socket buffer is full, one
        piece goes through the transport, which waits for the client to read."""
        position, end = part.position, part.position + part.length
        while position < end:
            await self._transport_flushed()
            self._ensure_open()  # the descriptor is still this client's socket
            try:
                sent = os.sendfile(self._sendfile_fd, _file_of(part), position, end - position)
            except BlockingIOError:
                chunk = _read_piece(part, position, end)
                self.writer.write(chunk)
                sent = len(chunk)
            except ConnectionError:
                raise
            except OSError as exc:  # the segment file, not the socket
                raise ClosingConnection(f"segment file unreadable: {exc}") from None
            if sent == 0:
                raise ClosingConnection("segment file shorter than its index says")
            position += sent

    async def _transport_flushed(self) -> None:
        """Wait until the transport's write buffer is empty (drain alone stops at its low-water
        mark, which may leave bytes a sendfile would overtake)."""
        transport = self.writer.transport
        if transport.is_closing() or transport.get_write_buffer_size() == 0:
            return
        transport.set_write_buffer_limits(high=0)  # paused until the buffer is empty
        try:
            await self.writer.drain()
        finally:
            if not transport.is_closing():  # a closed transport refuses any call
                transport.set_write_buffer_limits()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def peer_text(peer: object) -> str:
    """A peer address as host:port (a socket's peername), for logs."""
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)


def _sendfile_socket(writer: asyncio.StreamWriter) -> int:
    """The socket's descriptor if responses may be sent from files with os.sendfile: plain TCP
    only (TLS encrypts in user space), -1 otherwise."""
    if not hasattr(os, "sendfile") or writer.get_extra_info("sslcontext") is not None:
        return -1
    sock = writer.get_extra_info("socket")
    return sock.fileno() if sock is not None else -1


def _file_of(part: FileSlice) -> int:
    try:
        return part.fileno()
    except OSError as exc:  # the segment was deleted (topic deleted) meanwhile
        raise ClosingConnection(f"segment file unreadable: {exc}") from None


def _pieces(part: FileSlice) -> Iterator[bytes]:
    """The slice's bytes piece by piece (FileSlice.pieces), a vanished or short segment file as
    the reason to close the connection."""
    pieces = part.pieces(_SLICE_READ)
    while True:
        try:
            chunk = next(pieces, None)
        except ShortSliceError:
            raise ClosingConnection("segment file shorter than its index says") from None
        except OSError as exc:  # the segment was deleted (topic deleted) meanwhile
            raise ClosingConnection(f"segment file unreadable: {exc}") from None
        if chunk is None:
            return
        yield chunk


def _read_piece(part: FileSlice, position: int, end: int) -> bytes:
    """At most _SLICE_READ bytes of the slice from `position`, never empty."""
    try:
        chunk = part.read(position, min(end - position, _SLICE_READ))
    except OSError as exc:  # the segment was deleted (topic deleted) meanwhile
        raise ClosingConnection(f"segment file unreadable: {exc}") from None
    if not chunk:
        raise ClosingConnection("segment file shorter than its index says")
    return chunk
