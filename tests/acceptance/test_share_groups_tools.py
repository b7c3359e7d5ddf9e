"""Issue 26, Apache Kafka's kafka-share-groups.sh (org.apache.kafka.tools.consumer.group.
ShareGroupCommand from the tools jars conformance/reference_kafka.py fetches) on a share group a
Java KafkaShareConsumer has read: --describe (offsets, --state), --list, --reset-offsets
--to-latest --dry-run and --to-earliest --execute (the records are then delivered again),
--delete-offsets. The group is prepared by ShareCheck (jvm/clients), as in
test_share_groups_java.py, whose broker fixture (minibroker, or with MINIBROKER_SHARE_REFERENCE the
reference Kafka 4.4) this module shares."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conformance.reference_kafka import tools_jars
from tests.acceptance.test_share_groups_java import run_check, share_broker  # noqa: F401 - the fixture
from tests.support.helpers import unique_name

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (make test installs one)"),
]


def share_groups(broker, *args: str) -> str:
    """kafka-share-groups.sh --bootstrap-server BROKER ARGS: its stdout (exit 0 required)."""
    done = subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            f"{tools_jars()}/*",
            "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
            "--bootstrap-server",
            broker.bootstrap,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (
        f"kafka-share-groups.sh {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    )
    assert "Error:" not in done.stdout, done.stdout
    return done.stdout


def table(output: str, first_column: str) -> list[dict[str, str]]:
    """The rows of the table whose header starts with `first_column`, as {column: value}."""
    lines = [line.split() for line in output.splitlines() if line.strip()]
    for i, head in enumerate(lines):
        if head and head[0] == first_column:
            return [dict(zip(head, row, strict=False)) for row in lines[i + 1 :] if len(row) == len(head)]
    raise AssertionError(f"no table headed {first_column} in:\n{output}")


def offsets(output: str) -> dict[int, tuple[int, int]]:
    """--describe: partition -> (START-OFFSET, LAG)."""
    return {int(r["PARTITION"]): (int(r["START-OFFSET"]), int(r["LAG"])) for r in table(output, "GROUP")}


def test_describe_list_reset_and_delete_offsets(share_broker):  # noqa: F811
    topic = unique_name("share-tool")
    group = topic + "-group"
    assert run_check(share_broker, "consumed", topic, "10")["accepted"] == "10"

    described = offsets(share_groups(share_broker, "--describe", "--group", group))
    assert set(described) == {0, 1} and all(lag == 0 for _, lag in described.values()), described
    state = table(share_groups(share_broker, "--describe", "--group", group, "--state"), "GROUP")
    assert [(r["GROUP"], r["STATE"], r["#MEMBERS"]) for r in state] == [(group, "Empty", "0")]
    assert group in share_groups(share_broker, "--list").split()

    planned = share_groups(
        share_broker, "--reset-offsets", "--to-latest", "--dry-run", "--group", group, "--topic", topic
    )
    assert {int(r["PARTITION"]): int(r["NEW-OFFSET"]) for r in table(planned, "GROUP")} == {0: 5, 1: 5}
    assert offsets(share_groups(share_broker, "--describe", "--group", group)) == described  # a dry run

    reset = share_groups(
        share_broker, "--reset-offsets", "--to-earliest", "--execute", "--group", group, "--topic", topic
    )
    assert {int(r["PARTITION"]): int(r["NEW-OFFSET"]) for r in table(reset, "GROUP")} == {0: 0, 1: 0}
    assert offsets(share_groups(share_broker, "--describe", "--group", group)) == {0: (0, 5), 1: (0, 5)}
    again = run_check(share_broker, "reread", topic, "10")
    # every record delivered again, as new (the reset wiped the share-partition state)
    assert again["records"] == ",".join(sorted(f"{p}:{o}/1" for p in (0, 1) for o in range(5)))

    deleted = share_groups(share_broker, "--delete-offsets", "--group", group, "--topic", topic)
    assert [(r["TOPIC"], r["STATUS"]) for r in table(deleted, "TOPIC")] == [(topic, "Successful")]
    assert f"Share group '{group}' has no offset information." in share_groups(
        share_broker, "--describe", "--group", group
    )
