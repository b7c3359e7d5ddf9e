"""The control plane's HTTP JSON API (docs/control-plane.md lists every route).

The standard library's ThreadingHTTPServer parses HTTP on its own threads (nothing to write by
hand, nothing to install); each request is handed to the broker's event loop, where every route
runs, so the control plane changes the broker's state from the one loop as a Kafka request does.
A route is `async def route(plane, params, query, body) -> JSON value`; it raises ControlError
for a refusal (its status and message go back as `{"error": ...}`).

Bound to `minibroker.control.host` (loopback by default). With `minibroker.control.token` set,
every request must carry `Authorization: Bearer <token>` (401 otherwise).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import re
import threading
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

import structlog

if TYPE_CHECKING:
    from minibroker.broker.control import ControlPlane

__all__ = ["ControlError", "ControlServer", "Route", "route"]

log = structlog.get_logger("minibroker.control")

#: The longest a route may hold its caller (a wait's own timeout is checked against it).
MAX_WAIT_S = 600.0
_MAX_BODY = 1 << 20

RouteFn = Callable[["ControlPlane", dict[str, str], dict[str, str], Any], Awaitable[Any]]


class ControlError(Exception):
    """A refusal: answered with `status` and `{"error": message}`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Route:
    __slots__ = ("method", "pattern", "fn", "doc")

    def __init__(self, method: str, path: str, fn: RouteFn, doc: str) -> None:
        self.method = method
        # /v1/faults/{id} -> ^/v1/faults/(?P<id>[^/]+)$
        self.pattern = re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path) + "$")
        self.fn = fn
        self.doc = doc


def route(method: str, path: str, doc: str) -> Callable[[RouteFn], Route]:
    """Decorator: `@route("GET", "/v1/clock", "the clock's mode and time")`."""

    def wrap(fn: RouteFn) -> Route:
        return Route(method, path, fn, doc)

    return wrap


def all_routes() -> list[Route]:
    """Every route, from each part's module (their ROUTES lists)."""
    from minibroker.broker.control import clock, crash, faults, state  # noqa: PLC0415

    return [*_ROUTES, *faults.ROUTES, *crash.ROUTES, *clock.ROUTES, *state.ROUTES]


@route("GET", "/v1", "the list of routes")
async def _index(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    return {
        "node_id": plane.broker.node_id,
        "bootstrap_servers": f"{plane.broker.host}:{plane.broker.port}",
        "routes": [{"method": r.method, "path": r.pattern.pattern, "doc": r.doc} for r in all_routes()],
    }


@route("POST", "/v1/reset", "remove every fault and observer, disarm every crash point")
async def _reset(plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any) -> Any:
    plane.reset()
    return {"reset": True}


_ROUTES = [_index, _reset]


class ControlServer:
    """The HTTP server on its threads, handing each request to the broker's loop."""

    def __init__(self, plane: ControlPlane, host: str, port: int, token: str) -> None:
        self._plane = plane
        self._host = host
        self._port = port
        self._token = token.encode()
        self._routes = all_routes()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.port = 0

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        server = self

        class Handler(_Handler):
            control = server

        httpd = ThreadingHTTPServer((self._host, self._port), Handler)
        httpd.daemon_threads = True  # a caller still in a long wait does not hold the stop
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, name="control-http", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        if self._httpd is not None:
            httpd, self._httpd = self._httpd, None
            await asyncio.to_thread(httpd.shutdown)
            httpd.server_close()

    def authorized(self, header: str | None) -> bool:
        if not self._token:
            return True
        if header is None or not header.startswith("Bearer "):
            return False
        return hmac.compare_digest(header[len("Bearer ") :].strip().encode(), self._token)

    def dispatch(self, method: str, target: str, body: Any) -> tuple[int, Any]:
        """On an HTTP thread: find the route, run it on the loop, wait for its answer."""
        url = urlsplit(target)
        query = dict(parse_qsl(url.query))
        path = url.path.rstrip("/") or "/"
        allowed: list[str] = []
        for r in self._routes:
            found = r.pattern.match(path)
            if found is None:
                continue
            if r.method != method:
                allowed.append(r.method)
                continue
            loop = self._loop
            if loop is None or loop.is_closed():
                return 503, {"error": "the broker is stopping"}
            future = asyncio.run_coroutine_threadsafe(
                _run(r, self._plane, {k: unquote(v) for k, v in found.groupdict().items()}, query, body), loop
            )
            try:
                return future.result(MAX_WAIT_S + 30)
            except Exception as exc:  # noqa: BLE001 - the loop closed under it, or a timeout
                future.cancel()
                return 503, {"error": f"the broker did not answer: {exc or type(exc).__name__}"}
        if allowed:
            return 405, {"error": f"{method} not allowed on {path}; use {', '.join(sorted(set(allowed)))}"}
        return 404, {"error": f"no route {path} (GET /v1 lists them)"}


async def _run(
    r: Route, plane: ControlPlane, params: dict[str, str], query: dict[str, str], body: Any
) -> tuple[int, Any]:
    try:
        return 200, await r.fn(plane, params, query, body)
    except ControlError as exc:
        return exc.status, {"error": exc.message}
    except (ValueError, KeyError, TypeError) as exc:
        return 400, {"error": f"bad request: {exc}"}
    except Exception as exc:  # noqa: BLE001 - a route bug answers 500 and is logged, never kills the broker
        log.exception("control request failed", route=r.pattern.pattern)
        return 500, {"error": f"internal error: {exc}"}


class _Handler(BaseHTTPRequestHandler):
    control: ControlServer
    server_version = "minibroker-control"
    protocol_version = "HTTP/1.1"

    def _serve(self, method: str) -> None:
        if not self.control.authorized(self.headers.get("Authorization")):
            self._answer(401, {"error": "missing or wrong bearer token (minibroker.control.token)"})
            return
        body: Any = None
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            self._answer(413, {"error": f"body of {length} bytes; at most {_MAX_BODY}"})
            return
        if length:
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError as exc:
                self._answer(400, {"error": f"body is not JSON: {exc}"})
                return
        status, answer = self.control.dispatch(method, self.path, body)
        self._answer(status, answer)

    def _answer(self, status: int, answer: Any) -> None:
        payload = json.dumps(answer, default=str).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:  # noqa: N802 - http.server's names
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._serve("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._serve("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._serve("DELETE")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
        log.debug("control request", request=self.requestline, peer=self.client_address[0])
