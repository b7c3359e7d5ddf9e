"""The listening side: bind the listeners, admit connections (max.connections, per IP), close
idle and stalled ones, and stop gracefully. Each admitted connection is served by
broker/connection.py.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING

import structlog
from minibroker.broker.connection import Connection, peer_text
from minibroker.broker.limits import (
    ConnectionLimits,
    ConnectionSettings,
    LogThrottle,
    RequestBudget,
    idle_or_stalled,
)
from minibroker.broker.security.listeners import Listener, finish_binding, tls_principal
from minibroker.broker.security.sasl import ANONYMOUS, Session

if TYPE_CHECKING:
    from minibroker.broker.state import Broker

log = structlog.get_logger("minibroker.broker.server")


class Server:
    def __init__(self, broker: Broker, settings: ConnectionSettings) -> None:
        self.broker = broker
        self.settings = settings
        self._servers: list[asyncio.Server] = []
        self._tls_sockets: list[tuple[Listener, list[socket.socket]]] = []
        self._accepting: list[asyncio.Task[None]] = []  # TLS accept loops
        self._tls_tasks: set[asyncio.Task[None]] = set()  # TLS connections (a reference keeps them alive)
        self._handshaking: set[asyncio.Task[None]] = set()  # those still in their handshake
        self._connections: set[Connection] = set()
        self.limits = ConnectionLimits(settings.max_connections, settings.max_connections_per_ip)
        self.budget = RequestBudget(settings.queued_max_requests, settings.queued_max_request_bytes)
        self._watchdog: asyncio.Task[None] | None = None
        self._refusals = LogThrottle(1.0)

    async def bind(self, listeners: Iterable[Listener]) -> None:
        """Bind every listener (broker/security/listeners.py) without accepting yet. Called before
        the data dir is recovered, so a start whose port is taken fails before it writes anything.
        Plain listeners are asyncio servers; TLS listeners are listening sockets whose accepted
        connections are admitted first and only then start their handshake (_accept_tls)."""
        for listener in listeners:
            if listener.uses_tls:
                sockets = _listening_sockets(listener.host, listener.port)
                self._tls_sockets.append((listener, sockets))
                finish_binding(listener, sockets[0].getsockname()[1])
                continue
            server = await asyncio.start_server(
                functools.partial(self._on_connect, listener),
                _bind_hosts(listener.host),  # type: ignore[arg-type] # bytes hosts work; typeshed says str
                listener.port,
                reuse_address=True,
                start_serving=False,
            )
            finish_binding(listener, server.sockets[0].getsockname()[1])
            self._servers.append(server)

    async def serve(self) -> None:
        """Accept connections on the bound listeners (once the broker's state is loaded)."""
        for server in self._servers:
            await server.start_serving()
        for listener, sockets in self._tls_sockets:
            for sock in sockets:
                self._accepting.append(
                    asyncio.create_task(self._accept_tls(listener, sock), name=f"accept-{listener.name}")
                )
        self._watchdog = asyncio.create_task(self._close_idle_and_stalled(), name="connection-watchdog")

    async def _on_connect(
        self, listener: Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        peer = writer.get_extra_info("peername")
        ip = peer[0] if isinstance(peer, tuple) else str(peer)
        refusal = self.limits.admit(ip)
        if refusal is not None:
            self._log_refusal(ip, listener.name, refusal)
            writer.transport.abort()
            return
        try:
            await self._serve_connection(listener, reader, writer, ip, None)
        finally:
            self.limits.release(ip)

    async def _serve_connection(
        self,
        listener: Listener,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        ip: str,
        principal: str | None,
    ) -> None:
        session = Session(listener, ip, principal or ANONYMOUS)
        conn = Connection(self.broker, reader, writer, session, self.budget, self.settings)
        self._connections.add(conn)
        try:
            await conn.run()
        finally:
            self._connections.discard(conn)

    async def _accept_tls(self, listener: Listener, sock: socket.socket) -> None:
        """Accept loop of a TLS listener: each connection is admitted (max.connections and
        max.connections.per.ip) before its handshake starts, so the handshake counts against the
        caps from the start (an asyncio TLS server would count it only once done)."""
        loop = asyncio.get_running_loop()
        try:
            await self._accept_loop(loop, listener, sock)
        finally:  # cancelled by stop(): no more connections on this port
            sock.close()

    async def _accept_loop(
        self, loop: asyncio.AbstractEventLoop, listener: Listener, sock: socket.socket
    ) -> None:
        while True:
            try:
                conn, addr = await loop.sock_accept(sock)
            except OSError as exc:  # e.g. out of file descriptors: retry shortly, do not spin
                log.warning("cannot accept a connection", listener=listener.name, reason=str(exc))
                await asyncio.sleep(1.0)  # as asyncio's own servers do
                continue
            ip = addr[0] if isinstance(addr, tuple) else str(addr)
            refusal = self.limits.admit(ip)
            if refusal is not None:
                self._log_refusal(ip, listener.name, refusal)
                _reset(conn)
                continue
            unowned = [conn]  # emptied once the event loop owns the socket
            task = asyncio.create_task(self._tls_connection(listener, unowned, ip, addr))
            self._tls_tasks.add(task)
            self._handshaking.add(task)
            task.add_done_callback(functools.partial(self._tls_connection_done, unowned, ip))

    def _tls_connection_done(self, unowned: list[socket.socket], ip: str, task: asyncio.Task[None]) -> None:
        """However a TLS connection's task ended, even cancelled by stop() before its first step
        (its code never ran then): it leaves the caps, and a socket the event loop never took
        over is closed here."""
        self._tls_tasks.discard(task)
        self._handshaking.discard(task)
        for conn in unowned:
            conn.close()
        self.limits.release(ip)

    async def _tls_connection(
        self, listener: Listener, unowned: list[socket.socket], ip: str, addr: object
    ) -> None:
        """Handshake within minibroker.ssl.handshake.timeout.ms, then serve; the connection holds
        its place in the caps throughout (_tls_connection_done gives it back)."""
        loop = asyncio.get_running_loop()
        conn = unowned[0]
        try:
            conn.setblocking(False)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # already reset by the client
            return
        reader = asyncio.StreamReader(loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        unowned.clear()  # from here the loop closes it (a failed or cancelled handshake included)
        try:
            transport, _ = await loop.connect_accepted_socket(
                lambda: protocol,
                conn,
                ssl=listener.ssl_context,
                ssl_handshake_timeout=self.settings.ssl_handshake_timeout_s,
            )
        except (TimeoutError, OSError) as exc:  # ssl.SSLError is an OSError
            reason = str(exc) or type(exc).__name__
            if "taking longer than" in reason or isinstance(exc, TimeoutError):
                timeout_ms = int(self.settings.ssl_handshake_timeout_s * 1000)
                reason = f"TLS handshake not done within minibroker.ssl.handshake.timeout.ms={timeout_ms}"
            # closed at once, as Kafka does (KafkaChannel.prepare delays the close only of a
            # failed authentication after the handshake, i.e. SASL)
            log.info("TLS handshake failed", peer=peer_text(addr), listener=listener.name, reason=reason)
            return
        self._handshaking.discard(asyncio.current_task())
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        principal = tls_principal(writer.get_extra_info("ssl_object"))
        await self._serve_connection(listener, reader, writer, ip, principal)

    def _log_refusal(self, ip: str, listener: str, reason: str) -> None:
        """At most one warning a second: a client reconnecting in a loop must not flood the log."""
        due = self._refusals.due(self.broker.clock.monotonic())
        if due is not None:
            log.warning("connections refused", ip=ip, listener=listener, reason=reason, count=due[0])

    async def _close_idle_and_stalled(self) -> None:
        idle_s, receive_timeout_s = self.settings.idle_s, self.settings.receive_timeout_s
        interval = min(1.0, max(0.05, min(idle_s, receive_timeout_s) / 4))
        while True:
            await asyncio.sleep(interval)
            now = self.broker.clock.monotonic()
            for conn in list(self._connections):
                if conn.aborted:  # e.g. still waiting for the request budget: goes when woken
                    continue
                reason = idle_or_stalled(
                    now,
                    conn.last_activity,
                    conn.frame_started,
                    conn.writing_since,
                    conn.busy,
                    idle_s,
                    receive_timeout_s,
                )
                if reason is not None:
                    log.info("closing connection", peer=conn.peer, reason=reason)
                    conn.abort()

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let each connection finish the request it is handling, then close."""
        for server in self._servers:
            server.close()
        for task in [*self._accepting, *self._handshaking]:  # served ones finish like the others
            task.cancel()
        if not self._accepting:  # never served: nothing else closes the TLS listening sockets
            for _listener, sockets in self._tls_sockets:
                for sock in sockets:
                    sock.close()
        if self._watchdog is not None:
            self._watchdog.cancel()
        for conn in list(self._connections):
            conn.stop_after_current()
        deadline = asyncio.get_running_loop().time() + grace_s
        while self._connections and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self._connections):
            conn.abort()


def _listening_sockets(host: str | None, port: int) -> list[socket.socket]:
    """Non-blocking listening sockets for host:port, one per address the host resolves to (all
    on the port the first one got when port is 0), as asyncio's create_server binds them."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    unusable: list[str] = []
    try:
        for family, kind, proto, _name, address in dict.fromkeys(infos):
            try:
                sock = socket.socket(family, kind, proto)
            except OSError as exc:  # e.g. IPv6 disabled in the kernel: skipped, as asyncio does
                unusable.append(f"{address[0]}: {exc}")
                continue
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(100)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    if not sockets:
        raise OSError(f"cannot listen on {host or '*'}:{port}: " + "; ".join(unusable))
    return sockets


def _reset(conn: socket.socket) -> None:
    """Close an accepted socket at once with a reset, as transport.abort() does."""
    try:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    conn.close()


def _bind_hosts(host: str | None) -> str | list[bytes] | None:
    """The host argument for start_server. uvloop encodes a str host with the idna codec, whose
    import (unicodedata, stringprep) costs every broker's start ~2 ms and 0.5 MB; an ASCII name or
    address is the same bytes, handed over already encoded (as a one-host list: a bare bytes
    would be taken for a sequence of hosts). "" and None keep their meaning: every interface."""
    if host and host.isascii():
        return [host.encode("ascii")]
    return host
