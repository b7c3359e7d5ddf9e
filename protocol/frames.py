"""Request and response headers (Kafka RequestHeader v1/v2, ResponseHeader v0/v1).

Frames are length-prefixed (int32). The request header is parsed by hand because it must be
read before the body's schema is known, and because a request at a version the broker does not
serve still needs its correlation id for an answer.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from minibroker.protocol.codec import DecodeError, request_class, response_class
from minibroker.protocol.varint import BytesLike, VarintError, read_uvarint

_HEAD = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")

API_VERSIONS_KEY = 18


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int  # where the body starts in the frame


def skip_tagged_fields(buf: BytesLike, pos: int) -> int:
    try:
        count, pos = read_uvarint(buf, pos)
        for _ in range(count):
            _tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            pos += size
            if pos > len(buf):
                raise DecodeError("truncated tagged field")
    except VarintError as exc:
        raise DecodeError(str(exc)) from None
    return pos


def parse_request_header(frame: bytes | memoryview) -> RequestHeader:
    """Parse the header. The tag buffer (header v2) is skipped when the request version is
    flexible; for a version the broker does not know, only the fixed part is read."""
    if len(frame) < 10:
        raise DecodeError(f"request frame of {len(frame)} bytes is shorter than a header")
    api_key, api_version, correlation_id = _HEAD.unpack_from(frame, 0)
    (n,) = _INT16.unpack_from(frame, 8)
    pos = 10
    client_id = None
    if n >= 0:
        if pos + n > len(frame):
            raise DecodeError("client id runs past the end of the frame")
        client_id = str(frame[pos : pos + n], "utf-8", "replace")  # bytes or memoryview
        pos += n
    cls = request_class(api_key, api_version)
    if cls is not None and cls.__flexible__:
        pos = skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id, pos)


def response_header(api_key: int, api_version: int, correlation_id: int) -> bytes:
    """ApiVersions always answers with header v0; other flexible responses carry an empty tag
    buffer (header v1)."""
    cls = response_class(api_key, api_version)
    flexible = cls is not None and cls.__header_schema__.__version__ >= 1
    head = _INT32.pack(correlation_id)
    return head + b"\x00" if flexible else head
