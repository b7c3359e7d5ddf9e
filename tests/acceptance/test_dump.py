"""`minibroker dump`: offline inspection of a data directory, including one a SIGKILL left behind
mid-transaction (no clean-shutdown marker, an open transaction, nothing flushed on purpose)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from kafka import KafkaConsumer, KafkaProducer

from tests.support.helpers import create_topic, unique_name


def run_dump(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "minibroker", "dump", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _tree(path) -> dict[str, tuple[int, int]]:
    out = {}
    for root, _dirs, files in os.walk(path):
        for name in files:
            st = os.stat(os.path.join(root, name))
            out[os.path.join(root, name)] = (st.st_size, st.st_mtime_ns)
    return out


def _crashed_mid_transaction(broker, topic: str) -> None:
    create_topic(broker, topic, 1)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        transactional_id="dump-txn",
        request_timeout_ms=10_000,
        max_block_ms=10_000,
    )
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, key=b"k1", value=b"committed")
    producer.commit_transaction()
    producer.begin_transaction()
    producer.send(topic, key=b"k2", value=b"aborted")
    producer.flush()
    producer.abort_transaction()
    producer.begin_transaction()
    producer.send(topic, key=b"k3", value=b"open when killed")
    producer.flush()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap,
        group_id="dump-group",
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    deadline = time.monotonic() + 20
    seen = []
    while not seen and time.monotonic() < deadline:
        seen = [r for recs in consumer.poll(timeout_ms=300).values() for r in recs]
    assert [r.value for r in seen] == [b"committed"]
    consumer.commit()
    consumer.close()
    broker.kill()
    producer.close(timeout=0)


def test_dump_decodes_a_directory_killed_mid_transaction(broker_factory):
    broker = broker_factory({"group.initial.rebalance.delay.ms": 0})
    topic = unique_name("dumped")
    _crashed_mid_transaction(broker, topic)
    before = _tree(broker.data_dir)

    result = run_dump("--json", "--print-data", broker.data_dir)
    assert result.returncode == 0, result.stderr
    dump = json.loads(result.stdout)
    assert dump["clean_shutdown_marker"] is False
    parts = {(p["topic"], p["partition"]): p for p in dump["partitions"]}

    batches = [b for seg in parts[(topic, 0)]["segments"] for b in seg["batches"]]
    assert all(b["crc_valid"] for b in batches)
    data = [(b["is_control"], b["records"]) for b in batches]
    assert data[0][1][0]["value"] == "committed" and data[1][1][0]["end_txn_marker"] == "COMMIT"
    assert data[2][1][0]["value"] == "aborted" and data[3][1][0]["end_txn_marker"] == "ABORT"
    last = batches[-1]
    assert (
        last["is_transactional"]
        and not last["is_control"]
        and last["records"][0]["value"] == "open when killed"
    )
    assert last["producer_id"] == batches[0]["producer_id"] and last["base_sequence"] == 2

    txn_states = [
        r["decoded"]
        for seg in parts[("__transaction_state", 0)]["segments"]
        for b in seg["batches"]
        for r in b["records"]
    ]
    assert [t["state"] for t in txn_states] == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "CompleteCommit",
        "Ongoing",
        "PrepareAbort",
        "CompleteAbort",
        "Ongoing",
    ]
    assert txn_states[-1]["transactional_id"] == "dump-txn" and txn_states[-1]["partitions"] == [f"{topic}-0"]

    offsets = [
        r["decoded"]
        for seg in parts[("__consumer_offsets", 0)]["segments"]
        for b in seg["batches"]
        for r in b.get("records", [])
    ]
    commits = [o for o in offsets if o["key_type"] == "OffsetKey"]
    # a read_committed consumer's position stops at the LSO: the open transaction's first offset
    assert commits and commits[-1]["group"] == "dump-group" and commits[-1]["value"]["offset"] == 4
    assert any(o["key_type"] == "GroupKey" for o in offsets)

    assert _tree(broker.data_dir) == before, "dump changed the data directory"

    # the text form, like kafka-dump-log.sh
    text = run_dump(broker.data_dir / f"{topic}-0")
    assert text.returncode == 0, text.stderr
    assert "end_txn_marker: COMMIT" in text.stdout and "end_txn_marker: ABORT" in text.stdout
    assert "is_transactional: True" in text.stdout


def test_dump_reports_a_torn_tail_and_snapshots(broker):
    topic = unique_name("torn")
    create_topic(broker, topic, 1)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True)
    producer.send(topic, b"one").get(10)
    producer.close()
    broker.stop()  # a clean stop writes a producer-state snapshot
    segment = broker.data_dir / f"{topic}-0" / f"{0:020d}.log"
    with open(segment, "ab") as f:
        f.write(b"\x00" * 7)  # a torn write
    dump = json.loads(run_dump("--json", "--topic", topic, broker.data_dir).stdout)
    (part,) = dump["partitions"]
    (seg,) = part["segments"]
    assert len(seg["batches"]) == 1
    assert seg["torn_tail"]["bytes"] == 7 and "incomplete batch header" in seg["torn_tail"]["reason"]
    snapshots = part["producer_snapshots"]
    assert snapshots and snapshots[-1]["next_offset"] == 1
    (producer_state,) = snapshots[-1]["producers"]
    assert producer_state["batches"][0]["first_offset"] == 0


def test_dump_refuses_a_missing_directory(tmp_path):
    result = run_dump(tmp_path / "nope")
    assert result.returncode == 2 and "is not a directory" in result.stderr


def test_dump_says_when_a_broker_is_running_on_the_directory(broker):
    topic = unique_name("live")
    create_topic(broker, topic, 1)
    running = run_dump("--topic", topic, broker.data_dir)
    assert running.returncode == 0, running.stderr
    assert f"a broker (pid {broker.proc.pid}) is running on {broker.data_dir}" in running.stderr
    assert "reading without its lock" in running.stderr
    assert f"=== {topic}-0" in running.stdout  # it still reads
    partition = run_dump(broker.data_dir / f"{topic}-0")  # one partition directory: same notice
    assert f"(pid {broker.proc.pid}) is running" in partition.stderr

    broker.stop()
    stopped = run_dump("--topic", topic, broker.data_dir)
    assert stopped.returncode == 0 and stopped.stderr == ""


def test_dump_into_head_ends_quietly(broker):
    topic = unique_name("head")
    create_topic(broker, topic, 1)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
    for i in range(3000):
        producer.send(topic, value=b"%05d-" % i + b"v" * 100)
    producer.flush(30)
    producer.close()
    broker.stop()
    dump = subprocess.Popen(
        [sys.executable, "-m", "minibroker", "dump", "--print-data", str(broker.data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    head = subprocess.Popen(["head", "-n", "3"], stdin=dump.stdout, stdout=subprocess.PIPE)
    assert dump.stdout is not None and dump.stderr is not None
    dump.stdout.close()  # head holds the pipe's only reader: its exit closes the pipe
    out, _ = head.communicate(timeout=60)
    err = dump.stderr.read()
    rc = dump.wait(60)
    assert len(out.splitlines()) == 3
    assert err == b"", err.decode()  # no BrokenPipeError traceback, no "Exception ignored"
    assert rc == 141  # 128 + SIGPIPE, as cat and other filters report a closed pipe


def test_dump_of_an_unknown_topic_says_so(broker):
    topic = unique_name("known")
    create_topic(broker, topic, 1)
    broker.stop()
    result = run_dump("--topic", topic[:-1], broker.data_dir)
    assert result.returncode == 2 and result.stdout == ""
    assert f"no topic {topic[:-1]!r} in {broker.data_dir} (did you mean {topic}?)" in result.stderr
    assert f"topics there: {topic}" in result.stderr
