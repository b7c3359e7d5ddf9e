"""A tiny blocking Kafka wire client for protocol-level tests.

Frames are built by hand where the test is about the bytes (headers, bad input); well-formed
requests are encoded and responses decoded with kafka-python's schema classes, which are an
independent implementation of the Kafka protocol (not the broker's own codec).
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
import uuid
from dataclasses import dataclass, field

from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

DEFAULT_TIMEOUT = 10.0
_corr = itertools.count(1000)

# Kafka error codes used by the tests (values from Kafka's Errors.java).
NONE = 0
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37

COMPRESSION = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

ZERO_UUID = uuid.UUID(int=0)


class ConnectionClosed(Exception):
    pass


# ---------------------------------------------------------------------------------- framing
def encode_uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def request_header(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None = "wire-test",
    flexible: bool = False,
) -> bytes:
    """Request header v1 (v2 when flexible: same, plus an empty tag buffer). The client id is
    always an INT16-length string, even in header v2."""
    head = struct.pack(">hhi", api_key, api_version, correlation_id)
    if client_id is None:
        head += struct.pack(">h", -1)
    else:
        raw = client_id.encode()
        head += struct.pack(">h", len(raw)) + raw
    if flexible:
        head += b"\x00"
    return head


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


# ---------------------------------------------------------------------------------- client
class WireClient:
    """One TCP connection to the broker. Use as a context manager."""

    def __init__(self, host: str, port: int, timeout: float = DEFAULT_TIMEOUT, client_id: str = "wire-test"):
        self.host, self.port = host, port
        self.timeout = timeout
        self.client_id = client_id
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @classmethod
    def to(cls, broker, **kw) -> WireClient:
        return cls(broker.host, broker.port, **kw)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- raw bytes
    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(frame(payload))

    def _recv_exact(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"timed out reading {n} bytes (got {len(buf)})")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(n - len(buf))
            except TimeoutError:
                raise TimeoutError(f"timed out reading {n} bytes (got {len(buf)})") from None
            except (ConnectionResetError, BrokenPipeError) as exc:
                raise ConnectionClosed(f"connection reset after {len(buf)} of {n} bytes: {exc}") from None
            if not chunk:
                raise ConnectionClosed(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def recv_frame(self, timeout: float | None = None) -> bytes:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        (size,) = struct.unpack(">i", self._recv_exact(4, deadline))
        assert 0 <= size < 512 * 1024 * 1024, f"absurd response frame size {size}"
        return self._recv_exact(size, deadline)

    def wait_closed(self, timeout: float = 5.0) -> bytes:
        """Wait for the broker to close the connection; returns whatever bytes arrived before
        EOF. Raises AssertionError if the connection is still open after `timeout`."""
        deadline = time.monotonic() + timeout
        received = bytearray()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"connection still open {timeout}s later (received {bytes(received[:64])!r})"
                )
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                continue
            except (ConnectionResetError, BrokenPipeError):
                return bytes(received)
            if not chunk:
                return bytes(received)
            received += chunk

    # -- structured requests (kafka-python schema classes)
    def send_request(self, req, version: int, correlation_id: int | None = None) -> int:
        corr = next(_corr) if correlation_id is None else correlation_id
        req.API_VERSION = version
        req.with_header(correlation_id=corr, client_id=self.client_id)
        self.send_raw(bytes(req.encode(header=True, framed=True)))
        return corr

    def recv_response(self, response_cls, version: int, correlation_id: int, timeout: float | None = None):
        data = self.recv_frame(timeout)
        return decode_response(response_cls, version, data, correlation_id)

    def request(self, req, response_cls, version: int, timeout: float | None = None):
        corr = self.send_request(req, version)
        return self.recv_response(response_cls, version, corr, timeout)

    # -- convenience wrappers
    def api_versions(self, version: int = 3):
        kw = {}
        if version >= 3:
            kw = dict(client_software_name="wire-test", client_software_version="1.0")
        return self.request(ApiVersionsRequest(**kw), ApiVersionsResponse, version)

    def metadata(self, topics: list[str] | None, version: int = 12, allow_auto_topic_creation: bool = False):
        req = MetadataRequest(
            topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=allow_auto_topic_creation,
        )
        return self.request(req, MetadataResponse, version)

    def create_topics(
        self,
        topics: list[tuple[str, int]],
        version: int = 7,
        configs: dict | None = None,
        timeout_ms: int = 5000,
    ):
        T = CreateTopicsRequest.CreatableTopic
        req = CreateTopicsRequest(
            topics=[
                T(
                    name=name,
                    num_partitions=n,
                    replication_factor=1,
                    assignments=[],
                    configs=[
                        T.CreatableTopicConfig(name=k, value=str(v)) for k, v in (configs or {}).items()
                    ],
                )
                for name, n in topics
            ],
            timeout_ms=timeout_ms,
            validate_only=False,
        )
        return self.request(req, CreateTopicsResponse, version)

    def produce(
        self,
        topic: str,
        partition: int,
        records: bytes,
        version: int = 9,
        acks: int = -1,
        timeout_ms: int = 5000,
    ):
        req = build_produce_request(topic, partition, records, acks=acks, timeout_ms=timeout_ms)
        resp = self.request(req, ProduceResponse, version)
        return single_partition(resp.responses, topic, partition, "partition_responses")

    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        version: int = 12,
        max_wait_ms: int = 100,
        min_bytes: int = 1,
        max_bytes: int = 50 * 1024 * 1024,
        partition_max_bytes: int = 10 * 1024 * 1024,
        isolation_level: int = 0,
        timeout: float | None = None,
    ):
        req = build_fetch_request(
            topic,
            partition,
            offset,
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            partition_max_bytes=partition_max_bytes,
            isolation_level=isolation_level,
        )
        t = timeout if timeout is not None else max(self.timeout, max_wait_ms / 1000 + 5)
        resp = self.request(req, FetchResponse, version, timeout=t)
        return resp, single_partition(resp.responses, topic, partition, "partitions", topic_attr="topic")

    def list_offsets(
        self, topic: str, partition: int, timestamp: int, *, version: int = 7, isolation_level: int = 0
    ):
        T = ListOffsetsRequest.ListOffsetsTopic
        req = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=isolation_level,
            topics=[
                T(
                    name=topic,
                    partitions=[
                        T.ListOffsetsPartition(
                            partition_index=partition, current_leader_epoch=-1, timestamp=timestamp
                        )
                    ],
                )
            ],
            timeout_ms=5000,
        )
        resp = self.request(req, ListOffsetsResponse, version)
        return single_partition(resp.topics, topic, partition, "partitions", index_attr="partition_index")


def decode_response(response_cls, version: int, data: bytes, correlation_id: int):
    """Decode a response frame (without its length prefix) including the response header."""
    resp = response_cls.decode(data, version=version, header=True)
    assert resp.header.correlation_id == correlation_id, (
        f"correlation id {resp.header.correlation_id} != {correlation_id}"
    )
    return resp


def single_partition(
    topics, topic: str, partition: int, parts_attr: str, topic_attr: str = "name", index_attr: str = "index"
):
    matches = [t for t in topics if getattr(t, topic_attr) == topic]
    assert len(matches) == 1, f"expected one entry for topic {topic!r} in response, got {topics!r}"
    parts = getattr(matches[0], parts_attr)
    if parts and not hasattr(parts[0], index_attr):
        index_attr = "partition_index"
    pm = [p for p in parts if getattr(p, index_attr) == partition]
    assert len(pm) == 1, f"expected one entry for {topic}-{partition} in response, got {parts!r}"
    return pm[0]


def build_produce_request(
    topic: str, partition: int, records: bytes, *, acks: int = -1, timeout_ms: int = 5000
):
    T = ProduceRequest.TopicProduceData
    return ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=[T(name=topic, partition_data=[T.PartitionProduceData(index=partition, records=records)])],
    )


def build_fetch_request(
    topic: str,
    partition: int | list[tuple[int, int]],
    offset: int | None = None,
    *,
    max_wait_ms: int = 100,
    min_bytes: int = 1,
    max_bytes: int = 50 * 1024 * 1024,
    partition_max_bytes: int = 10 * 1024 * 1024,
    isolation_level: int = 0,
):
    """A Fetch for one partition at `offset`, or for a list of (partition, offset) pairs."""
    T = FetchRequest.FetchTopic
    pairs = partition if isinstance(partition, list) else [(partition, offset)]
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
        session_id=0,
        session_epoch=-1,
        topics=[
            T(
                topic=topic,
                partitions=[
                    T.FetchPartition(
                        partition=p,
                        current_leader_epoch=-1,
                        fetch_offset=o,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=partition_max_bytes,
                    )
                    for p, o in pairs
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


# ---------------------------------------------------------------------------------- ApiVersions v0 by hand
@dataclass
class ApiVersionsV0:
    error_code: int
    api_keys: dict[int, tuple[int, int]] = field(default_factory=dict)
    trailing: bytes = b""


def parse_api_versions_v0(body: bytes) -> ApiVersionsV0:
    """Parse an ApiVersions v0 body exactly: error_code int16, [api_key int16, min int16, max int16]."""
    (err, n) = struct.unpack_from(">hi", body, 0)
    assert 0 <= n < 1000, f"api_keys array length {n} is not a v0 array"
    pos = 6
    keys = {}
    for _ in range(n):
        k, lo, hi = struct.unpack_from(">hhh", body, pos)
        pos += 6
        keys[k] = (lo, hi)
    return ApiVersionsV0(err, keys, body[pos:])


# ---------------------------------------------------------------------------------- record batches
@dataclass
class Rec:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def build_batch(
    records,
    *,
    compression: str | int = "none",
    timestamp: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """A magic-2 batch built by kafka-python's builder. `records` is a list of (key, value,
    headers) or (key, value, headers, timestamp) tuples."""
    codec = COMPRESSION[compression] if isinstance(compression, str) else compression
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    now = int(time.time() * 1000) if timestamp is None else timestamp
    for i, rec in enumerate(records):
        key, value, headers = rec[0], rec[1], rec[2]
        ts = rec[3] if len(rec) > 3 else now
        b.append(i, timestamp=ts, key=key, value=value, headers=list(headers or []))
    return bytes(b.build())


def iter_batches(data: bytes):
    """Whole batches in `data` (a Fetch response's records). A trailing partial batch is ignored
    (Kafka allows it only when it exceeds max bytes, and these tests use generous limits)."""
    mr = MemoryRecords(bytes(data))
    while mr.has_next():
        yield mr.next_batch()


def batch_records(batch: DefaultRecordBatch) -> list[Rec]:
    return [Rec(r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]) for r in batch]


def read_partition(
    client: WireClient,
    topic: str,
    partition: int,
    start: int = 0,
    *,
    isolation_level: int = 0,
    timeout: float = 20.0,
    check_epoch: bool = True,
) -> tuple[list[Rec], int]:
    """Read a partition from `start` to its high watermark with raw Fetch v12, checking that
    every batch has a valid CRC-32C, batches are contiguous (each base offset == previous last
    offset + 1), offsets inside batches are consecutive, and the leader epoch is constant.
    Returns (records, high_watermark)."""
    out: list[Rec] = []
    offset = start
    epochs = set()
    deadline = time.monotonic() + timeout
    expected_base = None
    while True:
        assert time.monotonic() < deadline, f"reading {topic}-{partition} did not finish in {timeout}s"
        _, part = client.fetch(topic, partition, offset, max_wait_ms=0, isolation_level=isolation_level)
        assert part.error_code == NONE, f"fetch {topic}-{partition}@{offset}: error {part.error_code}"
        hw = part.high_watermark
        data = part.records
        assert data is not None, "Fetch returned null records (must be empty bytes)"
        if offset >= hw:
            assert len(data) == 0, f"records returned at offset {offset} >= high watermark {hw}"
            return out, hw
        assert len(data) > 0, f"no records at {offset} below high watermark {hw}"
        progressed = False
        for batch in iter_batches(data):
            assert batch.magic == 2, f"batch at {batch.base_offset} has magic {batch.magic}"
            assert batch.validate_crc(), f"batch at base offset {batch.base_offset} fails its CRC-32C"
            if batch.last_offset < offset:
                continue  # clients skip batches entirely below the fetch offset
            if expected_base is not None:
                assert batch.base_offset == expected_base, (
                    f"gap/overlap: batch base {batch.base_offset}, expected {expected_base}"
                )
            recs = batch_records(batch)
            assert [r.offset for r in recs] == list(
                range(batch.base_offset, batch.base_offset + len(recs))
            ), f"offsets in batch {batch.base_offset} not consecutive"
            if not batch.is_control_batch:
                assert len(recs) == batch.last_offset - batch.base_offset + 1
                out.extend(r for r in recs if r.offset >= offset)
            epochs.add(batch.leader_epoch)
            expected_base = batch.last_offset + 1
            offset = batch.last_offset + 1
            progressed = True
        assert progressed, f"fetch at {offset} returned no whole batch ({len(data)} bytes)"
        if check_epoch:
            assert len(epochs) == 1 and min(epochs) >= 0, f"leader epochs in batches: {epochs}"
