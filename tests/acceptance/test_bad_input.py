"""Issue 2, bad input: malformed frames, unknown API keys/versions, oversized requests, invalid
topic names and corrupt batches. Each case asserts the exact Kafka error code (or, where the
protocol has none, a closed connection) and that the broker still serves a new connection; the
produce cases also assert that nothing was appended."""

from __future__ import annotations

import struct
import subprocess
import sys
import time

import pytest
from crc32c import crc32c

from tests.support.broker import REPO_ROOT, BrokerFactory
from tests.support.helpers import unique_name
from tests.support.wire import (
    CORRUPT_MESSAGE,
    INVALID_TOPIC_EXCEPTION,
    MESSAGE_TOO_LARGE,
    OFFSET_OUT_OF_RANGE,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNSUPPORTED_VERSION,
    ConnectionClosed,
    WireClient,
    build_batch,
    build_produce_request,
    encode_uvarint,
    parse_api_versions_v0,
    read_partition,
    request_header,
)

INVALID_RECORD = 87
MAX_REQUEST = 1024 * 1024
MAX_MESSAGE = 64 * 1024

BROKER_SETTINGS = {
    "auto.create.topics.enable": False,
    "socket.request.max.bytes": MAX_REQUEST,
    "message.max.bytes": MAX_MESSAGE,
}


@pytest.fixture(scope="module")
def bad_broker(request, tmp_path_factory):
    factory = BrokerFactory(tmp_path_factory.mktemp("bad-input"))
    b = factory(BROKER_SETTINGS)
    yield b
    factory.teardown(request.session.testsfailed > 0)


def assert_serves(broker) -> None:
    """A brand-new connection still gets answers."""
    with WireClient.to(broker, timeout=5) as c:
        av = c.api_versions(3)
        assert av.error_code == 0 and av.api_keys
        md = c.metadata(None)
        assert [b.node_id for b in md.brokers], "Metadata lists no broker"


def make_topic(broker, partitions: int = 1) -> str:
    name = unique_name("bad")
    with WireClient.to(broker) as c:
        r = c.create_topics([(name, partitions)])
        assert [(t.name, t.error_code) for t in r.topics] == [(name, 0)]
    return name


def latest(broker, topic: str, partition: int = 0) -> int:
    with WireClient.to(broker) as c:
        r = c.list_offsets(topic, partition, -1)
        assert r.error_code == 0
        return r.offset


def five_records(tag: str = "ok") -> bytes:
    return build_batch([(f"k{i}".encode(), f"{tag}-{i}".encode(), [("h", b"v")]) for i in range(5)])


# ----------------------------------------------------------------------------------- API keys/versions
def test_unknown_api_key_is_logged_and_connection_closed(bad_broker):
    mark = bad_broker.log_size()
    with WireClient.to(bad_broker) as c:
        c.send_frame(request_header(31337, 0, 7) + b"\x00\x00\x00\x00")
        got = c.wait_closed(timeout=5)
    assert got == b"", f"expected the connection closed without a response, got {got[:40]!r}"
    bad_broker.wait_for_log(r"31337", since=mark, timeout=5)
    assert_serves(bad_broker)


@pytest.mark.parametrize("flexible_header", [True, False], ids=["header-v2", "header-v1"])
def test_api_versions_unsupported_version_gets_v0_error_body(bad_broker, flexible_header):
    with WireClient.to(bad_broker) as c:
        body = b"\x06future\x041.0\x00" if flexible_header else b""
        c.send_frame(request_header(18, 99, 4242, "future-client", flexible=flexible_header) + body)
        resp = c.recv_frame(timeout=5)
        (corr,) = struct.unpack_from(">i", resp, 0)
        assert corr == 4242
        v0 = parse_api_versions_v0(resp[4:])  # response header v0: no tag buffer
        assert v0.error_code == UNSUPPORTED_VERSION
        assert v0.trailing == b"", (
            f"the error body must be exactly a v0 body, {len(v0.trailing)} bytes follow"
        )
        assert 18 in v0.api_keys and v0.api_keys[18] == (0, 5), f"ApiVersions entry: {v0.api_keys.get(18)}"
        # the connection is kept: the client retries at a version the broker knows
        av = c.api_versions(3)
        assert av.error_code == 0
        assert {k.api_key for k in av.api_keys} >= {0, 1, 2, 3, 18}
    assert_serves(bad_broker)


def test_api_versions_advertised_ranges(bad_broker):
    """The ranges issue 2 requires, in every ApiVersions version the clients use."""
    required = {
        0: (0, 12),
        1: (4, 12),
        2: (1, 10),
        3: (0, 13),
        18: (0, 4),
        19: (2, 7),
        20: (1, 6),
        23: (2, 4),
        32: (1, 4),
        60: (0, 1),
        68: (0, 1),  # KIP-848, with group.version 1 finalized by default
        69: (0, 1),
        76: (1, 1),  # KIP-932, with share.version 1 finalized by default
        77: (1, 1),
        78: (1, 2),
        79: (1, 2),
        90: (0, 1),
        91: (0, 0),
        92: (0, 0),
    }
    # telemetry served but, as Kafka 4.4 by default, not advertised
    never = {71, 72}
    for version in (0, 1, 2, 3, 4):
        with WireClient.to(bad_broker) as c:
            av = c.api_versions(version)
        assert av.error_code == 0, f"ApiVersions v{version}"
        ranges = {k.api_key: (k.min_version, k.max_version) for k in av.api_keys}
        for key, (lo, hi) in required.items():
            assert key in ranges, f"api key {key} not advertised (ApiVersions v{version})"
            assert ranges[key][0] <= lo and ranges[key][1] >= hi, (
                f"api key {key}: {ranges[key]} does not cover {lo}-{hi}"
            )
        assert ranges[0] == (0, 13), f"Produce must be advertised as 0-13 exactly, got {ranges[0]}"
        assert not never & set(ranges), f"advertises unimplemented APIs {sorted(never & set(ranges))}"


def test_produce_at_unknown_version_closes_connection(bad_broker):
    topic = make_topic(bad_broker)
    req = build_produce_request(topic, 0, five_records())
    req.API_VERSION = 9
    req.with_header(correlation_id=1, client_id="x")
    body = bytes(req.encode(header=False))
    with WireClient.to(bad_broker) as c:
        c.send_frame(request_header(0, 99, 77, flexible=True) + body)
        got = c.wait_closed(timeout=5)
    assert got == b"", f"Produce v99 must close the connection without a response, got {got[:40]!r}"
    assert latest(bad_broker, topic) == 0
    assert_serves(bad_broker)


def test_produce_v2_is_rejected(bad_broker):
    """Produce 0-2 are advertised (for old librdkafka) but served only from v3, like Kafka 4:
    the request is refused (Kafka closes the connection; an UNSUPPORTED_VERSION partition error
    is accepted too) and nothing is appended."""
    topic = make_topic(bad_broker)
    records = five_records()
    t = topic.encode()
    body = struct.pack(">hi", -1, 5000) + struct.pack(">i", 1) + struct.pack(">h", len(t)) + t
    body += struct.pack(">i", 1) + struct.pack(">i", 0) + struct.pack(">i", len(records)) + records
    with WireClient.to(bad_broker) as c:
        c.send_frame(request_header(0, 2, 78) + body)
        try:
            got = c.recv_frame(timeout=5)
        except ConnectionClosed:
            got = None
    if got is not None:
        # a v2 response: corr, [topic, [partition, error, base_offset, append_time]], throttle
        (corr,) = struct.unpack_from(">i", got, 0)
        assert corr == 78
        err = struct.unpack_from(">h", got, 4 + 4 + 2 + len(t) + 4 + 4)[0]
        assert err == UNSUPPORTED_VERSION, f"Produce v2 answered with error {err}"
    assert latest(bad_broker, topic) == 0, "a rejected Produce v2 appended records"
    assert_serves(bad_broker)


# ----------------------------------------------------------------------------------- frames
@pytest.mark.parametrize("size", [MAX_REQUEST + 1, 2**31 - 1, -5], ids=["max+1", "int32-max", "negative"])
def test_oversized_or_negative_frame_closes_connection(bad_broker, size):
    header = request_header(3, 12, 9, flexible=True)
    mark = bad_broker.log_size()
    with WireClient.to(bad_broker) as c:
        # only the length prefix and a header: the broker must not wait for (or buffer) the body
        c.send_raw(struct.pack(">i", size) + header)
        got = c.wait_closed(timeout=5)
    assert got == b""
    bad_broker.wait_for_log(r"\S", since=mark, timeout=5)  # the reason is logged
    assert_serves(bad_broker)


def test_frame_at_exactly_the_limit_is_read(bad_broker):
    """socket.request.max.bytes is inclusive: a frame of exactly that size is read and answered.
    Here: a Metadata v4 request naming ~5000 (unknown) topics, sized to the byte."""
    from kafka.protocol.metadata import MetadataResponse

    from tests.support.wire import decode_response

    head = request_header(3, 4, 10)
    remaining = MAX_REQUEST - len(head) - 4 - 1  # array length, allow_auto_topic_creation
    n = remaining // 202
    extra = remaining - n * 202
    assert extra < n
    names = [(f"pad-{i:06d}-" + "p" * 250)[: 200 + (1 if i < extra else 0)] for i in range(n)]
    body = struct.pack(">i", n) + b"".join(struct.pack(">h", len(x)) + x.encode() for x in names) + b"\x00"
    frame_body = head + body
    assert len(frame_body) == MAX_REQUEST, len(frame_body)
    with WireClient.to(bad_broker) as c:
        c.send_frame(frame_body)
        resp = decode_response(MetadataResponse, 4, c.recv_frame(timeout=20), 10)
    assert len(resp.topics) == n
    assert {t.error_code for t in resp.topics} == {UNKNOWN_TOPIC_OR_PARTITION}


GARBAGE = {
    "shorter-than-header": b"\x00\x03\x00",
    "client-id-overruns-frame": struct.pack(">hhih", 3, 1, 11, 500) + b"abc",
    "truncated-metadata-body": request_header(3, 12, 12, flexible=True) + b"\x05",
    "garbage-produce-body": request_header(0, 9, 13, flexible=True) + b"\xff" * 12,
    "negative-array-length": request_header(19, 2, 14) + struct.pack(">i", -7) + struct.pack(">i", 5000),
}


@pytest.mark.parametrize("payload", list(GARBAGE.values()), ids=list(GARBAGE))
def test_malformed_frame_closes_connection(bad_broker, payload):
    with WireClient.to(bad_broker) as c:
        c.send_frame(payload)
        got = c.wait_closed(timeout=5)
    assert got == b"", f"expected a closed connection and no response, got {got[:40]!r}"
    assert_serves(bad_broker)


def test_truncated_produce_request_appends_nothing(bad_broker):
    topic = make_topic(bad_broker)
    req = build_produce_request(topic, 0, five_records())
    req.API_VERSION = 9
    req.with_header(correlation_id=15, client_id="x")
    whole = bytes(req.encode(header=True))
    with WireClient.to(bad_broker) as c:
        c.send_frame(whole[:-30])  # a complete frame whose body stops inside the batch
        got = c.wait_closed(timeout=5)
    assert got == b""
    assert latest(bad_broker, topic) == 0
    assert_serves(bad_broker)


@pytest.mark.parametrize("where", ["request-header", "topic-entry", "request-body"])
def test_unknown_tagged_fields_are_ignored(bad_broker, where):
    """KIP-482: a receiver skips tagged fields it does not know (Kafka keeps them as unknown
    tagged fields); the request is answered normally. Metadata v12, one unknown tag placed in the
    request header, in a topic entry, or at the end of the body."""
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse

    from tests.support.wire import decode_response

    topic = make_topic(bad_broker, 2)
    t = topic.encode()
    unknown = {
        "request-header": b"\x01\x05\x02\xab\xcd",
        "topic-entry": b"\x01\x07\x03xyz",
        "request-body": b"\x01\x09\x01\x00",
    }
    none = b"\x00"
    head = request_header(3, 12, 16, "tags", flexible=False) + (
        unknown[where] if where == "request-header" else none
    )
    body = b"\x02" + b"\x00" * 16 + encode_uvarint(len(t) + 1) + t
    body += unknown[where] if where == "topic-entry" else none
    body += b"\x00\x00"  # allow_auto_topic_creation, include_topic_authorized_operations
    body += unknown[where] if where == "request-body" else none
    # the frame is well-formed by an independent decoder
    assert MetadataRequest.decode(head + body, version=12, header=True).topics[0].name == topic
    with WireClient.to(bad_broker) as c:
        c.send_frame(head + body)
        resp = decode_response(MetadataResponse, 12, c.recv_frame(timeout=5), 16)
    assert [(x.name, x.error_code, len(x.partitions)) for x in resp.topics] == [(topic, 0, 2)]


# ----------------------------------------------------------------------------------- topics
INVALID_NAMES = [
    "bad name",
    "a/b",
    "..",
    ".",
    "x" * 250,
    "",
    "t\u00e9st",
    "semi;colon",
    "x\n",
    "..\n",
    "tab\t",
]


@pytest.mark.parametrize("version", [2, 5, 7])
def test_create_topics_invalid_name(bad_broker, version):
    good = unique_name("good")
    with WireClient.to(bad_broker) as c:
        r = c.create_topics([(n, 1) for n in INVALID_NAMES] + [(good, 1)], version=version)
        errors = {t.name: t.error_code for t in r.topics}
        assert errors == {**{n: INVALID_TOPIC_EXCEPTION for n in INVALID_NAMES}, good: 0}
        names = {t.name for t in c.metadata(None).topics}
    assert good in names
    assert not names & set(INVALID_NAMES), f"invalid topics were created: {names & set(INVALID_NAMES)}"
    assert_serves(bad_broker)


@pytest.mark.parametrize("version", [1, 4, 9, 12])
def test_metadata_unknown_topic_with_auto_create_off(bad_broker, version):
    name = unique_name("nope")
    with WireClient.to(bad_broker) as c:
        md = c.metadata([name], version=version, allow_auto_topic_creation=True)
        assert [(t.name, t.error_code) for t in md.topics] == [(name, UNKNOWN_TOPIC_OR_PARTITION)]
        md = c.metadata(None)
        assert name not in {t.name for t in md.topics}


# ----------------------------------------------------------------------------------- produce
def flip(batch: bytes, pos: int) -> bytes:
    b = bytearray(batch)
    b[pos] ^= 0xFF
    return bytes(b)


def with_fixed_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_produce_corrupt_crc(bad_broker):
    topic = make_topic(bad_broker)
    with WireClient.to(bad_broker) as c:
        assert c.produce(topic, 0, five_records("a")).base_offset == 0
        good = five_records("b")
        for pos in (21, 40, 70, len(good) - 1):  # attributes, timestamps, a record, the last byte
            r = c.produce(topic, 0, flip(good, pos))
            assert r.error_code == CORRUPT_MESSAGE, f"flipped byte at {pos}: error {r.error_code}"
        assert latest(bad_broker, topic) == 5, "a corrupt batch changed the log end offset"
        recs, hw = read_partition(c, topic, 0)
        assert hw == 5 and [r.value for r in recs] == [f"a-{i}".encode() for i in range(5)]
        assert c.produce(topic, 0, good).base_offset == 5  # the connection and the log are fine
    assert_serves(bad_broker)


def test_produce_record_count_mismatch(bad_broker):
    """lastOffsetDelta must equal recordsCount - 1 (CRC valid): Kafka answers INVALID_RECORD."""
    topic = make_topic(bad_broker)
    b = bytearray(five_records())
    struct.pack_into(">i", b, 23, 9)  # lastOffsetDelta 9 for 5 records
    with WireClient.to(bad_broker) as c:
        r = c.produce(topic, 0, with_fixed_crc(b))
        assert r.error_code == INVALID_RECORD
        assert latest(bad_broker, topic) == 0


def test_produce_batch_larger_than_message_max_bytes(bad_broker):
    import random

    rnd = random.Random(7)
    topic = make_topic(bad_broker)
    big = build_batch([(None, rnd.randbytes(MAX_MESSAGE + 1000), [])])
    assert MAX_MESSAGE < len(big) < MAX_REQUEST
    fits = build_batch([(None, rnd.randbytes(MAX_MESSAGE - 2000), [])])
    with WireClient.to(bad_broker) as c:
        r = c.produce(topic, 0, big)
        assert r.error_code == MESSAGE_TOO_LARGE
        assert latest(bad_broker, topic) == 0
        r = c.produce(topic, 0, fits)
        assert (r.error_code, r.base_offset) == (0, 0)
    assert latest(bad_broker, topic) == 1
    assert_serves(bad_broker)


# ----------------------------------------------------------------------------------- fetch
def test_fetch_out_of_range(bad_broker):
    topic = make_topic(bad_broker)
    with WireClient.to(bad_broker) as c:
        assert c.produce(topic, 0, five_records()).error_code == 0
        for offset in (6, 1000, -1):
            _, p = c.fetch(topic, 0, offset, max_wait_ms=0)
            assert p.error_code == OFFSET_OUT_OF_RANGE, f"fetch at {offset}: error {p.error_code}"
            assert p.records == b"" or p.records is None
        # at the log end: no error, empty (not null) records (every Fetch version is covered by
        # test_every_advertised_version_of_produce_fetch_list_offsets_metadata)
        for version in (11, 12):
            _, p = c.fetch(topic, 0, 5, max_wait_ms=0, version=version)
            assert (p.error_code, p.high_watermark, p.records) == (0, 5, b""), f"Fetch v{version} at LEO"
        _, p = c.fetch(topic, 0, 0, max_wait_ms=0)
        assert p.error_code == 0 and len(p.records) > 0
    assert_serves(bad_broker)


def test_produce_to_unknown_topic_or_partition(bad_broker):
    topic = make_topic(bad_broker)
    with WireClient.to(bad_broker) as c:
        assert c.produce(topic, 7, five_records()).error_code == UNKNOWN_TOPIC_OR_PARTITION
        missing = unique_name("missing")
        assert c.produce(missing, 0, five_records()).error_code == UNKNOWN_TOPIC_OR_PARTITION
        assert missing not in {t.name for t in c.metadata(None).topics}, "auto-created with auto-create off"
    assert latest(bad_broker, topic) == 0


def test_fetch_unknown_topic(bad_broker):
    with WireClient.to(bad_broker) as c:
        _, p = c.fetch(unique_name("missing"), 0, 0, max_wait_ms=0)
        assert p.error_code == UNKNOWN_TOPIC_OR_PARTITION


# ----------------------------------------------------------------------------------- CLI
def run_cli(tmp_path, *args, timeout=15):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "minibroker",
            "--port",
            "0",
            "--data-dir",
            str(tmp_path / "data"),
            "--port-file",
            str(tmp_path / "port"),
            *args,
        ],
        cwd=str(REPO_ROOT),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    "setting,name",
    [
        ("no.such.property=1", "no.such.property"),
        ("num.partitions=abc", "num.partitions"),
        ("message.max.bytes=-5", "message.max.bytes"),
    ],
    ids=["unknown", "not-an-int", "out-of-range"],
)
def test_bad_property_stops_startup(tmp_path, setting, name):
    t0 = time.monotonic()
    res = run_cli(tmp_path, "--set", setting)
    assert res.returncode != 0, "broker started with a bad property"
    assert name in res.stdout + res.stderr, f"error does not name {name}: {res.stderr[-500:]}"
    assert not (tmp_path / "port").exists()
    assert time.monotonic() - t0 < 15


def test_unknown_property_in_config_file_stops_startup(tmp_path):
    cfg = tmp_path / "server.properties"
    cfg.write_text("# comment\nnum.partitions=2\nlog.segment.bytez=1000\n")
    res = run_cli(tmp_path, "--config", str(cfg))
    assert res.returncode != 0
    assert "log.segment.bytez" in res.stdout + res.stderr
