"""A blocking Kafka wire client for the conformance suite.

Requests are built and encoded with the project's own codec (protocol/codec.py, kio). Responses
are decoded with kio too; kio cannot read a few legal answers (a negative int64 it types as a
timestamp, e.g. DescribeTransactions' start time -1), so those are decoded with kafka-python's
schema classes instead, for both brokers alike (see `decode_pair`).
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import socket
import struct
import time
import uuid
from pathlib import Path

from kio.serial import entity_reader, entity_writer
from minibroker.protocol.codec import build, request_class, response_class
from minibroker.protocol.varint import write_uvarint

_INT32 = struct.Struct(">i")

#: What a request got instead of a response.
CLOSED = "CONNECTION_CLOSED"
NO_ANSWER = "NO_ANSWER"


class Unanswered(Exception):
    pass


def encode_request(
    api_key: int, version: int, correlation_id: int, fields: dict, client_id: str | None = "conformance"
) -> bytes:
    cls = request_class(api_key, version)
    if cls is None:
        raise ValueError(f"kio has no request class for api {api_key} v{version}")
    entity = build(cls, fields)
    body = io.BytesIO()
    entity_writer(cls)(body, entity)
    head = struct.pack(">hhi", api_key, version, correlation_id)
    if client_id is None:
        head += struct.pack(">h", -1)
    else:
        cid = client_id.encode()
        head += struct.pack(">h", len(cid)) + cid
    if cls.__flexible__:
        head += write_uvarint(0)
    return head + body.getvalue()


def response_body(api_key: int, version: int, frame: bytes) -> bytes:
    """The response body after the correlation id (and the tag buffer of header v1)."""
    cls = response_class(api_key, version)
    pos = 4
    if cls is not None and cls.__header_schema__.__version__ >= 1:
        pos += 1  # empty tag buffer: neither broker sends header tags
    return frame[pos:]


def decode_kio(api_key: int, version: int, body: bytes):
    cls = response_class(api_key, version)
    entity, _ = entity_reader(cls)(body, 0)
    return to_plain(entity)


def decode_kafka_python(api_key: int, version: int, body: bytes):
    import kafka.protocol.admin  # noqa: F401,PLC0415 - registers the response classes
    import kafka.protocol.consumer  # noqa: F401,PLC0415
    import kafka.protocol.metadata  # noqa: F401,PLC0415
    import kafka.protocol.producer  # noqa: F401,PLC0415
    from kafka.protocol.api_header import ResponseClassRegistry  # noqa: PLC0415 - cold path

    cls = ResponseClassRegistry._response_class_registry.get(api_key)
    if cls is None:
        raise ValueError(f"kafka-python has no response class for api {api_key}")
    return to_plain(cls[version].decode(body).to_dict())


def decode_pair(api_key: int, version: int, bodies: list[bytes]) -> list:
    """Decode answers to the same request from several brokers with one decoder for all."""
    try:
        return [decode_kio(api_key, version, b) for b in bodies]
    except Exception:  # noqa: BLE001 - kio refuses some legal values; try the other codec
        pass
    out = []
    for body in bodies:
        try:
            out.append(decode_kafka_python(api_key, version, body))
        except Exception as exc:  # noqa: BLE001
            out.append({"UNDECODABLE": f"{type(exc).__name__}: {exc}", "hex": body.hex()})
    return out


def to_plain(value):
    """kio entities / kafka-python dicts -> dicts, lists, ints, strings (timestamps as ms)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if hasattr(value, "value") and hasattr(value, "name") and isinstance(value, int):  # enums
        return int(value)
    return value


class Connection:
    def __init__(self, address: tuple[str, int], timeout: float = 15.0):
        self.address = address
        self.timeout = timeout
        self.sock = socket.create_connection(address, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0
        self.closed = False

    def close(self) -> None:
        self.sock.close()
        self.closed = True

    def send(self, payload: bytes) -> None:
        self.sock.sendall(_INT32.pack(len(payload)) + payload)

    def _recv_exact(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(n - len(buf))
            except ConnectionError:
                chunk = b""
            if not chunk:
                self.closed = True
                raise ConnectionError("closed by peer")
            buf += chunk
        return bytes(buf)

    def recv_frame(self, timeout: float | None = None) -> bytes:
        deadline = time.monotonic() + (timeout or self.timeout)
        (size,) = _INT32.unpack(self._recv_exact(4, deadline))
        return self._recv_exact(size, deadline)

    def call_raw(
        self,
        api_key: int,
        version: int,
        fields: dict,
        *,
        expect_response: bool = True,
        client_id: str | None = "conformance",
        timeout: float | None = None,
    ) -> bytes | str:
        """Send one request; the response body, or CLOSED / NO_ANSWER."""
        if self.closed:
            return CLOSED
        self.correlation_id += 1
        cid = self.correlation_id
        try:
            self.send(encode_request(api_key, version, cid, fields, client_id))
            if not expect_response:
                return NO_ANSWER
            frame = self.recv_frame(timeout)
        except (ConnectionError, OSError) as exc:
            if isinstance(exc, TimeoutError):
                return NO_ANSWER
            self.closed = True
            return CLOSED
        (got,) = _INT32.unpack_from(frame, 0)
        if got != cid:
            raise AssertionError(f"correlation id {got} answers request {cid}")
        return response_body(api_key, version, frame)

    def call(self, api_key: int, version: int, fields: dict, **kw):
        """Send one request and decode the answer with kio (tests that talk to one broker)."""
        body = self.call_raw(api_key, version, fields, **kw)
        if isinstance(body, str):
            return body
        return decode_pair(api_key, version, [body])[0]


def wait_until_serving(address, proc, timeout: float, log_path: Path) -> None:
    """Poll until the broker answers a Metadata request (Kafka accepts TCP long before)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode} during startup; see {log_path}")
        try:
            conn = Connection(address, timeout=5)
            try:
                body = conn.call_raw(3, 12, {"topics": [], "allow_auto_topic_creation": False})
                if isinstance(body, bytes):
                    answer = decode_kio(3, 12, body)
                    if answer["brokers"] and answer["controller_id"] >= 0:
                        return
            finally:
                conn.close()
        except OSError as exc:
            last = exc
        time.sleep(0.25)
    raise RuntimeError(f"broker at {address} not serving within {timeout}s ({last}); see {log_path}")
