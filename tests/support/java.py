"""Running the Java checks of jvm/clients (compiled by `make jvm`) and reading their answer: each
check ends with one line "RESULT key=value ..." on stdout; running Kafka's DumpLogSegments."""

from __future__ import annotations

import glob
import subprocess
from pathlib import Path

from minibroker.pipelines.jars import kafka_clients_classpath

from conformance.reference_kafka import tools_jars


def java_command(check: str, version: str, *args: str) -> list[str]:
    """The command running `minibroker.<check>` against kafka-clients `version`."""
    return [
        "java",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        kafka_clients_classpath(version),
        f"minibroker.{check}",
        *args,
    ]


def parse_result(stdout: str) -> dict[str, str]:
    """The check's last RESULT line as {key: value}."""
    lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no RESULT line in:\n{stdout}"
    return dict(item.split("=", 1) for item in lines[-1].split()[1:])


def dump_log_segments(partition_dir: Path, decoder: str) -> tuple[str, list[str]]:
    """Kafka's kafka-dump-log (DumpLogSegments `decoder`, e.g. --offsets-decoder) over every
    segment of a partition directory, checked to end cleanly: its stdout and its record lines
    ("| offset: ...")."""
    segments = glob.glob(str(partition_dir / "*.log"))
    done = subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            f"{tools_jars()}/*",
            "org.apache.kafka.tools.DumpLogSegments",
            decoder,
            "--files",
            *segments,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Exception" not in done.stdout + done.stderr and "error" not in done.stdout.lower()
    return done.stdout, [line for line in done.stdout.splitlines() if line.startswith("| offset:")]
