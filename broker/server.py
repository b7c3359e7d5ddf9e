"""The listening side: bind the listeners, admit connections (max.connections, per IP), close
idle and stalled ones, and stop gracefully. Each admitted connection is served by
broker/connection.py.
"""

from __future__ import annotations

import asyncio
import functools
import time

import structlog
from minibroker.broker.connection import Connection
from minibroker.broker.limits import ConnectionLimits, RequestBudget, idle_or_stalled
from minibroker.broker.security.listeners import finish_binding, tls_principal
from minibroker.broker.security.sasl import ANONYMOUS, Session

log = structlog.get_logger("minibroker.broker.server")


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

    async def bind(self, listeners) -> None:
        """Bind every listener (broker/security/listeners.py), TLS ones with their context, without
        accepting yet. Called before the data dir is recovered, so a start whose port is taken
        fails before it writes anything."""
        for listener in listeners:
            server = await asyncio.start_server(
                functools.partial(self._on_connect, listener),
                _bind_hosts(listener.host),  # type: ignore[arg-type] # bytes hosts work; typeshed says str
                listener.port,
                reuse_address=True,
                ssl=listener.ssl_context,
                start_serving=False,
            )
            finish_binding(listener, server.sockets[0].getsockname()[1])
            self._servers.append(server)

    async def serve(self) -> None:
        """Accept connections on the bound listeners (once the broker's state is loaded)."""
        for server in self._servers:
            await server.start_serving()
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
        session = Session(listener, ip, principal or ANONYMOUS)
        conn = Connection(self.broker, reader, writer, session, self.budget)
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
                reason = idle_or_stalled(
                    now,
                    conn.last_activity,
                    conn.frame_started,
                    conn.writing_since,
                    conn._busy,
                    self._idle_s,
                    self._receive_timeout_s,
                )
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


def _bind_hosts(host: str | None) -> str | list[bytes] | None:
    """The host argument for start_server. uvloop encodes a str host with the idna codec, whose
    import (unicodedata, stringprep) costs every broker's start ~2 ms and 0.5 MB; an ASCII name or
    address is the same bytes, handed over already encoded (as a one-host list: a bare bytes
    would be taken for a sequence of hosts). "" and None keep their meaning: every interface."""
    if host and host.isascii():
        return [host.encode("ascii")]
    return host
