"""Small helpers shared by the acceptance tests: waiting on conditions, topics, test records."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from kafka.admin import KafkaAdminClient

from tests.support.wire import WireClient


def wait_until(predicate, timeout: float, interval: float = 0.05, message: str = "condition"):
    """Poll `predicate` until it returns a truthy value (returned) or `timeout` expires."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - report the last failure on timeout
            last_exc = exc
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {message}"
                + (f" (last error: {last_exc!r})" if last_exc else "")
            )
        time.sleep(interval)


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def admin_client(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=bootstrap, request_timeout_ms=10000, client_id="acceptance-admin"
    )


def create_topic(broker, name: str, partitions: int = 3, configs: dict | None = None) -> None:
    """Create a topic with kafka-python's KafkaAdminClient and wait until Metadata shows every
    partition with a leader."""
    admin = admin_client(broker.bootstrap)
    try:
        admin.create_topics(
            {
                name: {
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "configs": {k: str(v) for k, v in (configs or {}).items()},
                }
            }
        )
    finally:
        admin.close()
    wait_for_topic(broker, name, partitions)


def wait_for_topic(broker, name: str, partitions: int, timeout: float = 10.0) -> None:
    def ready():
        with WireClient.to(broker) as c:
            md = c.metadata([name])
        t = [t for t in md.topics if t.name == name]
        return (
            t
            and t[0].error_code == 0
            and len(t[0].partitions) == partitions
            and all(p.error_code == 0 and p.leader_id >= 0 for p in t[0].partitions)
        )

    wait_until(ready, timeout, message=f"topic {name} with {partitions} partitions in Metadata")


# ----------------------------------------------------------------------------- test records
@dataclass(frozen=True)
class Msg:
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int


def make_messages(n: int, partitions: int, tag: str, base_ts: int | None = None) -> list[Msg]:
    """Deterministic records: explicit partition (round robin), keys (some null), values (some
    null, mixed compressible and incompressible bytes, 0..~300 bytes), headers (some records
    without any), explicit CreateTime timestamps."""
    if base_ts is None:
        base_ts = int(time.time() * 1000) - 60_000
    out = []
    for i in range(n):
        key = None if i % 7 == 3 else f"{tag}-key-{i}".encode()
        if i % 5 == 4:
            value = None
        elif i % 11 == 0:
            value = b""
        else:
            value = (
                f"{tag}-value-{i}-".encode()
                + bytes((i * 31 + j * 7) % 251 for j in range(i % 97))
                + b"x" * (i % 150)
            )
        if i % 4 == 0:
            headers = ()
        elif i % 4 == 1:
            headers = (("idx", str(i).encode()),)
        else:
            headers = (("idx", str(i).encode()), ("tag", tag.encode()), ("empty", b""))
        if key is None and value is None:
            key = b""  # kafka-python refuses a record with both key and value null
        out.append(Msg(i % partitions, key, value, headers, base_ts + i))
    return out


def expected_by_partition(messages: list[Msg], offsets: list[tuple[int, int]]) -> dict[int, list[tuple]]:
    """Pair each message with the (partition, offset) its producer reported; check the producer
    kept send order per partition (offsets strictly increasing) and return, per partition,
    [(offset, key, value, headers, timestamp)] in offset order."""
    assert len(messages) == len(offsets)
    per: dict[int, list[tuple]] = {}
    for m, (p, off) in zip(messages, offsets, strict=False):
        assert p == m.partition, f"record for partition {m.partition} acknowledged on partition {p}"
        per.setdefault(p, []).append((off, m.key, m.value, m.headers, m.timestamp))
    for p, rows in per.items():
        offs = [r[0] for r in rows]
        assert offs == list(range(len(offs))), (
            f"partition {p}: acknowledged offsets are not 0..{len(offs) - 1} in send order: "
            f"first mismatch at index {next(i for i, o in enumerate(offs) if o != i)}"
        )
    return per


def normalize_headers(headers) -> tuple[tuple[str, bytes], ...]:
    if not headers:
        return ()
    return tuple(
        (k if isinstance(k, str) else k.decode(), bytes(v) if v is not None else None) for k, v in headers
    )
