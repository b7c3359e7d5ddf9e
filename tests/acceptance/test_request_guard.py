"""Issue 9: no request body can kill the broker. Every length is checked against the bytes left
in the frame before kio sees it, and a null where the schema forbids one is refused at decode
time (Kafka closes the connection for both).

The crashers are generated from the schemas: for every served API key, at its lowest and highest
version, a body whose first array (or, lacking one, first string) claims a huge length, and one
whose first non-nullable array/string is null. The broker runs as a subprocess, so a SIGABRT in
the native decoder shows up as a dead process."""

from __future__ import annotations

import struct

import pytest
from minibroker.broker.dispatch import HANDLERS
from minibroker.protocol.codec import request_class
from minibroker.protocol.schema_layout import FIXED_SIZES, layout

from tests.support.broker import BrokerFactory
from tests.support.wire import WireClient, encode_uvarint, request_header


@pytest.fixture(scope="module")
def broker(request, tmp_path_factory):
    factory = BrokerFactory(tmp_path_factory.mktemp("guard"))
    b = factory({"auto.create.topics.enable": False})
    yield b
    factory.teardown(request.session.testsfailed > 0)


def _cases() -> list[tuple[int, int]]:
    out = []
    for key, handler in sorted(HANDLERS.items()):
        low = max(handler.min_version, 3) if key == 0 else handler.min_version
        for version in sorted({low, handler.max_version}):
            if request_class(key, version) is not None:
                out.append((key, version))
    return out


def _crafted_body(cls: type, mode: str) -> bytes | None:
    """Zeros for fixed fields and empty strings up to the first length-prefixed field, which
    gets a huge length ('huge') or a null ('null', only if the field is not nullable)."""
    flexible = cls.__flexible__
    body = bytearray()
    for field in layout(cls)[0]:
        if field.kind in FIXED_SIZES and not field.is_array:
            body += bytes(FIXED_SIZES[field.kind])
            continue
        wide = field.is_array or field.kind != "string"
        if mode == "null" and field.nullable:
            body += encode_uvarint(0) if flexible else (b"\xff\xff\xff\xff" if wide else b"\xff\xff")
            continue
        if mode == "huge":
            if flexible:
                body += encode_uvarint(0xFFFFFFFE)
            else:
                body += struct.pack(">i", 0x7FFFFFF0) if wide else struct.pack(">h", 0x7FF0)
        else:
            body += encode_uvarint(0) if flexible else (b"\xff\xff\xff\xff" if wide else b"\xff\xff")
        return bytes(body + bytes(16))
    return None


def _assert_closed_and_alive(broker, key: int, version: int, body: bytes) -> None:
    cls = request_class(key, version)
    with WireClient.to(broker, timeout=5) as c:
        c.send_frame(request_header(key, version, 7, flexible=cls.__flexible__) + body)
        c.wait_closed(5)
    assert broker.running, f"broker died on api key {key} v{version}\n{broker.log_tail()}"
    with WireClient.to(broker, timeout=5) as c:
        assert c.api_versions(3).error_code == 0


@pytest.mark.parametrize("key,version", _cases())
def test_huge_claimed_length_closes_connection_only(broker, key, version):
    body = _crafted_body(request_class(key, version), "huge")
    if body is None:
        pytest.skip("schema has no length-prefixed field")
    _assert_closed_and_alive(broker, key, version, body)


@pytest.mark.parametrize("key,version", _cases())
def test_null_for_non_nullable_field_is_refused_at_decode(broker, key, version):
    body = _crafted_body(request_class(key, version), "null")
    if body is None:
        pytest.skip("schema has no non-nullable length-prefixed field")
    since = broker.log_size()
    _assert_closed_and_alive(broker, key, version, body)
    log = broker.log_since(since)
    assert "was serialized as null" in log, log
    assert "request handler failed" not in log and "Traceback" not in log, log


def test_issue_reproducer_24_byte_frame(broker):
    """Metadata v12 with a compact topics array of 2**32-2 elements: SIGABRT before the guard."""
    payload = request_header(3, 12, 1, flexible=True) + encode_uvarint(0xFFFFFFFF - 1) + b"\x00\x00"
    _assert_closed_and_alive(broker, 3, 12, payload[len(request_header(3, 12, 1, flexible=True)) :])


def test_huge_tagged_field_size_is_refused(broker):
    """A tag whose size runs past the frame (Metadata v12: null topics, two bools, one tag)."""
    body = b"\x00\x00\x00" + b"\x01" + b"\x07" + encode_uvarint(0x7FFFFFFF)
    _assert_closed_and_alive(broker, 3, 12, body)
