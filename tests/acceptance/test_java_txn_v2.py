"""A Java kafka-clients 4.4.0 transactional producer on both transaction paths (KIP-890).

With the default feature levels minibroker finalizes transaction.version=2, as Kafka 4.4 does, and
the producer runs transactions V2: no AddPartitionsToTxn / AddOffsetsToTxn, EndTxn v5 bumping the
epoch at every end, TxnOffsetCommit v5+, Produce v12+. With `minibroker.features=
transaction.version=1` the same program runs the classic flow. The checks are
jvm/clients/src/main/java/minibroker/TxnV2Check.java (compiled by `make jvm`); the expected
answers (epochs, exception classes) are those the same program gets from Kafka 4.4.0."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.support.helpers import unique_name, wait_until
from tests.support.java import java_command, parse_result

JAVA_TIMEOUT = 120
VERSION = "4.4.0"
TV1 = {"minibroker.features": "transaction.version=1"}


def run_check(broker, scenario: str) -> dict[str, str]:
    args = (broker.bootstrap, scenario, unique_name(f"jtx-{scenario}"))
    proc = subprocess.run(
        java_command("TxnV2Check", VERSION, *args), capture_output=True, text=True, timeout=JAVA_TIMEOUT
    )
    assert proc.returncode == 0, f"TxnV2Check {args} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return parse_result(proc.stdout)


def requests_seen(broker, text: str | None = None) -> set[tuple[str, int]]:
    """(api, version) of every request in the broker's request log."""
    out = set()
    for line in (broker.log_text() if text is None else text).splitlines():
        if line.startswith("{") and '"event": "request"' in line:
            entry = json.loads(line)
            out.add((entry["api"], entry["api_version"]))
    return out


def apis(seen: set[tuple[str, int]], name: str) -> set[int]:
    return {v for api, v in seen if api == name}


@pytest.fixture
def tv2_broker(broker_factory):
    return broker_factory({"minibroker.request.log.enable": True})


@pytest.fixture
def tv1_broker(broker_factory):
    return broker_factory({"minibroker.request.log.enable": True, **TV1})


def _produce_versions_logged(broker) -> None:
    # a request's log line is written just after its answer
    wait_until(lambda: apis(requests_seen(broker), "EndTxn") or None, timeout=5, message="EndTxn logged")


@pytest.mark.timeout(240)
def test_tv2_commit_abort_send_offsets_and_read_committed(tv2_broker):
    result = run_check(tv2_broker, "flow")
    # three ends, each bumping the epoch (Kafka 4.4: epoch 3)
    assert result == {
        "committed": "40",
        "group_offset": "42",
        "tv": "2",
        "state": "CompleteCommit",
        "epoch": "3",
    }
    _produce_versions_logged(tv2_broker)
    seen = requests_seen(tv2_broker)
    assert apis(seen, "EndTxn") == {5}
    assert apis(seen, "TxnOffsetCommit") and min(apis(seen, "TxnOffsetCommit")) >= 5
    assert not apis(seen, "AddPartitionsToTxn") and not apis(seen, "AddOffsetsToTxn")
    assert min(apis(seen, "Produce")) >= 12


@pytest.mark.timeout(240)
def test_tv1_feature_level_keeps_the_classic_flow(tv1_broker):
    result = run_check(tv1_broker, "flow")
    assert result == {
        "committed": "40",
        "group_offset": "42",
        "tv": "1",
        "state": "CompleteCommit",
        "epoch": "0",
    }
    _produce_versions_logged(tv1_broker)
    seen = requests_seen(tv1_broker)
    assert apis(seen, "EndTxn") == {4}
    assert apis(seen, "AddPartitionsToTxn") == {3} and apis(seen, "AddOffsetsToTxn") == {4}
    assert apis(seen, "TxnOffsetCommit") == {4}
    assert max(apis(seen, "Produce")) <= 11


@pytest.mark.timeout(240)
def test_tv2_fenced_producer_gets_invalid_producer_epoch(tv2_broker):
    # Kafka 4.4.0 gives the same classes and epoch to this program
    assert run_check(tv2_broker, "fence") == {
        "send_failed": "InvalidProducerEpochException",
        "commit_failed": "InvalidProducerEpochException",
        "visible": "winner",
        "state": "CompleteCommit",
        "epoch": "3",
    }


@pytest.mark.timeout(240)
def test_tv1_fenced_producer(tv1_broker):
    # Kafka 4.4.0 with transaction.version=1 gives the same classes and epoch (the fence and the
    # second instance's retry bump it; ends do not)
    assert run_check(tv1_broker, "fence") == {
        "send_failed": "InvalidProducerEpochException",
        "commit_failed": "InvalidProducerEpochException",
        "visible": "winner",
        "state": "CompleteCommit",
        "epoch": "2",
    }


@pytest.mark.timeout(300)
@pytest.mark.parametrize("features", ["tv2", "tv1"])
def test_broker_sigkill_mid_transaction(broker_factory, features):
    """The broker is SIGKILLed with a transaction open (records written, the TV2 state of
    __transaction_state on disk) and restarted on the same port: the producer continues the same
    transaction and commits it; an earlier aborted transaction stays invisible."""
    overrides = {"minibroker.request.log.enable": True, **(TV1 if features == "tv1" else {})}
    broker = broker_factory(overrides)
    port = broker.port
    broker.extra_args = ["--port", str(port)]  # come back on the address the producer knows
    topic = unique_name("jtx-kill")
    proc = subprocess.Popen(
        java_command("TxnV2Check", VERSION, broker.bootstrap, "pause", topic),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read()[-4000:] if proc.stderr else ""
        before_kill = broker.log_text()
        broker.kill()
        broker.start()
        assert broker.port == port
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=JAVA_TIMEOUT)
        assert proc.returncode == 0, f"{out}\n{err[-4000:]}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result = parse_result(out)
    # two ends (the abort, the commit): epoch 2 under TV2, unchanged (0) under TV1
    assert result == {
        "committed": "20",
        "aborted_visible": "false",
        "group_offset": "7",
        "state": "CompleteCommit",
        "epoch": "2" if features == "tv2" else "0",
    }
    seen = requests_seen(broker, before_kill + broker.log_text())
    if features == "tv2":
        assert not apis(seen, "AddPartitionsToTxn") and apis(seen, "EndTxn") == {5}
    else:
        assert apis(seen, "AddPartitionsToTxn") == {3} and apis(seen, "EndTxn") == {4}
