"""Running the Java checks of jvm/clients (compiled by `make jvm`) and reading their answer: each
check ends with one line "RESULT key=value ..." on stdout."""

from __future__ import annotations

from minibroker.pipelines.jars import kafka_clients_classpath


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
