"""Issue 9 over the wire: crafted batches inside valid Produce requests get Kafka 4's answers
(error code, record_errors for timestamps) and leave the log untouched; the issue's poison pills
are refused and never served."""

from __future__ import annotations

import struct
import time

import pytest
from crc32c import crc32c

from tests.support.broker import BrokerFactory
from tests.support.crafted import raw_batch, record, varint
from tests.support.helpers import unique_name
from tests.support.wire import (
    ProduceRequest,
    ProduceResponse,
    WireClient,
    build_produce_request,
    read_partition,
)

INVALID_RECORD = 87
INVALID_TIMESTAMP = 32
UNSUPPORTED_COMPRESSION_TYPE = 76
CORRUPT_MESSAGE = 2
UNKNOWN_SERVER_ERROR = -1
HOUR = 3_600_000


@pytest.fixture(scope="module")
def broker(request, tmp_path_factory):
    factory = BrokerFactory(tmp_path_factory.mktemp("produce-validation"))
    b = factory({"auto.create.topics.enable": False})
    yield b
    factory.teardown(request.session.testsfailed > 0)


@pytest.fixture
def topic(broker):
    name = unique_name("pv")
    with WireClient.to(broker) as c:
        assert c.create_topics([(name, 1)]).topics[0].error_code == 0
    return name


def now_batch(recs, **kw) -> bytes:
    now = int(time.time() * 1000)
    return raw_batch(recs, base_timestamp=now, max_timestamp=now, **kw)


def leo(c, topic) -> int:
    return c.list_offsets(topic, 0, -1).offset


def refused(c, topic, batch, code, version=9):
    before = leo(c, topic)
    r = c.produce(topic, 0, batch, version=version)
    assert r.error_code == code, (r.error_code, r.error_message)
    assert leo(c, topic) == before
    return r


def test_poison_pills_from_the_issue_are_refused(broker, topic):
    with WireClient.to(broker) as c:
        three = [record(i) for i in range(3)]
        refused(c, topic, now_batch(three, count=2), INVALID_RECORD)  # more records than count
        refused(c, topic, now_batch(three[:2], count=3), INVALID_RECORD)  # fewer
        refused(c, topic, now_batch([b"\x13" * 20]), INVALID_RECORD)  # garbage record
        refused(c, topic, now_batch([record(0, key_len=b"\x80" * 10 + b"\x00")]), INVALID_RECORD)
        refused(c, topic, now_batch([record(0, headers=varint(-3))]), INVALID_RECORD)
        refused(c, topic, now_batch([record(0)], last_offset_delta=2**31 - 2), INVALID_RECORD)
        for codec in (1, 2, 3, 4):
            b = bytearray(now_batch(three, codec=codec))
            b[61:] = b"\x42" * (len(b) - 61)
            struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
            refused(c, topic, bytes(b), UNKNOWN_SERVER_ERROR)
        assert leo(c, topic) == 0
        assert c.produce(topic, 0, now_batch(three)).error_code == 0
        recs, hw = read_partition(c, topic, 0)
        assert hw == 3 and len(recs) == 3


def test_timestamps_out_of_range_get_record_errors(broker, topic):
    with WireClient.to(broker) as c:
        recs = [record(0), record(1, ts_delta=2 * HOUR), record(2), record(3, ts_delta=3 * HOUR)]
        r = refused(c, topic, now_batch(recs), INVALID_TIMESTAMP)
        assert [e.batch_index for e in r.record_errors] == [1, 3]
        assert all("out of range" in e.batch_index_error_message for e in r.record_errors)
        assert r.error_message == "One or more records have been rejected due to invalid timestamp"


def test_version_codec_magic_and_base_offset_rules(broker, topic):
    with WireClient.to(broker) as c:
        zstd = now_batch([record(0)], codec=4)
        refused(c, topic, zstd, UNSUPPORTED_COMPRESSION_TYPE, version=6)
        assert c.produce(topic, 0, zstd, version=7).error_code == 0
        refused(c, topic, now_batch([record(0)], base_offset=7), INVALID_RECORD)
        refused(c, topic, now_batch([record(0)], magic=1), INVALID_RECORD)
        refused(c, topic, now_batch([record(0)], magic=3), CORRUPT_MESSAGE)
        refused(c, topic, now_batch([record(0)])[:-1], INVALID_RECORD)  # truncated


def test_error_answers_carry_what_kafkas_carry(broker, topic):
    """Checked against Kafka 4.4 by conformance/cases/j_bad_batches.py: error_message only with
    record_errors or for the first batch's framing; log_start_offset -1 for request-level and
    corrupt-framing refusals, the partition's for record-level ones."""
    with WireClient.to(broker) as c:
        r = refused(c, topic, now_batch([record(0)], count=2), INVALID_RECORD)
        assert (r.error_message, r.log_start_offset, list(r.record_errors)) == (None, 0, [])
        r = refused(c, topic, now_batch([record(0)], magic=1), INVALID_RECORD)
        assert (r.error_message, r.log_start_offset) == (None, -1)
        short = bytearray(now_batch([record(0)]))
        struct.pack_into(">i", short, 8, 13)
        r = refused(c, topic, bytes(short), CORRUPT_MESSAGE)
        assert r.error_message == "Record size 13 is less than the minimum record overhead (14)"
        assert r.log_start_offset == -1
        r = refused(c, topic, now_batch([record(0)], magic=3), CORRUPT_MESSAGE)
        assert (r.error_message, r.log_start_offset) == ("Invalid magic found in record: 3", -1)
        r = refused(c, topic, now_batch([record(0), record(1, ts_delta=2 * HOUR)]), INVALID_TIMESTAMP)
        assert r.log_start_offset == 0 and [e.batch_index for e in r.record_errors] == [1]


TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53


def test_garbage_attributes_byte_is_answered_as_kafka_orders_its_checks(broker, topic):
    """Issue 21: Kafka asks whether a Produce request carries transactional records
    (RequestUtils.hasTransactionalRecords) before it validates any batch, so a batch whose
    attributes byte is garbage (0xff: codec 7 and the transactional bit) without an authorized
    transactional id is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, not the unknown codec's
    UNKNOWN_SERVER_ERROR; with acks=0 Kafka has no answer to give and closes the connection.
    The same unknown codec without the transactional bit stays UNKNOWN_SERVER_ERROR. Checked
    against Kafka 4.4 by conformance/cases/j_bad_batches.py."""
    with WireClient.to(broker) as c:
        garbage = now_batch([record(0)], attributes=0xFF)
        r = refused(c, topic, garbage, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        assert r.log_start_offset == -1
        codec_7 = now_batch([record(0)], attributes=0x07)
        # found before the log only below v7 (Kafka's zstd rule reads the codec), else by the log
        assert refused(c, topic, codec_7, UNKNOWN_SERVER_ERROR, version=6).log_start_offset == -1
        assert refused(c, topic, codec_7, UNKNOWN_SERVER_ERROR, version=9).log_start_offset == 0
        transactional = now_batch([record(0)], attributes=0x10, producer_id=5, base_sequence=0)
        refused(c, topic, transactional, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        c.send_request(build_produce_request(topic, 0, garbage, acks=0), 9)
        assert c.wait_closed(timeout=5) == b""
    with WireClient.to(broker) as c:
        assert leo(c, topic) == 0
        assert c.produce(topic, 0, now_batch([record(0)])).error_code == 0


def two_partitions(topic, first: bytes, second: bytes, acks=-1):
    T = ProduceRequest.TopicProduceData
    parts = [T.PartitionProduceData(index=i, records=r) for i, r in enumerate((first, second))]
    return ProduceRequest(
        transactional_id=None, acks=acks, timeout_ms=5000, topic_data=[T(name=topic, partition_data=parts)]
    )


def test_corrupt_framing_in_one_partition_refuses_the_whole_request(broker):
    """Issue 21: Kafka's RequestUtils.hasTransactionalRecords walks every partition's first batch
    before anything else; a size field below 14 or a magic above 2 throws CorruptRecordException
    there, which KafkaApis answers for every partition of the request (CORRUPT_MESSAGE with the
    message, nothing appended, the valid partition included) and, with acks=0, by closing the
    connection. Checked against Kafka 4.4 by conformance/cases/j_bad_batches.py."""
    topic = unique_name("pv-two")
    good = now_batch([record(0)])
    short = bytearray(good)
    struct.pack_into(">i", short, 8, 13)
    corrupt = {
        bytes(short): "Record size 13 is less than the minimum record overhead (14)",
        now_batch([record(0)], magic=3): "Invalid magic found in record: 3",
    }
    with WireClient.to(broker) as c:
        assert c.create_topics([(topic, 2)]).topics[0].error_code == 0
        for bad, message in corrupt.items():
            for first, second in ((good, bad), (bad, good)):
                resp = c.request(two_partitions(topic, first, second), ProduceResponse, 9)
                [(name, parts)] = [(t.name, t.partition_responses) for t in resp.responses]
                assert name == topic
                assert sorted((p.index, p.error_code, p.base_offset, p.error_message) for p in parts) == [
                    (0, CORRUPT_MESSAGE, -1, message),
                    (1, CORRUPT_MESSAGE, -1, message),
                ]
                assert all(p.log_start_offset == -1 for p in parts)
        assert [c.list_offsets(topic, p, -1).offset for p in (0, 1)] == [0, 0]
        c.send_request(two_partitions(topic, good, now_batch([record(0)], magic=3), acks=0), 9)
        assert c.wait_closed(timeout=5) == b""
    with WireClient.to(broker) as c:
        assert [c.list_offsets(topic, p, -1).offset for p in (0, 1)] == [0, 0]
        resp = c.request(two_partitions(topic, good, good), ProduceResponse, 9)
        assert [p.error_code for t in resp.responses for p in t.partition_responses] == [0, 0]
