"""Java kafka-clients against minibroker: 3.9.2 (what Spark 4.2 bundles) and the newest 4.x.

The checks are jvm/clients/src/main/java/minibroker/ClientCheck.java, compiled by `make jvm`
(run by `make test`) against each version; each scenario asserts on its own side and ends with a
`RESULT` line that the test checks too."""

from __future__ import annotations

import subprocess
import time

import pytest
from minibroker.pipelines.jars import KAFKA_CLIENT_VERSIONS

from tests.support.clients import kp_consume
from tests.support.helpers import unique_name
from tests.support.java import java_command, parse_result

JAVA_TIMEOUT = 90


def run_check(version: str, *args: str) -> dict[str, str]:
    proc = subprocess.run(
        java_command("ClientCheck", version, *args), capture_output=True, text=True, timeout=JAVA_TIMEOUT
    )
    assert proc.returncode == 0, (
        f"ClientCheck {args} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}"
    )
    return parse_result(proc.stdout)


@pytest.fixture(params=KAFKA_CLIENT_VERSIONS, ids=lambda v: f"kafka-clients-{v}")
def client_version(request) -> str:
    return request.param


@pytest.mark.timeout(180)
def test_transactional_producer_commit_abort_and_send_offsets(shared_broker, client_version):
    result = run_check(client_version, shared_broker.bootstrap, "txn", unique_name("java-txn"))
    assert result == {"committed": "60", "group_offset": "42"}


@pytest.mark.timeout(180)
def test_second_instance_fences_the_first(shared_broker, client_version):
    result = run_check(client_version, shared_broker.bootstrap, "fence", unique_name("java-fence"))
    # Kafka answers a stale-epoch produce with INVALID_PRODUCER_EPOCH and the coordinator's
    # EndTxn with PRODUCER_FENCED; only the second instance's record is visible
    assert result == {
        "send_failed": "InvalidProducerEpochException",
        "fenced": "ProducerFencedException",
        "visible": "winner",
    }


@pytest.mark.timeout(240)
def test_idempotent_producer_survives_broker_sigkill(broker, client_version):
    """The default producer (idempotent since 3.0) keeps sending while the broker is SIGKILLed
    and restarted on the same port; every record is in the log exactly once."""
    count = 2000
    topic = unique_name("java-idem")
    port = broker.port
    broker.extra_args = ["--port", str(port)]  # come back on the address the producer knows
    proc = subprocess.Popen(
        java_command("ClientCheck", client_version, broker.bootstrap, "idempotent", topic, str(count)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        killed_at = None
        for line in proc.stdout:
            if line.startswith("acked ") and killed_at is None and int(line.split()[1]) >= count // 3:
                killed_at = int(line.split()[1])
                broker.kill()
                time.sleep(0.5)  # the producer sees the connection drop and retries meanwhile
                broker.start()
                assert broker.port == port
            if line.startswith("RESULT "):
                assert parse_result(line) == {"acked": str(count)}
        assert proc.wait(JAVA_TIMEOUT) == 0, proc.stderr.read()[-4000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert killed_at is not None and killed_at < count, "the broker was never killed mid-stream"
    records = kp_consume(broker.bootstrap, topic, [0], expected=count)[0]
    values = [int(r[2]) for r in records]
    assert sorted(values) == list(range(count)), (
        f"{len(values)} records, {len(set(values))} distinct; duplicates: "
        f"{sorted({v for v in values if values.count(v) > 1})[:10]}"
    )
