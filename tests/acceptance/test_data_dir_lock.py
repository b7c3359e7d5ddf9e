"""Issue 21: one broker per data directory. A second broker on a directory in use is refused
before it reads or writes anything there (Kafka's "Failed to acquire lock on file .lock"), naming
the holder's pid; a start refused for a taken port leaves the running broker's files alone; the
lock dies with its process, so a restart right after SIGKILL is never refused."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import minibroker.testing
from minibroker.testing import LOG_NAME, BrokerStartError
from tests.support import clients
from tests.support.helpers import create_topic, make_messages, unique_name

pytestmark = pytest.mark.timeout(120)

LOCK_MESSAGE = "Failed to acquire lock on file .lock in"


def start_refused(data_dir, out_dir, port: int = 0) -> tuple[int, str]:
    """Start `python -m minibroker` as a user would, its port file and output outside
    `data_dir` (so every change there is the broker's own); returns (exit code, output). A
    broker that starts instead of being refused fails the test."""
    port_file, output = out_dir / "second.port", out_dir / "second.log"
    cmd = [sys.executable, "-m", "minibroker", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--data-dir", str(data_dir), "--port-file", str(port_file), "--log-format", "json"]
    with open(output, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while proc.poll() is None:
            assert not port_file.exists(), "the second broker started\n" + output.read_text()
            assert time.monotonic() < deadline, "the second broker neither started nor exited"
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    return proc.returncode, output.read_text()


def snapshot(data_dir) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and mtime, every directory's mtime (a file created and removed again
    changes it). Not the running broker's own output file, which it may append to."""
    out = {}
    for root, _dirs, files in os.walk(data_dir):
        out[root] = (b"", os.stat(root).st_mtime_ns)
        for name in files:
            path = os.path.join(root, name)
            if name == LOG_NAME and root == str(data_dir):
                continue
            with open(path, "rb") as f:
                out[path] = (f.read(), os.stat(path).st_mtime_ns)
    return out


def assert_unchanged(before: dict, after: dict) -> None:
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    assert not changed, f"the refused start changed the running broker's data directory: {changed}"


def produce(broker, topic: str, n: int, tag: str) -> list[tuple[int, int]]:
    return clients.kp_produce(broker.bootstrap, topic, make_messages(n, 1, tag))


def consume_values(broker, topic: str, n: int) -> list[tuple[int, bytes | None]]:
    got = clients.kp_consume(broker.bootstrap, topic, [0], n)[0]
    return [(offset, value) for offset, _key, value, _headers, _ts in got]


def expected_values(tags_and_counts) -> list[tuple[int, bytes | None]]:
    values = [m.value for tag, n in tags_and_counts for m in make_messages(n, 1, tag)]
    return list(enumerate(values))


def test_second_broker_on_the_same_dir_is_refused_and_the_first_loses_nothing(broker, tmp_path):
    topic = unique_name("locked")
    create_topic(broker, topic, 1)
    assert produce(broker, topic, 100, "first") == [(0, i) for i in range(100)]

    rc, output = start_refused(broker.data_dir, tmp_path)
    assert rc == 1, output
    assert f"{LOCK_MESSAGE} {broker.data_dir}" in output and f"(pid {broker.proc.pid})" in output, output
    assert "cannot start" in output and "broker ready" not in output

    # the first broker keeps serving, and hands out the offsets after its own
    assert produce(broker, topic, 100, "second") == [(0, i) for i in range(100, 200)]
    broker.restart()
    assert consume_values(broker, topic, 200) == expected_values([("first", 100), ("second", 100)])


@pytest.mark.parametrize("case", ["same dir", "same dir and port", "other dir, same port"])
def test_a_refused_start_leaves_the_running_brokers_files_untouched(broker_factory, tmp_path, case):
    # no periodic checkpoint during the test: any change to the directory is the refused start's
    running = broker_factory({"log.flush.offset.checkpoint.interval.ms": 3_600_000})
    topic = unique_name("untouched")
    create_topic(running, topic, 1)
    clients.kp_produce(
        running.bootstrap, topic, make_messages(50, 1, "idem"), enable_idempotence=True, retries=3
    )
    clients.kp_consume(running.bootstrap, topic, [0], 50, group_id="untouched-group")
    before = snapshot(running.data_dir)

    other_dir = tmp_path / "other"
    data_dir = other_dir if case == "other dir, same port" else running.data_dir
    port = 0 if case == "same dir" else running.port
    rc, output = start_refused(data_dir, tmp_path, port)

    assert rc == 1, output
    if case == "other dir, same port":
        assert f"cannot listen on 127.0.0.1:{running.port}" in output and "in use" in output, output
        # the port is bound before the directory is recovered: nothing was created there
        assert sorted(os.listdir(other_dir)) == [".lock"]
    else:
        assert LOCK_MESSAGE in output and f"(pid {running.proc.pid})" in output, output
    assert_unchanged(before, snapshot(running.data_dir))
    assert produce(running, topic, 1, "after") == [(0, 50)]  # still serving


def test_sigkill_then_immediate_restart_on_the_same_dir(broker):
    topic = unique_name("killed")
    create_topic(broker, topic, 1)
    written = []
    for round_ in range(3):
        tag = f"round{round_}"
        produce(broker, topic, 20, tag)
        written.append((tag, 20))
        broker.kill()  # SIGKILL; the kernel drops the flock with the process
        broker.start()  # at once: a stale lock would refuse it
        assert (broker.data_dir / ".lock").read_text() == f"{broker.proc.pid}\n"
    assert consume_values(broker, topic, 60) == expected_values(written)


def test_two_testing_brokers_on_one_data_dir(tmp_path):
    data_dir = tmp_path / "shared"
    with minibroker.testing.broker(data_dir=data_dir) as first:
        with pytest.raises(BrokerStartError) as refused:
            with minibroker.testing.broker(data_dir=data_dir):
                pass
        assert LOCK_MESSAGE in str(refused.value) and f"(pid {first.proc.pid})" in str(refused.value)
        topic = unique_name("testing")
        create_topic(first, topic, 1)
        assert produce(first, topic, 3, "still") == [(0, 0), (0, 1), (0, 2)]
