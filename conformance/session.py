"""What a conformance case talks to: one broker, with every compared answer recorded.

A case is a function `case(s: Session)`. It runs once against each broker; `s.check(...)`
sends a request whose answer is compared between the brokers under a label, `s.call(...)` sends
one whose answer only steers the case (set-up, ids to reuse). Both return the decoded answer
(plain dicts), so a case can use its own broker's producer ids, member ids and generations.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from conformance.wire import CLOSED, Connection, decode_kio

#: Kafka creates topics asynchronously; wait at most this long for one to be served.
TOPIC_READY_TIMEOUT = 30.0


#: Recorded.api_key of a client scenario's observation (a plain value, compared as is).
OBSERVATION = -2


@dataclass
class Recorded:
    label: str
    api_key: int
    version: int
    body: object  # response body, CLOSED / NO_ANSWER, or an observation


@dataclass
class Session:
    address: tuple[str, int]
    case: str
    records: list[Recorded] = field(default_factory=list)
    error: str | None = None  # why the case could not finish on this broker
    _conns: dict[str, Connection] = field(default_factory=dict)

    def conn(self, name: str = "main") -> Connection:
        c = self._conns.get(name)
        if c is None or c.closed:
            c = self._conns[name] = Connection(self.address)
        return c

    def close(self) -> None:
        for c in self._conns.values():
            c.close()

    def _send(self, api_key, version, fields, conn, expect_response, client_id):
        return self.conn(conn).call_raw(
            api_key, version, fields, expect_response=expect_response, client_id=client_id
        )

    def check(
        self,
        label: str,
        api_key: int,
        version: int,
        fields: dict,
        *,
        conn: str = "main",
        expect_response: bool = True,
        client_id: str | None = "conformance",
    ):
        body = self._send(api_key, version, fields, conn, expect_response, client_id)
        self.records.append(Recorded(f"{self.case}/{label}", api_key, version, body))
        return _decoded(api_key, version, body)

    def call(self, api_key: int, version: int, fields: dict, *, conn: str = "main"):
        body = self._send(api_key, version, fields, conn, True, "conformance")
        return _decoded(api_key, version, body)

    @property
    def bootstrap(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    def observe(self, label: str, value) -> None:
        """Record what a real client saw (client scenarios), to compare between the brokers."""
        from conformance.wire import to_plain  # noqa: PLC0415

        self.records.append(Recorded(f"{self.case}/{label}", OBSERVATION, 0, to_plain(value)))

    def connection_state(self, label: str, conn: str = "main") -> None:
        """Record whether `conn` is still open: an ApiVersions v0 either answers or finds it closed."""
        body = self.conn(conn).call_raw(18, 0, {}) if not self.conn(conn).closed else CLOSED
        self.records.append(
            Recorded(f"{self.case}/{label}", -1, 0, "OPEN" if isinstance(body, bytes) else body)
        )

    # --- set-up helpers (uncompared) --------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, configs: dict | None = None) -> None:
        answer = self.call(
            19,
            7,
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [{"name": k, "value": str(v)} for k, v in (configs or {}).items()],
                    }
                ],
                "timeout_ms": 30000,
                "validate_only": False,
            },
        )
        code = answer["topics"][0]["error_code"]
        if code not in (0, 36):  # 36: already exists
            raise AssertionError(f"creating {name}: error {code}")
        self.wait_topic(name, partitions)

    def wait_topic(self, name: str, partitions: int = 1) -> None:
        deadline = time.monotonic() + TOPIC_READY_TIMEOUT
        while True:
            md = self.call(3, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False})
            topic = md["topics"][0] if isinstance(md, dict) and md["topics"] else None
            if (
                topic
                and topic["error_code"] == 0
                and len(topic["partitions"]) >= partitions
                and all(p["leader_id"] >= 0 for p in topic["partitions"])
                and self._serving(name, partitions)
            ):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"topic {name} not ready within {TOPIC_READY_TIMEOUT}s: {md}")
            time.sleep(0.05)

    def wait_coordinators(self) -> None:
        """Kafka creates its internal topics on first use and answers COORDINATOR_NOT_AVAILABLE
        / COORDINATOR_LOAD_IN_PROGRESS meanwhile; run before the cases, on both brokers."""

        def ready(api, version, fields, path):
            answer = self.call(api, version, fields)
            return isinstance(answer, dict) and path(answer) == 0

        for key_type in (0, 1):
            self.wait_until(
                lambda key_type=key_type: ready(
                    10,
                    4,
                    {"key_type": key_type, "coordinator_keys": ["warm-up"]},
                    lambda a: a["coordinators"][0]["error_code"],
                ),
                "coordinator",
                120,
            )
        for tid in (None, "warm-up"):
            self.wait_until(
                lambda tid=tid: ready(
                    22,
                    4,
                    {
                        "transactional_id": tid,
                        "transaction_timeout_ms": 60000,
                        "producer_id": -1,
                        "producer_epoch": -1,
                    },
                    lambda a: a["error_code"],
                ),
                "producer ids",
                120,
            )

    def wait_txn_complete(self, tid: str) -> None:
        """EndTxn answers before the markers are written on Kafka; wait for Complete*."""

        def done():
            answer = self.call(65, 0, {"transactional_ids": [tid]})
            return isinstance(answer, dict) and answer["transaction_states"][0]["transaction_state"] in (
                "CompleteCommit",
                "CompleteAbort",
                "Empty",
            )

        self.wait_until(done, f"transaction {tid} complete", 30)

    def _serving(self, name: str, partitions: int) -> bool:
        answer = self.call(
            2,
            7,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "timeout_ms": 1000,
                "topics": [
                    {
                        "name": name,
                        "partitions": [
                            {"partition_index": p, "timestamp": -1, "current_leader_epoch": -1}
                            for p in range(partitions)
                        ],
                    }
                ],
            },
        )
        return isinstance(answer, dict) and all(
            p["error_code"] == 0 for p in answer["topics"][0]["partitions"]
        )

    def wait_config(self, resource_type: int, name: str, key: str, want: str | None, timeout: float = 15.0):
        """Kafka applies a config change when its metadata log reaches the broker, a moment after
        answering it: wait (uncompared) until DescribeConfigs shows `key` at `want` (None: absent)."""

        def shown():
            answer = self.call(
                32,
                4,
                {
                    "resources": [
                        {"resource_type": resource_type, "resource_name": name, "configuration_keys": [key]}
                    ],
                    "include_synonyms": False,
                    "include_documentation": False,
                },
            )
            values = {c["name"]: c["value"] for c in answer["results"][0]["configs"]}
            return values.get(key) == want

        self.wait_until(shown, f"{key}={want} on {name!r}", timeout)

    def wait_until(self, predicate, what: str, timeout: float = 30.0, interval: float = 0.1):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.case}: {what} not reached within {timeout}s")
            time.sleep(interval)


def _decoded(api_key, version, body):
    if isinstance(body, str):
        return body
    try:
        return decode_kio(api_key, version, body)
    except Exception:  # noqa: BLE001 - steering only; the comparison decodes both sides itself
        from conformance.wire import decode_kafka_python  # noqa: PLC0415

        try:
            return decode_kafka_python(api_key, version, body)
        except ValueError as exc:  # neither codec reads it (kio refuses -1 timestamps): compared as bytes
            return {"UNDECODABLE": str(exc), "hex": body.hex()}
