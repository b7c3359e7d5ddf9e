"""Prometheus metrics (prometheus_client), served over HTTP from the broker's own event loop.

Off unless `minibroker.metrics.port` is set. Two kinds:
- counters and a latency histogram updated as things happen (per request, per transaction state
  change): a dict lookup and an increment each, children cached per label value;
- gauges computed only when Prometheus scrapes, by a custom collector that reads the broker's
  state (partition logs, transaction and group coordinators, share groups' share-partitions and
  sessions): nothing on the hot path. The share-partitions count their lock expiries,
  redeliveries and acknowledgements themselves (`SharePartitionManager.counters`); the collector
  exposes them as counters.
- what clients push (KIP-714, broker/telemetry.py): each pushed metric as a gauge
  `minibroker_client_<metric name, dots as underscores>` labelled with the client's id, instance
  id and software, plus its point attributes; the same as JSON at `GET /telemetry`.
The endpoint runs on the event loop rather than prometheus_client's threaded server because the
collector reads state that only the event loop may touch (the broker has no locks).
"""

from __future__ import annotations

import asyncio
import json
import re
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

import structlog
from minibroker.broker.context import RawResponse
from minibroker.broker.request_log import API_NAMES
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

if TYPE_CHECKING:
    from minibroker.broker.api_types import ProduceRequest, ProduceResponse
    from minibroker.broker.context import RequestContext
    from minibroker.broker.state import Broker
    from minibroker.coordinator.txn_state import TransactionMetadata

log = structlog.get_logger("minibroker.broker.metrics")

PRODUCE_KEY = 0
# Record batch header: batchLength at byte 8 (after baseOffset), recordCount at byte 57.
_BATCH_LENGTH = struct.Struct(">i")
_RECORD_COUNT_AT = 57
_BATCH_OVERHEAD = 12  # baseOffset + batchLength precede the length-counted part

# Latency buckets from 100 us to 10 s: covers a loopback Produce and a 5 s long-poll Fetch.
_LATENCY_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


def _record_count(records: bytes | None) -> int:
    """Records in a Produce partition's batches (their headers' recordCount, summed)."""
    if not records:
        return 0
    view = memoryview(records)
    total, pos, end = 0, 0, len(view)
    while pos + _RECORD_COUNT_AT + 4 <= end:
        total += _BATCH_LENGTH.unpack_from(view, pos + _RECORD_COUNT_AT)[0]
        pos += _BATCH_OVERHEAD + _BATCH_LENGTH.unpack_from(view, pos + 8)[0]
    return total


_Label = str | tuple[str, ...]


class _PerLabel(dict[_Label, Counter]):
    """Counter children cached by label value (prometheus_client's .labels() is slower)."""

    def __init__(self, counter: Counter) -> None:
        super().__init__()
        self.counter = counter

    def __missing__(self, key: _Label) -> Counter:
        child = self[key] = self.counter.labels(*key) if isinstance(key, tuple) else self.counter.labels(key)
        return child


class BrokerMetrics:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        disable_created_metrics()  # *_created samples only add noise to a single process's scrape
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.txn_started = Counter(
            "minibroker_transactions_started", "Transactions begun (state Ongoing entered).", registry=reg
        )
        self.txn_committed = Counter(
            "minibroker_transactions_committed", "Transactions completed with a commit.", registry=reg
        )
        self.txn_aborted = Counter(
            "minibroker_transactions_aborted",
            "Transactions completed with an abort (by the client, a timeout or fencing).",
            registry=reg,
        )
        self.fenced = Counter(
            "minibroker_producers_fenced",
            "InitProducerId calls that bumped the epoch of a transactional id in use, fencing its "
            "previous instance.",
            registry=reg,
        )
        self.records_in = _PerLabel(
            Counter(
                "minibroker_topic_produced_records", "Records accepted by Produce.", ["topic"], registry=reg
            )
        )
        self.bytes_in = _PerLabel(
            Counter(
                "minibroker_topic_produced_bytes",
                "Record batch bytes accepted by Produce.",
                ["topic"],
                registry=reg,
            )
        )
        self.bytes_out = _PerLabel(
            Counter(
                "minibroker_topic_fetched_bytes",
                "Record batch bytes returned by Fetch (Kafka counts no records out either).",
                ["topic"],
                registry=reg,
            )
        )
        self._latency = Histogram(
            "minibroker_request_duration_seconds",
            "Time from a decoded request to its response written, per API.",
            ["api"],
            buckets=_LATENCY_BUCKETS,
            registry=reg,
        )
        self._latency_children: dict[int, Histogram] = {}
        self.request_errors = _PerLabel(
            Counter(
                "minibroker_request_errors",
                "Error codes returned, per API and error.",
                ["api", "error"],
                registry=reg,
            )
        )
        reg.register(_StateCollector(broker))
        self._server: asyncio.base_events.Server | None = None

    # ------------------------------------------------------------------ hot-path updates
    def on_request(
        self, ctx: RequestContext, request: object, result: object, seconds: float, errors: list[int]
    ) -> None:
        key = ctx.api_key
        child = self._latency_children.get(key)
        if child is None:
            child = self._latency_children[key] = self._latency.labels(API_NAMES.get(key, str(key)))
        child.observe(seconds)
        if errors:
            api = API_NAMES.get(key, str(key))
            for code in errors:
                self.request_errors[(api, _error_name(code))].inc()
        if key == PRODUCE_KEY:
            self._count_produce(cast("ProduceRequest", request), cast("ProduceResponse", result), errors)
        elif isinstance(result, RawResponse) and result.summary:
            for topic, partitions in result.summary:
                size = sum(p.records_size for p in partitions)
                if size:
                    self.bytes_out[topic].inc(size)

    def _count_produce(self, request: ProduceRequest, result: ProduceResponse, errors: list[int]) -> None:
        ids = self.broker.logs.topic_names  # Produce v13 names topics by id

        def name(t: object) -> str:
            return field(t, "name", None) or ids.get(field(t, "topic_id", None), "")

        failed: set[tuple[str, int]] = set()
        if errors:  # only then is it worth finding which partitions were refused
            for t in result.responses:
                failed.update((name(t), p.index) for p in t.partition_responses if p.error_code)
        for topic in request.topic_data:
            topic_name = name(topic)
            for data in topic.partition_data:
                if data.records and (topic_name, data.index) not in failed:
                    self.bytes_in[topic_name].inc(len(data.records))
                    self.records_in[topic_name].inc(_record_count(data.records))

    def on_txn_transition(self, old: TransactionMetadata | None, new: TransactionMetadata) -> None:
        """Called by the transaction coordinator after each state change it persisted."""
        from minibroker.coordinator.txn_state import TxnState

        state = new.state
        if state == TxnState.ONGOING and (old is None or old.state != TxnState.ONGOING):
            self.txn_started.inc()
        elif state == TxnState.COMPLETE_COMMIT:
            self.txn_committed.inc()
        elif state == TxnState.COMPLETE_ABORT:
            self.txn_aborted.inc()
        elif (
            state == TxnState.EMPTY
            and old is not None
            and old.producer_epoch >= 0
            and (old.producer_id, old.producer_epoch) != (new.producer_id, new.producer_epoch)
        ):
            self.fenced.inc()

    # ------------------------------------------------------------------ HTTP endpoint
    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._serve_http, host, port, reuse_address=True)
        bound = self._server.sockets[0].getsockname()[1]
        log.info("metrics endpoint ready", url=f"http://{host}:{bound}/metrics", port=bound)
        return bound

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve_http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            method, _, rest = head.partition(b" ")
            path = rest.split(b" ", 1)[0].split(b"?", 1)[0]
            if method == b"GET" and path == b"/telemetry":
                telemetry = self.broker.dynamic_configs.telemetry.snapshot()
                status, ctype, body = b"200 OK", b"application/json", json.dumps(telemetry).encode()
            elif method != b"GET" or path not in (b"/metrics", b"/"):
                status, ctype, body = b"404 Not Found", b"text/plain", b"try /metrics\n"
            else:
                status, ctype, body = b"200 OK", CONTENT_TYPE_LATEST.encode(), generate_latest(self.registry)
            writer.write(
                b"HTTP/1.1 "
                + status
                + b"\r\nContent-Type: "
                + ctype
                + b"\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()


def _label_name(name: str) -> str:
    """A metric or label name Prometheus accepts: other characters become underscores."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def _state_name(state: object) -> str:
    """A group state as Kafka names it (Empty, Stable, Dead), whether an enum or a string."""
    return str(getattr(state, "value", state))


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return str(code)


class _StateCollector:
    """Gauges read from the broker's state at scrape time."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def describe(self) -> list[Metric]:
        return []  # computed families: nothing to pre-register

    def collect(self) -> Iterator[Metric]:
        broker = self.broker
        now_ms = broker.clock.wall_ms()
        yield from self._transactions(broker, now_ms)
        yield from self._logs(broker, now_ms)
        yield from self._groups(broker)
        yield from self._share_groups(broker)
        yield from self._client_telemetry(broker)
        startup = GaugeMetricFamily(
            "minibroker_startup_duration_seconds",
            "Time the last start spent per phase (log recovery, coordinator loading) and in total.",
            labels=["phase"],
        )
        for phase, seconds in broker.startup_seconds.items():
            startup.add_metric([phase], seconds)
        yield startup

    @staticmethod
    def _transactions(broker: Broker, now_ms: int) -> Iterator[Metric]:
        from minibroker.coordinator.txn_state import TxnState

        ongoing = [m for m in broker.txns.txns.values() if m.state == TxnState.ONGOING]
        yield GaugeMetricFamily(
            "minibroker_transactions_ongoing", "Transactions in state Ongoing.", value=len(ongoing)
        )
        oldest = max((now_ms - m.txn_start_ms for m in ongoing if m.txn_start_ms >= 0), default=0)
        yield GaugeMetricFamily(
            "minibroker_transaction_oldest_age_seconds",
            "Age of the oldest Ongoing transaction (0 when none).",
            value=max(oldest, 0) / 1000,
        )

    @staticmethod
    def _logs(broker: Broker, now_ms: int) -> Iterator[Metric]:
        lso_lag = GaugeMetricFamily(
            "minibroker_partition_lso_lag_messages",
            "High watermark minus last stable offset: what read_committed consumers cannot see yet.",
            labels=["topic", "partition"],
        )
        size = GaugeMetricFamily(
            "minibroker_log_size_bytes",
            "Bytes in a partition's segment files.",
            labels=["topic", "partition"],
        )
        segments = GaugeMetricFamily(
            "minibroker_log_segments", "Segments of a partition log.", labels=["topic", "partition"]
        )
        producer_ids: dict[int, int] = {}
        for plog in broker.logs.all_logs():
            labels = [plog.topic, str(plog.partition)]
            lso_lag.add_metric(labels, plog.high_watermark - plog.last_stable_offset)
            size.add_metric(labels, sum(s.size for s in plog.segments))
            segments.add_metric(labels, len(plog.segments))
            for entry in plog.producer_state.producers():
                producer_ids[entry.producer_id] = max(
                    producer_ids.get(entry.producer_id, -1), entry.last_timestamp
                )
        yield lso_lag
        yield size
        yield segments
        yield GaugeMetricFamily(
            "minibroker_producer_ids_active",
            "Producer ids with idempotence/transaction state on some partition.",
            value=len(producer_ids),
        )
        idle = max((now_ms - ts for ts in producer_ids.values() if ts >= 0), default=0)
        yield GaugeMetricFamily(
            "minibroker_producer_id_max_idle_seconds",
            "Longest time since an active producer id last wrote (state expires at "
            "producer.id.expiration.ms).",
            value=max(idle, 0) / 1000,
        )

    @staticmethod
    def _client_telemetry(broker: Broker) -> Iterator[Metric]:
        """The latest push of every live client instance, one family per metric name."""
        families: dict[str, tuple[list[str], list[tuple[dict[str, str], float]]]] = {}
        for inst in broker.dynamic_configs.telemetry.instances.values():
            client = {
                "client_id": inst.attributes.get("client_id") or "",
                "client_instance_id": str(inst.instance_id),
                "client_software_name": inst.attributes.get("client_software_name") or "",
            }
            for point in inst.pushed:
                keys, samples = families.setdefault(point.name, ([], []))
                labels = {**{_label_name(k): v for k, v in point.attributes.items()}, **client}
                keys.extend(k for k in labels if k not in keys)
                samples.append((labels, point.value))
        for name, (keys, samples) in sorted(families.items()):
            family = GaugeMetricFamily(
                "minibroker_client_" + _label_name(name), f"Pushed by clients (KIP-714): {name}", labels=keys
            )
            for labels, value in samples:
                family.add_metric([labels.get(k, "") for k in keys], value)
            yield family

    @staticmethod
    def _groups(broker: Broker) -> Iterator[Metric]:
        """Classic, KIP-848 consumer and KIP-932 share groups alike; `type` is the group's kind
        ("classic", "consumer" or "share": Kafka's group-count `protocol` tag). Share groups have
        no committed offsets (their share-partitions' state is the share coordinator's)."""
        members = GaugeMetricFamily(
            "minibroker_group_members", "Members of a group.", labels=["group", "type"]
        )
        counts = GaugeMetricFamily(
            "minibroker_groups",
            "Groups by type and state (Kafka's group-count and consumer-group-count).",
            labels=["type", "state"],
        )
        lag = GaugeMetricFamily(
            "minibroker_group_offset_lag_messages",
            "High watermark minus the group's committed offset.",
            labels=["group", "topic", "partition"],
        )
        by_state: dict[tuple[str, str], int] = {}
        groups: list[tuple[str, str, str, int, dict]] = [
            (group_id, "classic", g.state.value, len(g.members), g.offsets)
            for group_id, g in broker.groups.groups.items()
        ]
        groups += [
            (group_id, "consumer", cg.state, len(cg.members), cg.offsets)
            for group_id, cg in broker.groups.manager.consumer_groups.items()
        ]
        groups += [
            (
                group_id,
                "share",
                _state_name(getattr(sg, "state", "Empty")),
                len(getattr(sg, "members", ())),
                {},
            )
            for group_id, sg in broker.groups.manager.share_groups.items()
        ]
        for _, kind, state, _, _ in groups:
            by_state[(kind, state)] = by_state.get((kind, state), 0) + 1
        for group_id, kind, _, size, offsets in groups:
            members.add_metric([group_id, kind], size)
            for (topic, partition), committed in offsets.items():
                plog = broker.logs.get_log(topic, partition)
                if plog is not None:
                    lag.add_metric(
                        [group_id, topic, str(partition)], max(plog.high_watermark - committed.offset, 0)
                    )
        for (kind, state), n in sorted(by_state.items()):
            counts.add_metric([kind, state], n)
        yield members
        yield counts
        yield lag

    @staticmethod
    def _share_groups(broker: Broker) -> Iterator[Metric]:
        """The share-partitions' in-flight records and what happened to the records delivered
        (Kafka's SharePartitionMetrics and ShareGroupMetrics), and the share sessions."""
        partitions = broker.share_partitions
        in_flight = getattr(partitions, "in_flight_records", None)
        yield GaugeMetricFamily(
            "minibroker_share_in_flight_records",
            "Records of share-partitions acquired by share group members and not yet acknowledged "
            "(Kafka's InFlightMessageCount).",
            value=in_flight() if callable(in_flight) else 0,
        )
        counters: dict[str, int] = getattr(partitions, "counters", None) or {}
        yield CounterMetricFamily(
            "minibroker_share_acquisition_lock_timeouts",
            "Acquisition locks that expired before their records were acknowledged, making them "
            "available again (Kafka's AcquisitionLockTimeoutPerSec).",
            value=counters.get("lock_expiries", 0),
        )
        yield CounterMetricFamily(
            "minibroker_share_redeliveries",
            "Records delivered to a share group again (released, or their lock expired).",
            value=counters.get("redeliveries", 0),
        )
        acks = CounterMetricFamily(
            "minibroker_share_record_acknowledgements",
            "Records acknowledged by share group members, per acknowledgement type (Kafka's "
            "RecordAcknowledgementsPerSec and its ackType tag).",
            labels=["ack_type"],
        )
        for ack_type in ("accept", "release", "reject", "renew"):
            acks.add_metric([ack_type], counters.get(f"acknowledgements_{ack_type}", 0))
        yield acks
        sessions = broker.share_sessions
        yield GaugeMetricFamily(
            "minibroker_share_sessions",
            "Share sessions (ShareFetch/ShareAcknowledge) the broker keeps, at most "
            "group.share.max.share.sessions (Kafka's ShareSessionsCount).",
            value=len(getattr(sessions, "sessions", None) or ()),
        )
        yield CounterMetricFamily(
            "minibroker_share_session_evictions",
            "Share sessions removed because their connection closed (Kafka's ShareSessionEvictionsPerSec).",
            value=getattr(sessions, "evictions", 0),
        )
