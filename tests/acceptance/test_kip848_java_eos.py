"""A read-process-write exactly-once loop in a KIP-848 consumer group with the Java kafka-clients
4.4.0 consumer (group.protocol=consumer): each member a read_committed consumer with its own
transactional producer, sending its offsets with consumer.groupMetadata() (KIP-447 with the
member epoch). Members join and leave while records arrive; in the second test the broker is
SIGKILLed mid-rebalance (the control plane's crash point `offsets.after_write`,
docs/control-plane/crash-points.md: the first TxnOffsetCommit of the group once a third member's
joining heartbeat is answered) and restarted on the same port. Either way the output, read
read_committed, holds every input record exactly once and the committed offsets are the input's
end offsets.

The Java side is jvm/clients/src/main/java/minibroker/Kip848EosCheck.java (compiled by `make jvm`)."""

from __future__ import annotations

import contextlib
import http.client
import subprocess

import pytest

from minibroker.control.client import ControlError
from tests.acceptance.test_kip848_java import KIP848, VERSION
from tests.support.helpers import unique_name
from tests.support.java import java_command, parse_result

JAVA_TIMEOUT = 200
WAIT = 60


def check_exact(result: dict[str, str]) -> None:
    aborted = int(result.pop("aborted"))
    sent = result["sent"]
    assert int(sent) > 0
    assert result == {
        "sent": sent,
        "output": sent,  # every input record once in the output, read read_committed
        "twice": "0",
        "lost": "0",
        "committed_is_end": "true",
        "committed": sent,
    }, f"aborted transactions: {aborted}"


@pytest.mark.timeout(240)
def test_exactly_once_loop_with_members_joining_and_leaving(broker_factory):
    b = broker_factory(KIP848)
    args = (b.bootstrap, "members", unique_name("k848-eos"))
    proc = subprocess.run(
        java_command("Kip848EosCheck", VERSION, *args), capture_output=True, text=True, timeout=JAVA_TIMEOUT
    )
    assert proc.returncode == 0, f"Kip848EosCheck {args} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    check_exact(parse_result(proc.stdout))


@pytest.mark.timeout(240)
def test_exactly_once_loop_through_a_sigkill_mid_rebalance(broker_factory):
    b = broker_factory({**KIP848, "minibroker.control.port": 0})
    b.extra_args = ["--port", str(b.port)]  # come back on the address the clients know
    name = unique_name("k848-eos-crash")
    group = f"{name}-g"
    args = (b.bootstrap, "crash", name)
    proc = subprocess.Popen(
        java_command("Kip848EosCheck", VERSION, *args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        ready = proc.stdout.readline()  # a and b are copying records
        assert ready.strip() == "READY", f"{ready!r}: {proc.stderr.read() if proc.poll() is not None else ''}"
        joining = b.faults.observe(api="ConsumerGroupHeartbeat", client_id=f"{group}-c")
        proc.stdin.write("GO\n")
        proc.stdin.flush()
        joining.wait(1, timeout=WAIT)  # c's joining heartbeat is answered: the group is rebalancing
        # the group's next (transactional) offset commit kills the broker before it answers this
        with contextlib.suppress(ControlError, http.client.HTTPException, OSError):
            b.crash_at("offsets.after_write", key=group)
        assert b.wait_crashed(timeout=WAIT) == -9
        b.start()
        proc.stdin.write("RESTARTED\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=JAVA_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, f"Kip848EosCheck {args} failed:\n{out}\n{err[-4000:]}"
    # the producers retry through the restart: the crashed commit's transaction is either completed
    # by their retries or aborted (then the member goes back to the committed offsets)
    check_exact(parse_result(out))
