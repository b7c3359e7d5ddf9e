"""Issue 9, property tests in CI (hypothesis, derandomized, small fixed budgets): mutated
requests and CRC-valid random batches never crash the broker, never end in an unhandled
exception, never store a batch kafka-python cannot decode and never move the log end offset by
more than the records written. The long run is ``python -m tests.support.fuzz_run``."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.broker import BrokerFactory
from tests.support.fuzzing import (
    BATCH_TOPIC,
    BatchOutcome,
    RequestSender,
    alive,
    handler_failures,
    librdkafka_read,
    mutate_batch,
    mutate_frame,
    produce_and_check,
    random_batch,
    seed_frames,
    start_fuzz_broker,
)
from tests.support.wire import WireClient


def fuzz(examples: int):
    return settings(
        derandomize=True,
        deadline=None,
        database=None,
        max_examples=examples,
        suppress_health_check=list(HealthCheck),
    )


@pytest.fixture(scope="module")
def broker(request, tmp_path_factory):
    factory = BrokerFactory(tmp_path_factory.mktemp("fuzz"))
    yield start_fuzz_broker(factory)
    factory.teardown(request.session.testsfailed > 0)


@pytest.fixture(scope="module")
def seeds():
    return seed_frames(random.Random(9))


@fuzz(60)
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_requests_never_kill_the_broker(broker, seeds, seed):
    rng = random.Random(seed)
    since = broker.log_size()
    sender = RequestSender(broker, wait_s=0.2)
    try:
        for _ in range(10):
            _key, _version, frame = rng.choice(seeds)
            sender.send(mutate_frame(frame, rng))
    finally:
        sender.close()
    assert alive(broker), f"broker died (seed {seed})\n{broker.log_tail()}"
    assert handler_failures(broker, since) == [], f"seed {seed}"


def test_every_seed_request_is_served(broker, seeds):
    """The unmutated seeds are valid requests: none ends in an unhandled exception."""
    since = broker.log_size()
    sender = RequestSender(broker, wait_s=0.5)
    try:
        for _key, _version, frame in seeds:
            sender.send(frame)
    finally:
        sender.close()
    assert alive(broker)
    assert handler_failures(broker, since) == []


@fuzz(80)
@given(seed=st.integers(0, 2**32 - 1))
def test_crc_valid_random_batches_are_stored_only_when_decodable(broker, seed):
    rng = random.Random(seed)
    outcome = BatchOutcome()
    with WireClient.to(broker) as c:
        produce_and_check(c, BATCH_TOPIC, random_batch(rng), outcome)
        assert outcome.accepted == 1, f"seed {seed}: a valid random batch was refused {outcome}"
        for _ in range(3):
            produce_and_check(c, BATCH_TOPIC, mutate_batch(random_batch(rng), rng), outcome)
    assert outcome.undecodable == [], f"seed {seed}: stored but undecodable"
    assert outcome.leo_mismatch == [], f"seed {seed}: log end offset moved wrongly"
    assert alive(broker)


def test_librdkafka_reads_every_stored_batch(broker):
    """After the random batches above: librdkafka reads the whole partition without an error
    and without stalling on a batch it cannot parse."""
    with WireClient.to(broker) as c:
        end = c.list_offsets(BATCH_TOPIC, 0, -1).offset
    assert end > 0
    result = librdkafka_read(broker, BATCH_TOPIC, end, timeout_s=60)
    assert result["consumer errors"] == [] and result["reached end"], result
